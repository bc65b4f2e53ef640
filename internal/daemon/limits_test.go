package daemon

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
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
		{"lowered to the limit", 50000, 20000, 0, (20000 - 256 - 2000 - 4096) / 2, true},
		{"10k servers take their share", 50000, 20000, 10000, (20000 - 256 - 2000 - 12288) / 2, true},
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

// Scaling endpoints within a bucket must not move maxconn: a moved maxconn
// is a config change, and scale events must not reload.
func TestFitMaxConnStableWhileScaling(t *testing.T) {
	base, _ := fitMaxConn(50000, 20000, 1)
	for servers := 1; servers <= 3000; servers++ {
		if fit, _ := fitMaxConn(50000, 20000, servers); fit != base {
			t.Fatalf("maxconn moved from %d to %d at %d servers", base, fit, servers)
		}
	}
}

// A limit that leaves no usable room is an error naming LimitNOFILE and
// the numbers, never a router at maxconn 1.
func TestFittedRefusesUnusableLimit(t *testing.T) {
	d := &Daemon{hardNOFILE: 20000, log: slog.New(slog.DiscardHandler)}
	desired := &model.Desired{Router: model.DefaultSettings()}
	for i := range 10000 {
		desired.Routes = append(desired.Routes, model.AdmittedRoute{Services: []model.ServiceBackend{{Servers: []model.Server{
			{Name: model.ServerName(fmt.Sprint("a", i))}, {Name: model.ServerName(fmt.Sprint("b", i))}}}}})
	}
	_, err := d.fitted(desired)
	if err == nil || !strings.Contains(err.Error(), "raise LimitNOFILE") || !strings.Contains(err.Error(), "20000 servers") {
		t.Fatalf("err = %v", err)
	}
	desired.Routes = desired.Routes[:100]
	got, err := d.fitted(desired)
	if err != nil || got.Router.MaxConnections < minUsableConns {
		t.Fatalf("a small tree: %v, maxconn %d", err, got.Router.MaxConnections)
	}
}
