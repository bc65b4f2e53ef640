package daemon

import (
	"testing"
)

func TestFitMaxConn(t *testing.T) {
	tests := []struct {
		name    string
		want    int
		hard    uint64
		servers int
		fit     int
		lowered bool
	}{
		{"fits", 1000, 1 << 20, 10, 1000, false},
		{"lowered to the limit", 50000, 20000, 0, (20000 - fdReserve) / 2, true},
		{"servers take their share", 50000, 20000, 1000, (20000 - fdReserve - 1000) / 2, true},
		{"unlimited", 50000, rlimInfinity, 0, 50000, false},
		{"unknown", 50000, 0, 0, 50000, false},
		{"tiny limit still serves", 50000, 100, 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, lowered := fitMaxConn(tt.want, tt.hard, tt.servers)
			if fit != tt.fit || lowered != tt.lowered {
				t.Fatalf("fitMaxConn(%d, %d, %d) = %d, %v; want %d, %v", tt.want, tt.hard, tt.servers, fit, lowered, tt.fit, tt.lowered)
			}
		})
	}
}
