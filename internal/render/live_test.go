package render

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// TestLiveRouting starts a real HAProxy on the rendered config, with Go
// backends on 127.0.0.1, and checks the routing decisions the maps and
// frontends encode: path boundaries, host normalisation, wildcards,
// redirects, edge/reencrypt/passthrough TLS, and that servers described by
// ServerArgs are accepted by the runtime `add server`.
func TestLiveRouting(t *testing.T) {
	bin := testutil.HAProxy(t)
	tc := loadTestCerts(t)
	pair, err := tls.X509KeyPair([]byte(tc.Cert), []byte(tc.Key))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(tc.CA))

	backend := func(name string, tlsCert *tls.Certificate) string {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s xff=%s xfp=%s", name, r.URL.Path, r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Forwarded-Proto"))
		}))
		if tlsCert != nil {
			s.TLS = &tls.Config{Certificates: []tls.Certificate{*tlsCert}}
			s.StartTLS()
		} else {
			s.Start()
		}
		t.Cleanup(s.Close)
		return s.Listener.Addr().String()
	}
	ptCertPEM, ptKeyPEM, err := certgen.SelfSigned(time.Now(), []string{"pt.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	ptPair, err := tls.X509KeyPair(ptCertPEM, ptKeyPEM)
	if err != nil {
		t.Fatal(err)
	}

	own := model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}
	s := model.DefaultSettings()
	s.BindAddress = "127.0.0.1"
	s.MaxConnections = 2000 // the default 50000 needs more FDs than test hosts allow
	s.HTTPPort, s.HTTPSPort, s.StatsPort = testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	d := desired(s,
		route("t", "exact", "exact.wild.example.com", "", svc("s", 100, backend("exact", nil))),
		route("t", "foo", "hello.example.com", "/foo", svc("s", 100, backend("foo", nil))),
		route("t", "dirslash", "hello.example.com", "/dir/", svc("s", 100, backend("dirslash", nil))),
		route("t", "hello", "hello.example.com", "", svc("s", 100, backend("hello", nil), backend("hello", nil))),
		route("t", "none", "none.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("s", 100, backend("none", nil))),
		route("t", "ptw", "www.ptw.example.com", "", passthrough(model.InsecurePolicyRedirect), wildcard,
			svc("s", 100, backend("ptw", &ptPair))),
		route("t", "pt", "pt.example.com", "", passthrough(model.InsecurePolicyNone), svc("s", 100, backend("pt", &ptPair))),
		route("t", "re", "re.example.com", "", reencrypt(model.InsecurePolicyNone,
			model.RouteTLS{Certificate: tc.Cert, Key: tc.Key, DestinationCACertificate: tc.CA}), svc("s", 100, backend("re", &pair), backend("re", &pair)),
			// Two active endpoints: checks run (render.ServerArgs). Not TLS, no traffic: only a plain TCP check sees it UP.
			svc("plain", 0, backend("re-plain", nil)),
			backendSettings(func(b *model.BackendSettings) { b.HealthCheckInterval = 200 * time.Millisecond })),
		// No endpoints at startup: its CA must still be loaded for `add server`.
		route("t", "re0", "re0.example.com", "", reencrypt(model.InsecurePolicyNone,
			model.RouteTLS{DestinationCACertificate: tc.CA + "\n"})),
		route("t", "secure", "secure.example.com", "", edge(model.InsecurePolicyRedirect, own),
			backendSettings(func(b *model.BackendSettings) { b.HSTSHeader = "max-age=60" }), svc("s", 100, backend("secure", nil))),
		route("t", "wild", "www.wild.example.com", "", wildcard, svc("s", 100, backend("wild", nil))),
	)

	tmp := testutil.ShortTempDir(t)
	in := Input{Desired: d, Dir: tmp + "/b", RunDir: tmp + "/r", DefaultCertificate: []byte(tc.Default)}
	b := mustRender(t, in)
	writeBundle(t, in.Dir, b)
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, bin, in)

	httpClient := client(s.HTTPPort, nil)
	httpsClient := client(s.HTTPSPort, &tls.Config{RootCAs: pool})

	for _, c := range []struct {
		name, url, host string
		https           bool
		wantStatus      int
		wantBody        string
	}{
		{"host only", "http://hello.example.com/", "", false, 200, "hello / xff=127.0.0.1 xfp=http"},
		{"path exact", "http://hello.example.com/foo", "", false, 200, "foo /foo "},
		{"path slash", "http://hello.example.com/foo/", "", false, 200, "foo /foo/ "},
		{"path below", "http://hello.example.com/foo/bar?x=1", "", false, 200, "foo /foo/bar "},
		{"path prefix is not a match", "http://hello.example.com/foobar", "", false, 200, "hello /foobar "},
		// OpenShift: a route for "/dir/" does not serve "/dir".
		{"slash path: not the path without it", "http://hello.example.com/dir", "", false, 200, "hello /dir "},
		{"slash path itself", "http://hello.example.com/dir/", "", false, 200, "dirslash /dir/ "},
		{"slash path below", "http://hello.example.com/dir/x", "", false, 200, "dirslash /dir/x "},
		{"host case and port", "http://hello.example.com/foo", "HELLO.Example.COM:80", false, 200, "foo /foo "},
		// A fully qualified name, as OpenShift's route expressions accept.
		{"host with a final dot", "http://hello.example.com/foo", "hello.example.com.", false, 200, "foo /foo "},
		{"host with a final dot and port", "http://hello.example.com/", "Hello.Example.com.:80", false, 200, "hello / "},
		{"edge over https with a final dot", "https://secure.example.com/p", "secure.example.com.", true, 200, "secure /p "},
		{"two final dots", "http://hello.example.com/", "hello.example.com..", false, 503, ""},
		{"wildcard", "http://anything.wild.example.com/", "", false, 200, "wild / "},
		{"wildcard parent itself", "http://www.wild.example.com/", "", false, 200, "wild / "},
		{"exact before wildcard", "http://exact.wild.example.com/", "", false, 200, "exact / "},
		{"wildcard is one label", "http://a.b.wild.example.com/", "", false, 503, ""},
		{"unknown host", "http://nope.example.com/", "", false, 503, ""},
		{"edge None not on http", "http://none.example.com/", "", false, 503, ""},
		{"edge redirect", "http://secure.example.com/p?q=1", "", false, 302, ""},
		{"edge over https", "https://secure.example.com/p", "", true, 200, "secure /p xff=127.0.0.1 xfp=https"},
		{"reencrypt", "https://re.example.com/r", "", true, 200, "re /r xff=127.0.0.1 xfp=https"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := httpClient
			if c.https {
				cl = httpsClient
			}
			status, body, hdr := get(t, cl, c.url, c.host)
			if status != c.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", status, c.wantStatus, body)
			}
			if c.wantBody != "" && !strings.HasPrefix(body, c.wantBody) {
				t.Errorf("body %q, want prefix %q", body, c.wantBody)
			}
			if c.name == "edge redirect" {
				want := fmt.Sprintf("https://secure.example.com:%d/p?q=1", s.HTTPSPort)
				if loc := hdr.Get("Location"); loc != want {
					t.Errorf("Location %q, want %q", loc, want)
				}
			}
			if c.name == "edge over https" && hdr.Get("Strict-Transport-Security") != "max-age=60" {
				t.Errorf("Strict-Transport-Security = %q, want max-age=60", hdr.Get("Strict-Transport-Security"))
			}
		})
	}

	t.Run("host with slash refused", func(t *testing.T) {
		// Go's client truncates such a Host, so write the request by hand.
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.HTTPPort))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: hello.example.com/foo\r\nConnection: close\r\n\r\n")
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		out, _ := io.ReadAll(c)
		if status, _, _ := strings.Cut(string(out), "\r\n"); status != "HTTP/1.1 400 Bad request" {
			t.Errorf("status line %q, want HTTP/1.1 400 Bad request", status)
		}
	})

	t.Run("default certificate without a route certificate", func(t *testing.T) {
		cl := client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true})
		resp, err := cl.Get("https://none.example.com/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "haroute test default" {
			t.Errorf("served certificate %q, want the default one", cn)
		}
		if !strings.HasPrefix(string(body), "none / ") {
			t.Errorf("body %q, want the none backend", body)
		}
	})

	t.Run("passthrough", func(t *testing.T) {
		ptPool := x509.NewCertPool()
		ptPool.AppendCertsFromPEM(ptCertPEM)
		cl := client(s.HTTPSPort, &tls.Config{RootCAs: ptPool})
		status, body, _ := get(t, cl, "https://pt.example.com/x", "")
		// The backend's own certificate verified: TLS went through untouched.
		if status != 200 || !strings.HasPrefix(body, "pt /x xff= xfp=") {
			t.Errorf("got %d %q, want 200 from pt without forwarded headers", status, body)
		}
	})

	t.Run("wildcard passthrough", func(t *testing.T) {
		cl := client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true})
		resp, err := cl.Get("https://any.ptw.example.com/w")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "pt.example.com" {
			t.Errorf("served certificate %q, want the backend's own (pt.example.com)", cn)
		}
		if !strings.HasPrefix(string(body), "ptw /w ") {
			t.Errorf("body %q, want the ptw backend", body)
		}
		status, _, hdr := get(t, httpClient, "http://other.ptw.example.com/z", "")
		if want := fmt.Sprintf("https://other.ptw.example.com:%d/z", s.HTTPSPort); status != 302 || hdr.Get("Location") != want {
			t.Errorf("plain HTTP: %d %q, want 302 to %q", status, hdr.Get("Location"), want)
		}
	})

	t.Run("runtime add server uses ServerArgs", func(t *testing.T) {
		for _, r := range d.Routes {
			if r.Key.Name != "hello" && r.Key.Name != "re" && r.Key.Name != "re0" {
				continue
			}
			addr := backend("added-"+r.Key.Name, nil)
			host, port := splitHostPort(addr)
			srv := model.Server{Name: model.ServerName("added_" + r.Key.Name), Address: host, Port: port, Weight: 1}
			cmd := fmt.Sprintf("add server %s/%s %s %s", r.BackendName(), srv.Name, HostPort(srv.Address, srv.Port), ServerArgs(r, srv, in))
			out := testutil.MustAdminCommand(t, in.RunDir, cmd)
			if !strings.Contains(out, "New server registered") {
				t.Errorf("%s\n→ %s", cmd, out)
				continue
			}
			testutil.MustAdminCommand(t, in.RunDir, fmt.Sprintf("enable health %s/%s", r.BackendName(), srv.Name))
			testutil.MustAdminCommand(t, in.RunDir, fmt.Sprintf("enable server %s/%s", r.BackendName(), srv.Name))
			if r.Key.Name == "re" {
				// Both servers listen without TLS: only a plain TCP check
				// (DESIGN §3), not a TLS handshake, sees them UP — whether
				// the server came from the config or from the runtime API.
				static := r.Services[1].Servers[0].Name
				for _, name := range []model.ServerName{static, srv.Name} {
					waitStat(t, in.RunDir, string(r.BackendName()), string(name), "UP L4OK")
				}
			}
		}
	})
}

