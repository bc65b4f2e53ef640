package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// Hostile input against a running router with a real HAProxy: whatever
// arrives, the routes that were serving keep serving, the error names the
// file, and later changes still apply.

// A FIFO in the directory (and a link to one) never blocks the loop.
func TestFIFOInDirectoryDoesNotBlock(t *testing.T) {
	r, _ := servingOneRoutePlain(t, 0)
	two := startBackend(t, "two")

	must(t, syscall.Mkfifo(filepath.Join(r.dir, "pipe.yaml"), 0o644))
	must(t, os.Symlink("pipe.yaml", filepath.Join(r.dir, "to-pipe.yaml")))
	r.reportsError("pipe.yaml")
	// The loop goes on: a later change applies.
	must(t, os.WriteFile(filepath.Join(r.dir, "endpoints.yaml"), []byte(endpointsYAML("one", two)), 0o644))
	r.serves("one.e2e.test", "/", "two")
}

// A path long enough to be split by HAProxy's map line buffer would let a
// route claim another tenant's host: it is rejected, and the other
// tenant's routes are untouched.
func TestOverlongPathCannotHijack(t *testing.T) {
	r := newRouter(t)
	good, evil := startBackend(t, "good"), startBackend(t, "evil")
	w := publish.NewAtomicWriter(r.dir)
	base := func(extra string) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig(""),
			"good.yaml", routeYAML("admin", "other.e2e.test", "/admin", "good"),
			"evil.yaml", extra,
			"endpoints.yaml", join(endpointsYAML("good", good), endpointsYAML("evil", evil)),
		)
	}
	must(t, w.Publish(base(routeYAML("evil", "evil.e2e.test", "", "evil"))))
	r.start("atomic")
	r.serves("other.e2e.test", "/admin", "good")

	// The tail after ~16 KB would read as "other.e2e.test/admin".
	long := "/" + strings.Repeat("a", 16*1024) + "other.e2e.test/admin"
	must(t, w.Publish(base(routeYAML("evil2", "evil.e2e.test", long, "evil"))))
	st := r.routeStatus("evil2", model.RouteRejected)
	if len(st.Reasons) == 0 || !strings.Contains(strings.Join(st.Reasons, " "), "spec.path") {
		t.Fatalf("overlong path: reasons %q do not name spec.path", st.Reasons)
	}
	for range 10 {
		if got, err := r.get("other.e2e.test", "/admin"); err != nil || got != "good" {
			t.Fatalf("other tenant's path after the overlong path: %q, %v", got, err)
		}
	}
}

// A certificate OpenSSL refuses (RSA-1024) on a served route leaves the
// route serving its last good version.
func TestWeakCertificateEditKeepsLastGood(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	edge := func(cert, key string) string {
		s := routeYAML("tls", "tls.e2e.test", "", "one") + "  tls:\n    termination: edge\n"
		if cert != "" {
			s += "    certificate: |\n" + indent(cert, 6) + "\n    key: |\n" + indent(key, 6) + "\n"
		}
		return s
	}
	gen := func(route string) map[string][]byte {
		return files("router.yaml", r.routerConfig(""), "tls.yaml", route, "endpoints.yaml", endpointsYAML("one", one))
	}
	must(t, w.Publish(gen(edge("", ""))))
	r.start("atomic")
	servesTLS := func(why string) {
		r.eventually(20*time.Second, why, func() error {
			got, err := r.getTLS("tls.e2e.test")
			if err == nil && got != "one" {
				err = fmt.Errorf("answered by %q", got)
			}
			return err
		})
	}
	servesTLS("edge route served")

	cert, key := weakCert(t, "tls.e2e.test")
	must(t, w.Publish(gen(edge(cert, key))))
	st := r.routeStatus("tls", model.RouteStale)
	if !strings.Contains(strings.Join(st.Reasons, " "), "tls.yaml:") {
		t.Fatalf("reasons %q do not name tls.yaml", st.Reasons)
	}
	for range 10 {
		if got, err := r.getTLS("tls.e2e.test"); err != nil || got != "one" {
			t.Fatalf("weak certificate published: %q, %v; want the last good state", got, err)
		}
	}
}

