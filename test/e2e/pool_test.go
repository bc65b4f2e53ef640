package e2e

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/test/publish"
)

// New routes bind to spare backends of the pool and deleted ones give
// them back, all without a reload; the files on disk say the same, so a
// restart serves the same routes.
func TestRoutesAddedAndDeletedWithoutReload(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"), startBackend(t, "two"))

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
		body, err := r.scrapeMetrics()
		if err != nil {
			return err
		}
		for _, want := range []string{
			`haroute_route_requests_total{namespace="e2e",route="b"}`,
			`haroute_route_responses_total{code="2xx",namespace="e2e",route="b"}`,
			`haroute_route_servers{namespace="e2e",route="b",state="unchecked"} 1`, // its only endpoint
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
	r.onDisk("haproxy.cfg", "# route e2e/b\nbackend be_pool:http:")

	// Deleted: gone at once, without a reload.
	delete(gen, "b.yaml")
	must(t, w.Publish(gen))
	r.gone("b.e2e.test")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("deleting a bound route took %d reloads, want 0", got)
	}
	r.serves("c.e2e.test", "/api", "one")

	// A route with a backend of its own (a, from the first generation):
	// deleted and added back, without a reload either.
	delete(gen, "a.yaml")
	must(t, w.Publish(gen))
	r.gone("a.e2e.test")
	gen["a.yaml"] = []byte(routeYAML("a", "a.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "one")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("deleting and re-adding a route took %d reloads, want 0", got)
	}

	// A restart renders every route under its own name again and serves
	// the same routes.
	r.stop()
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.serves("c.e2e.test", "/api", "one")
	if _, err := r.get("b.e2e.test", "/"); err == nil {
		t.Fatal("the deleted route serves again after a restart")
	}
}

// A route bound to a spare keeps its slot across a restart of haroute,
// and with it the cookie name and key its clients' sticky cookies carry:
// rendered under its own name, it was balanced afresh at every restart.
func TestBoundRouteKeepsStickinessAcrossARestart(t *testing.T) {
	one, two := startBackend(t, "one"), startBackend(t, "two")
	r, w, gen, before := poolRouter(t, one, two)
	gen["both.yaml"] = []byte(endpointsYAML("both", one, two))
	gen["b.yaml"] = []byte(routeYAML("b", "b.e2e.test", "", "both"))
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "one")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding b took %d reloads, want 0", got)
	}
	slotOf := regexp.MustCompile(`# route e2e/b\nbackend (be_pool:\S+) `)
	m := slotOf.FindStringSubmatch(r.onDisk("haproxy.cfg", "# route e2e/b\nbackend be_pool:http:"))
	if m == nil {
		t.Fatal("b is not bound to a spare")
	}

	ask := func(c *http.Cookie) (string, *http.Cookie) {
		t.Helper()
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
		req.Host = "b.e2e.test"
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := r.client.Do(req)
		must(t, err)
		body := readAll(resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("b answered %d %q", resp.StatusCode, body)
		}
		if cs := resp.Cookies(); len(cs) > 0 {
			return body, cs[0]
		}
		return body, nil
	}
	// The server a cookie pins, the one roundrobin would not send to next.
	var pinned string
	var cookie *http.Cookie
	for range 2 {
		pinned, cookie = ask(nil)
	}
	if cookie == nil {
		t.Fatal("b set no sticky cookie")
	}

	r.stop()
	r.start("atomic")
	r.serves("b.e2e.test", "/", pinned)
	for i := range 10 {
		if got, _ := ask(cookie); got != pinned {
			t.Fatalf("after the restart, request %d with cookie %s=%s went to %q, want %q", i, cookie.Name, cookie.Value, got, pinned)
		}
	}
	r.onDisk("haproxy.cfg", "# route e2e/b\nbackend "+m[1]+" ")
}

