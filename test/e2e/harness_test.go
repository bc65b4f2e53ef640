// Package e2e drives the real daemon against a real HAProxy and real
// backends on 127.0.0.1, publishing config generations exactly as kubelet's
// AtomicWriter and git-sync do.
package e2e

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// backend is a named server on 127.0.0.1 (see testenv.Backend); its
// /stream ticks every 100 ms.
type backend = testenv.Backend

func startBackend(t testing.TB, name string) *backend {
	return testenv.StartBackend(t, name, 100*time.Millisecond)
}

// router is one daemon serving a published directory.
type router struct {
	t                  testing.TB
	dir                string
	runDir             string
	http, https, stats int
	metrics            string
	store              *status.Store
	mu                 sync.Mutex
	applied            []daemon.Applied
	client             *http.Client
	runtimeTimeout     time.Duration // daemon.Options.RuntimeTimeout; 0 = default
	stateDir           string        // the daemon's; set by the first start
	deletionQuiet      time.Duration // daemon.Options.DeletionQuiet; 0 = default
	stop               func()        // stops the running daemon
	haproxy            string        // daemon.Options.HAProxy; "" = the real one
	// breaksHAProxy marks a test that kills HAProxy or breaks its admin
	// socket on purpose: a read-back may then fail because of that, not
	// for a bug (noReadBackMismatch).
	breaksHAProxy bool
	// trigger asks the daemon for a resync, as SIGHUP does.
	trigger chan struct{}
	// now is the daemon's clock for certificates (Options.Now); nil: the
	// real one.
	now func() time.Time
}

// newRouter prepares a config dir and ports; publish a first generation
// with gen() and then call start().
func newRouter(t testing.TB) *router {
	t.Helper()
	testutil.HAProxy(t)
	runDir := testenv.RunDir(t)
	r := &router{
		t: t, dir: filepath.Join(t.TempDir(), "config"), runDir: runDir,
		http: testutil.FreePort(t), https: testutil.FreePort(t), stats: testutil.FreePort(t),
		metrics: fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)),
		store:   &status.Store{},
		trigger: make(chan struct{}, 1),
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: 16,
		}},
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *router) start(mode string) {
	r.startWith(mode, r.dir)
}

func (r *router) startWith(mode, dir string) {
	r.t.Helper()
	r.launch(mode, dir, 30*time.Second)
}

// startNoWait starts the daemon on r's directory without waiting for it
// to be ready, for tests of a start that must not be.
func (r *router) startNoWait(mode string) {
	r.t.Helper()
	r.launch(mode, r.dir, 0)
}

func (r *router) launch(mode, dir string, readyWithin time.Duration) {
	t := r.t
	t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if r.stateDir == "" {
		r.stateDir = filepath.Join(t.TempDir(), "state")
	}
	// Each run reports to a store of its own: one the last run left ready
	// would let StartDaemon return before this run is.
	r.store = &status.Store{}
	stop := testenv.StartDaemon(t, daemon.Options{
		ConfigDir: dir, WatchMode: snapshotMode(mode), RunDir: r.runDir,
		StateDir: r.stateDir, MetricsAddress: r.metrics,
		Resync: 2 * time.Second, Debounce: 100 * time.Millisecond,
		DeletionQuiet: r.deletionQuiet, HAProxy: r.haproxy,
		RuntimeTimeout: r.runtimeTimeout, Logger: logger, Status: r.store,
		Trigger: r.trigger, Now: r.now,
		OnApply: func(a daemon.Applied) {
			r.mu.Lock()
			r.applied = append(r.applied, a)
			r.mu.Unlock()
		},
	}, readyWithin)
	checked := false
	check := func() {
		if !checked {
			checked = true
			r.noReadBackMismatch()
		}
	}
	t.Cleanup(check) // before StartDaemon's own clean-up stops the daemon
	r.stop = func() { check(); stop() }
}

