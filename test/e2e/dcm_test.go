package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// scaleFiles publishes one route over the first n backends.
func scaleFiles(r *router, extra string, bs []*backend) map[string][]byte {
	return files(
		"router.yaml", r.routerConfig(extra),
		"routes.yaml", routeYAML("web", "web.e2e.test", "", "web"),
		"endpoints.yaml", endpointsYAML("web", bs...),
	)
}

// serveWeb publishes web.e2e.test over bs (extra goes into the
// RouterConfig), starts the router and waits until bs[0] answers. It
// returns the writer for the generations that follow.
func serveWeb(t *testing.T, r *router, extra string, bs ...*backend) *publish.AtomicWriter {
	t.Helper()
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(scaleFiles(r, extra, bs)))
	r.start("atomic")
	r.serves("web.e2e.test", "/", bs[0].Name)
	return w
}

// Scaling 1 → 20 → 1 endpoints over many swaps never reloads; every new
// server receives traffic and removed servers receive none.
func TestScaleEndpointsWithoutReload(t *testing.T) {
	r := newRouter(t)
	var bs []*backend
	for i := 0; i < 20; i++ {
		bs = append(bs, startBackend(t, fmt.Sprintf("b%02d", i)))
	}
	w := serveWeb(t, r, "", bs[:1]...)
	before := r.reloads()

	for n := 2; n <= 20; n++ {
		must(t, w.Publish(scaleFiles(r, "", bs[:n])))
		time.Sleep(20 * time.Millisecond)
	}
	// Every one of the 20 servers answers.
	seen := map[string]bool{}
	r.eventually(30*time.Second, "all 20 backends answer", func() error {
		for i := 0; i < 40; i++ {
			if got, err := r.get("web.e2e.test", "/"); err == nil {
				seen[got] = true
			}
		}
		if len(seen) < 20 {
			state, _ := showServersState(r.runDir, "be_http:e2e:web")
			return fmt.Errorf("%d of 20 backends answered; servers:\n%s", len(seen), state)
		}
		return nil
	})
	for n := 19; n >= 1; n-- {
		must(t, w.Publish(scaleFiles(r, "", bs[:n])))
		time.Sleep(20 * time.Millisecond)
	}
	// The last generation has applied once b00 alone answers: one answer
	// from b00 proves nothing under roundrobin.
	r.eventually(30*time.Second, "b00 alone answers", func() error {
		for range 20 {
			if got, err := r.get("web.e2e.test", "/"); err != nil || got != "b00" {
				return fmt.Errorf("answered by %q, %v", got, err)
			}
		}
		return nil
	})
	hitsBefore := make([]int, len(bs))
	for i, b := range bs {
		hitsBefore[i] = b.Hits()
	}
	for i := 0; i < 100; i++ {
		if got, err := r.get("web.e2e.test", "/"); err != nil || got != "b00" {
			t.Fatalf("after scaling in: got %q, %v; want b00 only", got, err)
		}
	}
	for i, b := range bs[1:] {
		if b.Hits() != hitsBefore[i+1] {
			t.Fatalf("removed backend %s still received traffic", b.Name)
		}
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("scaling 1 → 20 → 1 caused %d reloads, want 0", got)
	}
	if st := r.store.Get(); st.RuntimeUpdates == 0 {
		t.Fatalf("status counts no runtime updates")
	}
}

// A long-lived connection through a server that is removed keeps working
// until the client closes it; the server is deleted only afterwards.
func TestLongLivedConnectionSurvivesRemoval(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	before := r.reloads()

	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/stream", r.http), nil)
	req.Host = "web.e2e.test"
	resp, err := (&http.Client{}).Do(req)
	must(t, err)
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "one ") {
		t.Fatalf("stream did not start on one: %q", lines.Text())
	}
	// Move the service to backend two: server one is drained, not cut.
	must(t, w.Publish(scaleFiles(r, "", []*backend{two})))
	r.serves("web.e2e.test", "/", "two")
	deadline := time.Now().Add(3 * time.Second)
	n := 0
	for time.Now().Before(deadline) {
		if !lines.Scan() {
			t.Fatalf("long-lived connection cut after %d lines: %v", n, lines.Err())
		}
		if !strings.HasPrefix(lines.Text(), "one ") {
			t.Fatalf("stream line %q", lines.Text())
		}
		n++
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("%d reloads, want 0", got)
	}
	if cfg := readShowServers(t, r, "be_http:e2e:web"); !strings.Contains(cfg, fmt.Sprintf("_%d ", one.Port)) {
		t.Fatalf("the drained server is gone while its stream is open:\n%s", cfg)
	}
	resp.Body.Close()
	// Once the client is gone, the drained server is deleted.
	r.eventually(10*time.Second, "drained server deleted", func() error {
		cfg := readShowServers(t, r, "be_http:e2e:web")
		if strings.Contains(cfg, fmt.Sprintf("_%d ", one.Port)) {
			return fmt.Errorf("server still present:\n%s", cfg)
		}
		return nil
	})
}

