package render

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// Live tests of the RouterConfig's edge settings: each renders a bundle
// from settings, starts a real HAProxy on it and talks to it as a client
// would.

// edgeRouter is a running HAProxy for an edge test.
type edgeRouter struct {
	in Input
	s  model.Settings
}

// edgeSettings are defaults on free loopback ports, with a maxconn the
// test host's file-descriptor limit allows.
func edgeSettings(t *testing.T) model.Settings {
	s := model.DefaultSettings()
	s.BindAddress = "127.0.0.1"
	s.MaxConnections = 2000
	s.HTTPPort, s.HTTPSPort, s.StatsPort = testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	return s
}

// echoBackend answers with the request's headers, one "Name: value" per
// line, so a test can see what HAProxy forwarded.
func echoBackend(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%s\n", r.URL.Path)
		for name, vs := range r.Header {
			for _, v := range vs {
				fmt.Fprintf(w, "%s: %s\n", name, v)
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// startEdge renders settings s with routes and starts HAProxy on it.
func startEdge(t *testing.T, s model.Settings, mod func(*Input), routes ...model.AdmittedRoute) *edgeRouter {
	t.Helper()
	bin := testutil.HAProxy(t)
	tc := loadTestCerts(t)
	tmp := testutil.ShortTempDir(t)
	in := Input{Desired: desired(s, routes...), Dir: tmp + "/b", RunDir: tmp + "/r", DefaultCertificate: []byte(tc.Default)}
	if mod != nil {
		mod(&in)
	}
	b := mustRender(t, in)
	writeBundle(t, in.Dir, b)
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, bin, in)
	return &edgeRouter{in: in, s: s}
}

// rawRequest sends req on a new connection to port and returns everything
// the router answered before closing.
func rawRequest(t *testing.T, port int, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, _ := io.ReadAll(c)
	return string(out)
}

// responseBody decodes the body of a raw HTTP/1.1 response (chunked, as
// Go backends send larger bodies).
func responseBody(t *testing.T, resp string) string {
	t.Helper()
	r, err := http.ReadResponse(bufio.NewReader(strings.NewReader(resp)), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return string(b)
}

func statusLine(resp string) string {
	line, _, _ := strings.Cut(resp, "\r\n")
	return line
}

// TestLiveHeaderBuffers: with OpenShift's default buffers a 24 000-byte
// header reaches the backend (HAProxy's own 16 KiB default refuses it),
// and a head larger than bufsize - maxrewrite is refused.
func TestLiveHeaderBuffers(t *testing.T) {
	s := edgeSettings(t)
	r := startEdge(t, s, nil, route("t", "web", "web.example.com", "", svc("web", 100, echoBackend(t))))
	big := strings.Repeat("x", 24000)
	resp := rawRequest(t, s.HTTPPort, "GET /big HTTP/1.1\r\nHost: web.example.com\r\nX-Big: "+big+"\r\nConnection: close\r\n\r\n")
	if got := statusLine(resp); got != "HTTP/1.1 200 OK" {
		t.Fatalf("24000-byte header: %q, want 200", got)
	}
	if !strings.Contains(responseBody(t, resp), "X-Big: "+big+"\n") {
		t.Errorf("the backend did not get the whole header (response %d bytes: %.300q)", len(resp), resp)
	}
	tooBig := strings.Repeat("x", s.HeaderBufferBytes-s.HeaderBufferMaxRewriteBytes)
	resp = rawRequest(t, r.s.HTTPPort, "GET / HTTP/1.1\r\nHost: web.example.com\r\nX-Big: "+tooBig+"\r\nConnection: close\r\n\r\n")
	if got := statusLine(resp); !strings.HasPrefix(got, "HTTP/1.1 4") {
		t.Errorf("header above bufsize - maxrewrite: %q, want a 4xx refusal", got)
	}
}

// TestLiveEmptyRequests: a connection that sends nothing gets a 408 by
// default, and is closed silently with httpEmptyRequestsPolicy: Ignore.
func TestLiveEmptyRequests(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore=%v", ignore), func(t *testing.T) {
			s := edgeSettings(t)
			s.HTTPRequestTimeout = 200 * time.Millisecond
			s.IgnoreEmptyRequests = ignore
			startEdge(t, s, nil, route("t", "web", "web.example.com", "", svc("web", 100, echoBackend(t))))
			got := rawRequest(t, s.HTTPPort, "")
			if ignore && got != "" {
				t.Errorf("Ignore: got %q, want the connection closed without a response", statusLine(got))
			}
			if !ignore && !strings.HasPrefix(got, "HTTP/1.1 408") {
				t.Errorf("Respond: got %q, want a 408", statusLine(got))
			}
		})
	}
}

