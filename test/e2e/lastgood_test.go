package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// The "never down" promise (DESIGN §7) against a real HAProxy: an invalid
// edit, a restart over a broken tree, an emptied or torn-down directory and
// a vanished RouterConfig all leave the served routes serving.

// servingTwoRoutes starts a router serving twoRoutes (a at a.e2e.test),
// published by an AtomicWriter, and returns it all.
func servingTwoRoutes(t *testing.T) (r *router, w *publish.AtomicWriter, gen map[string][]byte, one, two *backend) {
	t.Helper()
	r = newRouter(t)
	one, two = startBackend(t, "one"), startBackend(t, "two")
	w = publish.NewAtomicWriter(r.dir)
	gen = twoRoutes(r, one, two, "a.e2e.test")
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	return r, w, gen, one, two
}

// twoRoutes is a generation with routes a (service one) and b (service
// two); aHost is a's host as written, possibly invalid.
func twoRoutes(r *router, one, two *backend, aHost string) map[string][]byte {
	return files(
		"router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", aHost, "", "one"),
		"b.yaml", routeYAML("b", "b.e2e.test", "", "two"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
	)
}

// routeStatus waits until route name has state, and returns its status.
func (r *router) routeStatus(name string, state model.RouteState) status.Route {
	r.t.Helper()
	var got status.Route
	r.eventually(20*time.Second, fmt.Sprintf("route %s %s", name, state), func() error {
		for _, rt := range r.store.Get().Routes {
			if rt.Key == "e2e/"+name {
				got = rt
				if rt.State == state {
					return nil
				}
				return fmt.Errorf("state %s, reasons %q", rt.State, rt.Reasons)
			}
		}
		return fmt.Errorf("no status for route %s", name)
	})
	return got
}

func TestInvalidEditServesLastGood(t *testing.T) {
	r := newRouter(t)
	one, two, three := startBackend(t, "one"), startBackend(t, "two"), startBackend(t, "three")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(twoRoutes(r, one, two, "a.e2e.test")))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")

	// A port in the host: invalid. The last good version keeps serving.
	must(t, w.Publish(twoRoutes(r, one, two, "a.e2e.test:80")))
	st := r.routeStatus("a", model.RouteStale)
	if len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "a.yaml:7:") || !strings.Contains(st.Reasons[0], "spec.host") {
		t.Fatalf("stale route reasons %q do not name a.yaml:7 and spec.host", st.Reasons)
	}
	r.keepsServing("a.e2e.test", "one", 10, "invalid edit")

	// Later changes still apply: b moves to another endpoint.
	gen := twoRoutes(r, one, two, "a.e2e.test:80")
	gen["endpoints.yaml"] = []byte(join(endpointsYAML("one", one), endpointsYAML("two", three)))
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "three")
	r.keepsServing("a.e2e.test", "one", 5, "after a later change")
	if n := r.store.Get().InputProblems.Errors; n == 0 {
		t.Fatal("status counts no input errors while a route is stale")
	}

	// Fixed: the new version serves and the error clears.
	gen["a.yaml"] = []byte(routeYAML("a", "a2.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("a2.e2e.test", "/", "one")
	r.eventually(10*time.Second, "last error cleared", func() error {
		if st := r.store.Get(); st.LastError != nil {
			return fmt.Errorf("last error %q", st.LastError.Message)
		}
		return nil
	})
}

// A restart (a package upgrade) over a tree with a broken file serves the
// last good version saved in the state dir. One saved file lost or damaged
// on the state disk costs only its own entry: it threw the whole saved
// state away, and every broken file's routes went with it.
func TestRestartOverBrokenTreeServesLastGood(t *testing.T) {
	for _, lose := range []bool{false, true} {
		t.Run(map[bool]string{false: "saved state whole", true: "one saved file lost"}[lose], func(t *testing.T) {
			r := newRouter(t)
			one, two := startBackend(t, "one"), startBackend(t, "two")
			w := publish.NewAtomicWriter(r.dir)
			gen := twoRoutes(r, one, two, "a.e2e.test")
			c := []byte(routeYAML("c", "c.e2e.test", "", "one"))
			gen["c.yaml"] = c
			must(t, w.Publish(gen))
			r.start("atomic")
			r.serves("a.e2e.test", "/", "one")

			gen = twoRoutes(r, one, two, "a.e2e.test:80")
			gen["b.yaml"] = []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [b\n")
			gen["c.yaml"] = c
			must(t, w.Publish(gen))
			r.routeStatus("a", model.RouteStale)
			time.Sleep(500 * time.Millisecond) // the save runs off the loop
			r.stop()
			if lose {
				sum := sha256.Sum256(c)
				must(t, os.Remove(filepath.Join(r.stateDir, "lastgood", "objects", hex.EncodeToString(sum[:]))))
			}

			r.start("atomic")
			r.serves("a.e2e.test", "/", "one")
			r.serves("b.e2e.test", "/", "two")
			r.serves("c.e2e.test", "/", "one") // from the tree
			r.routeStatus("a", model.RouteStale)
			if lose {
				// Reported, though later errors (a's) take the last
				// error's place.
				st := r.store.Get()
				if !slices.ContainsFunc(st.RecentErrors, func(e status.Error) bool {
					return strings.Contains(e.Message, "1 entries unusable (c.yaml: open")
				}) {
					t.Errorf("the lost saved file is not among the recent errors: %+v", st.RecentErrors)
				}
			}
		})
	}
}

// A restart over a broken tree, with the saved index damaged and FIFOs in
// place of haroute's own files in the state and run dirs (a fault, or a
// stray hand): the index's copy restores the last good versions, and no
// FIFO is read. Read, each held the start until a writer came, HAProxy
// was never started, and every route stayed down.
func TestRestartOverDamagedStateServesLastGood(t *testing.T) {
	r, w, gen, _, _ := servingTwoRoutes(t)
	gen["b.yaml"] = []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [b\n")
	must(t, w.Publish(gen))
	r.routeStatus("b", model.RouteStale)
	time.Sleep(500 * time.Millisecond) // the save runs off the loop
	r.stop()

	must(t, os.WriteFile(filepath.Join(r.stateDir, "lastgood", "index.json"), []byte(`{"version":2,"files":[`), 0o600))
	for _, path := range []string{
		filepath.Join(r.stateDir, "default.pem"),
		filepath.Join(r.stateDir, "live", "haproxy.cfg"),
		filepath.Join(r.runDir, "haproxy.pid"),
		filepath.Join(r.runDir, "haroute.lock"),
	} {
		must(t, os.Remove(path))
		must(t, syscall.Mkfifo(path, 0o600))
	}
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.serves("b.e2e.test", "/", "two") // its last good version, from the copy
	r.routeStatus("b", model.RouteStale)
	r.serves("a.e2e.test", "/", "one")
}

// An upgrade whose validation refuses the RouterConfig an earlier version
// served and saved (a rule it added) does not start HAProxy on the
// defaults: the failed load of the saved one left them as the last good
// settings, and HAProxy came up on 0.0.0.0:80, 443 and 1936, every route
// gone from its ports. It waits, not ready, for a RouterConfig it can use.
func TestSavedRouterConfigThatNoLongerLoadsDoesNotMoveThePorts(t *testing.T) {
	r, w, gen, _, _ := servingTwoRoutes(t)
	time.Sleep(500 * time.Millisecond) // the save runs off the loop
	r.stop()

	// What the "earlier version" served, refused by this one.
	bad := []byte(r.routerConfig("  httpHeaders:\n    uniqueId:\n      name: Host\n"))
	hash := func(b []byte) string { sum := sha256.Sum256(b); return hex.EncodeToString(sum[:]) }
	saved := filepath.Join(r.stateDir, "lastgood")
	must(t, os.WriteFile(filepath.Join(saved, "objects", hash(bad)), bad, 0o600))
	for _, name := range []string{"index.json", "index.copy.json"} {
		idx, err := os.ReadFile(filepath.Join(saved, name))
		must(t, err)
		if !strings.Contains(string(idx), hash(gen["router.yaml"])) {
			t.Fatalf("%s does not name the saved RouterConfig: %s", name, idx)
		}
		idx = []byte(strings.ReplaceAll(string(idx), hash(gen["router.yaml"]), hash(bad)))
		must(t, os.WriteFile(filepath.Join(saved, name), idx, 0o600))
	}
	good := gen["router.yaml"]
	gen["router.yaml"] = bad
	must(t, w.Publish(gen))

	r.startNoWait("atomic")
	r.reportsError("not starting HAProxy until it is fixed")
	if st := r.store.Get(); st.Ready || st.HAProxy.PID != 0 {
		t.Fatalf("ready %v, haproxy pid %d: want not ready and no HAProxy", st.Ready, st.HAProxy.PID)
	}
	if cfg, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg")); err == nil && strings.Contains(string(cfg), "bind :80") {
		t.Fatalf("the live haproxy.cfg binds the default port:\n%s", cfg)
	}
	// Nor with the config dir unreadable at start, the saved state alone.
	r.stop()
	must(t, os.Rename(r.dir, r.dir+".away"))
	r.startNoWait("auto")
	r.reportsError("the saved RouterConfig cannot be used")
	if st := r.store.Get(); st.Ready || st.HAProxy.PID != 0 {
		t.Fatalf("config dir unreadable: ready %v, haproxy pid %d: want not ready and no HAProxy", st.Ready, st.HAProxy.PID)
	}
	r.stop()
	must(t, os.Rename(r.dir+".away", r.dir))
	r.startNoWait("atomic")
	gen["router.yaml"] = good
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "one")
	r.serves("b.e2e.test", "/", "two")
}

// A config dir that cannot be read at start serves the saved state.
func TestStartWithoutConfigDirServesSaved(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(twoRoutes(r, one, two, "a.e2e.test")))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	time.Sleep(500 * time.Millisecond)
	r.stop()

	must(t, os.RemoveAll(r.dir))
	r.start("auto")
	r.serves("a.e2e.test", "/", "one")
	r.serves("b.e2e.test", "/", "two")
}