// A sticky cookie pins a client to a server added at runtime, and still
// pins it after a reload.
func TestStickyCookieRuntimeServerSurvivesReload(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	before := r.reloads()
	must(t, w.Publish(scaleFiles(r, "", []*backend{one, two})))

	var cookie *http.Cookie
	r.eventually(20*time.Second, "a cookie for the runtime-added server", func() error {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
		req.Host = "web.e2e.test"
		resp, err := r.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body := readAll(resp)
		if body != "two" {
			return fmt.Errorf("answered by %q", body)
		}
		if len(resp.Cookies()) == 0 {
			return fmt.Errorf("runtime-added server set no cookie")
		}
		cookie = resp.Cookies()[0]
		return nil
	})
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding an endpoint caused %d reloads", got)
	}
	pinned := func(when string) {
		for i := 0; i < 20; i++ {
			req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
			req.Host = "web.e2e.test"
			req.AddCookie(cookie)
			resp, err := r.client.Do(req)
			must(t, err)
			if body := readAll(resp); body != "two" {
				t.Fatalf("%s: cookie %s=%s led to %q, want two", when, cookie.Name, cookie.Value, body)
			}
		}
	}
	pinned("before reload")
	// Force a reload: a new route no spare backend fits.
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("web", "web.e2e.test", "", "web"), reloadingRouteYAML("other", "other.e2e.test", "web")),
		"endpoints.yaml", endpointsYAML("web", one, two),
	)))
	r.eventually(20*time.Second, "new route served", func() error {
		_, err := r.get("other.e2e.test", "/")
		return err
	})
	if r.reloads() == before {
		t.Fatal("the new route did not reload")
	}
	pinned("after reload")
}

