package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/test/publish"
)

// New routes bind to spare backends of the pool and deleted ones give
// them back, all without a reload; the files on disk say the same, so a
// restart serves the same routes.
func TestRoutesAddedAndDeletedWithoutReload(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	before := r.reloads()

	// Added: plain HTTP, edge on the default certificate, passthrough-free.
	gen["b.yaml"] = []byte(routeYAML("b", "b.e2e.test", "", "two"))
	gen["c.yaml"] = []byte(routeYAML("c", "c.e2e.test", "/api", "one") + "  tls:\n    termination: edge\n    insecureEdgeTerminationPolicy: Allow\n")
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "two")
	r.serves("c.e2e.test", "/api", "one")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding two routes took %d reloads, want 0", got)
	}
	// Per-route metrics name the route, not the spare backend serving it.
	r.eventually(10*time.Second, "per-route metrics of b", func() error {
		body, err := scrapeMetrics(r.metrics)
		if err != nil {
			return err
		}
		for _, want := range []string{
			`haroute_route_requests_total{namespace="e2e",route="b"}`,
			`haroute_route_responses_total{code="2xx",namespace="e2e",route="b"}`,
			`haroute_route_servers{namespace="e2e",route="b",state="up"} 1`,
			`haroute_route_stats_up 1`,
		} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		if strings.Contains(body, `haroute_route_requests_total{namespace="e2e",route="b"} 0`) {
			return fmt.Errorf("no requests counted for b yet")
		}
		return nil
	})
	cfg, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg"))
	must(t, err)
	if !strings.Contains(string(cfg), "# route e2e/b\nbackend be_pool:http:") {
		t.Fatalf("haproxy.cfg does not show route e2e/b on a spare backend")
	}

	// Deleted: gone at once, without a reload.
	delete(gen, "b.yaml")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "b.e2e.test gone", func() error {
		if got, err := r.get("b.e2e.test", "/"); err == nil {
			return fmt.Errorf("still answered by %q", got)
		}
		return nil
	})
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("deleting a bound route took %d reloads, want 0", got)
	}
	r.serves("c.e2e.test", "/api", "one")

	// A route with a backend of its own (a, from the first generation):
	// deleted and added back, without a reload either.
	delete(gen, "a.yaml")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "a.e2e.test gone", func() error {
		if got, err := r.get("a.e2e.test", "/"); err == nil {
			return fmt.Errorf("still answered by %q", got)
		}
		return nil
	})
	gen["a.yaml"] = []byte(routeYAML("a", "a.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "one")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("deleting and re-adding a route took %d reloads, want 0", got)
	}

	// A restart renders every route under its own name again and serves
	// the same routes.
	r.stop()
	r.store = &status.Store{}
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.serves("c.e2e.test", "/api", "one")
	if _, err := r.get("b.e2e.test", "/"); err == nil {
		t.Fatal("the deleted route serves again after a restart")
	}
}

// scrapeMetrics fetches haroute's own /metrics.
func scrapeMetrics(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	return readAll(resp), nil
}
