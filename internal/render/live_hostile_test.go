package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// TestLiveQuotedValues loads routes whose path and cookie name hold
// characters HAProxy's config parser gives a meaning to, through the real
// loader, and checks on a real HAProxy that they mean what they say: the
// path still routes and is rewritten, the cookie is set under its name and
// keeps a client on its server.
func TestLiveQuotedValues(t *testing.T) {
	bin := testutil.HAProxy(t)
	tc := loadTestCerts(t)

	backend := func(name string) (ip string, port int) {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.RequestURI)
		}))
		t.Cleanup(s.Close)
		return splitHostPort(s.Listener.Addr().String())
	}
	httpPort, httpsPort, statsPort := testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	const quotedPath = `/it's"q"\x`
	// The widest name OpenShift's cookie name pattern admits.
	const cookieName = `Sticky_ID-2`
	// The longest path validation admits under its host.
	longestPath := "/" + strings.Repeat("p", model.MaxMapKeyLength-len("l.example.com")-2)
	routes := []map[string]any{
		{"apiVersion": "route.openshift.io/v1", "kind": "Route",
			"metadata": map[string]any{"name": "quoted", "namespace": "t"},
			"spec":     map[string]any{"host": "q.example.com", "path": quotedPath, "to": map[string]any{"name": "quoted"}}},
		{"apiVersion": "route.openshift.io/v1", "kind": "Route",
			"metadata": map[string]any{"name": "rewritten", "namespace": "t",
				"annotations": map[string]any{model.AnnotationRewriteTarget: "/new%27s"}},
			"spec": map[string]any{"host": "r.example.com", "path": quotedPath, "to": map[string]any{"name": "rewritten"}}},
		{"apiVersion": "route.openshift.io/v1", "kind": "Route",
			"metadata": map[string]any{"name": "longest", "namespace": "t"},
			"spec":     map[string]any{"host": "l.example.com", "path": longestPath, "to": map[string]any{"name": "quoted"}}},
		{"apiVersion": "route.openshift.io/v1", "kind": "Route",
			"metadata": map[string]any{"name": "sticky", "namespace": "t",
				"annotations": map[string]any{model.AnnotationCookieName: cookieName, model.AnnotationBalance: "roundrobin"}},
			"spec": map[string]any{"host": "c.example.com", "to": map[string]any{"name": "sticky"}}},
	}
	endpoints := func(svc string, names ...string) map[string]any {
		var subsets []any
		for _, n := range names {
			ip, port := backend(n)
			subsets = append(subsets, map[string]any{
				"addresses": []any{map[string]any{"ip": ip}},
				"ports":     []any{map[string]any{"port": port}},
			})
		}
		return map[string]any{"apiVersion": "v1", "kind": "Endpoints",
			"metadata": map[string]any{"name": svc, "namespace": "t"}, "subsets": subsets}
	}
	docs := append(routes,
		endpoints("quoted", "quoted"),
		endpoints("rewritten", "rewritten"),
		endpoints("sticky", "s1", "s2"),
		map[string]any{"apiVersion": "haroute.io/v1alpha1", "kind": "RouterConfig", "metadata": map[string]any{"name": "router"},
			"spec": map[string]any{
				"bindOptions":   map[string]any{"address": "127.0.0.1", "ports": map[string]any{"http": httpPort, "https": httpsPort, "stats": statsPort}},
				"tuningOptions": map[string]any{"maxConnections": 2000},
			}},
	)
	var files []model.SourceFile
	for i, d := range docs {
		data, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, model.SourceFile{Path: fmt.Sprintf("doc-%d.json", i), Data: data})
	}
	res := model.NewLoader().Load(files)
	if res.Diagnostics.HasErrors(false) || len(res.Desired.Routes) != len(routes) {
		t.Fatalf("%d of %d routes admitted; diagnostics: %v", len(res.Desired.Routes), len(routes), res.Diagnostics)
	}

	tmp := testutil.ShortTempDir(t)
	in := Input{Desired: res.Desired, Dir: tmp + "/b", RunDir: tmp + "/r", DefaultCertificate: []byte(tc.Default)}
	writeBundle(t, in.Dir, mustRender(t, in))
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, bin, in)

	for _, c := range []struct{ host, path, wantStatus, wantBody string }{
		{"q.example.com", quotedPath, "200", "quoted " + quotedPath},
		{"q.example.com", quotedPath + "/deeper", "200", "quoted " + quotedPath + "/deeper"},
		{"q.example.com", `/it's"q"`, "503", ""},
		{"q.example.com", `/it%27s"q"\x`, "503", ""}, // the path is matched as sent
		{"r.example.com", quotedPath, "200", "rewritten /new%27s"},
		{"r.example.com", quotedPath + "/a?b=1", "200", "rewritten /new%27s/a?b=1"},
		{"l.example.com", longestPath, "200", "quoted " + longestPath},
		{"l.example.com", longestPath + "/x", "200", "quoted " + longestPath + "/x"},
		{"l.example.com", longestPath[:len(longestPath)-1], "503", ""},
	} {
		status, body, _ := rawGet(t, httpPort, c.host, c.path, "")
		if status != c.wantStatus || c.wantBody != "" && body != c.wantBody {
			t.Errorf("GET %s%s: %s %q, want %s %q", c.host, c.path, status, body, c.wantStatus, c.wantBody)
		}
	}

	// Without the cookie, roundrobin alternates; with it, the client stays.
	seen := map[string]string{} // server → its cookie
	for range 4 {
		status, body, hdr := rawGet(t, httpPort, "c.example.com", "/", "")
		name, _, _ := strings.Cut(body, " ")
		val, ok := strings.CutPrefix(hdr, cookieName+"=")
		if status != "200" || !ok {
			t.Fatalf("GET c.example.com/: %s %q, Set-Cookie %q, want 200 and a cookie named %s", status, body, hdr, cookieName)
		}
		val, _, _ = strings.Cut(val, ";")
		seen[name] = val
	}
	if len(seen) != 2 {
		t.Fatalf("roundrobin reached servers %v, want s1 and s2", seen)
	}
	for server, val := range seen {
		for range 3 {
			if _, body, _ := rawGet(t, httpPort, "c.example.com", "/", cookieName+"="+val); !strings.HasPrefix(body, server+" ") {
				t.Errorf("with %s's cookie: %q, want %s", server, body, server)
			}
		}
	}
}

