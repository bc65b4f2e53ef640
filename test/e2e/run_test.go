package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/test/publish"
)

func snapshotMode(m string) snapshot.Mode {
	if m == "" {
		return snapshot.ModeAuto
	}
	return snapshot.Mode(m)
}

// A route added is served, a route removed stops being served, and an
// endpoint change is followed — through a directory published the way
// kubelet publishes a ConfigMap volume.
func TestRouteLifecycleAtomicWriter(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")

	// Add a route (a reload) and point it at its own backend.
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("one", "one.e2e.test", "", "one"), routeYAML("two", "two.e2e.test", "", "two")),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
	)))
	r.serves("two.e2e.test", "/", "two")
	r.serves("one.e2e.test", "/", "one")

	// Endpoint change: route one now goes to backend two.
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("one", "one.e2e.test", "", "one"), routeYAML("two", "two.e2e.test", "", "two")),
		"endpoints.yaml", join(endpointsYAML("one", two), endpointsYAML("two", two)),
	)))
	r.serves("one.e2e.test", "/", "two")

	// Remove route two: it stops being served.
	must(t, w.Publish(oneRoute(r, two)))
	r.eventually(20*time.Second, "two.e2e.test no longer served", func() error {
		if got, err := r.get("two.e2e.test", "/"); err == nil {
			return fmt.Errorf("still served by %q", got)
		}
		return nil
	})
	r.serves("one.e2e.test", "/", "two")
}

// A generation with a broken file leaves the routes that were served in
// place, and the error is visible in the status.
func TestBadGenerationKeepsServing(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	good := oneRoute(r, one)
	must(t, w.Publish(good))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")

	bad := files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: one, namespace: e2e\nspec: [",
		"endpoints.yaml", endpointsYAML("one", one),
	)
	must(t, w.Publish(bad))
	r.reportsError("routes.yaml")
	r.keepsServing("one.e2e.test", "one", 20, "after a bad generation")
	// A broken RouterConfig (port 0) keeps the last good one: still served.
	must(t, w.Publish(files(
		"router.yaml", strings.Replace(r.routerConfig(""), fmt.Sprintf("http: %d", r.http), "http: 0", 1),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.reportsError("router.yaml")
	r.keepsServing("one.e2e.test", "one", 20, "after a bad RouterConfig")
}

// git-sync publishes by renaming a temporary link over the configured one.
func TestGitSyncLink(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	g, _ := serveViaGitSync(t, r, files(
		"router.yaml", r.routerConfig(""),
		"routes/one.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	), "one")
	must(t, g.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes/one.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"routes/two.yaml", routeYAML("two", "two.e2e.test", "/api", "two"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
	)))
	r.serves("two.e2e.test", "/api/x", "two")
	r.serves("one.e2e.test", "/", "one")
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