// A pool that runs low is topped up by one reload of its own once changes
// have stopped for a while (never in the middle of the burst that drew it
// down), labelled as such, and new routes then bind again without one.
func TestLowPoolToppedUpAtAQuietMoment(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"))
	// One http route keeps 16 free spares; binding 13 leaves 3, under a
	// quarter of them.
	for i := range 13 {
		gen[fmt.Sprintf("burst-%d.yaml", i)] = []byte(routeYAML(fmt.Sprintf("burst-%d", i), fmt.Sprintf("burst-%d.e2e.test", i), "", "one"))
	}
	must(t, w.Publish(gen))
	r.serves("burst-12.e2e.test", "/", "one")
	published := time.Now()
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("the burst took %d reloads, want 0 while the pool has room", got)
	}
	r.eventually(40*time.Second, "the pool topped up", func() error {
		if got := r.reloads() - before; got != 1 {
			return fmt.Errorf("%d reloads", got)
		}
		return r.metricsHave(`haroute_reloads_total{reason="pool-of-spare-backends-topped-up"} 1`)
	})
	if waited := time.Since(published); waited < 10*time.Second {
		t.Fatalf("topped up %v after the burst, before the 10 s quiet period", waited.Round(time.Millisecond))
	}
	// Room again: the next burst binds without a reload.
	for i := range 10 {
		gen[fmt.Sprintf("more-%d.yaml", i)] = []byte(routeYAML(fmt.Sprintf("more-%d", i), fmt.Sprintf("more-%d.e2e.test", i), "", "one"))
	}
	must(t, w.Publish(gen))
	r.serves("more-9.e2e.test", "/", "one")
	if got := r.reloads() - before; got != 1 {
		t.Fatalf("%d reloads after the second burst, want only the top-up's", got)
	}
}

// scrapeMetrics fetches the daemon's own /metrics, with the harness's
// client: a hung daemon fails the test after 5 s, not the run.
func (r *router) scrapeMetrics() (string, error) {
	resp, err := r.client.Get("http://" + r.metrics + "/metrics")
	if err != nil {
		return "", err
	}
	return readAll(resp), nil
}

// metricsHave returns nil when /metrics has each of lines, whole, else
// which one it lacks.
func (r *router) metricsHave(lines ...string) error {
	m, err := r.scrapeMetrics()
	if err != nil {
		return err
	}
	for _, want := range lines {
		if !strings.Contains(m, want+"\n") {
			return fmt.Errorf("metrics lack %s", want)
		}
	}
	return nil
}

// poolRouter starts a router serving a.e2e.test from the first backend,
// with endpoints for every backend (each its own service, named as the
// backend), and returns how to publish more and the reload count so far.
func poolRouter(t *testing.T, bs ...*backend) (r *router, w *publish.AtomicWriter, gen map[string][]byte, before int) {
	t.Helper()
	r = newRouter(t)
	w = publish.NewAtomicWriter(r.dir)
	var eps []string
	for _, b := range bs {
		eps = append(eps, endpointsYAML(b.Name, b))
	}
	gen = files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", bs[0].Name),
		"endpoints.yaml", join(eps...))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", bs[0].Name)
	return r, w, gen, r.reloads()
}