// noReadBackMismatch fails the test when the running daemon counted a
// runtime plan whose read-back disagreed with it. The daemon recovers
// with a reload, so such a bug shows nowhere else: a route of the pool
// that reloads on delete looked like every other delete. Tests that kill
// HAProxy or break its admin socket on purpose (breaksHAProxy) are left
// out; a refused command is another reason and not counted here.
func (r *router) noReadBackMismatch() {
	r.t.Helper()
	if r.breaksHAProxy {
		return
	}
	body, err := r.scrapeMetrics()
	if err != nil {
		r.t.Errorf("metrics of the daemon: %v", err)
		return
	}
	const series = `haroute_runtime_fallbacks_total{reason="read-back-mismatch"} `
	for line := range strings.Lines(body) {
		n, ok := strings.CutPrefix(line, series)
		if !ok {
			continue
		}
		if n = strings.TrimSpace(n); n != "0" {
			last := "none"
			if st := r.store.Get(); st.LastError != nil {
				last = st.LastError.Message
			}
			r.t.Errorf("%s runtime plans fell back to a reload because their read-back disagreed (last error: %s)", n, last)
		}
		return
	}
	r.t.Errorf("no %s series in the daemon's metrics", strings.TrimSpace(series))
}

// testWriter sends daemon logs to the test log, so a failure shows them.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// get fetches http://host/path through the router's HTTP port and returns
// the body (the name of the backend that answered).
func (r *router) get(host, path string) (string, error) {
	return testenv.Get(r.client, r.http, host, path)
}

// eventually retries f until it succeeds or the timeout passes.
func (r *router) eventually(timeout time.Duration, what string, f func() error) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%s: not reached within %v: %v", what, timeout, err)
}

// serves waits until host/path is answered by want.
func (r *router) serves(host, path, want string) {
	r.t.Helper()
	r.servesWithin(20*time.Second, host, path, want)
}

// servesWithin is serves, waiting up to within.
func (r *router) servesWithin(within time.Duration, host, path, want string) {
	r.t.Helper()
	r.eventually(within, fmt.Sprintf("%s%s served by %s", host, path, want), func() error {
		got, err := r.get(host, path)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("answered by %q", got)
		}
		return nil
	})
}

// gone waits until host is no longer answered over HTTP.
func (r *router) gone(host string) {
	r.t.Helper()
	r.eventually(20*time.Second, host+" gone", func() error {
		if got, err := r.get(host, "/"); err == nil {
			return fmt.Errorf("still answered by %q", got)
		}
		return nil
	})
}

// reportsError waits until the status' last error mentions what.
func (r *router) reportsError(what string) {
	r.t.Helper()
	r.eventually(20*time.Second, "error about "+what+" in status", func() error {
		if st := r.store.Get(); st.LastError == nil || !strings.Contains(st.LastError.Message, what) {
			return fmt.Errorf("last error = %+v", st.LastError)
		}
		return nil
	})
}

// reportsStanding waits until a standing error in the status history
// (not necessarily the last one) holds every one of parts.
func (r *router) reportsStanding(within time.Duration, parts ...string) {
	r.t.Helper()
	r.eventually(within, fmt.Sprintf("a standing error with %q", parts), func() error {
		for _, e := range r.store.Get().RecentErrors {
			if e.Resolved.IsZero() && containsAll(e.Message, parts) {
				return nil
			}
		}
		return fmt.Errorf("recent errors %+v", r.store.Get().RecentErrors)
	})
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// keepsServing asks for host n times and fails unless want answers each
// time: the last good state still serves (why says after what).
func (r *router) keepsServing(host, want string, n int, why string) {
	r.t.Helper()
	for range n {
		if got, err := r.get(host, "/"); err != nil || got != want {
			r.t.Fatalf("%s: got %q, %v; want %s, the last good state", why, got, err, want)
		}
	}
}

// onDisk waits until the live file rel (relative to the live directory)
// contains want and returns its content. A runtime change reaches HAProxy
// before the files on disk: the daemon commits them after the commands,
// so a test that has just seen a change served may read the old file.
func (r *router) onDisk(rel, want string) string {
	r.t.Helper()
	var got []byte
	r.eventually(20*time.Second, fmt.Sprintf("%q in live/%s", want, rel), func() error {
		var err error
		if got, err = os.ReadFile(filepath.Join(r.stateDir, "live", rel)); err != nil {
			return err
		}
		if !bytes.Contains(got, []byte(want)) {
			return fmt.Errorf("not there yet")
		}
		return nil
	})
	return string(got)
}

// reloads is the master's reload counter from `show proc`.
func (r *router) reloads() int {
	r.t.Helper()
	return testenv.ShowProc(r.t, r.runDir).Master.Reloads
}

func (r *router) appliedSnapshot() []daemon.Applied {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]daemon.Applied(nil), r.applied...)
}