// TestLiveIdleConnectionTermination: at a reload, the old process closes
// its idle keep-alive connections at once by default, and a request a
// client sends on one then meets a closed connection; with
// idleConnectionTerminationPolicy: Deferred it answers that request,
// with Connection: close.
func TestLiveIdleConnectionTermination(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		t.Run(fmt.Sprintf("deferred=%v", deferred), func(t *testing.T) {
			s := edgeSettings(t)
			s.DeferIdleClose = deferred
			r := startEdge(t, s, nil, route("t", "web", "web.example.com", "", svc("web", 100, echoBackend(t))))
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.HTTPPort))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			in := bufio.NewReader(c)
			get := func() (*http.Response, error) {
				if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: web.example.com\r\n\r\n"); err != nil {
					return nil, err
				}
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				resp, err := http.ReadResponse(in, nil)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				return resp, err
			}
			if resp, err := get(); err != nil || resp.StatusCode != 200 {
				t.Fatalf("first request: %v, %v", resp, err)
			}
			master, err := net.Dial("unix", r.in.RunDir+"/master.sock")
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.WriteString(master, "reload\n")
			_, _ = io.ReadAll(master)
			master.Close()
			time.Sleep(time.Second) // the new process serves, the old one stops
			resp, err := get()
			switch {
			case deferred && (err != nil || resp.StatusCode != 200 || !resp.Close):
				t.Errorf("Deferred: the idle connection's next request got %v (close %v), %v; want 200 with Connection: close", resp, resp != nil && resp.Close, err)
			case !deferred && err == nil:
				t.Errorf("Immediate: the idle connection answered %s after the reload; want it closed", resp.Status)
			}
		})
	}
}

// logReader reads access log datagrams.
type logReader struct {
	t    *testing.T
	conn net.PacketConn
}

func (l *logReader) next() string {
	l.t.Helper()
	buf := make([]byte, 64<<10)
	_ = l.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := l.conn.ReadFrom(buf)
	if err != nil {
		l.t.Fatalf("reading the access log: %v", err)
	}
	return string(buf[:n])
}

// TestLiveAccessLog: every request is one syslog line, in OpenShift's
// default format (HAProxy's httplog) with the captured header, to a unix
// socket or over UDP; TLS requests terminated by the router are logged
// once, by the frontend that terminated them.
func TestLiveAccessLog(t *testing.T) {
	tmp := testutil.ShortTempDir(t)
	unixConn, err := net.ListenPacket("unixgram", tmp+"/log.sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unixConn.Close() })
	udpConn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udpConn.Close() })

	for _, c := range []struct {
		name   string
		target string
		conn   net.PacketConn
	}{
		{"unix socket", tmp + "/log.sock", unixConn},
		{"udp", udpConn.LocalAddr().String(), udpConn},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := edgeSettings(t)
			s.AccessLog = &model.AccessLog{Target: c.target, Facility: "local1", MaxLength: 1024,
				CaptureRequestHeaders: []model.CaptureHeader{{Name: "X-Request-Id", MaxLength: 16}}}
			be := echoBackend(t)
			startEdge(t, s, nil,
				route("t", "web", "web.example.com", "", svc("web", 100, be)),
				route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, be)))
			logs := &logReader{t: t, conn: c.conn}

			send := func(cl *http.Client, url, id string) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("X-Request-Id", id)
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			httpCl := client(s.HTTPPort, nil)
			httpsCl := client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true})
			for i, step := range []struct {
				cl   *http.Client
				url  string
				want string // in the line: the frontend and the request
			}{
				{httpCl, "http://web.example.com/one", `public be_http:t:web/`},
				{httpCl, "http://web.example.com/two", `public be_http:t:web/`},
				{httpsCl, "https://sec.example.com/three", `fe_sni~ be_edge_http:t:sec/`},
				{httpCl, "http://web.example.com/four", `public be_http:t:web/`},
			} {
				id := fmt.Sprintf("req-%d", i)
				send(step.cl, step.url, id)
				line := logs.next()
				path := step.url[strings.LastIndexByte(step.url, '/'):]
				for _, want := range []string{step.want, " 200 ", "{" + id + "}", `"GET ` + path + ` HTTP/1.1"`, "haproxy["} {
					if !strings.Contains(line, want) {
						t.Errorf("request %d: log line %q lacks %q", i, line, want)
					}
				}
			}
		})
	}
}

// handshake dials the HTTPS port with conf and reports the handshake error.
func handshake(t *testing.T, port int, conf *tls.Config) error {
	t.Helper()
	conf.InsecureSkipVerify = true
	conf.ServerName = "sec.example.com"
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port), conf)
	if err != nil {
		return err
	}
	return c.Close()
}

