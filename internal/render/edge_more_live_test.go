package render

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// Live tests of the RouterConfig's edge settings, continued.

// rawRequestTo is rawRequest to host:port.
func rawRequestTo(t *testing.T, host string, port int, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
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

// TestLiveBindAddresses: with an IPv4 and an IPv6 address listed, the
// router answers on both, on every listener; the Forwarded header names
// each client as RFC 7239 writes it, an IPv6 one quoted and bracketed.
func TestLiveBindAddresses(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		testutil.Skip(t, "no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	s := edgeSettings(t)
	s.BindAddresses = []string{"127.0.0.1", "::1"}
	startEdge(t, s, nil, route("t", "web", "web.example.com", "", svc("web", 100, echoBackend(t))))
	for host, forwarded := range map[string]string{"127.0.0.1": "for=127.0.0.1;", "::1": `for="[::1]";`} {
		resp := rawRequestTo(t, host, s.HTTPPort, "GET /x HTTP/1.1\r\nHost: web.example.com\r\nConnection: close\r\n\r\n")
		if got := statusLine(resp); got != "HTTP/1.1 200 OK" || !strings.Contains(resp, "path=/x") {
			t.Errorf("HTTP on %s: %q, want 200 from the backend", host, got)
		}
		if want := "Forwarded: " + forwarded + "host=web.example.com;proto=http\n"; !strings.Contains(resp, want) {
			t.Errorf("HTTP on %s: the backend saw no %q:\n%s", host, want, resp)
		}
		resp = rawRequestTo(t, host, s.StatsPort, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if got := statusLine(resp); got != "HTTP/1.1 200 OK" {
			t.Errorf("stats on %s: %q, want 200", host, got)
		}
		c, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(s.HTTPSPort)))
		if err != nil {
			t.Errorf("HTTPS on %s: %v", host, err)
		} else {
			c.Close()
		}
	}
}

// fetchURL sends a GET for url through cl and returns the status and body;
// err is set when no response came.
func fetchURL(cl *http.Client, url string, hdr ...string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestLiveClientTLS: with clientCertificatePolicy Required a client
// without a certificate, or with one from another CA, is refused; one
// with a certificate from the client CA whose subject matches the
// allowed patterns reaches the backend with the X-SSL-Client-* headers
// OpenShift sets, and others get a 403. Headers a client forges are
// removed, on plain HTTP too. With Optional, a client without a
// certificate is served.
func TestLiveClientTLS(t *testing.T) {
	ca, other := testutil.NewCA(t, "client CA"), testutil.NewCA(t, "other CA")
	good := ca.IssueClient(t, pkix.Name{CommonName: "client.example.test", Organization: []string{"Example"}})
	wrongSubject := ca.IssueClient(t, pkix.Name{CommonName: "intruder.example.test"})
	foreign := other.IssueClient(t, pkix.Name{CommonName: "client.example.test"})
	withCA := func(in *Input) { in.ClientCA = []byte(ca.PEM) }
	be := echoBackend(t)
	routes := []model.AdmittedRoute{
		route("t", "web", "web.example.com", "", svc("web", 100, be)),
		route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, be)),
	}
	tlsClient := func(port int, certs ...tls.Certificate) *http.Client {
		return client(port, &tls.Config{InsecureSkipVerify: true, Certificates: certs})
	}

	t.Run("Required", func(t *testing.T) {
		s := edgeSettings(t)
		s.ClientTLS = &model.ClientTLSPolicy{Verify: "required", SubjectFilter: "(?:^/O=Example/CN=client[.]example[.]test$)"}
		startEdge(t, s, withCA, routes...)
		url := "https://sec.example.com/"
		if code, _, err := fetchURL(tlsClient(s.HTTPSPort), url); err == nil {
			t.Errorf("a client without a certificate got %d, want the connection refused", code)
		}
		if code, _, err := fetchURL(tlsClient(s.HTTPSPort, foreign), url); err == nil {
			t.Errorf("a client with another CA's certificate got %d, want the connection refused", code)
		}
		if code, _, err := fetchURL(tlsClient(s.HTTPSPort, wrongSubject), url); err != nil || code != http.StatusForbidden {
			t.Errorf("a subject outside the allowed patterns: %d %v, want 403", code, err)
		}
		code, body, err := fetchURL(tlsClient(s.HTTPSPort, good), url, "X-SSL-Client-CN", "forged")
		if err != nil || code != http.StatusOK {
			t.Fatalf("a client with a good certificate: %d %v, want 200", code, err)
		}
		for _, want := range []string{
			"X-Ssl: 1\n", "X-Ssl-Client-Verify: 0\n", "X-Ssl-Client-Cn: client.example.test\n",
			"X-Ssl-Client-Dn: /O=Example/CN=client.example.test\n", "X-Ssl-Issuer: /CN=client CA\n",
			"X-Ssl-Client-Der: ", "X-Ssl-Client-Serial: ", "X-Ssl-Client-Sha1: ", "X-Ssl-Client-Notafter: ",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the backend did not get %q; it got:\n%s", want, body)
			}
		}
		if strings.Contains(body, "forged") {
			t.Errorf("a forged X-SSL-Client-CN reached the backend:\n%s", body)
		}
		// One rule strips them all, and httpoxy's Proxy, by exact
		// name: a header that merely starts like them passes.
		_, body, err = fetchURL(client(s.HTTPPort, nil), "http://web.example.com/", "X-SSL-Client-CN", "forged", "X-SSL", "1",
			"Proxy", "http://forged.example.com", "X-Ssl-Client-Cn-Extra", "kept")
		if err != nil || strings.Contains(body, "forged") || strings.Contains(body, "X-Ssl:") {
			t.Errorf("plain HTTP: forged client certificate or Proxy headers reached the backend (%v):\n%s", err, body)
		}
		if !strings.Contains(body, "X-Ssl-Client-Cn-Extra: kept") {
			t.Errorf("plain HTTP: a header only prefixed like a client certificate header was stripped:\n%s", body)
		}
	})
	t.Run("Optional", func(t *testing.T) {
		s := edgeSettings(t)
		s.ClientTLS = &model.ClientTLSPolicy{Verify: "optional"}
		startEdge(t, s, withCA, routes...)
		if code, body, err := fetchURL(tlsClient(s.HTTPSPort), "https://sec.example.com/"); err != nil || code != http.StatusOK || strings.Contains(body, "X-Ssl-Client-Cn: c") {
			t.Errorf("without a certificate: %d %v, want 200 without a client CN:\n%s", code, err, body)
		}
		if code, body, err := fetchURL(tlsClient(s.HTTPSPort, good), "https://sec.example.com/"); err != nil || code != http.StatusOK || !strings.Contains(body, "X-Ssl-Client-Cn: client.example.test\n") {
			t.Errorf("with a certificate: %d %v, want 200 with its CN:\n%s", code, err, body)
		}
	})
}