// An Endpoints whose new version has errors keeps serving its last good
// version, and status lists it among the stale objects: it was counted
// (haroute_stale_objects) but named nowhere, its route shown "admitted".
func TestStaleEndpointsAreListed(t *testing.T) {
	r, w, gen, _, _ := servingTwoRoutes(t)
	gen["endpoints.yaml"] = []byte(strings.Replace(string(gen["endpoints.yaml"]), "ip: 127.0.0.1", "ip: 127.0.0.999", 1))
	must(t, w.Publish(gen))
	want := "Endpoints e2e/one: serving its last good version; the current one, in endpoints.yaml, has errors"
	r.serves("b.e2e.test", "/", "two")
	r.eventually(10*time.Second, "the stale Endpoints listed", func() error {
		if got := r.store.Get().StaleObjects; !slices.Equal(got, []string{want}) {
			return fmt.Errorf("stale objects %q", got)
		}
		return nil
	})
	r.keepsServing("a.e2e.test", "one", 5, "a broken Endpoints")
}

// A route defined in two files serves the definition that served first;
// a restart, without that history, took the first by position, and the
// route moved to the other copy (a 503 where that copy's service had no
// endpoints). The saved state keeps the choice.
func TestDuplicateDefinitionKeepsServingAcrossARestart(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""), "zz.yaml", routeYAML("d", "d.e2e.test", "", "one"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("d.e2e.test", "/", "one")
	gen["aa.yaml"] = []byte(routeYAML("d", "d.e2e.test", "", "two")) // a copy, first by position
	must(t, w.Publish(gen))
	time.Sleep(time.Second)
	r.keepsServing("d.e2e.test", "one", 3, "the copy added")
	time.Sleep(1500 * time.Millisecond) // the save runs off the loop
	r.stop()

	r.start("atomic")
	r.keepsServing("d.e2e.test", "one", 5, "a restart")
}