// A near-miss kind is a warning, never a silent drop; the route it was
// meant to be is not served and the others are.
func TestKindTypoIsReported(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	gen := oneRoute(r, one)
	gen["typo.yaml"] = []byte(strings.Replace(routeYAML("typo", "typo.e2e.test", "", "one"), "kind: Route", "kind: Rout", 1))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	r.eventually(10*time.Second, "warning counted", func() error {
		if n := r.store.Get().InputProblems.Warnings; n == 0 {
			return fmt.Errorf("no warning counted for kind: Rout")
		}
		return nil
	})
}

// weakCert is a self-signed RSA-1024 certificate and key for host: Go
// accepts it, OpenSSL 3 at its default security level does not.
func weakCert(t *testing.T, host string) (certPEM, keyPEM string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	certPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	return certPEM, keyPEM
}

// A cold start does not run `haproxy -c` before HAProxy, which checks what
// it loads. A route HAProxy refuses (here a wrapper refuses, at start and
// at -c alike, any configuration whose crt-list names refused.e2e.test)
// makes that start fail; the daemon then checks, rejects the route with
// HAProxy's message and starts with the rest. A clean start runs no check.
func TestColdStartWithRefusedRouteStartsTheRest(t *testing.T) {
	r := newRouter(t)
	calls := filepath.Join(t.TempDir(), "calls")
	r.haproxy = refusingHAProxy(t, "refused.e2e.test", calls)
	checks := func() (checks, starts int) {
		b, _ := os.ReadFile(calls)
		for line := range strings.Lines(string(b)) {
			switch strings.TrimSpace(line) {
			case "-c":
				checks++
			case "-W":
				starts++
			}
		}
		return checks, starts
	}
	one := startBackend(t, "one")
	cert, key := makeCert(t, "refused.e2e.test", 5005)
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"refused.yaml", routeYAML("refused", "refused.e2e.test", "", "one")+"  tls:\n    termination: edge\n    certificate: |\n"+
			indent(cert, 6)+"\n    key: |\n"+indent(key, 6)+"\n",
		"endpoints.yaml", endpointsYAML("one", one))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	st := r.routeStatus("refused", model.RouteRejected)
	if !strings.Contains(strings.Join(st.Reasons, " "), "unable to load certificate") {
		t.Fatalf("reasons %q do not give HAProxy's message", st.Reasons)
	}
	if c, s := checks(); c == 0 || s < 2 {
		t.Fatalf("a refused cold start ran %d checks and %d starts, want a check after the refused start and a second start", c, s)
	}

	r.stop()
	must(t, os.Remove(calls))
	delete(gen, "refused.yaml")
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	if c, s := checks(); c != 0 || s != 1 {
		t.Fatalf("a clean cold start ran %d checks and %d starts, want none and one", c, s)
	}
}

// refusingHAProxy writes a wrapper standing in for an HAProxy that refuses
// host's certificate: at a start or a check, it refuses any configuration
// whose crt-list names host, with HAProxy's kind of message, and runs the
// real HAProxy otherwise. With calls set, it appends its first argument
// there at every call (-c for a check, -W for a start).
func refusingHAProxy(t *testing.T, host, calls string) string {
	t.Helper()
	log := ""
	if calls != "" {
		log = fmt.Sprintf("echo \"$1\" >> %s\n", calls)
	}
	wrapper := filepath.Join(t.TempDir(), "haproxy")
	must(t, os.WriteFile(wrapper, []byte(fmt.Sprintf(`#!/bin/sh
%scfg= prev=
for a in "$@"; do [ "$prev" = -f ] && cfg=$a; prev=$a; done
if [ -n "$cfg" ] && grep -qs %s "$(dirname "$cfg")/crt-list"; then
	echo "[ALERT] unable to load certificate for %s" >&2
	exit 1
fi
exec %s "$@"
`, log, host, host, testutil.HAProxy(t))), 0o755))
	return wrapper
}