// appliedSince waits for the first generation applied after mark (the
// length of appliedSnapshot taken before the change was published) whose
// desired state has says yes, and returns it and the mark past it.
func (r *router) appliedSince(mark int, timeout time.Duration, what string, has func(*model.Desired) bool) (daemon.Applied, int) {
	r.t.Helper()
	var got daemon.Applied
	r.eventually(timeout, what, func() error {
		all := r.appliedSnapshot()
		for i := mark; i < len(all); i++ {
			if all[i].Desired != nil && has(all[i].Desired) {
				got, mark = all[i], i+1
				return nil
			}
		}
		return fmt.Errorf("not applied yet")
	})
	return got, mark
}

// --- config generation ---------------------------------------------------

func (r *router) routerConfig(extra string) string {
	return testenv.RouterConfig(r.http, r.https, r.stats, extra)
}

func routeYAML(name, host, path, service string) string {
	p := ""
	if path != "" {
		p = "\n  path: " + path
	}
	return fmt.Sprintf(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: %s
  namespace: e2e
spec:
  host: %s%s
  to:
    kind: Service
    name: %s
`, name, host, p, service)
}

// reloadingRouteYAML is a route whose backend settings no spare backend
// of the pool has (a sticky cookie name of its own; not a balance
// algorithm, whose routes have spares once one exists): adding it takes a
// reload, for tests about reloads.
func reloadingRouteYAML(name, host, service string) string {
	return annotated(routeYAML(name, host, "", service), "router.openshift.io/cookie_name", name+"_session")
}

// annotated is a route's YAML (routeYAML) with the annotation key: value.
func annotated(route, key, value string) string {
	return strings.Replace(route, "  namespace: e2e\n", "  namespace: e2e\n  annotations:\n    "+key+": "+value+"\n", 1)
}

// endpointsYAML lists backends as ready addresses of one service: each
// backend listens on 127.0.0.1 with its own port, so each is one subset.
func endpointsYAML(service string, bs ...*backend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: e2e\nsubsets:\n", service)
	for _, be := range bs {
		fmt.Fprintf(&b, "  - addresses:\n      - ip: 127.0.0.1\n    ports:\n      - port: %d\n", be.Port)
	}
	if len(bs) == 0 {
		b.WriteString("  []\n")
	}
	return b.String()
}

// oneRoute is a generation with one route, one.e2e.test, whose service
// "one" has the endpoint ep.
func oneRoute(r *router, ep *backend) map[string][]byte {
	return files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", ep),
	)
}

// servingOneRoutePlain starts a router on a plain directory holding
// oneRoute, served by a backend "one" it returns, once it serves, with
// the deletion quiet period quiet (0: the default).
func servingOneRoutePlain(t *testing.T, quiet time.Duration) (*router, *backend) {
	t.Helper()
	r := newRouter(t)
	r.deletionQuiet = quiet
	one := startBackend(t, "one")
	for name, data := range oneRoute(r, one) {
		must(t, os.WriteFile(filepath.Join(r.dir, name), data, 0o644))
	}
	r.start("plain")
	r.serves("one.e2e.test", "/", "one")
	return r, one
}

// serveViaGitSync publishes first the way git-sync does (a link in the
// config dir's parent), starts the router on the link and waits until
// one.e2e.test is served by want.
func serveViaGitSync(t *testing.T, r *router, first map[string][]byte, want string) (g *publish.GitSync, link string) {
	t.Helper()
	root := filepath.Dir(r.dir)
	link = filepath.Join(root, "current")
	g = publish.NewGitSync(root, link)
	must(t, g.Publish(first))
	r.startWith("link", link)
	r.serves("one.e2e.test", "/", want)
	return g, link
}

func files(kv ...string) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = []byte(kv[i+1])
	}
	return m
}

func join(docs ...string) string { return strings.Join(docs, "---\n") }

// showServersState asks the admin socket directly, as an operator would.
func showServersState(runDir, backend string) (string, error) {
	return testutil.AdminCommand(runDir, "show servers state "+backend)
}