// client dials every request to 127.0.0.1:port, whatever the URL host, so
// the URL can carry the virtual host (and the SNI).
func client(port int, tlsConf *tls.Config) *http.Client {
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", port))
	}
	return &http.Client{
		Timeout:       5 * time.Second,
		Transport:     &http.Transport{DialContext: dial, TLSClientConfig: tlsConf, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func get(t *testing.T, cl *http.Client, url, host string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// startHAProxy runs HAProxy on in's bundle as haroute does (master-worker,
// master CLI) and returns once the stats port answers and the first health
// checks have passed, so that every server is up.
func startHAProxy(t *testing.T, bin string, in Input) {
	t.Helper()
	testutil.StartHAProxy(t, bin, []string{"-W", "-S", filepath.Join(in.RunDir, "master.sock"), "-f", filepath.Join(in.Dir, ConfigFile)},
		testutil.Ready{URL: fmt.Sprintf("http://127.0.0.1:%d/healthz", in.Desired.Router.StatsPort), Settle: 300 * time.Millisecond})
}

// serverStat returns "<status> <check status>" of one server from show stat.
func serverStat(t *testing.T, runDir, be, srv string) string {
	t.Helper()
	for _, line := range strings.Split(testutil.MustAdminCommand(t, runDir, "show stat"), "\n") {
		f := strings.Split(line, ",")
		if len(f) > 37 && f[0] == be && f[1] == srv {
			return f[17] + " " + f[36]
		}
	}
	return ""
}

func waitStat(t *testing.T, runDir, be, srv, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := serverStat(t, runDir, be, srv)
		if st == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("server %s/%s: status %q, want %q", be, srv, st, want)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