// A problem fixed while another file broke stayed "standing" in the
// error history until every problem was fixed.
func TestFixedProblemIsResolvedWhileAnotherStands(t *testing.T) {
	r, w, gen, _, _ := servingTwoRoutes(t)
	good := maps.Clone(gen)
	broken := []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [x\n")

	gen["a.yaml"] = broken
	must(t, w.Publish(gen))
	r.reportsError("first: a.yaml:")
	gen["a.yaml"], gen["b.yaml"] = good["a.yaml"], broken
	must(t, w.Publish(gen))
	r.reportsError("first: b.yaml:")
	r.eventually(10*time.Second, "a.yaml's problem resolved, b.yaml's standing", func() error {
		for _, e := range r.store.Get().RecentErrors {
			if strings.Contains(e.Message, "first: a.yaml:") && e.Standing() {
				return fmt.Errorf("still standing: %s", e.Message)
			}
			if strings.Contains(e.Message, "first: b.yaml:") && !e.Standing() {
				return fmt.Errorf("resolved while it stands: %s", e.Message)
			}
		}
		return nil
	})

	// Another problem while b.yaml's stands (a.yaml broken again, which
	// sorts first): b.yaml's is not resolved, it is still there.
	gen["a.yaml"] = broken
	must(t, w.Publish(gen))
	r.reportsError("2 problem(s)")
	for _, e := range r.store.Get().RecentErrors {
		if strings.Contains(e.Message, "first: b.yaml:") && !e.Standing() {
			t.Errorf("resolved while it stands: %s", e.Message)
		}
	}
	// A third problem, a.yaml's still first: the count's summary takes
	// over from the last, rather than stand beside it.
	gen["c.yaml"] = broken
	must(t, w.Publish(gen))
	r.reportsError("3 problem(s)")
	// Status lists every problem, not only the first the last error
	// names: a file that does not parse names no object to look under.
	list := r.store.Get().InputProblems.ErrorList
	for _, f := range []string{"a.yaml:", "b.yaml:", "c.yaml:"} {
		if !slices.ContainsFunc(list, func(e string) bool { return strings.HasPrefix(e, f) }) {
			t.Errorf("status lists %q, without %s's problem", list, f)
		}
	}
	standing := 0
	for _, e := range r.store.Get().RecentErrors {
		if strings.Contains(e.Message, "first: a.yaml:") && e.Standing() {
			standing++
		}
	}
	if standing != 1 {
		t.Errorf("%d standing summaries name a.yaml's problem first, want 1: %+v", standing, r.store.Get().RecentErrors)
	}
}

// A missing config dir on a first start (a typo in --config-dir) said
// "the last good state keeps serving" while nothing served: there is no
// saved state yet.
func TestFirstStartWithoutConfigDirSaysNothingServes(t *testing.T) {
	r := newRouter(t)
	store := &status.Store{}
	d, err := daemon.New(daemon.Options{ConfigDir: filepath.Join(t.TempDir(), "typo"), RunDir: r.runDir,
		StateDir: filepath.Join(t.TempDir(), "state"), HAProxy: testutil.HAProxy(t), Status: store,
		Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	r.eventually(10*time.Second, "the read error in status", func() error {
		st := store.Get()
		if st.LastError == nil || !strings.Contains(st.LastError.Message, "nothing is served until it can be read (there is no saved state to serve)") {
			return fmt.Errorf("last error %+v", st.LastError)
		}
		return nil
	})
}

// An emptied directory is applied only after it stayed empty for the quiet
// period; a teardown that is republished within it deletes nothing.
func TestDeletionGuard(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 3 * time.Second
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	gen := twoRoutes(r, one, two, "a.e2e.test")
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	http := r.http

	// Torn down (the kubelet removing the volume): unreadable, so nothing
	// changes. Then it comes back empty, and is republished within the
	// quiet period: nothing is deleted at any point.
	tearDown(t, r.dir)
	r.reportsError("read")
	r.keepsServing("a.e2e.test", "one", 10, "directory torn down")
	w = publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files("README", "nothing here")))
	r.eventually(10*time.Second, "guard holds", func() error {
		if r.store.Get().DeletionGuard == nil {
			return fmt.Errorf("no deletion guard in status")
		}
		return nil
	})
	r.keepsServing("a.e2e.test", "one", 10, "directory empty")
	must(t, w.Publish(gen))
	deadline := time.Now().Add(2 * r.deletionQuiet)
	for time.Now().Before(deadline) {
		r.keepsServing("a.e2e.test", "one", 1, "republished within the quiet period")
		time.Sleep(100 * time.Millisecond)
	}
	if g := r.store.Get().DeletionGuard; g != nil {
		t.Fatalf("guard still holds after the directory came back: %+v", g)
	}

	// Emptied for good: applied after the quiet period, and the ports do
	// not move although the RouterConfig went too.
	must(t, w.Publish(files("README", "nothing here")))
	r.keepsServing("a.e2e.test", "one", 5, "just emptied")
	r.eventually(20*time.Second, "emptied directory applied", func() error {
		if _, err := r.get("a.e2e.test", "/"); err == nil {
			return fmt.Errorf("a.e2e.test still served")
		}
		return nil
	})
	if r.http != http {
		t.Fatal("port moved")
	}
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "two")
}

