package render

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil/testroutes"
)

func baseInput(t *testing.T, routes ...model.AdmittedRoute) Input {
	t.Helper()
	tc := loadTestCerts(t)
	return Input{
		Desired:            desired(model.DefaultSettings(), routes...),
		Dir:                goldenDir,
		RunDir:             goldenRunDir,
		DefaultCertificate: []byte(tc.Default),
	}
}

func mustRender(t *testing.T, in Input) *Bundle {
	t.Helper()
	b, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return b
}

func TestRenderIsDeterministic(t *testing.T) {
	tc := loadTestCerts(t)
	for _, c := range goldenCases() {
		in := Input{Desired: c.desired(tc), Dir: goldenDir, RunDir: goldenRunDir, DefaultCertificate: []byte(tc.Default)}
		a, b := mustRender(t, in), mustRender(t, in)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two renders of the same input differ", c.name)
		}
	}
}

func TestFilesSortedWithModes(t *testing.T) {
	tc := loadTestCerts(t)
	in := baseInput(t, route("ns", "r", "r.example.com", "", edge(model.InsecurePolicyNone,
		model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}), svc("s", 100, "10.0.0.1:80")),
		route("ns", "re", "re.example.com", "", reencrypt(model.InsecurePolicyNone,
			model.RouteTLS{DestinationCACertificate: tc.CA}), svc("s", 100, "10.0.0.1:443")))
	in.DefaultDestinationCA = []byte(tc.CA)
	b := mustRender(t, in)
	var got []string
	for _, f := range b.Files {
		got = append(got, f.Name+" "+f.Mode.String())
	}
	want := []string{
		"cas/default-destination.pem -rw-r--r--",
		"cas/ns_re.pem -rw-r--r--",
		"certs/default.pem -rw-------",
		"certs/ns_r.pem -rw-------",
		"crt-list -rw-r--r--",
		"errorpages/503.http -rw-r--r--",
		"haproxy.cfg -rw-------",
		"maps/forwarded.map -rw-r--r--",
		"maps/hsts.map -rw-r--r--",
		"maps/http.map -rw-r--r--",
		"maps/http_host.map -rw-r--r--",
		"maps/http_wildcard.map -rw-r--r--",
		"maps/https.map -rw-r--r--",
		"maps/https_host.map -rw-r--r--",
		"maps/https_wildcard.map -rw-r--r--",
		"maps/sni_passthrough.map -rw-r--r--",
		"maps/sni_passthrough_wildcard.map -rw-r--r--", "maps/timeout_server.map -rw-r--r--", "maps/timeout_tunnel.map -rw-r--r--",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files:\n got %q\nwant %q", got, want)
	}
	var certs []string
	for _, c := range b.Certs {
		certs = append(certs, c.Name)
	}
	if want := []string{"certs/default.pem", "certs/ns_r.pem"}; !reflect.DeepEqual(certs, want) {
		t.Errorf("certs = %q, want %q", certs, want)
	}
	if pem := string(b.File("certs/ns_r.pem").Bytes()); !strings.Contains(pem, "BEGIN CERTIFICATE") || !strings.Contains(pem, "PRIVATE KEY") {
		t.Errorf("route PEM lacks certificate or key:\n%s", pem)
	}
	// Bundle.Maps (what the runtime path loads) and the map files (what a
	// reload loads) must agree, line for line.
	for _, m := range b.Maps {
		var want strings.Builder
		for _, e := range m.Entries {
			want.WriteString(e.Key + " " + e.Value + "\n")
		}
		if f := b.File(m.Name); f == nil || string(f.Bytes()) != want.String() {
			t.Errorf("map %s: Bundle.Maps and the file disagree", m.Name)
		}
	}
}

