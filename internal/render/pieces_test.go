package render

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// An endpoint change at scale renders one route again. haproxy.cfg is
// then the cached routes' buffers, split around that route, rather than
// a list of one piece per route; and through every kind of change the
// cached render reads exactly as a render without the cache, skeleton
// included (the skeleton parts' list is reused from render to render).
func TestCachedConfigKeepsRoutesInFewPieces(t *testing.T) {
	in := bench10k(t)
	in.Cache = &Cache{}
	if _, err := Render(in); err != nil {
		t.Fatal(err)
	}
	routes := in.Desired.Routes
	// withServer returns route i with its first server moved to port.
	withServer := func(i, port int) *model.AdmittedRoute {
		r := *routes[i]
		r.Services = slices.Clone(r.Services)
		r.Services[0].Servers = slices.Clone(r.Services[0].Servers)
		s := &r.Services[0].Servers[0]
		s.Port, s.Name = port, model.ServerNameFor(s.Address, port)
		return &r
	}
	// withTimeout returns route i with a server timeout: its backend
	// section, and so the skeleton, changes, with as many parts as before.
	withTimeout := func(i int, d time.Duration) *model.AdmittedRoute {
		r := *routes[i]
		r.Backend.Timeout = d
		return &r
	}
	steps := []struct {
		what   string
		change func()
		// maxPieces bounds haproxy.cfg's pieces: the head, then the
		// routes' buffers (20 of 512 routes), split once around each
		// route rendered again since the first render.
		maxPieces int
	}{
		{"route 3's timeout (a new skeleton)", func() { routes[3] = withTimeout(3, time.Minute) }, 1 + 20 + 2},
		{"route 3's timeout again", func() { routes[3] = withTimeout(3, 2*time.Minute) }, 1 + 20 + 2},
		{"an endpoint of route 5000", func() { routes[5000] = withServer(5000, 9000) }, 1 + 20 + 4},
		{"an endpoint of route 17", func() { routes[17] = withServer(17, 9001) }, 1 + 20 + 6},
		{"route 5000's endpoint back", func() { routes[5000] = withServer(5000, 8080) }, 1 + 20 + 6},
		{"a new route (a new skeleton)", func() {
			r := route("ns050", "route05000a", "new.example.com", "", svc("s", 100, "10.9.9.9:8080"))
			routes = slices.Insert(routes, 5001, &r)
		}, 1 + 20 + 8},
		{"an endpoint of route 9000", func() { routes[9000] = withServer(9000, 9002) }, 1 + 20 + 10},
	}
	for _, st := range steps {
		st.change()
		in.Desired = &model.Desired{Router: in.Desired.Router, Routes: routes}
		got, err := Render(in)
		if err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		fresh := in
		fresh.Cache = nil
		want, err := Render(fresh)
		if err != nil {
			t.Fatal(err)
		}
		cfg := got.File(ConfigFile)
		if n := len(cfg.Parts); n > st.maxPieces {
			t.Errorf("%s: haproxy.cfg is %d pieces, want at most %d", st.what, n, st.maxPieces)
		}
		if !bytes.Equal(cfg.Bytes(), want.File(ConfigFile).Bytes()) {
			t.Errorf("%s: the cached render's haproxy.cfg differs from a fresh render's", st.what)
		}
		if !bytes.Equal(got.Skeleton, want.Skeleton) {
			t.Errorf("%s: the cached render's skeleton differs from a fresh render's", st.what)
		}
	}
}

func TestPiecesJoinNeighboursOfOneBuffer(t *testing.T) {
	block := []byte("abcdef")
	other := []byte("xyz")
	outs := []*routeOut{
		{full: block[0:2:2], block: block, at: 0},
		{full: block[2:3:3], block: block, at: 2},
		{full: other[0:3:3], block: other, at: 0},
		{full: block[4:6:6], block: block, at: 4}, // not next to the run before
		{}, // a route that failed: no text
	}
	var p pieces
	for _, o := range outs {
		p.add(o)
	}
	got := fmt.Sprintf("%q", p.list)
	if want := `["abc" "xyz" "ef"]`; got != want {
		t.Fatalf("pieces %s, want %s", got, want)
	}
	if cap(p.list[0]) != len(p.list[0]) {
		t.Errorf("a joined piece has room after it (cap %d, len %d): an append could write into its neighbour", cap(p.list[0]), len(p.list[0]))
	}
}

// buildConfig leaves the cache's own list of skeleton parts alone: the
// lists are swapped at the commit. Were they swapped before, a render
// stopped between the two would leave the cache comparing the next
// render's parts with themselves, and keep a stale skeleton of the same
// length.
func TestSkeletonPartsSwapOnlyAtCommit(t *testing.T) {
	in := bench10k(t)
	in.Desired.Routes = slices.Clone(in.Desired.Routes[:600])
	in.Cache = &Cache{}
	if _, err := Render(in); err != nil {
		t.Fatal(err)
	}
	withTimeout := func(d time.Duration) {
		routes := slices.Clone(in.Desired.Routes)
		r := *routes[3]
		r.Backend.Timeout = d
		routes[3] = &r
		in.Desired = &model.Desired{Router: in.Desired.Router, Routes: routes}
	}
	// A render as far as buildConfig, not committed.
	withTimeout(time.Minute)
	tb := in.Cache.table(in)
	outs, _, _ := routeOutputs(in, tb)
	buildConfig(in, outs, tb)
	// Then a whole one, whose skeleton is as long as that one's.
	withTimeout(2 * time.Minute)
	got, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	fresh := in
	fresh.Cache = nil
	want, err := Render(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Skeleton, want.Skeleton) {
		t.Error("after a render that stopped before its commit, the next render kept a stale skeleton")
	}
}

// The cache forgets the spares the pool no longer has: the daemon renders
// with one cache for its whole run, and the pool sheds spares and names
// new ones at each top-up (T52: 1,000 spare texts kept for a pool of 20).
func TestCacheForgetsSparesThePoolDropped(t *testing.T) {
	in := baseInput(t)
	c := &Cache{}
	in.Cache = c
	s := in.Desired.Router
	for round := range 50 {
		in.Spares = nil
		for i := range 20 {
			slot := model.BackendName(fmt.Sprintf("be_pool:http:%d", round*20+i))
			in.Spares = append(in.Spares, model.SpareRoute(model.TerminationNone, false, slot, &s))
		}
		mustRender(t, in)
	}
	kept := 0
	for _, tab := range c.tables {
		kept += len(tab.spares)
	}
	if kept > 2*20 {
		t.Errorf("the cache keeps %d spare texts for a pool of 20", kept)
	}
	// The pool emptied (the dynamic configuration manager turned off):
	// none kept (T54).
	in.Spares = nil
	mustRender(t, in)
	kept = 0
	for _, tab := range c.tables {
		kept += len(tab.spares)
	}
	if kept != 0 {
		t.Errorf("the cache keeps %d spare texts for an empty pool", kept)
	}
}