// A new route whose certificate `check` admits and HAProxy refuses would
// bind to a spare at runtime. HAProxy checks a runtime certificate install
// first (here a wrapper's `haproxy -c` refuses any candidate whose
// crt-list names refused.e2e.test): the route is rejected with HAProxy's
// message before anything reaches the running HAProxy, the routes served
// keep serving, the next route with a certificate still binds without a
// reload, the refused line never reaches the disk, and a restart loads.
func TestRefusedCertificateOnNewRouteIsRejected(t *testing.T) {
	r := newRouter(t)
	r.haproxy = filepath.Join(t.TempDir(), "haproxy")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -c ] && grep -q refused.e2e.test \"$(dirname \"$3\")/crt-list\"; then echo \"[ALERT] unable to load certificate for refused.e2e.test\" >&2; exit 1; fi\nexec %s \"$@\"\n",
		testutil.HAProxy(t))
	must(t, os.WriteFile(r.haproxy, []byte(script), 0o755))
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	before := r.reloads()

	edge := func(name string, serial int64) []byte {
		host := name + ".e2e.test"
		cert, key := makeCert(t, host, serial)
		return []byte(routeYAML(name, host, "", "one") + "  tls:\n    termination: edge\n    certificate: |\n" +
			indent(cert, 6) + "\n    key: |\n" + indent(key, 6) + "\n")
	}
	gen["refused.yaml"] = edge("refused", 3003)
	must(t, w.Publish(gen))
	st := r.routeStatus("refused", model.RouteRejected)
	if !strings.Contains(strings.Join(st.Reasons, " "), "unable to load certificate") {
		t.Fatalf("reasons %q do not give HAProxy's message", st.Reasons)
	}
	r.serves("a.e2e.test", "/", "one")

	gen["good.yaml"] = edge("good", 4004)
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "good.e2e.test served with its certificate", func() error {
		return servedSerial(r, "good.e2e.test", 4004)
	})
	list, err := os.ReadFile(filepath.Join(r.stateDir, "live", "crt-list"))
	must(t, err)
	if strings.Contains(string(list), "refused.e2e.test") {
		t.Fatalf("the refused route's line is on disk:\n%s", list)
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("a refused route and a good one took %d reloads, want 0", got)
	}
	r.stop()
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.eventually(20*time.Second, "good.e2e.test served after a restart", func() error {
		return servedSerial(r, "good.e2e.test", 4004)
	})
}