// TestLiveUniqueID: every request reaches the backend with a unique id
// in the configured header, in OpenShift's default format, on the HTTP
// and the TLS frontend. As on OpenShift, a header of that name the client
// sent is kept, ahead of the router's.
func TestLiveUniqueID(t *testing.T) {
	s := edgeSettings(t)
	s.UniqueID = &model.UniqueID{Header: "X-Unique-Id", Format: "%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid"}
	be := echoBackend(t)
	startEdge(t, s, nil,
		route("t", "web", "web.example.com", "", svc("web", 100, be)),
		route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, be)))
	// Hex client address and port, frontend address and port, time,
	// request counter and pid.
	shape := regexp.MustCompile(`\nX-Unique-Id: ([0-9A-F]+:[0-9A-F]+_[0-9A-F]+:[0-9A-F]+_[0-9A-F]+_[0-9A-F]+:[0-9A-F]+)\n`)
	seen := map[string]bool{}
	for _, c := range []struct {
		cl  *http.Client
		url string
	}{
		{client(s.HTTPPort, nil), "http://web.example.com/"},
		{client(s.HTTPPort, nil), "http://web.example.com/"},
		{client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true}), "https://sec.example.com/"},
	} {
		code, body, err := fetchURL(c.cl, c.url, "X-Unique-Id", "from-client")
		m := shape.FindStringSubmatch("\n" + body)
		if err != nil || code != http.StatusOK || m == nil {
			t.Fatalf("%s: %d %v, want 200 with a unique id in OpenShift's format; the backend got:\n%s", c.url, code, err, body)
		}
		if seen[m[1]] || strings.Index(body, "X-Unique-Id: from-client\n") > strings.Index(body, m[1]) {
			t.Errorf("%s: id %q is not unique, or not after the client's:\n%s", c.url, m[1], body)
		}
		seen[m[1]] = true
	}
}

