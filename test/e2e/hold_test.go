package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/test/publish"
)

// While the deletion guard holds a teardown, the rest of the directory
// applies, and what applies is last good: an edit made during the hold and
// then broken keeps serving its edited version, and a route added during
// the hold and then broken keeps serving, during the hold and after it.
// With nothing of a held generation committed (T24), the edit fell back
// to its version from before the hold, and the added route had none.
func TestEditDuringAHoldKeepsItsLastGoodVersion(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 8 * time.Second
	one, two, d1, d2, d3 := startBackend(t, "one"), startBackend(t, "two"), startBackend(t, "d1"), startBackend(t, "d2"), startBackend(t, "d3")
	w := publish.NewAtomicWriter(r.dir)
	editSvc, addRoute := "one", ""
	tree := func(whole bool) map[string][]byte {
		f := files(
			"router.yaml", r.routerConfig(""),
			"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two),
				endpointsYAML("d1", d1), endpointsYAML("d2", d2), endpointsYAML("d3", d3)),
			"edit.yaml", routeYAML("edit", "edit.e2e.test", "", editSvc),
		)
		if whole {
			f["d1.yaml"] = []byte(routeYAML("d1", "d1.e2e.test", "", "d1"))
			f["d2.yaml"] = []byte(routeYAML("d2", "d2.e2e.test", "", "d2"))
			f["d3.yaml"] = []byte(routeYAML("d3", "d3.e2e.test", "", "d3"))
		}
		if addRoute != "" {
			f["added.yaml"] = []byte(addRoute)
		}
		return f
	}
	must(t, w.Publish(tree(true)))
	r.start("atomic")
	r.serves("edit.e2e.test", "/", "one")
	// The teardown: three routes of four dropped, held.
	must(t, w.Publish(tree(false)))
	time.Sleep(500 * time.Millisecond)
	r.serves("d1.e2e.test", "/", "d1") // held
	// During the hold: edit moves to service two, a route is added.
	editSvc = "two"
	addRoute = routeYAML("added", "added.e2e.test", "", "one")
	must(t, w.Publish(tree(false)))
	r.serves("edit.e2e.test", "/", "two")
	r.serves("added.e2e.test", "/", "one")
	// Still in the hold: both break (a host with a port is invalid).
	editBroken := strings.Replace(routeYAML("edit", "edit.e2e.test", "", "two"), "host: edit.e2e.test", "host: edit.e2e.test:80", 1)
	addBroken := strings.Replace(addRoute, "host: added.e2e.test", "host: added.e2e.test:80", 1)
	f := tree(false)
	f["edit.yaml"] = []byte(editBroken)
	f["added.yaml"] = []byte(addBroken)
	must(t, w.Publish(f))
	time.Sleep(1500 * time.Millisecond)
	got, err := r.get("edit.e2e.test", "/")
	t.Logf("during hold, edit broken: edit.e2e.test -> %q (%v); want two (its served version)", got, err)
	if got != "two" {
		t.Errorf("edit.e2e.test answered %q during the hold, want two (last served version)", got)
	}
	got, err = r.get("added.e2e.test", "/")
	t.Logf("during hold, added broken: added.e2e.test -> %q (%v)", got, err)
	time.Sleep(12 * time.Second) // past the quiet period (the hash may restart it)
	got, err = r.get("edit.e2e.test", "/")
	t.Logf("after hold: edit.e2e.test -> %q (%v)", got, err)
	if got != "two" {
		t.Errorf("after the hold edit.e2e.test answered %q, want two", got)
	}
	got, err = r.get("added.e2e.test", "/")
	t.Logf("after hold: added.e2e.test -> %q (%v)", got, err)
	if got != "one" {
		t.Errorf("after the hold added.e2e.test answered %q (%v), want one (its served version, stale)", got, err)
	}
	got, err = r.get("d1.e2e.test", "/")
	t.Logf("after hold: d1.e2e.test -> %q (%v)", got, err)
}

// sliceYAML is EndpointSlice name of service multi, be its one endpoint.
func sliceYAML(name string, be *backend) string {
	return fmt.Sprintf("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: %s\n  namespace: e2e\n  labels:\n    kubernetes.io/service-name: multi\naddressType: IPv4\nports:\n- port: %d\nendpoints:\n- addresses: [\"127.0.0.1\"]\n", name, be.Port)
}