// A new route with its own certificate binds to a spare as well: the
// certificate is loaded and its crt-list line added at runtime, so it is
// served at once, and deleting the route unloads both, all without a
// reload. The files on disk say the same: a restart serves it alike.
func TestOwnCertificateRoutesWithoutReload(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"))

	ownRoute := func(name, host string, serial int64) string {
		c, k := makeCert(t, host, serial)
		return routeYAML(name, host, "", "one") + "  tls:\n    termination: edge\n    certificate: |\n" + indent(c, 6) + "\n    key: |\n" + indent(k, 6) + "\n"
	}
	servesOwn := func(host string, serial int64) {
		t.Helper()
		r.eventually(20*time.Second, host+" served with its own certificate", func() error {
			if err := servedSerial(r, host, serial); err != nil {
				return err
			}
			code, body, err := r.getHTTPS(host)
			if err != nil || code != 200 || body != "one" {
				return fmt.Errorf("https://%s answered %d %q (%v)", host, code, body, err)
			}
			return nil
		})
	}
	gen["own.yaml"] = []byte(ownRoute("own", "own.e2e.test", 3003))
	// own2 also sets HSTS, which a spare reads from a map.
	gen["own2.yaml"] = []byte(annotated(ownRoute("own2", "own2.e2e.test", 3004), "haproxy.router.openshift.io/hsts_header", "max-age=31536000;includeSubDomains"))
	must(t, w.Publish(gen))
	servesOwn("own.e2e.test", 3003)
	servesOwn("own2.e2e.test", 3004)
	hsts := func(host string) string {
		t.Helper()
		cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: host}, DisableKeepAlives: true}}
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/", r.https), nil)
		req.Host = host
		resp, err := cl.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.Header.Get("Strict-Transport-Security")
	}
	if got := hsts("own2.e2e.test"); got != "max-age=31536000;includeSubDomains" {
		t.Fatalf("own2 sends Strict-Transport-Security %q, want its annotation's", got)
	}
	if got := hsts("own.e2e.test"); got != "" {
		t.Fatalf("own sends Strict-Transport-Security %q, want none", got)
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding routes with their own certificates took %d reloads, want 0", got)
	}
	live := filepath.Join(r.stateDir, "live")
	list, err := os.ReadFile(filepath.Join(live, "crt-list"))
	must(t, err)
	if !strings.Contains(string(list), "own.e2e.test\n") || !strings.Contains(string(list), "own2.e2e.test\n") {
		t.Fatalf("the crt-list on disk lacks the new lines:\n%s", list)
	}
	fi, err := os.Stat(filepath.Join(live, "certs", "e2e_own.pem"))
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("the route's key is written with mode %v, want 0600", fi.Mode().Perm())
	}

	// Deleted: the name falls back to the default certificate, and the
	// file goes, without a reload; added back, its certificate loads again.
	delete(gen, "own.yaml")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "own.e2e.test off its certificate", func() error {
		if err := servedSerial(r, "own.e2e.test", 3003); err == nil {
			return fmt.Errorf("still served with its own certificate")
		}
		if _, err := os.Stat(filepath.Join(live, "certs", "e2e_own.pem")); !os.IsNotExist(err) {
			return fmt.Errorf("certificate file still on disk (%v)", err)
		}
		return nil
	})
	servesOwn("own2.e2e.test", 3004)
	gen["own.yaml"] = []byte(ownRoute("own", "own.e2e.test", 3005))
	must(t, w.Publish(gen))
	servesOwn("own.e2e.test", 3005)
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("deleting and re-adding a route with its own certificate took %d reloads, want 0", got)
	}

	// One route with HSTS deleted and another added in one publish: the
	// HSTS map (its values hold ';') goes whole, first with both entries,
	// then as it is to be.
	delete(gen, "own2.yaml")
	gen["own3.yaml"] = []byte(annotated(ownRoute("own3", "own3.e2e.test", 3006), "haproxy.router.openshift.io/hsts_header", "max-age=600;preload"))
	must(t, w.Publish(gen))
	servesOwn("own3.e2e.test", 3006)
	if got := hsts("own3.e2e.test"); got != "max-age=600;preload" {
		t.Fatalf("own3 sends Strict-Transport-Security %q, want its annotation's", got)
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("swapping one HSTS route for another took %d reloads, want 0", got)
	}
	hstsMap, err := os.ReadFile(filepath.Join(live, "maps", "hsts.map"))
	must(t, err)
	if strings.Count(string(hstsMap), "\n") != 1 || !strings.Contains(string(hstsMap), " max-age=600;preload\n") {
		t.Fatalf("hsts.map on disk:\n%s", hstsMap)
	}

	r.stop()
	r.start("atomic")
	servesOwn("own.e2e.test", 3005)
	servesOwn("own3.e2e.test", 3006)
}

// hangingBackend accepts connections and never answers: only the
// router's server timeout ends a request to it.
func hangingBackend(t *testing.T) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	holdConnections(t, ln)
	return &backend{Name: "hang", Port: ln.Addr().(*net.TCPAddr).Port}
}

// holdConnections accepts every connection on ln and holds it, reading
// and answering nothing, until the test ends.
func holdConnections(t *testing.T, ln net.Listener) {
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
}

// A route with its own timeout binds to a spare too: the spare reads the
// timeout from a map keyed by its name, so the route is added, and its
// timeout changed, without a reload, and the timeout holds: a backend
// that never answers gets a 504 after it, well before the default 30 s.
func TestTimeoutRoutesWithoutReload(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"), hangingBackend(t))

	slowRoute := func(timeout string) []byte {
		return []byte(annotated(routeYAML("slow", "slow.e2e.test", "", "hang"), "haproxy.router.openshift.io/timeout", timeout))
	}
	timesOut := func() time.Duration { t.Helper(); return r.timesOut("slow.e2e.test", 0) }
	gen["slow.yaml"] = slowRoute("500ms")
	must(t, w.Publish(gen))
	if took := timesOut(); took >= 5*time.Second {
		t.Fatalf("the 504 came after %v: the route's 500ms timeout is not in force", took)
	}
	gen["slow.yaml"] = slowRoute("1500ms")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "the new timeout in the map on disk", func() error {
		m, err := os.ReadFile(filepath.Join(r.stateDir, "live", "maps", "timeout_server.map"))
		if err != nil || !strings.Contains(string(m), " 1500\n") {
			return fmt.Errorf("timeout_server.map: %q (%v)", m, err)
		}
		return nil
	})
	if took := timesOut(); took < time.Second || took >= 5*time.Second {
		t.Fatalf("the 504 came after %v, want about 1.5s", took)
	}

	// Deleting it unbinds the spare: its timeout entries are deleted from
	// the maps and read back. (A second pattern expression on the timeout
	// maps once made that read-back fail, and the delete reload.)
	if gone := r.deleteRoute(w, gen, "slow.yaml", "slow"); gone.Reload {
		t.Fatalf("deleting the route with a timeout reloaded: %v", gone.Reasons)
	}
	if st := r.store.Get(); st.Fallbacks != 0 {
		t.Fatalf("%d runtime fallbacks; last error %+v", st.Fallbacks, st.LastError)
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding a route with a timeout, changing it and deleting it took %d reloads, want 0", got)
	}
}