// TestLiveTLSProfiles: a client below the profile's minimum version, or
// without one of its ciphers, is refused; one within it is served.
func TestLiveTLSProfiles(t *testing.T) {
	custom := model.TLSPolicy{Profile: "Custom", Ciphers: "ECDHE-ECDSA-AES256-GCM-SHA384", CipherSuites: "TLS_AES_256_GCM_SHA384", MinVersion: "TLSv1.2"}
	for _, c := range []struct {
		name            string
		policy          model.TLSPolicy
		refused, served *tls.Config
	}{
		{"Intermediate refuses TLS 1.1", model.DefaultSettings().TLS,
			&tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
			&tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12}},
		{"Modern refuses TLS 1.2", modelProfile(t, "Modern"),
			&tls.Config{MaxVersion: tls.VersionTLS12},
			&tls.Config{MinVersion: tls.VersionTLS13}},
		{"Custom refuses a cipher it does not list", custom,
			&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}},
			&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := edgeSettings(t)
			s.TLS = c.policy
			startEdge(t, s, nil, route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, echoBackend(t))))
			if err := handshake(t, s.HTTPSPort, c.refused); err == nil {
				t.Errorf("a client below the profile was served")
			}
			if err := handshake(t, s.HTTPSPort, c.served); err != nil {
				t.Errorf("a client within the profile was refused: %v", err)
			}
		})
	}
}

// modelProfile returns a named profile through the model, as a
// RouterConfig would select it.
func modelProfile(t *testing.T, name string) model.TLSPolicy {
	t.Helper()
	res := model.NewLoader().Load([]model.SourceFile{{Path: "rc.yaml", Data: []byte(
		"apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: r\nspec:\n  tlsSecurityProfile:\n    type: " + name + "\n")}})
	if res.Diagnostics.HasErrors(false) || res.Desired == nil {
		t.Fatalf("profile %s: %v", name, res.Diagnostics)
	}
	return res.Desired.Router.TLS
}

// proxyV2 is a PROXY protocol v2 header for a TCP4 connection from src
// (port 4242) to 127.0.0.1:dstPort.
func proxyV2(src net.IP, dstPort int) string {
	h := []byte("\r\n\r\n\x00\r\nQUIT\n")
	h = append(h, 0x21, 0x11, 0, 12) // v2 PROXY, TCP over IPv4, 12 bytes of addresses
	h = append(h, src.To4()...)
	h = append(h, 127, 0, 0, 1, 0x10, 0x92, byte(dstPort>>8), byte(dstPort))
	return string(h)
}

// TestLiveProxyProtocol: behind a load balancer speaking the PROXY
// protocol, v1 and v2, on the HTTP and the HTTPS listener, the client
// address the header carries reaches the backend in X-Forwarded-For.
func TestLiveProxyProtocol(t *testing.T) {
	s := edgeSettings(t)
	s.ProxyProtocol = true
	be := echoBackend(t)
	startEdge(t, s, nil,
		route("t", "web", "web.example.com", "", svc("web", 100, be)),
		route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, be)))
	req := "GET / HTTP/1.1\r\nHost: web.example.com\r\nConnection: close\r\n\r\n"

	t.Run("v1", func(t *testing.T) {
		resp := rawRequest(t, s.HTTPPort, fmt.Sprintf("PROXY TCP4 203.0.113.7 127.0.0.1 4242 %d\r\n", s.HTTPPort)+req)
		if !strings.Contains(resp, "\nX-Forwarded-For: 203.0.113.7\n") {
			t.Errorf("response %q lacks X-Forwarded-For: 203.0.113.7", resp)
		}
	})
	t.Run("v2", func(t *testing.T) {
		resp := rawRequest(t, s.HTTPPort, proxyV2(net.IPv4(198, 51, 100, 9), s.HTTPPort)+req)
		if !strings.Contains(resp, "\nX-Forwarded-For: 198.51.100.9\n") {
			t.Errorf("response %q lacks X-Forwarded-For: 198.51.100.9", resp)
		}
	})
	t.Run("v2 then TLS", func(t *testing.T) {
		raw, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.HTTPSPort))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := io.WriteString(raw, proxyV2(net.IPv4(192, 0, 2, 44), s.HTTPSPort)); err != nil {
			t.Fatal(err)
		}
		c := tls.Client(raw, &tls.Config{ServerName: "sec.example.com", InsecureSkipVerify: true})
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: sec.example.com\r\nConnection: close\r\n\r\n")
		out, _ := io.ReadAll(c)
		if !strings.Contains(string(out), "\nX-Forwarded-For: 192.0.2.44\n") {
			t.Errorf("response %q lacks X-Forwarded-For: 192.0.2.44", out)
		}
	})
	t.Run("no header is refused", func(t *testing.T) {
		if resp := rawRequest(t, s.HTTPPort, req); strings.Contains(resp, " 200 ") {
			t.Errorf("a request without a PROXY header was served: %q", statusLine(resp))
		}
	})
}