// TestLiveForwardedHeaderPolicy: the router-level policy applies to
// routes without the set-forwarded-headers annotation; a route with it
// keeps its own.
func TestLiveForwardedHeaderPolicy(t *testing.T) {
	for _, c := range []struct {
		policy      string // as model.Settings holds it
		routeOwn    string // the annotated route's
		wantDefault string // every X-Forwarded-For line the default route's backend gets
		wantOwn     string
	}{
		{"replace", "append", "X-Forwarded-For: 127.0.0.1\n", "X-Forwarded-For: 192.0.2.1\nX-Forwarded-For: 127.0.0.1\n"},
		{"never", "replace", "X-Forwarded-For: 192.0.2.1\n", "X-Forwarded-For: 127.0.0.1\n"},
		{"if-none", "never", "X-Forwarded-For: 192.0.2.1\n", "X-Forwarded-For: 192.0.2.1\n"},
	} {
		t.Run(c.policy, func(t *testing.T) {
			s := edgeSettings(t)
			s.ForwardedHeaderPolicy = c.policy
			be := echoBackend(t)
			startEdge(t, s, nil,
				route("t", "plain", "plain.example.com", "", svc("web", 100, be)),
				route("t", "own", "own.example.com", "", svc("web", 100, be), backendSettings(func(b *model.BackendSettings) { b.ForwardedHeaders = c.routeOwn })))
			for host, want := range map[string]string{"plain.example.com": c.wantDefault, "own.example.com": c.wantOwn} {
				_, body, err := fetchURL(client(s.HTTPPort, nil), "http://"+host+"/", "X-Forwarded-For", "192.0.2.1")
				if err != nil || !strings.Contains(body, "\n"+want) || strings.Count(body, "X-Forwarded-For:") != strings.Count(want, "X-Forwarded-For:") {
					t.Errorf("%s: %v, want %q; the backend got:\n%s", host, err, want, body)
				}
			}
		})
	}
}

// TestLiveForwardedPolicyOnSpares: a route bound to a pool spare, which
// reads its set-forwarded-headers policy from ForwardedMap, gets the
// headers a route with the same policy gets on a backend of its own
// (TestLiveForwardedHeaderPolicy checks those against OpenShift's), under
// every router policy, over HTTP and HTTPS, from a client that sends
// forwarded headers of its own.
func TestLiveForwardedPolicyOnSpares(t *testing.T) {
	routePolicies := []string{"", "append", "replace", "if-none", "never"}
	for _, router := range []string{"append", "replace", "if-none", "never"} {
		t.Run(router, func(t *testing.T) {
			s := edgeSettings(t)
			s.ForwardedHeaderPolicy = router
			be := rawEchoBackend(t)
			var routes, spares []model.AdmittedRoute
			for i, p := range routePolicies {
				name := cmp.Or(p, "unset")
				slot := model.BackendName(fmt.Sprintf("be_pool:edge-allow:%d", i+1))
				spares = append(spares, model.SpareRoute(model.TerminationEdge, true, slot, &s))
				set := backendSettings(func(b *model.BackendSettings) { b.ForwardedHeaders = p })
				term := edge(model.InsecurePolicyAllow, model.RouteTLS{})
				routes = append(routes,
					route("t", "own-"+name, "own-"+name+".example.com", "", term, svc("web", 100, be), set),
					route("t", "bound-"+name, "bound-"+name+".example.com", "", term, svc("web", 100, be), set,
						func(r *model.AdmittedRoute) { r.Slot = slot }))
			}
			startEdge(t, s, func(in *Input) { in.Spares = spares }, routes...)
			clients := map[string]*http.Client{
				"http":  client(s.HTTPPort, nil),
				"https": client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true}),
			}
			for _, p := range routePolicies {
				name := cmp.Or(p, "unset")
				for scheme, cl := range clients {
					got := map[string][][2]string{}
					for _, kind := range []string{"own", "bound"} {
						host := kind + "-" + name + ".example.com"
						_, body, err := fetchURL(cl, scheme+"://"+host+"/", "X-Forwarded-For", "192.0.2.1",
							"X-Forwarded-Proto", "gopher", "Forwarded", "for=192.0.2.9")
						if err != nil {
							t.Fatalf("%s %s: %v", scheme, host, err)
						}
						got[kind] = forwardedLines(strings.ReplaceAll(body, host, "HOST"))
					}
					if !reflect.DeepEqual(got["own"], got["bound"]) {
						t.Errorf("route policy %q over %s: on its own backend the backend got\n%v\nbound to a spare\n%v", p, scheme, got["own"], got["bound"])
					}
					// Not vacuous: the policy in force shows.
					policy := cmp.Or(p, router)
					want := map[string][]string{"append": {"192.0.2.1", "127.0.0.1"}, "replace": {"127.0.0.1"},
						"if-none": {"192.0.2.1"}, "never": {"192.0.2.1"}}[policy]
					var xff []string
					for _, h := range got["bound"] {
						if h[0] == "x-forwarded-for" {
							xff = append(xff, h[1])
						}
					}
					if !reflect.DeepEqual(xff, want) {
						t.Errorf("route policy %q (in force: %s) over %s: X-Forwarded-For %q, want %q", p, policy, scheme, xff, want)
					}
				}
			}
		})
	}
}