// The skeleton must not move when only endpoints or weights change (that
// is runtime work), and must move when a backend setting changes.
func TestSkeleton(t *testing.T) {
	withEndpoints := func(extra ...func(*model.AdmittedRoute)) Input {
		return baseInput(t, route("ns", "r", "r.example.com", "", extra...))
	}
	base := mustRender(t, withEndpoints(svc("a", 100, "10.0.0.1:80", "10.0.0.2:80")))

	if bytes.Contains(base.Skeleton, []byte("10.0.0.1")) || bytes.Contains(base.Skeleton, []byte("ep_")) {
		t.Errorf("skeleton holds route server data:\n%s", base.Skeleton)
	}
	if !bytes.Contains(base.Skeleton, []byte("  server fe_sni unix@/run/haroute/fe_sni.sock send-proxy-v2\n")) {
		t.Error("skeleton lost the be_sni server")
	}
	full := string(base.File(ConfigFile).Bytes())
	if !strings.Contains(full, "  server ep_10.0.0.1_80 10.0.0.1:80 weight 50 check inter 5s\n") {
		t.Errorf("full config lacks the server line:\n%s", full)
	}
	var stripped []string
	for _, l := range strings.SplitAfter(full, "\n") {
		if !strings.HasPrefix(l, "  server ep_") {
			stripped = append(stripped, l)
		}
	}
	if strings.Join(stripped, "") != string(base.Skeleton) {
		t.Error("skeleton is not the config minus route server lines")
	}

	for _, tc := range []struct {
		name         string
		in           Input
		sameSkeleton bool
	}{
		{"endpoint added", withEndpoints(svc("a", 100, "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80")), true},
		{"endpoints gone", withEndpoints(), true},
		{"single endpoint (checks off)", withEndpoints(svc("a", 100, "10.0.0.9:80")), true},
		{"weights", withEndpoints(svc("a", 100, "10.0.0.1:80"), svc("b", 3, "10.0.0.2:80")), true},
		{"redirect policy", withEndpoints(edge(model.InsecurePolicyRedirect, model.RouteTLS{}), svc("a", 100, "10.0.0.1:80")), false},
		{"timeout annotation", withEndpoints(svc("a", 100, "10.0.0.1:80", "10.0.0.2:80"),
			backendSettings(func(b *model.BackendSettings) { b.Timeout = time.Minute })), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mustRender(t, tc.in)
			if same := bytes.Equal(b.Skeleton, base.Skeleton); same != tc.sameSkeleton {
				t.Errorf("skeleton unchanged = %v, want %v", same, tc.sameSkeleton)
			}
		})
	}
}

