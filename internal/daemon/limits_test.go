package daemon

import (
	"testing"
)

func TestFitMaxConn(t *testing.T) {
	tests := []struct {
		name    string
		want    int
		hard    uint64
		fit     int
		lowered bool
	}{
		{"fits", 1000, 1 << 20, 1000, false},
		{"lowered to the limit", 50000, 20000, (20000 - 256 - 2000) / 2, true},
		{"unlimited", 50000, rlimInfinity, 50000, false},
		{"unknown", 50000, 0, 50000, false},
		{"tiny limit still serves", 50000, 100, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, lowered := fitMaxConn(tt.want, tt.hard)
			if fit != tt.fit || lowered != tt.lowered {
				t.Fatalf("fitMaxConn(%d, %d) = %d, %v; want %d, %v", tt.want, tt.hard, fit, lowered, tt.fit, tt.lowered)
			}
		})
	}
}