// forwardedLines are the X-Forwarded-* and Forwarded headers of a request
// head that rawEchoBackend sent back, names lowercased, in order.
func forwardedLines(head string) [][2]string {
	var out [][2]string
	for line := range strings.Lines(head) {
		name, value, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		name = strings.ToLower(name)
		if ok && (name == "forwarded" || strings.HasPrefix(name, "x-forwarded-")) {
			out = append(out, [2]string{name, strings.TrimSpace(value)})
		}
	}
	return out
}

// rawEchoBackend answers every request with its head as HAProxy sent it,
// headers in their order, on connections kept alive.
func rawEchoBackend(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					var head strings.Builder
					for {
						line, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
						head.WriteString(line)
					}
					if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", head.Len(), head.String()); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestLiveHeaderActions: router-level request actions set and delete
// headers before the backend sees the request, on the HTTP and the TLS
// frontend; response actions change what the client gets, with dynamic
// values.
func TestLiveHeaderActions(t *testing.T) {
	s := edgeSettings(t)
	s.RequestHeaderActions = []model.HeaderAction{
		{Name: "X-Env", Value: "prod 100%% %[req.hdr(host),lower]"},
		{Name: "X-Secret", Delete: true},
	}
	s.ResponseHeaderActions = []model.HeaderAction{
		{Name: "X-Frame-Options", Value: "DENY"},
		{Name: "X-Type", Value: "%[res.hdr(Content-Type),lower]"},
		{Name: "X-Backend-Only", Delete: true},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "Text/Plain")
		w.Header().Set("X-Backend-Only", "internal")
		fmt.Fprintf(w, "X-Env=%q X-Secret=%q", r.Header.Values("X-Env"), r.Header.Values("X-Secret"))
	}))
	t.Cleanup(srv.Close)
	be := srv.Listener.Addr().String()
	startEdge(t, s, nil,
		route("t", "web", "web.example.com", "", svc("web", 100, be)),
		route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, be)))
	for _, c := range []struct {
		cl   *http.Client
		url  string
		host string
	}{
		{client(s.HTTPPort, nil), "http://WEB.example.com/", "web.example.com"},
		{client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true}), "https://sec.example.com/", "sec.example.com"},
	} {
		req, _ := http.NewRequest(http.MethodGet, c.url, nil)
		req.Header.Set("X-Secret", "s3cret")
		req.Header.Set("X-Env", "dev")
		resp, err := c.cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf(`X-Env=["prod 100%% %s"] X-Secret=[]`, c.host); string(body) != want {
			t.Errorf("%s: the backend got %s, want %s", c.url, body, want)
		}
		h := resp.Header
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Type") != "text/plain" || h.Get("X-Backend-Only") != "" {
			t.Errorf("%s: response headers %v, want X-Frame-Options DENY, X-Type text/plain and no X-Backend-Only", c.url, h)
		}
	}
}