// Switching an edge route between None, Allow and Redirect changes maps
// only: the config, its skeleton and the crt-list stay byte-identical —
// save for the sticky cookie, which OpenShift makes Secure (SameSite=None)
// unless the route also serves plain HTTP (Allow); a route without cookies
// is map-only throughout.
func TestInsecurePolicyIsMapOnly(t *testing.T) {
	render := func(p model.InsecureEdgeTerminationPolicy) *Bundle {
		return mustRender(t, baseInput(t, route("ns", "r", "r.example.com", "/p", edge(p, model.RouteTLS{}), svc("a", 100, "10.0.0.1:80"),
			backendSettings(func(b *model.BackendSettings) { b.DisableCookies = true }))))
	}
	withCookie := func(p model.InsecureEdgeTerminationPolicy) string {
		b := mustRender(t, baseInput(t, route("ns", "r", "r.example.com", "/p", edge(p, model.RouteTLS{}), svc("a", 100, "10.0.0.1:80"))))
		return string(b.File(ConfigFile).Bytes())
	}
	const secureCookie = " insert indirect nocache httponly secure dynamic attr SameSite=None\n"
	const plainCookie = " insert indirect nocache httponly dynamic\n"
	for p, secure := range map[model.InsecureEdgeTerminationPolicy]bool{
		model.InsecurePolicyNone: true, model.InsecurePolicyRedirect: true, model.InsecurePolicyAllow: false,
	} {
		cfg := withCookie(p)
		if strings.Contains(cfg, secureCookie) != secure || strings.Contains(cfg, plainCookie) == secure {
			t.Errorf("%s: Secure cookie with SameSite=None: want %v in\n%s", p, secure, cfg)
		}
	}
	want := map[model.InsecureEdgeTerminationPolicy][]MapEntry{
		model.InsecurePolicyNone:     nil, // no redirect to stand in front of
		model.InsecurePolicyAllow:    {{Key: "r.example.com/p/", Value: "be_edge_http:ns:r"}, {Key: "r.example.com/p?", Value: "be_edge_http:ns:r"}},
		model.InsecurePolicyRedirect: {{Key: "r.example.com/p/", Value: RedirectValue}, {Key: "r.example.com/p?", Value: RedirectValue}},
	}
	none := render(model.InsecurePolicyNone)
	for p, entries := range want {
		b := render(p)
		if !bytes.Equal(b.File(ConfigFile).Bytes(), none.File(ConfigFile).Bytes()) {
			t.Errorf("%s: haproxy.cfg differs from policy None", p)
		}
		if !bytes.Equal(b.File(CrtListFile).Bytes(), none.File(CrtListFile).Bytes()) {
			t.Errorf("%s: crt-list differs from policy None", p)
		}
		for _, m := range b.Maps {
			switch m.Name {
			case HTTPMap:
				if !reflect.DeepEqual(m.Entries, entries) && len(m.Entries)+len(entries) > 0 {
					t.Errorf("%s: http map = %v, want %v", p, m.Entries, entries)
				}
			case HTTPSMap:
				if w := []MapEntry{{Key: "r.example.com/p/", Value: "be_edge_http:ns:r"}, {Key: "r.example.com/p?", Value: "be_edge_http:ns:r"}}; !reflect.DeepEqual(m.Entries, w) {
					t.Errorf("%s: https map = %v, want %v", p, m.Entries, w)
				}
			}
		}
	}
}

func TestMapKeys(t *testing.T) {
	b := mustRender(t, baseInput(t,
		route("a", "deep", "h.example.com", "/x/y", svc("s", 1, "10.0.0.1:80")),
		route("a", "dup", "h.example.com", "/x", svc("s", 1, "10.0.0.1:80")),
		route("a", "other", "a.example.com", "/zzzzzz", svc("s", 1, "10.0.0.1:80")),
		route("a", "root", "h.example.com", "", svc("s", 1, "10.0.0.1:80")),
		route("a", "slash", "h.example.com", "/x/", svc("s", 1, "10.0.0.1:80")),
		route("a", "wild", "www.w.example.com", "/api", wildcard, svc("s", 1, "10.0.0.1:80")),
	))
	got := map[string][]MapEntry{}
	for _, m := range b.Maps {
		got[m.Name] = m.Entries
	}
	// As in OpenShift, "/x/" and "/x" are different paths: "/x" owns the
	// exact path ("?" ends every request key), "/x/" what lies below it,
	// which a "/x" route alone would have too.
	wantHTTP := []MapEntry{
		{"a.example.com/zzzzzz/", "be_http:a:other"},
		{"a.example.com/zzzzzz?", "be_http:a:other"},
		{"h.example.com/x/y/", "be_http:a:deep"},
		{"h.example.com/x/y?", "be_http:a:deep"},
		{"h.example.com/x/", "be_http:a:slash"},
		{"h.example.com/x?", "be_http:a:dup"},
		{"h.example.com/", "be_http:a:root"},
	}
	if !reflect.DeepEqual(got[HTTPMap], wantHTTP) {
		t.Errorf("http map:\n got %v\nwant %v", got[HTTPMap], wantHTTP)
	}
	if want := []MapEntry{{"w.example.com/api/", "be_http:a:wild"}, {"w.example.com/api?", "be_http:a:wild"}}; !reflect.DeepEqual(got[HTTPWildcardMap], want) {
		t.Errorf("wildcard map = %v, want %v", got[HTTPWildcardMap], want)
	}
}