// A route with its own set-forwarded-headers policy binds to a spare,
// which reads the policy from a map keyed by its name: adding the route,
// changing its policy and deleting it take no reload, and the policy
// holds from the first answer.
func TestForwardedHeaderPolicyRoutesWithoutReload(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"), forwardedForBackend(t))
	fwdRoute := func(policy string) []byte {
		return []byte(annotated(routeYAML("fwd", "fwd.e2e.test", "", "xff"), "haproxy.router.openshift.io/set-forwarded-headers", policy))
	}
	// forwardedFor waits for the route to answer, and fails at once if
	// strict and its first answer is not want: the X-Forwarded-For values
	// the backend got for a client that sent 192.0.2.1.
	forwardedFor := func(want string, strict bool) {
		t.Helper()
		r.eventually(20*time.Second, "fwd.e2e.test forwards "+want, func() error {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
			req.Host = "fwd.e2e.test"
			req.Header.Set("X-Forwarded-For", "192.0.2.1")
			resp, err := r.client.Do(req)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			if string(body) != want {
				if strict {
					t.Fatalf("the route's first answer forwarded X-Forwarded-For %s, want %s", body, want)
				}
				return fmt.Errorf("X-Forwarded-For %s", body)
			}
			return nil
		})
	}
	gen["fwd.yaml"] = fwdRoute("never")
	must(t, w.Publish(gen))
	forwardedFor("[192.0.2.1]", true)
	gen["fwd.yaml"] = fwdRoute("replace")
	must(t, w.Publish(gen))
	forwardedFor("[127.0.0.1]", false)

	if gone := r.deleteRoute(w, gen, "fwd.yaml", "fwd"); gone.Reload {
		t.Fatalf("deleting the route with its own forwarded-headers policy reloaded: %v", gone.Reasons)
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding a route with its own forwarded-headers policy, changing it and deleting it took %d reloads, want 0", got)
	}
}

// deleteRoute removes file, which holds route name, from gen, publishes
// gen, and returns the generation applied without the route.
func (r *router) deleteRoute(w *publish.AtomicWriter, gen map[string][]byte, file, name string) daemon.Applied {
	r.t.Helper()
	delete(gen, file)
	mark := len(r.appliedSnapshot())
	must(r.t, w.Publish(gen))
	gone, _ := r.appliedSince(mark, 20*time.Second, name+" deleted", func(d *model.Desired) bool {
		return !slices.ContainsFunc(d.Routes, func(ar *model.AdmittedRoute) bool { return ar.Key.Name == name })
	})
	return gone
}

// forwardedForBackend, service "xff", answers with the X-Forwarded-For
// values it got.
func forwardedForBackend(t *testing.T) *backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprint(w, req.Header.Values("X-Forwarded-For"))
	}))
	t.Cleanup(srv.Close)
	return &backend{Name: "xff", Port: srv.Listener.Addr().(*net.TCPAddr).Port}
}

