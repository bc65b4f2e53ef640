package render

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// TestLiveOpenShiftParity serves OpenShift Route YAML, loaded as the daemon
// loads it, through a real HAProxy, and checks behaviours of OpenShift's
// haproxy-config.template (openshift/router): sticky cookie attributes per
// termination and insecure policy, the Forwarded and X-Forwarded-* headers
// per set-forwarded-headers, and rate-limit-connections spelled "TRUE".
func TestLiveOpenShiftParity(t *testing.T) {
	bin := testutil.HAProxy(t)
	tc := loadTestCerts(t)

	// The backend answers with the forwarding headers it received; /hold
	// answers only once release is closed.
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("X-Backend-Secret", "leak")
		fmt.Fprintf(w, "forwarded=%s\nxff=%s\nxfh=%s\n", strings.Join(r.Header.Values("Forwarded"), "|"),
			strings.Join(r.Header.Values("X-Forwarded-For"), "|"), strings.Join(r.Header.Values("X-Forwarded-Host"), "|"))
		fmt.Fprintf(w, "host=%s\n", r.Host)
		fmt.Fprintf(w, "client-host=%s\ndebug=%s\n", r.Header.Get("X-Client-Host"), r.Header.Get("X-Debug"))
	}))
	t.Cleanup(echo.Close)
	var released bool
	releaseAll := func() {
		if !released {
			released = true
			close(release)
		}
	}
	t.Cleanup(releaseAll)
	_, port := splitHostPort(echo.Listener.Addr().String())

	httpPort, httpsPort, statsPort := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	route := func(name, host, extra string) string {
		return fmt.Sprintf(`---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: %s
  namespace: p
%sspec:
  host: %s
  to:
    kind: Service
    name: echo
`, name, extra, host)
	}
	annotations := func(kv ...string) string {
		s := "  annotations:\n"
		for i := 0; i < len(kv); i += 2 {
			s += fmt.Sprintf("    %s: %q\n", kv[i], kv[i+1])
		}
		return s
	}
	tlsBlock := func(policy string) string {
		return fmt.Sprintf("  tls:\n    termination: edge\n    insecureEdgeTerminationPolicy: %s\n", policy)
	}
	routes := route("edge-none", "none.example.com", "") + tlsBlock("None") +
		route("edge-lax", "lax.example.com", annotations(model.AnnotationCookieSameSite, "Lax")) + tlsBlock("Redirect") +
		route("edge-allow", "allow.example.com", "") + tlsBlock("Allow") +
		route("plain", "plain.example.com", "") +
		route("replace", "replace.example.com", annotations(model.AnnotationSetForwardedHeaders, "replace")) +
		route("headers", "headers.example.com", "") + `  httpHeaders:
    actions:
      request:
      - name: X-Client-Host
        action:
          type: Set
          set:
            value: '%[req.hdr(host),lower]'
      - name: X-Debug
        action:
          type: Delete
      response:
      - name: X-Frame-Options
        action:
          type: Set
          set:
            value: DENY
      - name: X-Backend-Secret
        action:
          type: Delete
` +
		route("limited", "limited.example.com", annotations(model.AnnotationRateLimit, "TRUE",
			model.AnnotationRateLimitConcurrentTCP, "2")) +
		route("pass", "pass.example.com", "") + "  tls:\n    termination: passthrough\n    insecureEdgeTerminationPolicy: Redirect\n" +
		route("acme", "pass.example.com", "") + "  path: /.well-known/acme-challenge\n" +
		route("mixed-root", "mixed.example.com", "") + tlsBlock("Redirect") +
		route("mixed-closed", "mixed.example.com", "") + "  path: /closed\n" + tlsBlock("None") +
		route("open-root", "open.example.com", "") + tlsBlock("Allow") +
		route("open-closed", "open.example.com", "") + "  path: /closed\n" + tlsBlock("None")
	files := []model.SourceFile{
		{Path: "router.yaml", Data: []byte(fmt.Sprintf(`apiVersion: haroute.io/v1alpha1
kind: RouterConfig
metadata:
  name: router
spec:
  bindOptions:
    address: 127.0.0.1
    ports: {http: %d, https: %d, stats: %d}
  tuningOptions:
    maxConnections: 2000
`, httpPort, httpsPort, statsPort))},
		{Path: "routes.yaml", Data: []byte(routes)},
		{Path: "endpoints.yaml", Data: []byte(fmt.Sprintf(`apiVersion: v1
kind: Endpoints
metadata:
  name: echo
  namespace: p
subsets:
- addresses:
  - ip: 127.0.0.1
  ports:
  - port: %d
`, port))},
	}
	res := model.NewLoader().Load(files)
	for _, d := range res.Diagnostics {
		// Free ports may fall in the NodePort range, which only warns.
		if d.Severity == model.SeverityError || d.Severity == model.SeverityWarning && !strings.HasPrefix(d.Field, "spec.bindOptions.ports.") {
			t.Fatalf("unexpected diagnostic: %s", d)
		}
	}
	if got := len(res.Desired.Routes); got != 13 {
		t.Fatalf("%d routes admitted, want 13", got)
	}

	tmp := testutil.ShortTempDir(t)
	in := Input{Desired: res.Desired, Dir: tmp + "/b", RunDir: tmp + "/r", DefaultCertificate: []byte(tc.Default)}
	writeBundle(t, in.Dir, mustRender(t, in))
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, bin, in)

	httpClient := client(httpPort, nil)
	httpsClient := client(httpsPort, &tls.Config{InsecureSkipVerify: true})

	t.Run("sticky cookie attributes", func(t *testing.T) {
		for _, c := range []struct {
			name, url string
			cl        *http.Client
			want      []string // attributes that must be there
			absent    []string
		}{
			{"edge None: Secure, SameSite=None", "https://none.example.com/", httpsClient, []string{"Secure", "SameSite=None", "HttpOnly"}, nil},
			{"edge with cookie-same-site Lax", "https://lax.example.com/", httpsClient, []string{"Secure", "SameSite=Lax"}, nil},
			{"edge Allow over http: no Secure, no SameSite", "http://allow.example.com/", httpClient, []string{"HttpOnly"}, []string{"Secure", "SameSite"}},
			{"edge Allow over https: still no Secure", "https://allow.example.com/", httpsClient, nil, []string{"Secure", "SameSite"}},
			{"plain http: no Secure, no SameSite", "http://plain.example.com/", httpClient, []string{"HttpOnly"}, []string{"Secure", "SameSite"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				status, body, hdr := get(t, c.cl, c.url, "")
				if status != 200 {
					t.Fatalf("status %d (%q)", status, body)
				}
				cookie := hdr.Get("Set-Cookie")
				if cookie == "" {
					t.Fatal("no sticky cookie set")
				}
				attrs := strings.Split(cookie, "; ")
				for _, w := range c.want {
					if !containsFold(attrs, w) {
						t.Errorf("Set-Cookie %q lacks %s", cookie, w)
					}
				}
				for _, a := range c.absent {
					for _, x := range attrs {
						if strings.HasPrefix(strings.ToLower(x), strings.ToLower(a)) {
							t.Errorf("Set-Cookie %q has %s", cookie, x)
						}
					}
				}
			})
		}
	})

	t.Run("a plain HTTP path on a passthrough route's host", func(t *testing.T) {
		// OpenShift admits both (only two routes with TLS conflict on a
		// host): the path is served over HTTP, the rest redirected.
		if code, body, _ := get(t, httpClient, "http://pass.example.com/.well-known/acme-challenge/token", ""); code != http.StatusOK || !strings.Contains(body, "xfh=pass.example.com") {
			t.Errorf("the ACME path answers %d %q, want 200 from its service", code, body)
		}
		if code, _, h := get(t, httpClient, "http://pass.example.com/app", ""); code != http.StatusFound || !strings.HasPrefix(h.Get("Location"), "https://pass.example.com") {
			t.Errorf("the passthrough route's other paths answer %d %q, want its redirect", code, h.Get("Location"))
		}
	})

	t.Run("a path not served over HTTP under a root that redirects", func(t *testing.T) {
		// OpenShift answers 503 for the None route's path, not the
		// shorter path's redirect.
		if code, _, h := get(t, httpClient, "http://mixed.example.com/closed/x", ""); code != http.StatusServiceUnavailable {
			t.Errorf("the None route's path answers %d (Location %q), want 503", code, h.Get("Location"))
		}
		if code, _, _ := get(t, httpClient, "http://mixed.example.com/open", ""); code != http.StatusFound {
			t.Errorf("the root answers %d, want its redirect", code)
		}
		if code, _, _ := get(t, httpsClient, "https://mixed.example.com/closed/x", ""); code != http.StatusOK {
			t.Errorf("the None route answers %d over HTTPS, want 200", code)
		}
		// Under a root that serves HTTP (Allow), OpenShift's root
		// answers: the None route has no backend entry there, and no
		// redirect to stop.
		if code, body, _ := get(t, httpClient, "http://open.example.com/closed/x", ""); code != http.StatusOK || !strings.Contains(body, "xfh=open.example.com") {
			t.Errorf("under an Allow root the None route's path answers %d %q, want the root's 200", code, body)
		}
	})

	t.Run("forwarded headers", func(t *testing.T) {
		req := func(host string) string {
			r, _ := http.NewRequest("GET", "http://"+host+"/", nil)
			r.Header.Set("Forwarded", "for=192.0.2.9")
			r.Header.Set("X-Forwarded-For", "192.0.2.9")
			resp, err := httpClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			_, _ = fmt.Fprint(&b, readAll(t, resp))
			return b.String()
		}
		// append (the default): the client's values, then the router's.
		got := req("plain.example.com")
		want := "forwarded=for=192.0.2.9|for=127.0.0.1;host=plain.example.com;proto=http\nxff=192.0.2.9|127.0.0.1\n"
		if !strings.HasPrefix(got, want) {
			t.Errorf("append:\n got %q\nwant prefix %q", got, want)
		}
		// replace: what the client sent is dropped.
		got = req("replace.example.com")
		want = "forwarded=for=127.0.0.1;host=replace.example.com;proto=http\nxff=127.0.0.1\nxfh=replace.example.com\n"
		if !strings.HasPrefix(got, want) {
			t.Errorf("replace:\n got %q\nwant %q", got, want)
		}
	})

	t.Run("the Host header reaches the backend lowercased", func(t *testing.T) {
		// As OpenShift's frontends set it (RFC 4343): X-Forwarded-Host
		// and Forwarded say the host as routing read it, over HTTP and
		// HTTPS; a lowercase Host is left as it came.
		for _, c := range []struct {
			cl         *http.Client
			url, host  string
			wantHost   string
			wantPrefix string
		}{
			{httpClient, "http://replace.example.com/", fmt.Sprintf("Replace.Example.COM:%d", httpPort), fmt.Sprintf("replace.example.com:%d", httpPort),
				fmt.Sprintf("forwarded=for=127.0.0.1;host=replace.example.com:%d;proto=http\nxff=127.0.0.1\nxfh=replace.example.com:%d\n", httpPort, httpPort)},
			{httpsClient, "https://none.example.com/", "NONE.example.com", "none.example.com", ""},
			{httpClient, "http://plain.example.com/", "plain.example.com", "plain.example.com", ""},
		} {
			r, _ := http.NewRequest("GET", c.url, nil)
			r.Host = c.host
			resp, err := c.cl.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			resp.Body.Close()
			if !strings.Contains(body, "\nhost="+c.wantHost+"\n") || !strings.HasPrefix(body, c.wantPrefix) {
				t.Errorf("Host %q: backend saw %q, want host=%s and prefix %q", c.host, body, c.wantHost, c.wantPrefix)
			}
		}
	})

	t.Run("spec.httpHeaders actions", func(t *testing.T) {
		r, _ := http.NewRequest("GET", "http://headers.example.com/", nil)
		r.Host = "Headers.Example.COM"
		r.Header.Set("X-Debug", "1")
		resp, err := httpClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		resp.Body.Close()
		if !strings.HasSuffix(body, "client-host=headers.example.com\ndebug=\n") {
			t.Errorf("request headers: backend saw %q, want X-Client-Host set from the Host (lowercased) and X-Debug deleted", body)
		}
		if got := resp.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("X-Frame-Options = %q, want DENY", got)
		}
		if got := resp.Header.Get("X-Backend-Secret"); got != "" {
			t.Errorf("X-Backend-Secret = %q, want it deleted", got)
		}
	})

	t.Run("rate-limit-connections TRUE limits concurrent connections", func(t *testing.T) {
		// A request held in the backend counts against concurrent-tcp 2;
		// a second connection at the same time reaches the limit.
		first := make(chan int, 1)
		go func() {
			resp, err := client(httpPort, nil).Get("http://limited.example.com/hold")
			if err != nil {
				first <- 0
				return
			}
			resp.Body.Close()
			first <- resp.StatusCode
		}()
		select {
		case <-arrived:
		case status := <-first:
			t.Fatalf("held request ended early with %d", status)
		}
		resp, err := httpClient.Get("http://limited.example.com/")
		if err == nil {
			resp.Body.Close()
			t.Errorf("second concurrent connection answered %d, want it rejected", resp.StatusCode)
		}
		releaseAll()
		if status := <-first; status != 200 {
			t.Errorf("held request: %d, want 200", status)
		}
	})
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) || strings.HasPrefix(strings.ToLower(x), strings.ToLower(s)) {
			return true
		}
	}
	return false
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestRedirectLocationAsOpenShift: on the standard HTTPS port the Location
// is OpenShift's, the Host header without its port and the request's URL;
// on another port it must name that port, or the redirect leads nowhere.
func TestRedirectLocationAsOpenShift(t *testing.T) {
	in := baseInput(t)
	cfg := string(mustRender(t, in).File(ConfigFile).Bytes())
	want := "http-request redirect location https://%[req.fhdr(host),regsub(:[0-9]+$,,)]%[url] code 302 if { var(txn.be) -m str " + RedirectValue + " }"
	if !strings.Contains(cfg, want) {
		t.Errorf("HTTPS port 443: no line %q", want)
	}
	in.Desired.Router.HTTPSPort = 8443
	cfg = string(mustRender(t, in).File(ConfigFile).Bytes())
	if want := "http-request redirect location https://%[req.fhdr(host),field(1,:)]:8443%[capture.req.uri] code 302"; !strings.Contains(cfg, want) {
		t.Errorf("HTTPS port 8443: no line %q", want)
	}
}