// A RouterConfig value only HAProxy can judge (a log format naming a
// variable HAProxy does not have, a cipher list OpenSSL refuses) passes
// validation. At a first start nothing is started on it, nor on the
// defaults, and the error names the field; once fixed, the router starts.
// Broken again while serving, the last good settings stay in force, the
// routes keep serving, later route changes still apply, and the error
// names the field.
func TestRouterConfigHAProxyRefusesIsPinnedOnTheField(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	badLog := "  logging:\n    access:\n      destination:\n        type: Container\n      httpLogFormat: \"%foo %ci\"\n"
	gen := files("router.yaml", r.routerConfig(badLog),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one))
	must(t, w.Publish(gen))
	r.store = &status.Store{}
	d, err := daemon.New(daemon.Options{ConfigDir: r.dir, WatchMode: snapshotMode("atomic"), RunDir: r.runDir,
		StateDir: filepath.Join(t.TempDir(), "state"), MetricsAddress: r.metrics, HAProxy: testutil.HAProxy(t),
		Debounce: 100 * time.Millisecond, Status: r.store, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	r.reportsStanding(20*time.Second, "router.yaml:", "spec.logging.access.httpLogFormat: HAProxy refuses")
	if st := r.store.Get(); st.Ready || st.HAProxy.PID != 0 {
		t.Fatalf("started on a RouterConfig HAProxy refuses: ready %v, haproxy %+v", st.Ready, st.HAProxy)
	}

	gen["router.yaml"] = []byte(r.routerConfig(""))
	must(t, w.Publish(gen))
	r.serves("a.e2e.test", "/", "one")

	gen["router.yaml"] = []byte(r.routerConfig("  tlsSecurityProfile:\n    type: Custom\n    custom:\n      minTLSVersion: VersionTLS12\n      ciphers: [FOO]\n"))
	gen["b.yaml"] = []byte(routeYAML("b", "b.e2e.test", "", "one"))
	must(t, w.Publish(gen))
	r.reportsStanding(20*time.Second, "router.yaml:", "spec.tlsSecurityProfile: HAProxy refuses")
	r.serves("b.e2e.test", "/", "one")
	r.serves("a.e2e.test", "/", "one")
}

// A RouterConfig moving a listener onto a port another process holds
// passes `haproxy -c`, which binds nothing. Reloading onto it failed, and
// every failed reload closed every port for about 2 s (HAProxy pauses the
// serving worker's listeners while it retries the bind), again at each
// reload interval. The listener is now tried first: the RouterConfig is
// refused at the port's field, no reload is attempted, and no request
// fails. A port that is free is then applied.
func TestRouterConfigOnATakenPortKeepsServing(t *testing.T) {
	r, w, gen, _ := poolRouter(t, startBackend(t, "one"))
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	reloads := r.reloads()

	traffic := keepRequesting(r, "a.e2e.test", "one")
	moved := func(stats int) []byte {
		return []byte(testenv.RouterConfig(r.http, r.https, stats, ""))
	}
	gen["router.yaml"] = moved(port)
	must(t, w.Publish(gen))
	r.reportsStanding(20*time.Second, "spec.bindOptions.ports.stats: HAProxy cannot listen on 127.0.0.1:"+strconv.Itoa(port)+": another process listens there")
	time.Sleep(3 * time.Second) // past a reload interval: no retry either
	traffic.noneFailed(t, "while the RouterConfig asked for a taken port")
	if got := r.reloads(); got != reloads {
		t.Fatalf("%d reloads were attempted onto a taken port", got-reloads)
	}

	free := testutil.FreePort(t)
	gen["router.yaml"] = moved(free)
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "stats on the free port", func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(free), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	r.serves("a.e2e.test", "/", "one")
}

// A listener moved to another address of its own port (127.0.0.1 to
// 0.0.0.0) cannot be bound beside HAProxy's own listener there, and was
// refused for good: "another process listens there", also after a
// restart. A port held only by HAProxy itself is now left to the reload,
// which pauses the old listener while it binds the new. Another process
// on the port (here on 127.0.0.2) still has the RouterConfig refused,
// until it is gone.
func TestListenerMovesToAnotherAddressOfItsPort(t *testing.T) {
	r, w, gen, _ := poolRouter(t, startBackend(t, "one"))
	squatter, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.2:%d", r.stats))
	must(t, err)
	defer squatter.Close()
	onAny := func(host string, port int) error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", host, port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
	if onAny("127.0.0.2", r.http) == nil {
		t.Fatal("127.0.0.2 answers before the listener moved to 0.0.0.0")
	}

	mark := len(r.appliedSnapshot())
	gen["router.yaml"] = []byte(strings.Replace(r.routerConfig(""), "address: 127.0.0.1", "address: 0.0.0.0", 1))
	must(t, w.Publish(gen))
	r.reportsStanding(20*time.Second, "spec.bindOptions.ports.stats: HAProxy cannot listen on 0.0.0.0:"+strconv.Itoa(r.stats)+": another process listens there")
	for _, e := range r.store.Get().RecentErrors {
		if e.Resolved.IsZero() && strings.Contains(e.Message, "ports.http:") {
			t.Fatalf("the HTTP port, held only by haroute's own HAProxy, was refused: %s", e.Message)
		}
	}

	must(t, squatter.Close())
	r.appliedSince(mark, 20*time.Second, "the listeners moved to 0.0.0.0", func(d *model.Desired) bool {
		return d.Router.BindAddress == "0.0.0.0"
	})
	r.eventually(20*time.Second, "HTTP on 127.0.0.2 through 0.0.0.0", func() error { return onAny("127.0.0.2", r.http) })
	r.serves("a.e2e.test", "/", "one")
}

// A RouterConfig refused for a taken port stayed refused until its file
// changed, also once the port was free: an operator who stopped the
// squatter had to save the file again. The resync tries it again; while
// the port is taken, nothing reloads.
func TestRouterConfigRefusedForATakenPortAppliesOnceFreed(t *testing.T) {
	r, w, gen, _ := poolRouter(t, startBackend(t, "one"))
	taken, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	port := taken.Addr().(*net.TCPAddr).Port
	reloads := r.reloads()
	gen["router.yaml"] = []byte(testenv.RouterConfig(r.http, r.https, port, ""))
	must(t, w.Publish(gen))
	r.reportsStanding(20*time.Second, "spec.bindOptions.ports.stats: HAProxy cannot listen on 127.0.0.1:"+strconv.Itoa(port))
	time.Sleep(5 * time.Second) // two resyncs (2 s in this harness) with the port taken
	if got := r.reloads(); got != reloads {
		t.Fatalf("%d reloads were attempted onto a taken port", got-reloads)
	}

	traffic := keepRequesting(r, "a.e2e.test", "one")
	must(t, taken.Close())
	r.eventually(20*time.Second, "stats on the freed port, the file unchanged", func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	traffic.noneFailed(t, "while the freed port was taken over")
	r.serves("a.e2e.test", "/", "one")
}

// The listener check ran when a RouterConfig change was planned; with a
// throttled reload, a port taken between then and the reload made the
// reload fail, each retry closed every port for seconds, and the live
// files held what could not load, so a restart then failed too. The check
// runs again as the reload is about to start: the RouterConfig is refused
// at the field, no reload is attempted, the live files go back to what
// runs, and a restart keeps serving.
func TestPortTakenBeforeAThrottledReloadKeepsServing(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	rc := func(stats int) []byte {
		return []byte(strings.Replace(testenv.RouterConfig(r.http, r.https, stats, ""), "reloadInterval: 1s", "reloadInterval: 5s", 1))
	}
	w := publish.NewAtomicWriter(r.dir)
	gen := files("a.yaml", routeYAML("a", "a.e2e.test", "", "one"), "endpoints.yaml", endpointsYAML("one", one))
	gen["router.yaml"] = rc(r.stats)
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	// A reload now, so that the next one waits out the interval.
	gen["b.yaml"] = []byte(reloadingRouteYAML("b", "b.e2e.test", "one"))
	must(t, w.Publish(gen))
	r.serves("b.e2e.test", "/", "one")
	reloads := r.reloads()

	port := testutil.FreePort(t)
	gen["router.yaml"] = rc(port)
	must(t, w.Publish(gen))
	time.Sleep(300 * time.Millisecond) // planned, checked, throttled
	taken, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	must(t, err)
	defer taken.Close()
	traffic := keepRequesting(r, "a.e2e.test", "one")
	r.reportsStanding(20*time.Second, "spec.bindOptions.ports.stats: HAProxy cannot listen on 127.0.0.1:"+strconv.Itoa(port))
	time.Sleep(time.Second)
	traffic.noneFailed(t, "while a throttled reload met a port taken since it was planned")
	if got := r.reloads(); got != reloads {
		t.Fatalf("%d reloads were attempted onto a taken port", got-reloads)
	}
	live, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg"))
	must(t, err)
	if strings.Contains(string(live), ":"+strconv.Itoa(port)) {
		t.Fatal("the live haproxy.cfg still binds the taken port")
	}
	time.Sleep(1500 * time.Millisecond) // the save runs off the loop
	r.stop()
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.serves("b.e2e.test", "/", "one")
}

// New settings go with the files they name, or not at all. A RouterConfig
// that moved the stats port and named a broken default certificate in
// one edit applied the port with the last good certificate; one that
// asked for client certificates with an empty CA file left render
// refusing every later change. Now each is refused at the file's field,
// the last good settings stay whole, and later route changes apply.
func TestRouterConfigWithABrokenFileIsRefusedWhole(t *testing.T) {
	r, w, gen, _ := poolRouter(t, startBackend(t, "one"))

	empty := filepath.Join(t.TempDir(), "empty.pem")
	must(t, os.WriteFile(empty, nil, 0o600))
	moved := testutil.FreePort(t)
	for i, tc := range []struct{ rc, field string }{
		{testenv.RouterConfig(r.http, r.https, moved, "  defaultCertificate: "+empty+"\n"), "spec.defaultCertificate"},
		{r.routerConfig("  clientTLS:\n    clientCertificatePolicy: Optional\n    clientCA: " + empty + "\n"), "spec.clientTLS.clientCA"},
	} {
		gen["router.yaml"] = []byte(tc.rc)
		name := fmt.Sprintf("r%d", i)
		gen[name+".yaml"] = []byte(routeYAML(name, name+".e2e.test", "", "one"))
		must(t, w.Publish(gen))
		r.serves(name+".e2e.test", "/", "one")
		r.reportsStanding(10*time.Second, "router.yaml:", tc.field+":")
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(moved), time.Second); err == nil {
			c.Close()
			t.Fatalf("%s: the stats port moved without its certificate", tc.field)
		}
	}
	r.serves("a.e2e.test", "/", "one")
}