// A route with an IP allowlist binds to a spare: the spare rejects
// clients its ACL does not list, and the ACL is replaced at runtime
// (prepare/add/commit acl #<id>), so adding the route, changing its allowlist
// and deleting it take no reload, and the allowlist is in force from the
// first request.
func TestAllowlistRoutesWithoutReload(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"))

	guarded := func(allow string) []byte {
		return []byte(annotated(routeYAML("guarded", "guarded.e2e.test", "", "one"), "haproxy.router.openshift.io/ip_allowlist", allow))
	}
	// refused reports nil when HAProxy closes the connection without an
	// answer, as tcp-request content reject does (a 404 or 503 would say
	// the route is not there yet).
	refused := func() error {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
		req.Host = "guarded.e2e.test"
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return nil
		}
		resp.Body.Close()
		return fmt.Errorf("answered with status %d", resp.StatusCode)
	}
	// Not this client (127.0.0.1): the route exists, yet refuses it.
	gen["guarded.yaml"] = guarded("10.0.0.0/8 192.168.0.0/16")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "guarded route bound, its allowlist in force", func() error {
		for _, a := range r.appliedSnapshot() {
			for _, ar := range a.Desired.Routes {
				if ar.Key.Name == "guarded" {
					return refused()
				}
			}
		}
		return fmt.Errorf("not applied yet")
	})
	// Now it is listed.
	gen["guarded.yaml"] = guarded("10.0.0.0/8 127.0.0.1")
	must(t, w.Publish(gen))
	r.serves("guarded.e2e.test", "/", "one")
	r.onDisk("haproxy.cfg", "# route e2e/guarded\nbackend be_pool:")
	// Off it again: refused at once.
	gen["guarded.yaml"] = guarded("10.0.0.0/8")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "the narrowed allowlist in force", refused)
	delete(gen, "guarded.yaml")
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "one")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding a route with an allowlist, changing and deleting it took %d reloads, want 0", got)
	}
}

// Routes with a balance algorithm of their own have spares of their own
// class once one such route exists: the first one takes a reload, which
// also makes its class's spares, and the next one binds to one of them,
// served with its algorithm, with no reload; so is its deletion. Both
// kinds of algorithm: leastconn, and source and random, which place
// servers on a consistent-hash tree (by the ids render.ServerID gives).
func TestBalanceClassRoutesWithoutReload(t *testing.T) {
	for _, balance := range []string{"leastconn", "source", "random"} {
		t.Run(balance, func(t *testing.T) {
			r, w, gen, _ := poolRouter(t, startBackend(t, "one"))
			balanced := func(name string) []byte {
				return []byte(annotated(routeYAML(name, name+".e2e.test", "", "one"), "haproxy.router.openshift.io/balance", balance))
			}
			class := "backend be_pool:http-" + balance + ":"
			gen["first.yaml"] = balanced("first")
			must(t, w.Publish(gen))
			r.serves("first.e2e.test", "/", "one")
			r.eventually(20*time.Second, "spares of the "+balance+" class on disk", func() error {
				cfg, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg"))
				if err != nil || !strings.Contains(string(cfg), class) {
					return fmt.Errorf("no %s spare in haproxy.cfg (%v)", class, err)
				}
				return nil
			})
			before := r.reloads()

			gen["second.yaml"] = balanced("second")
			must(t, w.Publish(gen))
			r.serves("second.e2e.test", "/", "one")
			cfg := r.onDisk("haproxy.cfg", "# route e2e/second\n")
			section := cfg[strings.Index(cfg, "# route e2e/second\n"):]
			section = section[:strings.Index(section[1:], "\n\n")+1]
			if !strings.HasPrefix(section, "# route e2e/second\n"+class) || !strings.Contains(section, "  balance "+balance+"\n") {
				t.Fatalf("the second %s route is not on a %s spare:\n%s", balance, balance, section)
			}
			delete(gen, "second.yaml")
			must(t, w.Publish(gen))
			r.gone("second.e2e.test")
			if got := r.reloads() - before; got != 0 {
				t.Fatalf("adding and deleting a second %s route took %d reloads, want 0", balance, got)
			}
		})
	}
}