// rawGet sends one HTTP/1.1 request with the path exactly as given (Go's
// client would percent-encode quotes and backslashes) and returns the
// status code, the body and the Set-Cookie header.
func rawGet(t *testing.T, port int, host, path, cookie string) (status, body, setCookie string) {
	t.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	if cookie != "" {
		req += "Cookie: " + cookie + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s%s: %v", host, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s%s: body: %v", host, path, err)
	}
	status, body, setCookie = strconv.Itoa(resp.StatusCode), string(data), resp.Header.Get("Set-Cookie")
	return status, body, setCookie
}

// TestLiveStatsPasswordQuoted: a stats password holding characters the
// config parser gives a meaning to is written so that HAProxy checks the
// password as it was given.
func TestLiveStatsPasswordQuoted(t *testing.T) {
	bin := testutil.HAProxy(t)
	tc := loadTestCerts(t)
	s := model.DefaultSettings()
	s.BindAddress = "127.0.0.1"
	s.MaxConnections = 2000
	s.HTTPPort, s.HTTPSPort, s.StatsPort = testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	tmp := testutil.ShortTempDir(t)
	const password = `p'a#s$%\"w`
	in := Input{Desired: desired(s), Dir: tmp + "/b", RunDir: tmp + "/r", DefaultCertificate: []byte(tc.Default),
		StatsCredentials: model.StatsCredentials{User: "admin", Password: password}}
	writeBundle(t, in.Dir, mustRender(t, in))
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, bin, in)
	for _, path := range []string{"/stats", "/metrics"} {
		for _, c := range []struct {
			password string
			want     int
		}{{password, 200}, {"p", 401}, {`p'a#s`, 401}} {
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", s.StatsPort, path), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.SetBasicAuth("admin", c.password)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s, password %q: status %d, want %d", path, c.password, resp.StatusCode, c.want)
			}
		}
	}
}

// TestLiveRequestsWithoutAPathAndHostLists: a request without a path
// ("OPTIONS *", an absolute URI without one) goes to its host's root
// route whether or not the host has other paths, as on OpenShift; a Host
// header listing several names matches none (HAProxy's req.hdr took the
// last one, and routed the request there).
func TestLiveRequestsWithoutAPathAndHostLists(t *testing.T) {
	named := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	root, api := named("root"), named("api")
	s := edgeSettings(t)
	s.AllowWildcardRoutes = true
	startEdge(t, s, nil,
		route("t", "alone", "alone.example.com", "", svc("root", 100, root)),
		route("t", "root", "paths.example.com", "", svc("root", 100, root)),
		route("t", "api", "paths.example.com", "/api", svc("api", 100, api)),
		route("t", "wild", "www.wild.example.com", "", svc("root", 100, root), wildcard))
	for _, c := range []struct{ line, host, status, body string }{
		{"OPTIONS * HTTP/1.1", "alone.example.com", "200", ""},
		{"OPTIONS * HTTP/1.1", "paths.example.com", "200", ""},
		{"OPTIONS * HTTP/1.1", "paths.example.com.", "200", ""},
		{"OPTIONS * HTTP/1.1", "x.wild.example.com", "200", ""},
		{"GET http://paths.example.com HTTP/1.1", "paths.example.com", "200", "root"},
		{"GET http://x.wild.example.com HTTP/1.1", "x.wild.example.com", "200", "root"},
		{"GET /api/x HTTP/1.1", "paths.example.com", "200", "api"},
		// No route: 503 on HAProxy 2.6; 3.0 refuses such a Host itself (400).
		{"GET /api/x HTTP/1.1", "evil.example.com, paths.example.com", "none", ""},
		{"GET / HTTP/1.1", "evil.example.com, alone.example.com", "none", ""},
	} {
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(
			rawRequest(t, s.HTTPPort, c.line+"\r\nHost: "+c.host+"\r\nConnection: close\r\n\r\n"))), nil)
		if err != nil {
			t.Fatalf("%s, Host %s: %v", c.line, c.host, err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status, body := strconv.Itoa(resp.StatusCode), string(data)
		if c.status == "none" && (status == "503" || status == "400") {
			continue
		}
		if status != c.status || (c.body != "" && body != c.body) {
			t.Errorf("%s, Host %s: %s %q, want %s %q", c.line, c.host, status, body, c.status, c.body)
		}
	}
}