// tearDown removes an AtomicWriter directory the way the kubelet removes a
// volume: the data link, the timestamped directories and the user links.
func tearDown(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range entries {
		must(t, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
}

// A generation without the RouterConfig keeps its ports.
func TestRouterConfigVanishingKeepsPorts(t *testing.T) {
	r, w, gen, _, two := servingTwoRoutes(t)
	delete(gen, "router.yaml")
	gen["endpoints.yaml"] = []byte(join(endpointsYAML("one", two), endpointsYAML("two", two)))
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "two") // on the same port
}

// A generation HAProxy refuses as a whole, arriving while an accepted one
// waits for its throttled reload, never shows in status: the hash and the
// generation published are those of what HAProxy loaded.
func TestRefusedGenerationBehindThrottledReload(t *testing.T) {
	r := newRouter(t)
	refusedPort := testutil.FreePort(t)
	// haproxy -c refuses any candidate listening on refusedPort; everything
	// else goes to the real binary.
	r.haproxy = filepath.Join(t.TempDir(), "haproxy")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -c ] && grep -q ':%d' \"$3\"; then echo \"[ALERT] refusing port %d\" >&2; exit 1; fi\nexec %s \"$@\"\n",
		refusedPort, refusedPort, testutil.HAProxy(t))
	must(t, os.WriteFile(r.haproxy, []byte(script), 0o755))

	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	rc := strings.Replace(r.routerConfig(""), "reloadInterval: 1s", "reloadInterval: 4s", 1)
	gen := files("router.yaml", rc, "a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")

	gen["b.yaml"] = []byte(routeYAML("b", "b.e2e.test", "", "two"))
	must(t, w.Publish(gen)) // a reload, at once
	r.serves("b.e2e.test", "/", "two")
	gen["c.yaml"] = []byte(routeYAML("c", "c.e2e.test", "", "two"))
	must(t, w.Publish(gen)) // a reload, throttled
	refused := maps.Clone(gen)
	refused["router.yaml"] = []byte(strings.Replace(rc, fmt.Sprintf("http: %d", r.http), fmt.Sprintf("http: %d", refusedPort), 1))
	must(t, w.Publish(refused))
	r.reportsError("refusing port")
	r.serves("c.e2e.test", "/", "two")

	var applied []daemon.Applied
	r.eventually(20*time.Second, "the throttled reload applied", func() error {
		applied = r.appliedSnapshot()
		if n := len(applied[len(applied)-1].Desired.Routes); n != 3 {
			return fmt.Errorf("last applied has %d routes, want a, b and c", n)
		}
		return nil
	})
	last := applied[len(applied)-1]
	for _, a := range applied {
		if a.Desired.Router.HTTPPort == refusedPort {
			t.Fatalf("generation %d with the refused port was applied", a.Generation)
		}
	}
	st := r.store.Get()
	if st.ConfigHash != last.Snapshot.Hash || st.Generation != last.Generation {
		t.Fatalf("status names hash %s generation %d; HAProxy runs %s generation %d", st.ConfigHash, st.Generation, last.Snapshot.Hash, last.Generation)
	}
}

// A directory found empty at start (the volume torn down while haroute
// was down) is held by the deletion guard like one emptied while running:
// the saved state serves meanwhile, and the empty generation applies only
// once it has stayed so for the quiet period.
func TestStartOverEmptiedDirectoryServesSaved(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 3 * time.Second
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(twoRoutes(r, one, two, "a.e2e.test")))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	time.Sleep(1500 * time.Millisecond) // the save runs off the loop, at most once a second
	r.stop()

	must(t, w.Publish(files("README", "nothing here")))
	r.start("atomic")
	r.keepsServing("a.e2e.test", "one", 5, "started over an emptied directory")
	if r.store.Get().DeletionGuard == nil {
		t.Fatal("no deletion guard in status at start over an emptied directory")
	}
	r.eventually(20*time.Second, "emptied directory applied after the quiet period", func() error {
		if _, err := r.get("a.e2e.test", "/"); err == nil {
			return fmt.Errorf("a.e2e.test still served")
		}
		return nil
	})
}

