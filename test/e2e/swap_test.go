package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/test/publish"
)

// genFiles is one generation in which every file carries the generation
// number (in the route hosts), so a torn snapshot is detectable.
func genFiles(r *router, gen int, one *backend) map[string][]byte {
	return files(
		"router.yaml", r.routerConfig(fmt.Sprintf("# generation %d\n", gen)),
		"a/routes.yaml", routeYAML("a", fmt.Sprintf("a-g%d.e2e.test", gen), "", "one"),
		"b/routes.yaml", routeYAML("b", fmt.Sprintf("b-g%d.e2e.test", gen), "", "one"),
		"c.yaml", join(routeYAML("c", fmt.Sprintf("c-g%d.e2e.test", gen), "", "one"), endpointsYAML("one", one)),
	)
}

// 1000 generations published as fast as kubelet can swap ..data: every
// state the router applies is one whole generation, and it ends on the last.
func TestRapidSwapsNeverTorn(t *testing.T) {
	const swaps = 1000
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(genFiles(r, 0, one)))
	r.start("atomic")
	r.serves("a-g0.e2e.test", "/", "one")

	for gen := 1; gen <= swaps; gen++ {
		must(t, w.Publish(genFiles(r, gen, one)))
	}
	last := fmt.Sprintf("-g%d.e2e.test", swaps)
	r.serves("a"+last, "/", "one")
	r.serves("c"+last, "/", "one")
	// The last generation serves once its runtime commands are sent; the
	// loop records it a moment later.
	r.appliedSince(0, 10*time.Second, "the last generation recorded", func(d *model.Desired) bool {
		return len(d.Routes) > 0 && d.Routes[0].Host == "a"+last
	})

	applied := r.appliedSnapshot()
	if len(applied) < 2 {
		t.Fatalf("only %d states applied", len(applied))
	}
	for _, a := range applied {
		gens := map[string]bool{}
		for _, rt := range a.Desired.Routes {
			host := rt.Host
			gens[host[strings.Index(host, "-g")+2:]] = true
		}
		if len(gens) != 1 || len(a.Desired.Routes) != 3 {
			t.Fatalf("generation %d applied a torn snapshot: routes from generations %v (%d routes)", a.Generation, gens, len(a.Desired.Routes))
		}
	}
	final := applied[len(applied)-1]
	if got := final.Desired.Routes[0].Host; got != "a"+last {
		t.Fatalf("converged on %s, want a%s", got, last)
	}
	t.Logf("%d swaps, %d states applied, %d reloads", swaps, len(applied), r.reloads())
}

// publishRoutes publishes a generation with routes all served by one.
func publishRoutes(t *testing.T, r *router, w *publish.AtomicWriter, routes []string, one *backend) {
	t.Helper()
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routes...),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
}

// A burst of changes that each need a reload, inside one reload interval,
// gives at most 2 reloads: the first at once, the rest coalesced.
func TestThrottleCoalescesBurst(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	routes := []string{routeYAML("r0", "r0.e2e.test", "", "one")}
	publishRoutes(t, r, w, routes, one)
	r.start("atomic")
	r.serves("r0.e2e.test", "/", "one")
	// Let a full interval pass so the burst starts from a quiet period.
	time.Sleep(1500 * time.Millisecond)
	before := r.reloads()
	// Five new routes (each a new backend no spare fits: a reload)
	// within ~0.5 s.
	for i := 1; i <= 5; i++ {
		routes = append(routes, reloadingRouteYAML(fmt.Sprintf("r%d", i), fmt.Sprintf("r%d.e2e.test", i), "one"))
		publishRoutes(t, r, w, routes, one)
		time.Sleep(100 * time.Millisecond)
	}
	r.serves("r5.e2e.test", "/", "one")
	r.serves("r1.e2e.test", "/", "one")
	time.Sleep(1500 * time.Millisecond) // anything still pending would show now
	got := r.reloads() - before
	if got < 1 || got > 2 {
		t.Fatalf("burst of 5 route additions caused %d reloads, want 1 or 2", got)
	}
	t.Logf("burst of 5 route additions: %d reloads", got)
}

// Steady load across repeated reloads sees no failed request: HAProxy's
// master passes the listening sockets to the new worker (expose-fd
// listeners), and the old worker finishes what it has.
func TestZeroFailedRequestsAcrossReloads(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	routes := []string{routeYAML("main", "main.e2e.test", "", "one")}
	publishRoutes(t, r, w, routes, one)
	r.start("atomic")
	r.serves("main.e2e.test", "/", "one")

	ctx, cancel := context.WithCancel(context.Background())
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 5 * time.Second}
			for ctx.Err() == nil {
				req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
				req.Host = "main.e2e.test"
				resp, err := client.Do(req)
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				if resp != nil {
					resp.Body.Close()
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	before := r.reloads()
	const reloads = 5
	for i := 1; i <= reloads; i++ {
		routes = append(routes, reloadingRouteYAML(fmt.Sprintf("extra%d", i), fmt.Sprintf("extra%d.e2e.test", i), "one"))
		publishRoutes(t, r, w, routes, one)
		r.serves(fmt.Sprintf("extra%d.e2e.test", i), "/", "one")
	}
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()
	done := r.reloads() - before
	if done < 3 {
		t.Fatalf("only %d reloads happened; the test needs several", done)
	}
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed across %d reloads; first: %v", failed.Load(), ok.Load()+failed.Load(), done, firstErr.Load())
	}
	t.Logf("%d requests, 0 failed, across %d reloads", ok.Load(), done)
}