// readAll returns the body and closes it; a failed read shows as a wrong
// body in the caller's check.
func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// abFiles is an A/B route: blue gets blueW, green gets greenW.
func abFiles(r *router, blue, green *backend, blueW, greenW int) map[string][]byte {
	route := fmt.Sprintf(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: ab
  namespace: e2e
  annotations:
    haproxy.router.openshift.io/disable_cookies: "true"
    haproxy.router.openshift.io/balance: roundrobin
spec:
  host: ab.e2e.test
  to:
    kind: Service
    name: blue
    weight: %d
  alternateBackends:
    - kind: Service
      name: green
      weight: %d
`, blueW, greenW)
	return files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", route,
		"endpoints.yaml", join(endpointsYAML("blue", blue), endpointsYAML("green", green)),
	)
}

// Changing service weights moves the traffic split without a reload.
func TestWeightChangeMovesSplit(t *testing.T) {
	r := newRouter(t)
	blue, green := startBackend(t, "blue"), startBackend(t, "green")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(abFiles(r, blue, green, 100, 0)))
	r.start("atomic")
	r.serves("ab.e2e.test", "/", "blue")
	before := r.reloads()
	split := func() (b, g int) {
		for i := 0; i < 40; i++ {
			got, err := r.get("ab.e2e.test", "/")
			must(t, err)
			if got == "blue" {
				b++
			} else {
				g++
			}
		}
		return
	}
	if b, g := split(); g != 0 {
		t.Fatalf("100/0: blue %d green %d", b, g)
	}
	must(t, w.Publish(abFiles(r, blue, green, 0, 100)))
	r.serves("ab.e2e.test", "/", "green")
	if b, g := split(); b != 0 {
		t.Fatalf("0/100: blue %d green %d", b, g)
	}
	must(t, w.Publish(abFiles(r, blue, green, 50, 50)))
	r.eventually(10*time.Second, "50/50 split", func() error {
		b, g := split()
		if b < 10 || g < 10 {
			return fmt.Errorf("50/50: blue %d green %d", b, g)
		}
		return nil
	})
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("weight changes caused %d reloads, want 0", got)
	}
}

// Moving hosts between existing backends is a map update, not a reload.
func TestHostMovedWithoutReload(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	pub := func(hostA, hostB string) {
		must(t, w.Publish(files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", join(routeYAML("a", hostA, "", "one"), routeYAML("b", hostB, "", "two")),
			"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
		)))
	}
	pub("x.e2e.test", "y.e2e.test")
	r.start("atomic")
	r.serves("x.e2e.test", "/", "one")
	r.serves("y.e2e.test", "/", "two")
	before := r.reloads()
	pub("y.e2e.test", "x.e2e.test")
	r.serves("x.e2e.test", "/", "two")
	r.serves("y.e2e.test", "/", "one")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("moving hosts caused %d reloads, want 0", got)
	}
}

// A host routed by its host alone (render's host map) that gains a path
// route sends the path to the new route and the rest to the old one, and
// gets all of it back when the path route goes: the host map and the
// path map are edited together at runtime.
func TestPathRouteJoinsAndLeavesAHostWithoutReload(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	pub := func(routes ...string) {
		must(t, w.Publish(files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", join(routes...),
			"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
		)))
	}
	root := routeYAML("root", "x.e2e.test", "", "one")
	pub(root)
	r.start("atomic")
	r.serves("x.e2e.test", "/api", "one")
	before := r.reloads()

	pub(root, routeYAML("api", "x.e2e.test", "/api", "two"))
	r.serves("x.e2e.test", "/api", "two")
	for path, want := range map[string]string{"/": "one", "/api/v1": "two", "/apix": "one", "/other": "one"} {
		if got, err := r.get("x.e2e.test", path); err != nil || got != want {
			t.Errorf("with the path route, %s answered by %q (%v), want %s", path, got, err, want)
		}
	}

	pub(root)
	r.serves("x.e2e.test", "/api", "one")
	if got, err := r.get("x.e2e.test", "/api/v1"); err != nil || got != "one" {
		t.Errorf("without the path route, /api/v1 answered by %q (%v), want one", got, err)
	}
	if got := r.reloads() - before; got != 0 {
		t.Errorf("adding and deleting a path route caused %d reloads, want 0", got)
	}
}

// A replaced route certificate is served, checked with a TLS client,
// without a reload.
func TestCertificateReplacedWithoutReload(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	pub := func(certPEM, keyPEM string) {
		must(t, w.Publish(files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", ownCertRouteYAML("tls", "tls.e2e.test", "one", certPEM, keyPEM),
			"endpoints.yaml", endpointsYAML("one", one),
		)))
	}
	c1, k1 := makeCert(t, "tls.e2e.test", 1001)
	pub(c1, k1)
	r.start("atomic")
	r.eventually(20*time.Second, "first certificate served", func() error { return servedSerial(r, "tls.e2e.test", 1001) })
	before := r.reloads()
	c2, k2 := makeCert(t, "tls.e2e.test", 2002)
	pub(c2, k2)
	r.eventually(20*time.Second, "new certificate served", func() error { return servedSerial(r, "tls.e2e.test", 2002) })
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("certificate rotation caused %d reloads, want 0", got)
	}
	// And the route still answers over TLS.
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/", r.https), nil)
	req.Host = "tls.e2e.test"
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "tls.e2e.test"},
	}}
	resp, err := client.Do(req)
	must(t, err)
	if body := readAll(resp); body != "one" {
		t.Fatalf("https answered %q", body)
	}
}

// A host that moves with its certificate (a route to a new host with the
// certificate for it; the host it leaves taken by another route, with a
// certificate of its own) is never served a certificate made for another
// host. The crt-list line was replaced before the file: for 20–60 ms the
// new host got the certificate of the old one, and the moved host the
// other route's old one (audit T19). Clients handshake the whole time.
func TestHostMovedWithItsCertificateNeverGetsAnother(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	host := func(k int) string { return fmt.Sprintf("h%d.e2e.test", k) }
	pub := func(k int) { // a on h(k+1), b on h(k), each with a certificate for its host
		ca, ka := makeCert(t, host(k+1), int64(1000+k))
		cb, kb := makeCert(t, host(k), int64(2000+k))
		must(t, w.Publish(files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", join(ownCertRouteYAML("a", host(k+1), "one", ca, ka), ownCertRouteYAML("b", host(k), "two", cb, kb)),
			"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
		)))
	}
	pub(0)
	r.start("atomic")
	r.eventually(20*time.Second, "first certificates served", func() error { return servedSerial(r, host(1), 1000) })
	before := r.reloads()

	var wrong []string
	var mu sync.Mutex
	probe := func(ctx context.Context, sni string) {
		for ctx.Err() == nil {
			conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.https), &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			if err != nil {
				continue
			}
			cert := conn.ConnectionState().PeerCertificates[0]
			conn.Close()
			// The host's own certificate, or the default one while it
			// has none (its name not yet or no longer served).
			if cn := cert.Subject.CommonName; cn != sni && strings.HasSuffix(cn, ".e2e.test") {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("%s got %s's certificate (serial %d)", sni, cn, cert.SerialNumber))
				mu.Unlock()
			}
		}
	}
	for k := 1; k <= 6; k++ {
		ctx, cancel := context.WithCancel(context.Background())
		var probes sync.WaitGroup
		for _, sni := range []string{host(k), host(k + 1), host(k), host(k + 1)} {
			probes.Add(1)
			go func() { defer probes.Done(); probe(ctx, sni) }()
		}
		time.Sleep(100 * time.Millisecond)
		pub(k) // a: h(k) -> h(k+1); b: h(k-1) -> h(k), which a leaves
		r.eventually(20*time.Second, "the moved certificates served", func() error {
			if err := servedSerial(r, host(k+1), int64(1000+k)); err != nil {
				return err
			}
			return servedSerial(r, host(k), int64(2000+k))
		})
		time.Sleep(100 * time.Millisecond)
		cancel()
		probes.Wait()
	}
	if len(wrong) > 0 {
		t.Errorf("%d handshakes got another host's certificate, first: %s", len(wrong), wrong[0])
	}
	if got := r.reloads() - before; got != 0 {
		t.Errorf("moving hosts with their certificates caused %d reloads, want 0", got)
	}
}

// ownCertRouteYAML is an edge route served with its own certificate.
func ownCertRouteYAML(name, host, service, certPEM, keyPEM string) string {
	return routeYAML(name, host, "", service) + "  tls:\n    termination: edge\n    certificate: |\n" + indent(certPEM, 6) +
		"\n    key: |\n" + indent(keyPEM, 6) + "\n"
}

func servedSerial(r *router, host string, want int64) error {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.https), &tls.Config{ServerName: host, InsecureSkipVerify: true})
	if err != nil {
		return err
	}
	defer conn.Close()
	got := conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	if got != want {
		return fmt.Errorf("served serial %d, want %d", got, want)
	}
	return nil
}

func makeCert(t testing.TB, host string, serial int64) (certPEM, keyPEM string) {
	c, k, _ := testutil.SelfSignedCert(t, host, big.NewInt(serial), time.Now().Add(24*time.Hour))
	return string(c), string(k)
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return pad + strings.Join(lines, "\n"+pad)
}

// With the admin socket unusable, a runtime change still converges, through
// a reload whose reason says runtime-fallback.
func TestAdminSocketUnusableFallsBackToReload(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	before := r.reloads()
	sock := filepath.Join(r.runDir, "admin.sock")
	must(t, os.Rename(sock, sock+".hidden"))
	must(t, w.Publish(scaleFiles(r, "", []*backend{two})))
	r.serves("web.e2e.test", "/", "two")
	if got := r.reloads() - before; got < 1 {
		t.Fatalf("no reload after the runtime path failed")
	}
	r.fellBack(1, "runtime-fallback")
}

// A fallback reload whose check of the live files fails (an OOM-killed
// or timed-out `haproxy -c`) is retried once the check passes: it was
// dropped for good, and HAProxy stayed behind the directory.
func TestFallbackReloadRetriedAfterAFailedCheck(t *testing.T) {
	r := newRouter(t)
	failing := r.checkFailsWhile(t, "check killed")
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	// A server of the name haroute will add (checked, as one of two),
	// made behind its back: the
	// runtime path is refused and falls back to a reload.
	squatter := fmt.Sprintf("add server be_http:e2e:web/ck_127.0.0.1_%d 127.0.0.1:1", two.Port)
	if out, err := testutil.AdminCommand(r.runDir, squatter); err != nil || !strings.Contains(out, "New server registered") {
		t.Fatalf("%s: %q, %v", squatter, out, err)
	}
	must(t, os.WriteFile(failing, nil, 0o644))
	must(t, w.Publish(scaleFiles(r, "", []*backend{one, two})))
	r.eventually(15*time.Second, "the failed check reported", func() error {
		if st := r.store.Get(); st.LastError == nil || !strings.Contains(st.LastError.Message, "check killed") {
			return fmt.Errorf("last error %+v", st.LastError)
		}
		return nil
	})
	if lr := r.store.Get().LastReload; lr == nil || lr.OK || !strings.Contains(lr.Error, "check killed") {
		t.Errorf("last reload %+v, want the skipped one, failed, with the check's message", lr)
	}
	r.eventually(10*time.Second, "the directory reported behind", r.metricIs("haroute_directory_behind", "1"))
	must(t, os.Remove(failing))
	r.serves("web.e2e.test", "/", "two")
	r.fellBack(1, "runtime-fallback")
	r.eventually(10*time.Second, "the directory no longer behind", r.metricIs("haroute_directory_behind", "0"))
}

// checkFailsWhile has the router run an HAProxy whose `haproxy -c` fails
// with alert while the file it returns exists (it does not yet).
func (r *router) checkFailsWhile(t *testing.T, alert string) (flag string) {
	tmp := t.TempDir()
	flag = filepath.Join(tmp, "check-fails")
	wrapper := filepath.Join(tmp, "haproxy")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -c ] && [ -e %s ]; then echo '[ALERT] %s' >&2; exit 1; fi\nexec %s \"$@\"\n",
		flag, alert, testutil.HAProxy(t))
	must(t, os.WriteFile(wrapper, []byte(script), 0o755))
	r.haproxy = wrapper
	return flag
}

// metricIs checks that the daemon's metric series reads value.
func (r *router) metricIs(series, value string) func() error {
	return func() error {
		body, err := r.scrapeMetrics()
		if err != nil {
			return err
		}
		if !strings.Contains(body, "\n"+series+" "+value+"\n") {
			return fmt.Errorf("%s is not %s", series, value)
		}
		return nil
	}
}

// fellBack waits until status counts n runtime fallbacks and the last
// reload's reasons say runtime-fallback and contain why.
func (r *router) fellBack(n uint64, why string) {
	r.t.Helper()
	r.breaksHAProxy = true // the test broke the runtime path on purpose
	r.eventually(20*time.Second, "fallback reload recorded", func() error {
		st := r.store.Get()
		if st.Fallbacks < n {
			return fmt.Errorf("status counts %d fallbacks, want %d", st.Fallbacks, n)
		}
		reasons := ""
		if st.LastReload != nil && st.LastReload.OK {
			reasons = strings.Join(st.LastReload.Reasons, "; ")
		}
		if !strings.Contains(reasons, "runtime-fallback: ") || !strings.Contains(reasons, why) {
			return fmt.Errorf("last reload = %+v, want a successful one with reasons runtime-fallback: …%s…", st.LastReload, why)
		}
		return nil
	})
}

// A runtime command HAProxy refuses ends in a reload that converges. The
// refusal is provoked behind the daemon's back: a server of the name the
// daemon is about to add already exists, pointing nowhere.
func TestRefusedRuntimeCommandFallsBackToReload(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	before := r.reloads()
	squatter := fmt.Sprintf("add server be_http:e2e:web/ck_127.0.0.1_%d 127.0.0.1:1", two.Port) // two endpoints: checked servers
	if out, err := testutil.AdminCommand(r.runDir, squatter); err != nil || !strings.Contains(out, "New server registered") {
		t.Fatalf("%s: %q, %v", squatter, out, err)
	}
	must(t, w.Publish(scaleFiles(r, "", []*backend{one, two})))
	r.fellBack(1, "Already exists a server with the same name")
	if got := r.reloads() - before; got < 1 {
		t.Fatalf("no reload after HAProxy refused a command")
	}
	// The reload loaded the files, which name two's real address.
	seen := map[string]bool{}
	r.eventually(10*time.Second, "both endpoints answer", func() error {
		got, err := r.get("web.e2e.test", "/")
		if err != nil {
			return err
		}
		if seen[got] = true; !seen["one"] || !seen["two"] {
			return fmt.Errorf("answered so far by %v", seen)
		}
		return nil
	})
}

// An admin socket that accepts and never answers: each change waits out
// RuntimeTimeout, then converges through a reload; none is lost.
func TestHungAdminSocketFallsBackToReload(t *testing.T) {
	r := newRouter(t)
	r.runtimeTimeout = time.Second
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)

	sock := filepath.Join(r.runDir, "admin.sock")
	must(t, os.Rename(sock, sock+".real"))
	hung, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	holdConnections(t, hung)

	before := r.reloads()
	must(t, w.Publish(scaleFiles(r, "", []*backend{two})))
	r.serves("web.e2e.test", "/", "two")
	r.fellBack(1, "admin.sock")
	// The next change meets the same socket and is not lost either.
	must(t, w.Publish(scaleFiles(r, "", []*backend{one})))
	r.serves("web.e2e.test", "/", "one")
	r.fellBack(2, "admin.sock")
	if got := r.reloads() - before; got < 2 {
		t.Fatalf("%d reloads for two changes through a hung socket, want 2", got)
	}
}

// With the dynamic config manager off, the same endpoint change reloads.
func TestDynamicConfigManagerOffReloads(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	off := "  dynamicConfigManager: false\n"
	w := serveWeb(t, r, off, one)
	before := r.reloads()
	must(t, w.Publish(scaleFiles(r, off, []*backend{two})))
	r.serves("web.e2e.test", "/", "two")
	if got := r.reloads() - before; got < 1 {
		t.Fatalf("endpoint change with DCM off caused %d reloads, want ≥1", got)
	}
}

func readShowServers(t testing.TB, r *router, be string) string {
	t.Helper()
	out, err := showServersState(r.runDir, be)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A check that gives no verdict (the binary gone while a package upgrade
// renames a new one over it) refuses nothing: the change is tried again
// and applies once HAProxy can run. It was blamed on the RouterConfig,
// refused until the file changed again.
func TestCheckWithoutVerdictIsRetried(t *testing.T) {
	r := newRouter(t)
	bin := filepath.Join(t.TempDir(), "haproxy")
	script := fmt.Sprintf("#!/bin/sh\nexec %s \"$@\"\n", testutil.HAProxy(t))
	must(t, os.WriteFile(bin, []byte(script), 0o755))
	r.haproxy = bin
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	gen := func(extra string) map[string][]byte {
		return files("router.yaml", r.routerConfig(extra), "a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
			"endpoints.yaml", endpointsYAML("one", one))
	}
	must(t, w.Publish(gen("")))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")

	must(t, os.Rename(bin, bin+".away"))
	must(t, w.Publish(gen("    clientTimeout: 31s\n")))
	r.reportsError("not checked")
	must(t, os.Rename(bin+".away", bin))
	r.onDisk("haproxy.cfg", "timeout client 31s")
	if st := r.store.Get(); st.InputProblems.Errors != 0 {
		t.Fatalf("status counts %d input errors for a check that never ran", st.InputProblems.Errors)
	}
}

// A route's crt-list line that changes (its wildcard policy flips, so the
// line's SNI goes between w.e2e.test and *.e2e.test, both covering the
// host) is replaced at runtime without a moment on the default
// certificate: the new line is added before the old one is deleted. The
// other way round, a handshake in between got the default certificate.
func TestCrtListLineReplacedWithoutDefaultCertificate(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	c, k := makeCert(t, "w.e2e.test", 4444)
	policy := "None"
	gen := func() map[string][]byte {
		route := strings.Replace(ownCertRouteYAML("w", "w.e2e.test", "one", c, k), "spec:\n", "spec:\n  wildcardPolicy: "+policy+"\n", 1)
		return files("router.yaml", r.routerConfig("  allowWildcardRoutes: true\n"), "w.yaml", route,
			"endpoints.yaml", endpointsYAML("one", one))
	}
	must(t, w.Publish(gen()))
	r.start("atomic")
	r.eventually(20*time.Second, "the route's certificate", func() error { return servedSerial(r, "w.e2e.test", 4444) })

	stop := make(chan struct{})
	wrong := make(chan []string, 1)
	go func() {
		var seen []string
		for {
			select {
			case <-stop:
				wrong <- seen
				return
			default:
			}
			if err := servedSerial(r, "w.e2e.test", 4444); err != nil && len(seen) < 5 {
				seen = append(seen, err.Error())
			}
		}
	}()
	before := r.reloads()
	for range 6 {
		policy = map[string]string{"None": "Subdomain", "Subdomain": "None"}[policy]
		must(t, w.Publish(gen()))
		want := map[string]string{"None": " w.e2e.test", "Subdomain": " *.e2e.test"}[policy]
		r.onDisk("crt-list", want)
		time.Sleep(300 * time.Millisecond)
	}
	close(stop)
	if seen := <-wrong; len(seen) > 0 {
		t.Errorf("handshakes for w.e2e.test got another certificate while its line was replaced: %q", seen)
	}
	if got := r.reloads() - before; got != 0 {
		t.Errorf("%d reloads, want the lines replaced at runtime", got)
	}
	// HAProxy holds the one line the file has.
	out, err := testutil.AdminCommand(r.runDir, "show ssl crt-list -n "+filepath.Join(r.stateDir, "live", "crt-list"))
	must(t, err)
	if n := strings.Count(out, ".pem:"); n != 1 {
		t.Errorf("show ssl crt-list after the flips:\n%s\nwant the route's certificate on one line", out)
	}
}

// A generation HAProxy refuses as a whole, with no route or setting to
// blame (the cause lies outside the directory), is tried again by itself
// once the cause is gone, and haroute_directory_behind says meanwhile that
// the directory is not applied. It waited for the next change of the
// directory, however long, with nothing in the metrics.
func TestRefusedGenerationWithoutCulpritIsRetried(t *testing.T) {
	r := newRouter(t)
	failing := r.checkFailsWhile(t, "refused")
	one := startBackend(t, "one")
	w := serveWeb(t, r, "", one)
	must(t, os.WriteFile(failing, nil, 0o644))
	gen := scaleFiles(r, "", []*backend{one})
	gen["other.yaml"] = []byte(reloadingRouteYAML("other", "other.e2e.test", "web"))
	must(t, w.Publish(gen))
	r.reportsError("candidate rejected")
	r.eventually(10*time.Second, "the directory reported behind", r.metricIs("haroute_directory_behind", "1"))
	must(t, os.Remove(failing))
	r.serves("other.e2e.test", "/", "one")
	r.eventually(10*time.Second, "the directory no longer behind", r.metricIs("haroute_directory_behind", "0"))
}

// A route whose certificate has expired is served, as OpenShift serves it
// (the client decides), and its expiry is exported, with the default
// certificate's, for the alert that fires ahead of it.
func TestExpiredCertificateServedAndExported(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	expiredAt := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	cert, key, _ := testutil.SelfSignedCert(t, "old.e2e.test", big.NewInt(7), expiredAt)
	must(t, publish.NewAtomicWriter(r.dir).Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(ownCertRouteYAML("old", "old.e2e.test", "one", string(cert), string(key)), routeYAML("plain", "plain.e2e.test", "", "one")),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.start("atomic")
	r.eventually(20*time.Second, "the expired certificate's route served", func() error { _, err := r.getTLS("old.e2e.test"); return err })

	value := func(m, series string) (float64, bool) {
		for _, line := range strings.Split(m, "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				var f float64
				_, err := fmt.Sscan(v, &f)
				return f, err == nil
			}
		}
		return 0, false
	}
	r.eventually(10*time.Second, "certificate expiry exported", func() error {
		m, err := r.scrapeMetrics()
		if err != nil {
			return err
		}
		if v, ok := value(m, `haroute_route_certificate_expiry_timestamp_seconds{namespace="e2e",route="old"}`); !ok || int64(v) != expiredAt.Unix() {
			return fmt.Errorf("route old's expiry %v (found %t), want %d", v, ok, expiredAt.Unix())
		}
		if strings.Contains(m, `haroute_route_certificate_expiry_timestamp_seconds{namespace="e2e",route="plain"}`) {
			return fmt.Errorf("a plain route has a certificate expiry series")
		}
		if v, ok := value(m, "haroute_default_certificate_expiry_timestamp_seconds"); !ok || v < float64(time.Now().Unix()) {
			return fmt.Errorf("default certificate expiry %v (found %t), want a time to come", v, ok)
		}
		return nil
	})
}