// A file deleted while the deletion guard holds another teardown, its
// deletion applied, stays deleted when it comes back broken: set aside as
// if its deletion were held too (T24), it came back with its old
// addresses, which served again.
func TestFileDeletedDuringAHoldStaysDeletedWhenItComesBackBroken(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 8 * time.Second
	one, two, d1, d2, d3 := startBackend(t, "one"), startBackend(t, "two"), startBackend(t, "d1"), startBackend(t, "d2"), startBackend(t, "d3")
	w := publish.NewAtomicWriter(r.dir)
	s2 := sliceYAML("multi-2", two)
	tree := func(whole bool) map[string][]byte {
		f := files(
			"router.yaml", r.routerConfig(""),
			"endpoints.yaml", join(endpointsYAML("d1", d1), endpointsYAML("d2", d2), endpointsYAML("d3", d3)),
			"multi.yaml", routeYAML("multi", "multi.e2e.test", "", "multi"),
			"s1.yaml", sliceYAML("multi-1", one),
		)
		if s2 != "" {
			f["s2.yaml"] = []byte(s2)
		}
		if whole {
			f["d1.yaml"] = []byte(routeYAML("d1", "d1.e2e.test", "", "d1"))
			f["d2.yaml"] = []byte(routeYAML("d2", "d2.e2e.test", "", "d2"))
			f["d3.yaml"] = []byte(routeYAML("d3", "d3.e2e.test", "", "d3"))
		}
		return f
	}
	answers := func(what string) map[string]int {
		seen := map[string]int{}
		for i := 0; i < 20; i++ {
			got, err := r.get("multi.e2e.test", "/")
			if err != nil {
				got = "err"
			}
			seen[got]++
		}
		t.Logf("%s: multi.e2e.test answers %v", what, seen)
		return seen
	}
	must(t, w.Publish(tree(true)))
	r.start("atomic")
	r.serves("multi.e2e.test", "/", "one")
	answers("start")
	must(t, w.Publish(tree(false))) // teardown held
	time.Sleep(500 * time.Millisecond)
	s2 = "" // s2.yaml deleted for real during the hold
	must(t, w.Publish(tree(false)))
	time.Sleep(1500 * time.Millisecond)
	if answers("s2.yaml deleted during the hold")["two"] > 0 {
		t.Fatalf("the deletion of s2.yaml was not applied")
	}
	s2 = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: [multi-2\n"
	must(t, w.Publish(tree(false)))
	time.Sleep(1500 * time.Millisecond)
	if n := answers("s2.yaml recreated broken during the hold")["two"]; n > 0 {
		t.Errorf("s2.yaml, deleted (applied) then recreated broken, serves its old address again (%d of 20)", n)
	}
	time.Sleep(10 * time.Second)
	if n := answers("after the hold")["two"]; n > 0 {
		t.Errorf("after the hold, s2.yaml's old address still serves (%d of 20)", n)
	}
}

// Routes held because their Endpoints file was deleted (the route files
// stay): the guard serves their old servers. The file comes back broken
// during the hold: its last good content serves, and the routes stay up
// after the quiet period. Only the routes' own files were set aside
// (T25): d1 answered 503 once the hold ended.
func TestEndpointsFileBackBrokenDuringAHoldKeepsItsLastGood(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 6 * time.Second
	one, d1, d2, d3 := startBackend(t, "one"), startBackend(t, "d1"), startBackend(t, "d2"), startBackend(t, "d3")
	w := publish.NewAtomicWriter(r.dir)
	eps := join(endpointsYAML("d1", d1), endpointsYAML("d2", d2), endpointsYAML("d3", d3))
	tree := func() map[string][]byte {
		f := files(
			"router.yaml", r.routerConfig(""),
			"multi.yaml", routeYAML("multi", "multi.e2e.test", "", "multi"),
			"s1.yaml", sliceYAML("multi-1", one),
			"d1.yaml", routeYAML("d1", "d1.e2e.test", "", "d1"),
			"d2.yaml", routeYAML("d2", "d2.e2e.test", "", "d2"),
			"d3.yaml", routeYAML("d3", "d3.e2e.test", "", "d3"),
		)
		if eps != "" {
			f["endpoints.yaml"] = []byte(eps)
		}
		return f
	}
	must(t, w.Publish(tree()))
	r.start("atomic")
	r.serves("d1.e2e.test", "/", "d1")
	eps = "" // endpoints.yaml deleted: d1..d3 lose every server, held
	must(t, w.Publish(tree()))
	time.Sleep(1500 * time.Millisecond)
	got, err := r.get("d1.e2e.test", "/")
	t.Logf("during the hold: d1 answers %q %v", got, err)
	eps = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: [d1\n" // back, broken
	must(t, w.Publish(tree()))
	time.Sleep(1500 * time.Millisecond)
	got, err = r.get("d1.e2e.test", "/")
	t.Logf("endpoints.yaml back broken during the hold: d1 answers %q %v", got, err)
	time.Sleep(8 * time.Second)
	got, err = r.get("d1.e2e.test", "/")
	t.Logf("after the quiet period: d1 answers %q %v", got, err)
	if got != "d1" {
		t.Errorf("after the hold, with endpoints.yaml back (broken): d1 answers %q %v, want d1 (endpoints.yaml's last good content)", got, err)
	}
}