func TestRenderErrors(t *testing.T) {
	ok := func(*model.AdmittedRoute) {}
	set := func(f func(*model.BackendSettings)) func(*model.AdmittedRoute) { return backendSettings(f) }
	for _, tc := range []struct {
		name string
		in   func(in *Input)
		want string
	}{
		{"nil desired", func(in *Input) { in.Desired = nil }, "render: no desired state"},
		{"relative dir", func(in *Input) { in.Dir = "bundle" }, `render: bundle dir "bundle" must be an absolute, clean path`},
		{"dir with space", func(in *Input) { in.Dir = "/var/lib/my bundle" }, `render: bundle dir "/var/lib/my bundle" contains a character not allowed in haproxy syntax (' ')`},
		{"unclean run dir", func(in *Input) { in.RunDir = "/run/../etc" }, `render: run dir "/run/../etc" must be an absolute, clean path`},
		// HAProxy read these as an address list, the end of map_str's
		// argument, a crt-list filter or a variable: every generation
		// rendered there was refused.
		{"bundle dir with comma", func(in *Input) { in.Dir = "/var/lib/a,b" }, `render: bundle dir "/var/lib/a,b" contains ',', which haproxy.cfg would not read as part of a path`},
		{"bundle dir with parenthesis", func(in *Input) { in.Dir = "/var/lib/a)b" }, `render: bundle dir "/var/lib/a)b" contains ')', which haproxy.cfg would not read as part of a path`},
		{"bundle dir with bracket", func(in *Input) { in.Dir = "/var/lib/a]b" }, `render: bundle dir "/var/lib/a]b" contains ']', which haproxy.cfg would not read as part of a path`},
		{"run dir with variable", func(in *Input) { in.RunDir = "/run/$HOME" }, `render: run dir "/run/$HOME" contains '$', which haproxy.cfg would not read as part of a path`},
		{"no default cert", func(in *Input) { in.DefaultCertificate = nil }, "render: no default certificate"},
		{"stats user with colon", func(in *Input) { in.StatsCredentials = model.StatsCredentials{User: "a:b", Password: "p"} },
			"render: stats user contains ':'"},
		{"stats password with newline", func(in *Input) { in.StatsCredentials = model.StatsCredentials{User: "a", Password: "p\nglobal"} },
			"render: stats credentials contain a control character"},
		{"bad port", func(in *Input) { in.Desired.Router.StatsPort = 0 }, "render: stats port 0 out of range 1-65535"},
		{"bad bind address", func(in *Input) { in.Desired.Router.BindAddress = "localhost" }, `render: bind address "localhost" is not an IP address`},
		{"host with newline", routeWith("a.example.com\nglobal", "", ok), `render route ns/r: host "a.example.com\nglobal" contains a character not allowed in haproxy syntax ('\n')`},
		{"host with port", routeWith("a.example.com:80", "", ok), `render route ns/r: host "a.example.com:80" must not contain '/' or ':'`},
		{"uppercase host", routeWith("A.example.com", "", ok), `render route ns/r: host "A.example.com" is not lowercase`},
		{"path with tab", routeWith("a.example.com", "/a\tb", ok), `render route ns/r: path "/a\tb" contains white space or a control character ('\t')`},
		{"path with space", routeWith("a.example.com", "/a b", ok), `render route ns/r: path "/a b" contains white space or a control character (' ')`},
		{"path over the map key limit", routeWith("a.example.com", "/"+strings.Repeat("a", model.MaxMapKeyLength), ok),
			fmt.Sprintf("render route ns/r: maps/http.map key of %d bytes is longer than %d", len("a.example.com/")+model.MaxMapKeyLength+1, model.MaxMapKeyLength)},
		{"relative path", routeWith("a.example.com", "a", ok), `render route ns/r: path "a" does not start with '/'`},
		{"NUL in cookie name", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.CookieName = "a\x00" })),
			`render route ns/r: cookie name "a\x00" contains white space or a control character ('\x00')`},
		{"cookie name with =", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.CookieName = "a=b" })),
			`render route ns/r: cookie name "a=b" contains ';', ',' or '='`},
		{"hsts with newline", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.HSTSHeader = "max-age=1\n" })),
			`render route ns/r: hsts header "max-age=1\n" contains a control character ('\n')`},
		{"rewrite with newline", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.RewriteTarget = "/a\nb" })),
			`render route ns/r: rewrite target "/a\nb" contains a control character ('\n')`},
		{"bad allowlist", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.IPAllowlist = "10.0.0.1 or 1" })),
			`render route ns/r: ip allowlist entry "or" is neither an IP nor a CIDR`},
		{"bad balance", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.Balance = "uri" })),
			`render route ns/r: unknown balance algorithm "uri"`},
		{"bad samesite", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.CookieSameSite = "lax" })),
			`render route ns/r: unknown cookie SameSite value "lax"`},
		{"bad forwarded", routeWith("a.example.com", "", set(func(b *model.BackendSettings) { b.ForwardedHeaders = "always" })),
			`render route ns/r: unknown set-forwarded-headers value "always"`},
		{"bad server address", routeWith("a.example.com", "", func(r *model.AdmittedRoute) {
			r.Services = []model.ServiceBackend{{Name: "s", Servers: []model.Server{{Name: "x", Address: "10.0.0.1 backup", Port: 80}}}}
		}), `render route ns/r: server x address "10.0.0.1 backup" is not an IP address`},
		{"bad server weight", routeWith("a.example.com", "", func(r *model.AdmittedRoute) {
			r.Services = []model.ServiceBackend{{Name: "s", Servers: []model.Server{{Name: "x", Address: "10.0.0.1", Port: 80, Weight: 257}}}}
		}), `render route ns/r: server x weight 257 out of range 0-256`},
		{"server twice in one service", routeWith("a.example.com", "", svc("a", 100, "10.0.0.1:80", "10.0.0.2:80", "10.0.0.1:80")),
			`render route ns/r: server ep_10.0.0.1_80 appears twice`},
		{"server behind two services", routeWith("a.example.com", "", func(r *model.AdmittedRoute) {
			svc("a", 100, "10.0.0.1:80")(r)
			svc("b", 100, "10.0.0.1:80")(r)
		}), `render route ns/r: server ep_10.0.0.1_80 appears twice`},
		{"server twice among many", routeWith("a.example.com", "", func(r *model.AdmittedRoute) {
			var eps []string
			for i := range 20 {
				eps = append(eps, fmt.Sprintf("10.0.1.%d:80", i))
			}
			svc("a", 100, eps...)(r)
			svc("b", 100, "10.0.1.19:80")(r)
		}), `render route ns/r: server ep_10.0.1.19_80 appears twice`},
		{"file name collision", func(in *Input) {
			// Only routes with files of their own use their stem: these
			// two name a destination CA each.
			ca := reencrypt(model.InsecurePolicyNone, model.RouteTLS{DestinationCACertificate: loadTestCerts(t).CA})
			in.Desired.Routes = testroutes.Of([]model.AdmittedRoute{route("a", "b/c", "x.example.com", "", ca), route("a", "b-c", "y.example.com", "", ca)})
		}, `render route a/b-c: file name "a_b-c" already used by route a/b/c`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput(t)
			tc.in(&in)
			_, err := Render(in)
			if err == nil {
				t.Fatalf("Render succeeded, want error %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

// Plain routes write no files of their own, so stems that would collide
// do not matter to them.
func TestRenderPlainRoutesStemsNeedNotDiffer(t *testing.T) {
	in := baseInput(t)
	in.Desired.Routes = testroutes.Of([]model.AdmittedRoute{route("a", "b/c", "x.example.com", ""), route("a", "b-c", "y.example.com", "")})
	if _, err := Render(in); err != nil {
		t.Fatal(err)
	}
}

func routeWith(host, path string, opt func(*model.AdmittedRoute)) func(*Input) {
	return func(in *Input) {
		in.Desired.Routes = testroutes.Of([]model.AdmittedRoute{route("ns", "r", host, path, opt)})
	}
}

func TestFileStemCannotEscape(t *testing.T) {
	for _, tc := range []struct{ ns, name, want string }{
		{"default", "web", "default_web"},
		{"..", "..", "--_--"},
		{"a/../b", "c", "a----b_c"},
		{".hidden", "x.y", "-.hidden_x.y"},
		{"", "x", "-_x"},
	} {
		got := fileStem(tc.ns, tc.name)
		if got != tc.want {
			t.Errorf("fileStem(%q, %q) = %q, want %q", tc.ns, tc.name, got, tc.want)
		}
		if strings.Contains(got, "/") || strings.Contains(got, "..") {
			t.Errorf("fileStem(%q, %q) = %q escapes its directory", tc.ns, tc.name, got)
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"}, {time.Hour, "1h"}, {90 * time.Minute, "90m"}, {30 * time.Second, "30s"},
		{1500 * time.Millisecond, "1500ms"}, {time.Microsecond, "1ms"}, {2*time.Hour + time.Second, "7201s"},
	} {
		if got := duration(tc.d); got != tc.want {
			t.Errorf("duration(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// A spare reads its timeouts from a map in milliseconds; they round as a
// route's own backend writes them (duration), so a route behaves alike on
// either: 500us was 0 in the map (no timeout) and 1ms in the backend.
func TestMillisRoundsAsDuration(t *testing.T) {
	for _, tc := range []struct {
		d         time.Duration
		want, own string
	}{
		{time.Microsecond, "1", "1ms"}, {500 * time.Microsecond, "1", "1ms"}, {1500 * time.Microsecond, "2", "2ms"},
		{time.Second, "1000", "1s"}, {2147483647 * time.Millisecond, "2147483647", "2147483647ms"},
	} {
		if got := millis(tc.d); got != tc.want {
			t.Errorf("millis(%s) = %s, want %s", tc.d, got, tc.want)
		}
		if got := duration(tc.d); got != tc.own {
			t.Errorf("duration(%s) = %s, want %s", tc.d, got, tc.own)
		}
	}
}

func TestServerArgs(t *testing.T) {
	tc := loadTestCerts(t)
	srv := model.Server{Name: "ep_10.0.0.1_80", Address: "10.0.0.1", Port: 80, Weight: 7}
	in := baseInput(t)
	in.Desired.Router.HealthCheckInterval = 3 * time.Second
	withCA := in
	withCA.DefaultDestinationCA = []byte(tc.CA)
	id := strconv.FormatUint(uint64(ServerID(srv.Name)), 10)
	for _, c := range []struct {
		name string
		r    model.AdmittedRoute
		in   Input
		want string
	}{
		{"http", route("ns", "r", "h", ""), in, "weight 7 check inter 5s"},
		{"router interval", route("ns", "r", "h", "", backendSettings(func(b *model.BackendSettings) { b.HealthCheckInterval = 0 })), in,
			"weight 7 check inter 3s"},
		{"maxconn", route("ns", "r", "h", "", backendSettings(func(b *model.BackendSettings) { b.PodConcurrentConnections = 9 })), in,
			"weight 7 check inter 5s maxconn 9"},
		// OpenShift's template: no SNI; the host name is checked only
		// against the default destination CA, as the service's name.
		{"reencrypt system CA", route("ns", "r", "h", "", reencrypt(model.InsecurePolicyNone, model.RouteTLS{})), in,
			"weight 7 check inter 5s ssl verify required ca-file @system-ca sni var(txn.haroute_no_sni) port 80"},
		{"reencrypt default CA", route("ns", "r", "h", "", reencrypt(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100)), withCA,
			"weight 7 check inter 5s ssl verifyhost web.ns.svc verify required ca-file /var/lib/haroute/bundle/cas/default-destination.pem sni var(txn.haroute_no_sni) port 80"},
		{"reencrypt default CA, alternate service", route("ns", "r", "h", "", reencrypt(model.InsecurePolicyNone, model.RouteTLS{}),
			svc("web", 100, "10.0.0.2:80"), svc("canary", 10, "10.0.0.1:80")), withCA,
			"weight 7 check inter 5s ssl verifyhost canary.ns.svc verify required ca-file /var/lib/haroute/bundle/cas/default-destination.pem sni var(txn.haroute_no_sni) port 80"},
		{"reencrypt own CA", route("ns", "r", "h", "", reencrypt(model.InsecurePolicyNone, model.RouteTLS{DestinationCACertificate: tc.CA})), withCA,
			"weight 7 check inter 5s ssl verify required ca-file /var/lib/haroute/bundle/cas/ns_r.pem sni var(txn.haroute_no_sni) port 80"},
		// Servers on a consistent-hash tree carry a stable id.
		{"passthrough", route("ns", "r", "h", "", passthrough(model.InsecurePolicyNone)), in, "weight 7 check inter 5s id " + id},
		{"balance source", route("ns", "r", "h", "", backendSettings(func(b *model.BackendSettings) { b.Balance = model.BalanceSource })), in,
			"weight 7 check inter 5s id " + id},
		{"balance random", route("ns", "r", "h", "", backendSettings(func(b *model.BackendSettings) { b.Balance = model.BalanceRandom })), in,
			"weight 7 check inter 5s id " + id},
	} {
		// Checks run only on routes with two or more active endpoints.
		if !c.r.HealthChecked() {
			svc("checked", 1, "10.0.9.1:80", "10.0.9.2:80")(&c.r)
		}
		if got := ServerArgs(&c.r, srv, c.in); got != c.want {
			t.Errorf("%s: ServerArgs =\n %q\nwant\n %q", c.name, got, c.want)
		}
	}
	single := route("ns", "r", "h", "", svc("s", 100, "10.0.0.1:80"))
	if got, want := ServerArgs(&single, srv, in), "weight 7"; got != want {
		t.Errorf("single endpoint: ServerArgs = %q, want %q (no check)", got, want)
	}
	if a, b := ServerID("ep_10.0.0.1_80"), ServerID("ep_10.0.0.2_80"); a == b || a == 0 || a > 1<<30 {
		t.Errorf("ServerID: %d and %d, want distinct ids in 1..2^30", a, b)
	}
	if got, want := HostPort("fd00::1", 8080), "[fd00::1]:8080"; got != want {
		t.Errorf("HostPort = %q, want %q", got, want)
	}
}

// Only routes with two or more active endpoints render `check`, and
// CheckedServers counts exactly those servers (HAProxy's maxsock adds one
// per checked server).
func TestCheckOnlyWhereChecksRun(t *testing.T) {
	d := desired(model.DefaultSettings(),
		route("ns", "multi", "a", "", svc("s", 100, "10.0.0.2:80", "10.0.0.1:80")),
		route("ns", "single", "b", "", svc("s", 100, "10.0.0.3:80"), svc("off", 0, "10.0.0.5:80", "10.0.0.4:80")),
		route("ns", "none", "c", ""),
	)
	if got := model.CheckedServers(d); got != 2 {
		t.Errorf("model.CheckedServers = %d, want 2", got)
	}
	in := Input{Desired: d}
	for _, r := range d.Routes {
		for _, s := range r.Servers() {
			args := ServerArgs(r, s, in)
			if got, want := strings.Contains(args, "check"), r.HealthChecked(); got != want {
				t.Errorf("%s/%s: ServerArgs %q has check = %v, want %v", r.Key, s.Name, args, got, want)
			}
		}
	}
}

// model.FDBudgetOf counts the listeners render writes: every bind line and
// the stats socket, plus the second TLS hop of a handover (counted always)
// and the master CLI socket, which the supervisor binds.
func TestFDBudgetCountsRenderedListeners(t *testing.T) {
	for _, addrs := range [][]string{nil, {"0.0.0.0", "::"}, {"127.0.0.1", "::1", "10.0.0.1"}} {
		in := baseInput(t, route("ns", "multi", "a", "", svc("s", 100, "10.0.0.2:80", "10.0.0.1:80")),
			route("ns", "single", "b", "", svc("s", 100, "10.0.0.3:80")))
		in.Desired.Router.BindAddresses = addrs
		cfg := string(mustRender(t, in).File(ConfigFile).Bytes())
		listeners, checked := 0, 0
		for line := range strings.Lines(cfg) {
			if strings.HasPrefix(line, "  bind ") || strings.HasPrefix(line, "  stats socket ") {
				listeners++
			}
			if strings.HasPrefix(line, "  server ") && strings.Contains(line, " check") {
				checked++
			}
		}
		b := model.FDBudgetOf(in.Desired, 1)
		if got, want := b.Listeners, listeners+2; got != want {
			t.Errorf("addresses %v: FDBudgetOf counts %d listeners, the config has %d (+ second hop, master socket)", addrs, got, listeners)
		}
		if b.CheckedServers != checked || checked != 2 {
			t.Errorf("addresses %v: FDBudgetOf counts %d checked servers, the config has %d (want 2)", addrs, b.CheckedServers, checked)
		}
	}
}

// Two servers of a backend whose names hash to one id get distinct ids:
// HAProxy refuses a backend whose ids repeat ("custom id … already
// used"), so `check` admitted what HAProxy then refused, and a runtime add
// whose id a running server held wedged every later reload.
func TestServerIDsUniqueWhenNamesCollide(t *testing.T) {
	a, b := model.ServerName("ep_10.1.60.38_8080"), model.ServerName("ep_10.2.218.100_8080")
	if ServerID(a) != ServerID(b) {
		t.Fatalf("ServerID(%s) = %d, ServerID(%s) = %d: the test needs two names that collide", a, ServerID(a), b, ServerID(b))
	}
	r := route("ns", "pt", "pt.example.com", "", passthrough(model.InsecurePolicyNone), svc("s", 100, "10.1.60.38:8080", "10.2.218.100:8080", "10.0.0.9:8080"))
	in := baseInput(t, r)
	ids := map[string]bool{}
	for _, s := range r.Servers() {
		args := ServerArgs(&r, s, in)
		_, id, ok := strings.Cut(args, " id ")
		if !ok || ids[id] {
			t.Fatalf("%s: ServerArgs %q: want an id no other server has (%v)", s.Name, args, ids)
		}
		ids[id] = true
	}
	haproxyCheck(t, in)
}

// TestCookieNameAsOpenShift: a route's own backend has OpenShift's
// default cookie name (the MD5 of "<termination> <namespace>:<name>", the
// router's RoutingKeyName, whose termination it has not read yet: always
// empty); a spare's is its own. Values from md5sum.
func TestCookieNameAsOpenShift(t *testing.T) {
	for be, want := range map[model.BackendName]string{
		"be_http:t:plain":    "e2ea927f48fdb952ed7726604750a1bd",
		"be_edge_http:t:xfe": "312e9668d82ff2203846dc3b1b03f913",
		"be_secure:t:re":     "17d07ee5cdfb65e160c046baf87d70a6",
	} {
		if got := CookieName(be); got != want {
			t.Errorf("CookieName(%s) = %s, want %s", be, got, want)
		}
	}
	if got := CookieName("be_pool:http:1"); got == CookieName("be_pool:http:2") || len(got) != 32 {
		t.Errorf("spare cookie names %s, %s: want distinct hashes", got, CookieName("be_pool:http:2"))
	}
}