// TestLiveCompression: a response of a listed type is gzipped for a
// client that accepts gzip, and left alone for one that does not; other
// types are never compressed.
func TestLiveCompression(t *testing.T) {
	s := edgeSettings(t)
	s.CompressionMIMETypes = []string{"text/html", "text/css; charset=utf-8"}
	page := strings.Repeat("<p>compress me</p>\n", 500)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("type"))
		io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	startEdge(t, s, nil, route("t", "web", "web.example.com", "", svc("web", 100, srv.Listener.Addr().String())))
	cl := client(s.HTTPPort, nil)
	cl.Transport.(*http.Transport).DisableCompression = true // see the encoding as sent
	for _, c := range []struct {
		ctype, accept string
		gzipped       bool
	}{
		{"text/html", "gzip", true},
		{"text/html; charset=utf-8", "gzip", true},
		{"text/css; charset=utf-8", "gzip, deflate", true},
		{"text/css", "gzip", false}, // listed with its charset only
		{"application/json", "gzip", false},
		{"text/html", "identity", false},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://web.example.com/?type="+url.QueryEscape(c.ctype), nil)
		req.Header.Set("Accept-Encoding", c.accept)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		gzipped := resp.Header.Get("Content-Encoding") == "gzip"
		if gzipped != c.gzipped {
			t.Errorf("%s, Accept-Encoding %s: Content-Encoding %q, want gzipped=%v", c.ctype, c.accept, resp.Header.Get("Content-Encoding"), c.gzipped)
			continue
		}
		if gzipped {
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s: %v", c.ctype, err)
			}
			body, _ = io.ReadAll(zr)
		}
		if string(body) != page {
			t.Errorf("%s, Accept-Encoding %s: body of %d bytes differs from the page", c.ctype, c.accept, len(body))
		}
	}
}

// TestLiveErrorPages: with custom pages, a request no route matches gets
// the 404 page, and a route without a live endpoint the 503 page, on
// plain HTTP and through TLS; without them, the default 503 page answers
// both, as OpenShift's default page does.
func TestLiveErrorPages(t *testing.T) {
	for _, custom := range []bool{true, false} {
		t.Run(fmt.Sprintf("custom=%v", custom), func(t *testing.T) {
			s := edgeSettings(t)
			var mod func(*Input)
			if custom {
				s.ErrorPagesDir = "/unused"
				mod = func(in *Input) { in.ErrorPages = testErrorPages }
			}
			startEdge(t, s, mod,
				route("t", "down", "down.example.com", ""),
				route("t", "sec", "sec.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{})))
			for _, c := range []struct {
				cl       *http.Client
				url      string
				code     int
				wantBody string
			}{
				{client(s.HTTPPort, nil), "http://nowhere.example.com/", 404, "<h1>Custom: no such route</h1>\n"},
				{client(s.HTTPPort, nil), "http://down.example.com/", 503, "<h1>Custom: application unavailable\n"},
				{client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true}), "https://nowhere.example.com/", 404, "<h1>Custom: no such route</h1>\n"},
				{client(s.HTTPSPort, &tls.Config{InsecureSkipVerify: true}), "https://sec.example.com/", 503, "<h1>Custom: application unavailable\n"},
			} {
				code, body, err := fetchURL(c.cl, c.url)
				switch {
				case err != nil:
					t.Errorf("%s: %v", c.url, err)
				case custom && (code != c.code || body != c.wantBody):
					t.Errorf("%s: %d %q, want %d %q", c.url, code, body, c.code, c.wantBody)
				case !custom && (code != 503 || !strings.Contains(body, "<h1>Application is not available</h1>")):
					t.Errorf("%s: %d %q, want the default 503 page", c.url, code, body)
				}
			}
			if custom {
				return
			}
			// The default page, as OpenShift's: nothing caches it, and
			// it closes the connection.
			resp, err := client(s.HTTPPort, nil).Get("http://nowhere.example.com/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if cc := resp.Header.Get("Cache-Control"); cc != "private, max-age=0, no-cache, no-store" || !resp.Close || resp.Header.Get("Pragma") != "no-cache" {
				t.Errorf("default 503: Cache-Control %q, Pragma %q, closes %v", cc, resp.Header.Get("Pragma"), resp.Close)
			}
		})
	}
}