// A RouterConfig removed from the tree keeps its settings, ports included
// (a file that disappeared never moves them), and so does a restart after
// that: the saved state keeps the RouterConfig's last good file. It came
// up on the default ports, on every address.
func TestRestartAfterRouterConfigVanishedKeepsPorts(t *testing.T) {
	r, w, gen, _, _ := servingTwoRoutes(t)

	delete(gen, "router.yaml")
	gen["c.yaml"] = []byte(routeYAML("c", "c.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("c.e2e.test", "/", "one") // applied, on the same ports
	time.Sleep(500 * time.Millisecond) // the save runs off the loop
	r.stop()

	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.serves("c.e2e.test", "/", "one")
}

// Plain mode: a writer that stalls mid-file leaves what it wrote so far,
// which can be valid YAML with other values: the endpoint's port cut from
// 5 digits to 4 sent the route to a port nothing listens on. A changed
// file that does not end with a newline now waits for the quiet period;
// completed in time, nothing was applied. One that stays so is applied
// after it.
func TestPlainFileCutOffMidWriteIsHeld(t *testing.T) {
	r, _ := servingOneRoutePlain(t, 4*time.Second)
	eps := filepath.Join(r.dir, "endpoints.yaml")
	whole, err := os.ReadFile(eps)
	must(t, err)
	cut := whole[:len(whole)-2] // "port: 4xxxx" becomes "port: 4xxx", no newline
	served := r.store.Get().ConfigHash
	must(t, os.WriteFile(eps, cut, 0o644))
	until := time.Now().Add(2 * time.Second)
	for time.Now().Before(until) {
		if got, err := r.get("one.e2e.test", "/"); err != nil || got != "one" {
			t.Fatalf("a file cut off mid-write was applied: answered %q, %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// T30: status named the content read, which does not run, as the
	// content HAProxy runs.
	if got := r.store.Get().ConfigHash; got != served {
		t.Errorf("config hash while the cut file is held = %s, want the served %s", got, served)
	}
	must(t, os.WriteFile(eps, whole, 0o644))
	// T31: the write-back reads as what is served, which is the held
	// snapshot's hash: it was passed over, and the file listed as held
	// until the quiet period ran out.
	r.eventually(1500*time.Millisecond, "held files cleared by the write-back", func() error {
		if held := r.store.Get().HeldFiles; len(held) != 0 {
			return fmt.Errorf("held files %q", held)
		}
		return nil
	})
	time.Sleep(5 * time.Second) // past the quiet period: nothing held is applied
	r.serves("one.e2e.test", "/", "one")

	two := startBackend(t, "two")
	must(t, os.WriteFile(eps, []byte(strings.TrimSuffix(endpointsYAML("one", two), "\n")), 0o644))
	r.serves("one.e2e.test", "/", "two") // held, then applied
}

// T27: a changed file without a final newline held the whole generation.
// A script that kept replacing one (here every 500 ms, the quiet period
// 4 s) kept every other change of the directory from applying: an
// endpoint move stayed unserved for as long as the script ran. Only the
// file waits now: the move applies at once, the file's new route once it
// has read the same for the quiet period.
func TestFileWithoutANewlineHoldsOnlyItself(t *testing.T) {
	r, _ := servingOneRoutePlain(t, 4*time.Second)
	two := startBackend(t, "two")

	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			route := strings.Replace(routeYAML("nonl", "nonl.e2e.test", "", "one"), "namespace: e2e", fmt.Sprintf("namespace: e2e\n  labels:\n    v: \"%d\"", i), 1)
			tmp := filepath.Join(r.dir, ".nonl.yaml.tmp")
			if err := os.WriteFile(tmp, []byte(strings.TrimSuffix(route, "\n")), 0o644); err == nil {
				_ = os.Rename(tmp, filepath.Join(r.dir, "nonl.yaml"))
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	time.Sleep(time.Second) // the writer's file is held by now
	must(t, os.WriteFile(filepath.Join(r.dir, "endpoints.yaml"), []byte(endpointsYAML("one", two)), 0o644))
	r.servesWithin(3*time.Second, "one.e2e.test", "/", "two")
	if got, err := r.get("nonl.e2e.test", "/"); err == nil && got == "two" {
		t.Errorf("nonl.e2e.test served while its file kept changing without a final newline")
	}
	if held := r.store.Get().HeldFiles; !slices.Equal(held, []string{"nonl.yaml"}) {
		t.Errorf("status held files = %q, want [nonl.yaml]", held)
	}
	close(stop)
	<-stopped
	r.servesWithin(15*time.Second, "nonl.e2e.test", "/", "two") // once it read the same for the quiet period
	if held := r.store.Get().HeldFiles; len(held) != 0 {
		t.Errorf("status held files = %q once applied, want none", held)
	}
}

// T29, on the fix above: endpoints moved to a new file written without
// a final newline read as a drop while the file was held, and the drop
// was applied on the guard's own clock, before the file: every route
// answered 503 from the end of the quiet period until the file was
// taken. A drop now waits while such a file is held.
func TestDropWaitsForAFileWithoutANewline(t *testing.T) {
	r, one := servingOneRoutePlain(t, 3*time.Second)

	must(t, os.Remove(filepath.Join(r.dir, "endpoints.yaml")))
	time.Sleep(2 * time.Second) // the drop is held by now
	must(t, os.WriteFile(filepath.Join(r.dir, "eps-one.yaml"), []byte(strings.TrimSuffix(endpointsYAML("one", one), "\n")), 0o644))
	// The drop's quiet period ends a second later, the file's 3 s after
	// it was written: the route serves throughout.
	// Status says why the drop still waits once its quiet period is over.
	waitsForFiles := false
	until := time.Now().Add(6 * time.Second)
	for time.Now().Before(until) {
		if got, err := r.get("one.e2e.test", "/"); err != nil || got != "one" {
			t.Fatalf("while the endpoints' new file was held: answered %q, %v", got, err)
		}
		if g := r.store.Get().DeletionGuard; g != nil && strings.Contains(g.Reason, "files that may be cut off mid-write are held") {
			waitsForFiles = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !waitsForFiles {
		t.Errorf("status never said the drop waits for the held file")
	}
	if g := r.store.Get(); len(g.HeldFiles) != 0 || g.DeletionGuard != nil {
		t.Errorf("held files %q and guard %+v once the file was taken, want none", g.HeldFiles, g.DeletionGuard)
	}
}

// A plain-mode file rewritten in place by a writer that pauses, its
// descriptor open, at a line boundary (scp over a slow link): what was
// written so far parses, and applied at once, it dropped the edge route's
// tls block, so HTTPS to it failed until the rest arrived (deletions the
// deletion guard holds; this is a change). The change now waits for the
// writer to close the file, and so does a resync asked for meanwhile
// (SIGHUP), which read the directory at once.
func TestPlainFileStillBeingWrittenIsNotApplied(t *testing.T) {
	for _, resync := range []bool{false, true} {
		t.Run(map[bool]string{false: "change", true: "resync asked for mid-write"}[resync], func(t *testing.T) {
			r := newRouter(t)
			one := startBackend(t, "one")
			routes := join(routeYAML("a", "a.e2e.test", "", "one"), edgeRouteYAML("c", "c.e2e.test", "one"))
			gen := files("router.yaml", r.routerConfig(""), "routes.yaml", routes, "endpoints.yaml", endpointsYAML("one", one))
			for name, data := range gen {
				must(t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
			}
			r.start("plain")
			r.eventually(20*time.Second, "c served over HTTPS", func() error { _, err := r.getTLS("c.e2e.test"); return err })

			f, err := os.OpenFile(filepath.Join(r.dir, "routes.yaml"), os.O_WRONLY|os.O_TRUNC, 0)
			must(t, err)
			defer f.Close()
			cut := strings.LastIndex(routes, "  tls:\n")
			_, err = f.WriteString(routes[:cut])
			must(t, err)
			if resync {
				time.Sleep(300 * time.Millisecond) // past the quiet period: the writer holds the change
				r.trigger <- struct{}{}
			}
			for until := time.Now().Add(1500 * time.Millisecond); time.Now().Before(until); time.Sleep(50 * time.Millisecond) {
				if _, err := r.getTLS("c.e2e.test"); err != nil {
					t.Fatalf("HTTPS to c failed while its file was still being written: %v", err)
				}
			}
			_, err = f.WriteString(routes[cut:] + "    insecureEdgeTerminationPolicy: Allow\n")
			must(t, err)
			must(t, f.Close())
			r.serves("c.e2e.test", "/", "one") // the whole file, once closed: plain HTTP allowed
			if _, err := r.getTLS("c.e2e.test"); err != nil {
				t.Fatalf("HTTPS to c after the write: %v", err)
			}
		})
	}
}

// A RouterConfig that is invalid, or that HAProxy refuses, keeps the last
// good settings while haroute runs, and now across a restart too: the
// restart came up on the defaults (0.0.0.0:80/443/1936) for an invalid one,
// and started HAProxy on a refused one, which it then could not load.
func TestRestartKeepsSettingsOfARefusedRouterConfig(t *testing.T) {
	for _, tc := range []struct{ name, extra string }{
		{"invalid", "  logging:\n    access:\n      destination:\n        type: Container\n      httpLogFormat: \"%{+Z}ci\"\n"},
		{"refused by haproxy", "  logging:\n    access:\n      destination:\n        type: Container\n      httpLogFormat: \"%ci %[nosuchfetch]\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter(t)
			one, two := startBackend(t, "one"), startBackend(t, "two")
			w := publish.NewAtomicWriter(r.dir)
			gen := twoRoutes(r, one, two, "a.e2e.test")
			must(t, w.Publish(gen))
			r.start("atomic")
			r.serves("a.e2e.test", "/", "one")

			gen["router.yaml"] = []byte(r.routerConfig(tc.extra))
			gen["c.yaml"] = []byte(routeYAML("c", "c.e2e.test", "", "one"))
			must(t, w.Publish(gen))
			r.serves("c.e2e.test", "/", "one")  // applied with the last good settings
			time.Sleep(1500 * time.Millisecond) // the save runs off the loop
			r.stop()

			r.start("atomic")
			r.serves("a.e2e.test", "/", "one")
			r.serves("c.e2e.test", "/", "one")
		})
	}
}

// A route whose service lost its last endpoint is held by the deletion
// guard (in plain mode); status showed it "admitted", and named it
// nowhere but the log.
func TestRouteThatLostItsLastEndpointIsShownHeld(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 4 * time.Second
	one, two := startBackend(t, "one"), startBackend(t, "two")
	for name, data := range twoRoutes(r, one, two, "a.e2e.test") {
		must(t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
	}
	r.start("plain")
	r.serves("b.e2e.test", "/", "two")
	must(t, os.WriteFile(filepath.Join(r.dir, "endpoints.yaml"), []byte(endpointsYAML("one", one)), 0o644))
	st := r.routeStatus("b", model.RouteHeld)
	if len(st.Reasons) != 1 || !strings.Contains(st.Reasons[0], "lost its last endpoint") {
		t.Fatalf("held b's reasons %q, want one saying its service lost its last endpoint", st.Reasons)
	}
	for _, n := range st.Notes {
		if strings.Contains(n, "503") {
			t.Errorf("held b's note %q says it answers 503 while it serves", n)
		}
	}
	r.keepsServing("b.e2e.test", "two", 3, "b's last endpoint is held")
}

// The deletion guard held a whole generation back: while a route's
// deletion waited for the quiet period, every other change in the
// directory waited with it, and changes that kept coming (an endpoints
// file a script rewrites) kept resetting the wait, so nothing applied at
// all. The routes a held generation drops are kept as they were; the rest
// applies at once, and the deletion once the directory is quiet.
func TestDeletionGuardHoldsOnlyTheDeletion(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 4 * time.Second
	one, two, three := startBackend(t, "one"), startBackend(t, "two"), startBackend(t, "three")
	for name, data := range twoRoutes(r, one, two, "a.e2e.test") {
		must(t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
	}
	r.start("plain")
	r.serves("a.e2e.test", "/", "one")
	r.serves("b.e2e.test", "/", "two")

	must(t, os.Remove(filepath.Join(r.dir, "b.yaml")))
	time.Sleep(time.Second) // seen, and held
	// Served, so listed: it had vanished from status while still served.
	r.eventually(2*time.Second, "e2e/b held in status", func() error {
		for _, rt := range r.store.Get().Routes {
			if rt.Key == "e2e/b" {
				if rt.State != model.RouteHeld || rt.Host != "b.e2e.test" {
					return fmt.Errorf("state %s, host %s", rt.State, rt.Host)
				}
				return nil
			}
		}
		return errors.New("e2e/b not in status")
	})
	eps := filepath.Join(r.dir, "endpoints.yaml")
	for i, b := range []*backend{three, one, three} {
		must(t, os.WriteFile(eps, []byte(join(endpointsYAML("one", b), endpointsYAML("two", two))), 0o644))
		deadline := time.Now().Add(2 * time.Second)
		for {
			got, err := r.get("a.e2e.test", "/")
			if err == nil && got == b.Name {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("change %d: a answered %q, %v 2 s after its endpoints moved to %s, while b's deletion was held", i, got, err, b.Name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r.keepsServing("b.e2e.test", "two", 3, "b's deletion is held while the directory changes")
	}
	// The wait is for the same routes dropped, not for the whole directory
	// to be still: changes that go on do not put the deletion off.
	gone := false
	for range 8 {
		must(t, os.WriteFile(eps, []byte(join(endpointsYAML("one", one, three), endpointsYAML("two", two))), 0o644))
		time.Sleep(500 * time.Millisecond)
		must(t, os.WriteFile(eps, []byte(join(endpointsYAML("one", three), endpointsYAML("two", two))), 0o644))
		time.Sleep(500 * time.Millisecond)
		if _, err := r.get("b.e2e.test", "/"); err != nil {
			gone = true
		}
	}
	if !gone {
		t.Fatal("b's deletion waited on while other files kept changing, 8 s past a 4 s quiet period")
	}
	r.serves("a.e2e.test", "/", "three")

	// A route renamed, with what it claimed moved to the new name, drops
	// nothing: it applies at once, not after the quiet period.
	a, err := os.ReadFile(filepath.Join(r.dir, "a.yaml"))
	must(t, err)
	must(t, os.Remove(filepath.Join(r.dir, "a.yaml")))
	must(t, os.WriteFile(filepath.Join(r.dir, "a2.yaml"), []byte(strings.Replace(string(a), "name: a\n", "name: a2\n", 1)), 0o644))
	r.eventually(2*time.Second, "the rename applied at once", func() error {
		for _, rt := range r.store.Get().Routes {
			if rt.Key == "e2e/a2" {
				return nil
			}
		}
		return errors.New("e2e/a2 not in status yet")
	})
	r.serves("a.e2e.test", "/", "three")
}

// A route that serves a host keeps it against a newer route of another
// namespace with an older creationTimestamp, and across a restart: the
// restarted daemon's first decision has no history of its own, and would
// go by the timestamps.
func TestServedRouteKeepsItsHostAcrossRestart(t *testing.T) {
	r := newRouter(t)
	shop, steal := startBackend(t, "shop"), startBackend(t, "steal")
	w := publish.NewAtomicWriter(r.dir)
	shopYAML := strings.Replace(routeYAML("shop", "shop.e2e.test", "", "shop"), "namespace: e2e", "namespace: team5", 1)
	// In namespace e2e, which also sorts before team5.
	stealYAML := strings.Replace(routeYAML("steal", "shop.e2e.test", "", "steal"), "namespace: e2e",
		"namespace: e2e\n  creationTimestamp: \"2000-01-01T00:00:00Z\"", 1)
	eps := func(ns, name string, b *backend) string {
		return strings.Replace(endpointsYAML(name, b), "namespace: e2e", "namespace: "+ns, 1)
	}
	pub := func(routes ...string) {
		must(t, w.Publish(files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", join(routes...),
			"endpoints.yaml", join(eps("team5", "shop", shop), endpointsYAML("steal", steal)),
		)))
	}
	pub(shopYAML)
	r.start("atomic")
	r.serves("shop.e2e.test", "/", "shop")

	pub(shopYAML, stealYAML)
	r.routeStatus("steal", model.RouteRejected)
	r.serves("shop.e2e.test", "/", "shop")
	time.Sleep(500 * time.Millisecond) // the save runs off the loop
	r.stop()

	r.start("atomic")
	r.routeStatus("steal", model.RouteRejected)
	r.serves("shop.e2e.test", "/", "shop")
}

// A tree published half (a teardown) without a served route's file, while
// a rival of another namespace with an older creationTimestamp waits on
// its host: the deletion guard holds the route, the rival stays out, and
// the whole tree published again serves the route as before. The same
// holds when haroute restarts during the hold, and when the rival is
// stale (its last good version serves another host, its current version
// claims this one): it keeps serving the other host.
func TestTeardownDoesNotHandAHostToItsRival(t *testing.T) {
	for _, c := range []struct {
		name             string
		restart, staleRv bool
		// back is shop's file when the tree comes back: its own
		// (""), or one that does not validate or parse, whose last good
		// version must serve on.
		back string
	}{
		{name: "rejected rival"},
		{name: "restart during the hold", restart: true},
		{name: "stale rival", staleRv: true},
		{name: "back invalid", back: "port"},
		{name: "back unparsable", back: "unparsable"},
		{name: "restart during the hold then back unparsable", restart: true, back: "unparsable"},
	} {
		t.Run(c.name, func(t *testing.T) { teardownWithRival(t, c.restart, c.staleRv, c.back) })
	}
}

func teardownWithRival(t *testing.T, restart, staleRival bool, back string) {
	r := newRouter(t)
	r.deletionQuiet = 10 * time.Second
	shop, steal, other := startBackend(t, "shop"), startBackend(t, "steal"), startBackend(t, "other")
	w := publish.NewAtomicWriter(r.dir)
	shopYAML := strings.Replace(routeYAML("shop", "shop.e2e.test", "", "shop"), "namespace: e2e", "namespace: team5", 1)
	// In namespace e2e, which also sorts before team5.
	stealRoute := func(host string) string {
		return strings.Replace(routeYAML("steal", host, "", "steal"), "namespace: e2e",
			"namespace: e2e\n  creationTimestamp: \"2000-01-01T00:00:00Z\"", 1)
	}
	// Half a tree lacks shop's file and other's: more than half the
	// routes, which the guard holds in any watch mode.
	tree := func(whole bool, stealHost string) map[string][]byte {
		f := files(
			"router.yaml", r.routerConfig(""),
			"endpoints.yaml", join(strings.Replace(endpointsYAML("shop", shop), "namespace: e2e", "namespace: team5", 1),
				endpointsYAML("steal", steal), endpointsYAML("other", other)),
		)
		if whole {
			f["shop.yaml"] = []byte(shopYAML)
			f["other.yaml"] = []byte(routeYAML("other", "other.e2e.test", "", "other"))
		}
		if stealHost != "" {
			f["steal.yaml"] = []byte(stealRoute(stealHost))
		}
		return f
	}
	must(t, w.Publish(tree(true, "")))
	r.start("atomic")
	r.serves("shop.e2e.test", "/", "shop")
	rivalState := model.RouteRejected
	if staleRival {
		// Served on a host of its own, then moved onto shop's: it loses,
		// and its last good version serves on.
		must(t, w.Publish(tree(true, "steal.e2e.test")))
		r.serves("steal.e2e.test", "/", "steal")
		rivalState = model.RouteStale
	}
	must(t, w.Publish(tree(true, "shop.e2e.test")))
	r.routeStatus("steal", rivalState)
	time.Sleep(500 * time.Millisecond) // the save runs off the loop

	must(t, w.Publish(tree(false, "shop.e2e.test")))
	if restart {
		time.Sleep(300 * time.Millisecond) // the hold begins
		r.stop()
		r.start("atomic")
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if got, err := r.get("shop.e2e.test", "/"); err != nil || got != "shop" {
			t.Fatalf("while the teardown is held: shop.e2e.test answered by %q (%v), want shop", got, err)
		}
		if staleRival {
			if got, err := r.get("steal.e2e.test", "/"); err != nil || got != "steal" {
				t.Fatalf("while the teardown is held: the stale rival's host answered by %q (%v), want steal", got, err)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The tree comes back (other's route with it), shop's file as it
	// was or broken: whatever of shop's it holds, its last good version
	// keeps the host. The hold's result was taken for last good: a stale
	// rival lost its own host, and shop's broken file handed shop's host
	// to the rival at once.
	whole := tree(true, "shop.e2e.test")
	switch back {
	case "port":
		whole["shop.yaml"] = []byte(strings.Replace(shopYAML, "host: shop.e2e.test", "host: shop.e2e.test:80", 1))
	case "unparsable":
		whole["shop.yaml"] = []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [shop\n")
	}
	mark := len(r.appliedSnapshot())
	must(t, w.Publish(whole))
	r.appliedSince(mark, 20*time.Second, "the tree back whole", func(d *model.Desired) bool {
		i, ok := model.FindStatus(d.Statuses, model.RouteKey{Namespace: "e2e", Name: "other"})
		return ok && d.Statuses[i].State == model.RouteAdmitted
	})
	if got := r.routeStatus("steal", rivalState); got.State != rivalState {
		t.Errorf("the rival is %s once the tree is back, want %s", got.State, rivalState)
	}
	r.keepsServing("shop.e2e.test", "shop", 5, "the tree back")
	if staleRival {
		r.keepsServing("steal.e2e.test", "steal", 5, "the stale rival's last good version")
	}
	time.Sleep(12 * time.Second) // past the quiet period
	if got, err := r.get("shop.e2e.test", "/"); err != nil || got != "shop" {
		t.Errorf("after the quiet period: shop.e2e.test answered by %q (%v), want shop", got, err)
	}
}

// A restart while the deletion guard holds a teardown serves the saved
// state, which a held generation never replaces: a route added during the
// hold waited for whatever read came next (T22). It is applied at once,
// against the saved state, and the held routes serve on.
func TestRouteAddedDuringAHoldServesAcrossARestart(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 10 * time.Second
	a, b, n := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "n")
	w := publish.NewAtomicWriter(r.dir)
	eps := join(endpointsYAML("a", a), endpointsYAML("b", b), endpointsYAML("n", n))
	must(t, w.Publish(files("router.yaml", r.routerConfig(""), "endpoints.yaml", eps,
		"a.yaml", routeYAML("a", "a.e2e.test", "", "a"), "b.yaml", routeYAML("b", "b.e2e.test", "", "b"))))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "a")
	// Both routes dropped (held), a new one added (applied).
	must(t, w.Publish(files("router.yaml", r.routerConfig(""), "endpoints.yaml", eps,
		"n.yaml", routeYAML("n", "n.e2e.test", "", "n"))))
	r.serves("n.e2e.test", "/", "n")
	time.Sleep(500 * time.Millisecond) // the save runs off the loop
	r.stop()
	r.start("atomic")
	r.servesWithin(time.Second, "n.e2e.test", "/", "n")
	r.keepsServing("a.e2e.test", "a", 3, "a restart during the hold")
	r.keepsServing("b.e2e.test", "b", 3, "a restart during the hold")
}

// A route and its Endpoints moved to a new file and edited (another
// backend), the old file left broken: the new definitions serve, as
// `check` says. The broken file's last good copy served instead, and the
// Endpoints of both files were served together.
func TestBrokenFileYieldsToTheMovedRoute(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", join(routeYAML("a", "a.e2e.test", "", "svc"), endpointsYAML("svc", one)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")

	gen["a.yaml"] = []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [a\n")
	gen["b.yaml"] = []byte(join(routeYAML("a", "a.e2e.test", "", "svc"), endpointsYAML("svc", two)))
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "two")
	r.keepsServing("a.e2e.test", "two", 10, "the moved route")
	r.routeStatus("a", model.RouteAdmitted) // not stale: its current version serves
}

// A RouterConfig that no longer parses serves its last good settings, and
// must across a restart too, also when a file it names is unusable at the
// same time: the save took the file's current content as the RouterConfig
// in force, which restored no settings, and the restart came up on the
// default ports, every route refused on its own.
func TestRestartKeepsPortsOfBrokenRouterConfigWithBrokenFile(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	certFile := defaultCertificateFile(t, 7001)
	gen := func(extra string) map[string][]byte {
		return files("router.yaml", r.routerConfig("  defaultCertificate: "+certFile+"\n"+extra),
			"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
			"endpoints.yaml", endpointsYAML("one", one))
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen("")))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")

	must(t, os.WriteFile(certFile, []byte("garbage\n"), 0o600))
	// A second tuningOptions key: the file no longer parses.
	must(t, w.Publish(gen("  tuningOptions:\n    clientTimeout: 31s\n")))
	r.reportsError("defaultCertificate")
	time.Sleep(500 * time.Millisecond) // the save of the last good state runs off the loop
	r.stop()
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	cfg, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg"))
	must(t, err)
	if want := fmt.Sprintf("bind 127.0.0.1:%d", r.http); !strings.Contains(string(cfg), want) {
		t.Fatalf("after the restart haproxy.cfg lacks %q", want)
	}
}

// The audit's case, live: one route of a file rejected (an uppercase
// host), then fixed in the same change that breaks another document of
// the file so that it no longer decodes (a host written as a list). The
// fix serves, with no error left from the old text; the broken route
// serves its last good version, stale; a restart keeps both.
func TestFixBesideABrokenDocumentServes(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	publishRoutes := func(routes ...string) {
		must(t, w.Publish(files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", join(routes...),
			"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
		)))
	}
	plain2 := routeYAML("plain2", "plain2.e2e.test", "", "two")
	publishRoutes(routeYAML("plain", "plain.e2e.test", "", "one"), plain2)
	r.start("atomic")
	r.serves("plain.e2e.test", "/", "one")
	r.serves("plain2.e2e.test", "/", "two")

	publishRoutes(routeYAML("plain", "PLAIN.e2e.test", "", "one"), plain2)
	r.routeStatus("plain", model.RouteStale)

	broken := strings.Replace(plain2, "host: plain2.e2e.test", "host: [plain2x.e2e.test]", 1)
	publishRoutes(routeYAML("plain", "plainx.e2e.test", "", "one"), broken)
	r.serves("plainx.e2e.test", "/", "one")
	r.serves("plain2.e2e.test", "/", "two")
	st := r.routeStatus("plain", model.RouteAdmitted)
	if len(st.Reasons) != 0 {
		t.Errorf("fixed route plain still reports %q", st.Reasons)
	}
	r.routeStatus("plain2", model.RouteStale)
	if le := r.store.Get().LastError; le == nil || strings.Contains(le.Message, "lowercase") || !strings.Contains(le.Message, "spec.host") {
		t.Errorf("last error %+v, want the broken document's, not the fixed host's", le)
	}

	time.Sleep(1500 * time.Millisecond) // the save runs off the loop, at most once a second
	r.stop()
	r.start("atomic")
	r.serves("plainx.e2e.test", "/", "one")
	r.serves("plain2.e2e.test", "/", "two")
}