// A route bound to a spare that served a deleted route showed that
// route's requests as its own: HAProxy's counters belong to the backend.
// Spares that served nothing since HAProxy loaded are bound first.
func TestNewRouteMetricsDoNotInheritADeletedRoutesTraffic(t *testing.T) {
	one := startBackend(t, "one")
	r, w, gen, before := poolRouter(t, one)
	gen["ma.yaml"] = []byte(routeYAML("ma", "ma.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("ma.e2e.test", "/", "one")
	for range 20 {
		if _, err := r.get("ma.e2e.test", "/"); err != nil {
			t.Fatal(err)
		}
	}
	delete(gen, "ma.yaml")
	must(t, w.Publish(gen))
	r.eventually(10*time.Second, "ma gone", func() error {
		if _, err := r.get("ma.e2e.test", "/"); err == nil {
			return errors.New("ma still serves")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // its spare drained and free again
	gen["mb.yaml"] = []byte(routeYAML("mb", "mb.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("mb.e2e.test", "/", "one")
	// HAProxy may answer before the daemon has recorded the binding that
	// the scrape reads.
	re := regexp.MustCompile(`haroute_route_requests_total\{namespace="e2e",route="mb"\} (\d+)`)
	var got []string
	r.eventually(5*time.Second, "a requests series for mb", func() error {
		m, err := r.scrapeMetrics()
		if err != nil {
			return err
		}
		if got = re.FindStringSubmatch(m); got == nil {
			return fmt.Errorf("none in:\n%s", m)
		}
		return nil
	})
	if n, _ := strconv.Atoi(got[1]); n > 5 {
		t.Fatalf("mb shows %d requests: ma's traffic, on the spare they shared", n)
	}
	if after := r.reloads(); after != before {
		t.Fatalf("%d reloads", after-before)
	}
}

// A route loaded at start has a backend of its own; when it is deleted
// and that backend reads like no spare (a cookie name of its own), it
// reloaded. It stays rendered, emptied, out of the pool, until the next
// reload drops it; the same route added again goes back to it. One that
// reads like a spare stays as one, and the next reload drops it too,
// beyond what the pool keeps: every reload kept them, and the pool grew
// by a backend per deletion until a restart (T21).
func TestDeletedRouteWithItsOwnSettingsDoesNotReload(t *testing.T) {
	for _, tc := range []struct{ name, route string }{
		{"cookie name", reloadingRouteYAML("c", "c.e2e.test", "one")},
		// The replace-path rule holds the route's path: the emptied
		// backend lost it, and so read unlike the running one.
		{"rewrite-target", annotated(routeYAML("c", "c.e2e.test", "/", "one"), "haproxy.router.openshift.io/rewrite-target", "/v2")},
		{"reads like a spare", routeYAML("c", "c.e2e.test", "", "one")},
	} {
		t.Run(tc.name, func(t *testing.T) { deleteOwnBackendRoute(t, tc.route) })
	}
}

// deleteOwnBackendRoute is TestDeletedRouteWithItsOwnSettingsDoesNotReload
// for route c, served at c.e2e.test/ from its own backend.
func deleteOwnBackendRoute(t *testing.T, route string) {
	r := newRouter(t)
	w := publish.NewAtomicWriter(r.dir)
	one := startBackend(t, "one")
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"c.yaml", route,
		"endpoints.yaml", endpointsYAML("one", one))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("c.e2e.test", "/", "one")
	before := r.reloads()

	traffic := keepRequesting(r, "a.e2e.test", "one")
	delete(gen, "c.yaml")
	must(t, w.Publish(gen))
	r.gone("c.e2e.test")
	time.Sleep(1500 * time.Millisecond) // past the reload interval
	if after := r.reloads(); after != before {
		t.Fatalf("deleting c took %d reloads", after-before)
	}
	cfg := r.onDisk("haproxy.cfg", "backend be_http:e2e:c ")
	if strings.Contains(cfg, "# route e2e/c\n") {
		t.Fatal("haproxy.cfg still names route c")
	}

	gen["c.yaml"] = []byte(route)
	must(t, w.Publish(gen))
	r.serves("c.e2e.test", "/", "one")
	if after := r.reloads(); after != before {
		t.Fatalf("adding c back took %d reloads", after-before)
	}

	// Deleted again, then a reload for another reason drops its backend.
	delete(gen, "c.yaml")
	gen["d.yaml"] = []byte(reloadingRouteYAML("d", "d.e2e.test", "one"))
	must(t, w.Publish(gen))
	r.serves("d.e2e.test", "/", "one")
	r.gone("c.e2e.test")
	r.eventually(20*time.Second, "c's backend dropped by the reload", func() error {
		b, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg"))
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("backend be_http:e2e:c ")) {
			return errors.New("still rendered")
		}
		return nil
	})
	traffic.noneFailed(t, "while c was deleted, added back and deleted")
}

// A route bound to a spare whose settings then changed (a reload) left
// the spare reading like the route; deleting the route put the spare's
// text back, with another reload. The slot is kept as it reads instead.
func TestDeletedRouteWhoseSettingsChangedOnASpareDoesNotReload(t *testing.T) {
	r, w, gen, _ := poolRouter(t, startBackend(t, "one"))
	gen["b.yaml"] = []byte(routeYAML("b", "b.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "one")
	gen["b.yaml"] = []byte(annotated(routeYAML("b", "b.e2e.test", "", "one"), "haproxy.router.openshift.io/balance", "leastconn"))
	must(t, w.Publish(gen))
	r.onDisk("haproxy.cfg", "balance leastconn")
	r.serves("b.e2e.test", "/", "one")
	time.Sleep(1500 * time.Millisecond) // past the reload interval
	before := r.reloads()

	delete(gen, "b.yaml")
	must(t, w.Publish(gen))
	r.gone("b.e2e.test")
	time.Sleep(1500 * time.Millisecond)
	if after := r.reloads(); after != before {
		t.Fatalf("deleting b took %d reloads", after-before)
	}
	r.serves("a.e2e.test", "/", "one")
}

// A route whose settings differ from a spare's only in its servers'
// arguments (pod-concurrent-connections, the health check interval) or in
// naming the router's own forwarded-header policy binds to the spare and
// was then reloaded anyway: the plan compared settings, the pool the
// backend's text. Its servers are added with their arguments instead.
func TestRoutesWithServerSettingsBindWithoutReload(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"))
	gen["p.yaml"] = []byte(annotated(routeYAML("p", "p.e2e.test", "", "one"), model.AnnotationPodConcurrentConnection, `"1"`))
	gen["h.yaml"] = []byte(annotated(routeYAML("h", "h.e2e.test", "", "one"), model.AnnotationHealthCheckInterval, "3s"))
	gen["f.yaml"] = []byte(annotated(routeYAML("f", "f.e2e.test", "", "one"), model.AnnotationSetForwardedHeaders, "append"))
	must(t, w.Publish(gen))
	for _, h := range []string{"p", "h", "f"} {
		r.serves(h+".e2e.test", "/", "one")
	}
	r.onDisk("haproxy.cfg", " maxconn 1")
	time.Sleep(1500 * time.Millisecond) // past the reload interval
	if after := r.reloads(); after != before {
		t.Fatalf("binding the three routes took %d reloads", after-before)
	}
}

// A route with a backend of its own (loaded at start) whose settings
// change moves to a spare that has the new ones, at runtime, as a delete
// and an add would: a timeout annotation set, then the route made edge.
// Each is served at once without a reload, and the files on disk say the
// same: a reload through the master serves it alike.
func TestOwnBackendSettingsChangeMovesToASpare(t *testing.T) {
	r := newRouter(t)
	one, hang := startBackend(t, "one"), hangingBackend(t)
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"slow.yaml", routeYAML("slow", "slow.e2e.test", "", "hang"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("hang", hang)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.onDisk("haproxy.cfg", "backend be_http:e2e:slow")
	before := r.reloads()

	gen["slow.yaml"] = []byte(annotated(routeYAML("slow", "slow.e2e.test", "", "hang"), "haproxy.router.openshift.io/timeout", "500ms"))
	must(t, w.Publish(gen))
	// The default server timeout is 30s: a 504 within 5s is the route's.
	timesOut := func() { t.Helper(); r.timesOut("slow.e2e.test", 5*time.Second) }
	timesOut()
	r.onDisk("haproxy.cfg", "# route e2e/slow\nbackend be_pool:http:")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("a timeout set on a route with its own backend took %d reloads, want 0", got)
	}

	// Made edge: another class of spare.
	gen["a.yaml"] = []byte(edgeRouteYAML("a", "a.e2e.test", "one"))
	must(t, w.Publish(gen))
	r.servesTLS("a.e2e.test", "one")
	r.onDisk("haproxy.cfg", "# route e2e/a\nbackend be_pool:edge:")
	r.noReloadNorFallback(before, "a route made edge")

	// What is on disk serves the same.
	r.reloadedFromDisk(before)
	timesOut()
	if got, err := r.getTLS("a.e2e.test"); err != nil || got != "one" {
		t.Fatalf("after the reload, a over TLS: %q, %v", got, err)
	}
}

// timesOut waits for host to answer 504, sooner than within when that is
// not 0, and returns how long that answer took.
func (r *router) timesOut(host string, within time.Duration) time.Duration {
	r.t.Helper()
	var took time.Duration
	client := &http.Client{Timeout: 10 * time.Second}
	r.eventually(30*time.Second, host+" times out", func() error {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
		req.Host = host
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		took = time.Since(start)
		if resp.StatusCode != http.StatusGatewayTimeout || (within > 0 && took >= within) {
			return fmt.Errorf("status %d after %v", resp.StatusCode, took)
		}
		return nil
	})
	return took
}

// A route bound to a spare that changes kind (here http to edge, then
// reencrypt, then edge again) stays on its spare and is reloaded there:
// moving it to a spare of its new kind at runtime crashed HAProxy 2.6.12
// (the worker aborted on a corrupted heap) once the servers of the
// reencrypt spare it passed through were deleted. HAProxy keeps running
// and the route serves over TLS from its slot, also after a reload from
// the files.
func TestBoundRouteOfAnotherKindKeepsItsSpare(t *testing.T) {
	r, w, gen, before := poolRouter(t, startBackend(t, "one"))
	gen["b.yaml"] = []byte(routeYAML("b", "b.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "one")
	r.onDisk("haproxy.cfg", "# route e2e/b\nbackend be_pool:http:")
	started := r.store.Get().HAProxy.PID

	for _, termination := range []string{"edge", "reencrypt", "edge"} {
		gen["b.yaml"] = []byte(strings.Replace(edgeRouteYAML("b", "b.e2e.test", "one"), "edge", termination, 1))
		must(t, w.Publish(gen))
		r.onDisk("haproxy.cfg", "# route e2e/b\nbackend be_pool:http:")
	}
	r.servesTLS("b.e2e.test", "one")
	time.Sleep(3 * time.Second) // past the drained servers' deletion
	r.servesTLS("b.e2e.test", "one")
	if got := r.store.Get().HAProxy.PID; got != started {
		t.Fatalf("HAProxy master %d replaced by %d: it exited", started, got)
	}
	now := r.reloads()
	if now == before {
		t.Fatalf("a bound route changing kind took no reload")
	}
	r.reloadedFromDisk(now)
	r.servesTLS("b.e2e.test", "one")
	r.serves("a.e2e.test", "/", "one")
}

// servesTLS waits until host answers want over TLS.
func (r *router) servesTLS(host, want string) {
	r.t.Helper()
	r.eventually(20*time.Second, host+" served over TLS by "+want, func() error {
		got, err := r.getTLS(host)
		if err == nil && got != want {
			err = fmt.Errorf("answered by %q", got)
		}
		return err
	})
}

// noReloadNorFallback fails the test when HAProxy reloaded since before
// (a count of r.reloads) or a runtime plan fell back on a reload, after
// what.
func (r *router) noReloadNorFallback(before int, what string) {
	r.t.Helper()
	if got := r.reloads() - before; got != 0 {
		r.t.Fatalf("%s took %d reloads, want 0", what, got)
	}
	if st := r.store.Get(); st.Fallbacks != 0 {
		r.t.Fatalf("%d runtime fallbacks; last error %+v", st.Fallbacks, st.LastError)
	}
}

// reloadedFromDisk reloads HAProxy from the files on disk, behind
// haroute's back, and waits until that is the one reload since before.
func (r *router) reloadedFromDisk(before int) {
	r.t.Helper()
	r.reloadThroughMaster()
	r.eventually(20*time.Second, "reloaded from disk", func() error {
		if got := r.reloads() - before; got != 1 {
			return fmt.Errorf("%d reloads", got)
		}
		return nil
	})
}

// A route with its own backend deleted earlier (kept as a spare, at
// runtime); later a change that needs a reload waits (no room in the run
// dir) beside an endpoint change of another route, which the runtime
// share applies at once, though the pending reload drops the kept
// backend: rendered with the pool the reload loads, the share read as a
// reload too, and the endpoint change waited with it (T25: 20 s).
func TestEndpointChangeDoesNotWaitForAReloadDroppingAKeptBackend(t *testing.T) {
	r := newRouter(t)
	smallRunDir(t, r)
	w := publish.NewAtomicWriter(r.dir)
	one, third := startBackend(t, "one"), startBackend(t, "third")
	gen := files("router.yaml", r.routerConfig(""),
		"w.yaml", routeYAML("w", "hw.e2e.test", "", "one"),
		"c.yaml", routeYAML("c", "hc.e2e.test", "", "one"),
		"u.yaml", routeYAML("u", "hu.e2e.test", "", "uu"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("uu", one)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("hu.e2e.test", "/", "one")
	delete(gen, "c.yaml")
	must(t, w.Publish(gen))
	r.gone("hc.e2e.test")
	time.Sleep(3 * time.Second) // its servers drain
	before := r.reloads()

	fillers := fillInodes(t, r.runDir)
	gen["w.yaml"] = []byte(reloadingRouteYAML("w", "hw.e2e.test", "one"))
	gen["endpoints.yaml"] = []byte(join(endpointsYAML("one", one), endpointsYAML("uu", third)))
	must(t, w.Publish(gen))
	r.reportsError("takes no new file")
	r.servesWithin(10*time.Second, "hu.e2e.test", "/", "third")
	if n := r.reloads() - before; n != 0 {
		t.Errorf("%d reloads while the run dir took no file, want 0", n)
	}
	for _, path := range fillers {
		must(t, os.Remove(path))
	}
	r.serves("hw.e2e.test", "/", "one")
}