// negotiated dials the HTTPS port with sni and returns the ALPN protocol
// agreed for a client offering h2 and http/1.1.
func negotiated(t *testing.T, port int, sni string) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("%s: %v", sni, err)
	}
	defer c.Close()
	return c.ConnectionState().NegotiatedProtocol
}

// TestLiveHTTP2: off by default, no client is offered h2; on, a route
// with its own certificate is served over h2, and a route on the default
// certificate, or an unknown host, stays on HTTP/1.1.
func TestLiveHTTP2(t *testing.T) {
	tc := loadTestCerts(t)
	own := model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", on), func(t *testing.T) {
			s := edgeSettings(t)
			s.HTTP2 = on
			be := echoBackend(t)
			startEdge(t, s, nil,
				route("t", "own", "own.example.com", "", edge(model.InsecurePolicyNone, own), svc("web", 100, be)),
				route("t", "shared", "shared.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, be)))
			// Without h2, HTTP/1.1 is offered explicitly (HAProxy 2.8 and
			// later would otherwise offer h2 on every ssl bind).
			want := "http/1.1"
			if on {
				want = "h2"
			}
			if got := negotiated(t, s.HTTPSPort, "own.example.com"); got != want {
				t.Errorf("own certificate: ALPN %q, want %q", got, want)
			}
			for _, sni := range []string{"shared.example.com", "unknown.example.com"} {
				if got := negotiated(t, s.HTTPSPort, sni); got != "http/1.1" {
					t.Errorf("%s on the default certificate: ALPN %q, want http/1.1", sni, got)
				}
			}
			if !on {
				return
			}
			tr := &http.Transport{
				DialTLSContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					d := tls.Dialer{Config: &tls.Config{ServerName: "own.example.com", InsecureSkipVerify: true, NextProtos: []string{"h2"}}}
					return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", s.HTTPSPort))
				},
				ForceAttemptHTTP2: true,
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://own.example.com/h2")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.Contains(string(body), "path=/h2") {
				t.Errorf("h2 request: %s %d, body %q; want HTTP/2 200 from the backend", resp.Proto, resp.StatusCode, body)
			}
		})
	}
}

// TestLiveRewriteTargetAsOpenShift: the path the backend sees for each
// route path, rewrite target and request, as OpenShift's template
// rewrites it (replace-path '^PATH(.*)$' 'TARGET\1', or for the target
// "/" '^PATH/?(.*)$' '/\1'), the odd cases included: an audit found
// haroute joining /v2/ and /x as /v2/x where OpenShift sends /v2//x.
func TestLiveRewriteTargetAsOpenShift(t *testing.T) {
	cases := []struct{ path, target, request, want string }{
		{"/foo", "/", "/foo", "/"},
		{"/foo", "/", "/foo/", "/"},
		{"/foo", "/", "/foo/x", "/x"},
		{"/foo", "/bar", "/foo", "/bar"},
		{"/foo", "/bar", "/foo/", "/bar/"},
		{"/foo", "/bar", "/foo/x?q=1", "/bar/x"},
		{"/foo", "/bar/", "/foo", "/bar/"},
		{"/foo", "/bar/", "/foo/x", "/bar//x"},
		{"/foo/", "/", "/foo/x", "/x"},
		{"/foo/", "/", "/foo//x", "/x"},
		{"/foo/", "/bar", "/foo/x", "/barx"},
	}
	be := echoBackend(t)
	var routes []model.AdmittedRoute
	for i, c := range cases {
		routes = append(routes, route("t", fmt.Sprintf("rw%d", i), fmt.Sprintf("rw%d.example.com", i), c.path, svc("web", 100, be),
			backendSettings(func(b *model.BackendSettings) { b.RewriteTarget = c.target })))
	}
	s := edgeSettings(t)
	startEdge(t, s, nil, routes...)
	for i, c := range cases {
		status, body, _ := rawGet(t, s.HTTPPort, fmt.Sprintf("rw%d.example.com", i), c.request, "")
		if got, _, _ := strings.Cut(body, "\n"); status != "200" || got != "path="+c.want {
			t.Errorf("path %s, target %s, request %s: %s, backend saw %q, want path=%s", c.path, c.target, c.request, status, got, c.want)
		}
	}
}
