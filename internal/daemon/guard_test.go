package daemon

import (
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// droppedRoutes counts routes gone and routes left without a server, in
// one walk over both sorted lists.
func TestDroppedRoutes(t *testing.T) {
	r := func(ns, name string, servers int) *model.AdmittedRoute {
		a := &model.AdmittedRoute{Key: model.RouteKey{Namespace: ns, Name: name}, Host: name + "." + ns + ".test"}
		if servers > 0 {
			a.Services = []model.ServiceBackend{{Servers: make([]model.Server, servers)}}
		}
		return a
	}
	prev := []*model.AdmittedRoute{r("a", "1", 1), r("a", "2", 1), r("b", "1", 2), r("b", "2", 0), r("c", "1", 1)}
	// Unchanged routes are shared between loads: the same pointers.
	cur := []*model.AdmittedRoute{prev[0], r("a", "3", 1), r("b", "1", 0), prev[3], prev[4]}
	n, names, _ := droppedRoutes(prev, cur, noRivals)
	if n != 2 || names != "a/2,b/1" {
		t.Fatalf("dropped %d (%s), want 2 (a/2,b/1)", n, names)
	}
	if n, _, _ := droppedRoutes(prev, prev, noRivals); n != 0 {
		t.Fatalf("the same routes: %d dropped", n)
	}
	if n, _, _ := droppedRoutes(prev, nil, noRivals); n != len(prev) {
		t.Fatalf("all gone: %d dropped, want %d", n, len(prev))
	}
	// Renamed, or its host moved to a new route (with "/" for no path):
	// what it claimed is still served, so nothing is dropped, and the
	// guard holds nothing back.
	moved := r("a", "9", 1)
	moved.Host, moved.Path = prev[1].Host, "/"
	if n, names, _ := droppedRoutes(prev, []*model.AdmittedRoute{prev[0], moved, prev[2], prev[3], prev[4]}, noRivals); n != 0 {
		t.Fatalf("a host moved to another route: %d dropped (%s)", n, names)
	}
	// A rival the served state rejected claims the host of a route now
	// gone: no rename, a deletion.
	rival := r("z", "9", 1)
	rival.Host, rival.Path = prev[1].Host, "/"
	gone := []*model.AdmittedRoute{prev[0], prev[2], prev[3], prev[4], rival}
	if n, names, _ := droppedRoutes(prev, gone, func() map[model.RouteKey]bool { return map[model.RouteKey]bool{rival.Key: true} }); n != 1 || names != "a/2" {
		t.Fatalf("a route gone with a rival on its host: %d dropped (%s), want a/2", n, names)
	}
	// The key names every route dropped, whatever else changed.
	_, _, k1 := droppedRoutes(prev, cur, noRivals)
	_, _, k2 := droppedRoutes(prev, []*model.AdmittedRoute{r("a", "1", 3), r("a", "3", 1), r("b", "1", 0), prev[3], prev[4]}, noRivals)
	if k1 != k2 || k1 == "" {
		t.Fatalf("keys of the same drops differ: %q, %q", k1, k2)
	}
}

func noRivals() map[model.RouteKey]bool { return nil }
