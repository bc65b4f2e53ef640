package model

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// routeYAML is one route with the given host, for last-good tests.
func routeYAML(name, host string) string {
	return "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: " + name +
		"\n  namespace: ns\nspec:\n  host: " + host + "\n  to: {name: svc}\n"
}

func statusOf(t *testing.T, d *Desired, name string) RouteStatus {
	t.Helper()
	for _, st := range d.Statuses {
		if st.Key.Name == name {
			return *st
		}
	}
	t.Fatalf("no status for route %s", name)
	return RouteStatus{}
}

func servedHost(d *Desired, name string) string {
	for _, r := range d.Routes {
		if r.Key.Name == name {
			return r.Host
		}
	}
	return ""
}

func TestLastGoodRoute(t *testing.T) {
	l := NewLoader()
	good := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "app.example.test") + routeYAML("other", "other.example.test"))}
	res := l.Load([]SourceFile{good})
	if got := servedHost(res.Desired, "app"); got != "app.example.test" {
		t.Fatalf("first load serves %q", got)
	}

	// An invalid edit: the last good version keeps serving, stale, with
	// the error at file:line:col.
	bad := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "app.example.test:80") + routeYAML("other", "other.example.test"))}
	res = l.Load([]SourceFile{bad})
	if got := servedHost(res.Desired, "app"); got != "app.example.test" {
		t.Fatalf("invalid edit: served host %q, want the last good app.example.test", got)
	}
	st := statusOf(t, res.Desired, "app")
	if st.State != RouteStale || len(st.Reasons) == 0 || !strings.HasPrefix(st.Reasons[0], "r.yaml:8:9: spec.host") {
		t.Fatalf("invalid edit: status %+v, want stale with a reason at r.yaml:8:9", st)
	}
	if !res.Diagnostics.HasErrors(false) {
		t.Fatalf("invalid edit: no error diagnostic: %v", res.Diagnostics)
	}
	if res.StaleCount() != 1 {
		t.Fatalf("StaleCount = %d, want 1", res.StaleCount())
	}

	// Still broken after an unrelated change: still stale.
	bad2 := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "app.example.test:80") + routeYAML("other", "other2.example.test"))}
	res = l.Load([]SourceFile{bad2})
	if got := servedHost(res.Desired, "app"); got != "app.example.test" {
		t.Fatalf("after another change: served host %q", got)
	}
	if got := servedHost(res.Desired, "other"); got != "other2.example.test" {
		t.Fatalf("the other route did not move: %q", got)
	}

	// Fixed: the new version serves.
	fixed := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "new.example.test") + routeYAML("other", "other2.example.test"))}
	res = l.Load([]SourceFile{fixed})
	if got := statusOf(t, res.Desired, "app"); got.State != RouteAdmitted || servedHost(res.Desired, "app") != "new.example.test" {
		t.Fatalf("fixed: %+v host %q", got, servedHost(res.Desired, "app"))
	}

	// Removed from a well-formed generation: deleted.
	res = l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("other", "other2.example.test"))}})
	if servedHost(res.Desired, "app") != "" {
		t.Fatal("a route absent from a well-formed generation still serves")
	}
}

func TestNeverGoodRouteIsRejected(t *testing.T) {
	l := NewLoader()
	res := l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("app", "app.example.test:80"))}})
	if st := statusOf(t, res.Desired, "app"); st.State != RouteRejected {
		t.Fatalf("state %s, want rejected", st.State)
	}
}

func TestEvaluateDoesNotCommit(t *testing.T) {
	l := NewLoader()
	l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("app", "a.example.test"))}})
	// A version evaluated but never committed (HAProxy refused the
	// generation) is not the last good one.
	l.Evaluate([]SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("app", "b.example.test"))}})
	res := l.Evaluate([]SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("app", "b.example.test:1"))}})
	if got := servedHost(res.Desired, "app"); got != "a.example.test" {
		t.Fatalf("served %q, want the committed a.example.test", got)
	}
}

func TestRefusedRouteServesLastGood(t *testing.T) {
	l := NewLoader()
	l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("app", "a.example.test"))}})
	next := []SourceFile{{Path: "r.yaml", Data: []byte(routeYAML("app", "b.example.test"))}}
	l.Evaluate(next)
	if !l.Refuse(RouteKey{Namespace: "ns", Name: "app"}, "parsing [x:1]: bad") {
		t.Fatal("Refuse did not find the route")
	}
	res := l.Evaluate(next)
	st := statusOf(t, res.Desired, "app")
	if st.State != RouteStale || servedHost(res.Desired, "app") != "a.example.test" {
		t.Fatalf("refused version: %+v host %q", st, servedHost(res.Desired, "app"))
	}
	if !slices.ContainsFunc(st.Reasons, func(r string) bool { return strings.Contains(r, "HAProxy refused this route") }) {
		t.Fatalf("reasons %q do not say HAProxy refused it", st.Reasons)
	}
}

func TestLastGoodEndpoints(t *testing.T) {
	ep := func(ip string) SourceFile {
		return SourceFile{Path: "ep.yaml", Data: []byte("apiVersion: v1\nkind: Endpoints\nmetadata: {name: svc, namespace: ns}\nsubsets:\n- addresses: [{ip: " + ip + "}]\n  ports: [{port: 8080}]\n")}
	}
	r := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "a.example.test"))}
	l := NewLoader()
	res := l.Load([]SourceFile{r, ep("10.0.0.1")})
	if n := len(res.Desired.Routes[0].Services[0].Servers); n != 1 {
		t.Fatalf("%d servers", n)
	}
	res = l.Load([]SourceFile{r, ep("10.0.0.999")})
	srv := res.Desired.Routes[0].Services[0].Servers
	if len(srv) != 1 || srv[0].Address != "10.0.0.1" {
		t.Fatalf("invalid endpoints edit: servers %+v, want the last good 10.0.0.1", srv)
	}
	if res.StaleCount() != 1 {
		t.Fatalf("StaleCount = %d", res.StaleCount())
	}
}

func TestRouterConfigVanishedKeepsSettings(t *testing.T) {
	rc := SourceFile{Path: "rc.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: router}\nspec:\n  bindOptions:\n    ports: {http: 9080, https: 9443, stats: 9936}\n")}
	r := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "a.example.test"))}
	l := NewLoader()
	res := l.Load([]SourceFile{rc, r})
	if res.Desired.Router.HTTPPort != 9080 {
		t.Fatalf("http port %d", res.Desired.Router.HTTPPort)
	}
	res = l.Load([]SourceFile{r})
	if res.Desired.Router.HTTPPort != 9080 {
		t.Fatalf("RouterConfig vanished: http port moved to %d", res.Desired.Router.HTTPPort)
	}
	if !slices.ContainsFunc(res.Diagnostics, func(d Diagnostic) bool { return strings.Contains(d.Message, "no RouterConfig in this generation") }) {
		t.Fatalf("no warning: %v", res.Diagnostics)
	}
}

// A RouterConfig that does not decode holds a cold start back (no ports
// are guessed); a broken Route file that only mentions the word does not.
func TestRouterUnsettled(t *testing.T) {
	route := SourceFile{Path: "r.yaml", Data: []byte(routeYAML("app", "a.example.test"))}
	for _, tc := range []struct {
		name string
		data string
		want bool
	}{
		{"broken RouterConfig", "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nspec: {bindOptions: [\n", true},
		{"broken JSON RouterConfig", `{"kind": "RouterConfig", "spec": {`, true},
		{"broken route mentioning it", "# see the RouterConfig\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [x\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := NewLoader().Evaluate([]SourceFile{route, {Path: "b.yaml", Data: []byte(tc.data)}})
			if res.RouterUnsettled != tc.want {
				t.Fatalf("RouterUnsettled = %v, want %v", res.RouterUnsettled, tc.want)
			}
		})
	}
}

// A file that no longer decodes (a YAML error) keeps serving its last good
// routes, and they are listed as stale with the file's error, as a route
// whose new version is rejected is: status said admitted, and
// haroute_stale_objects 0.
func TestRoutesOfABrokenFileAreStale(t *testing.T) {
	good := SourceFile{Path: "r.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r, namespace: ns}\nspec: {host: r.example.com, to: {name: svc}}\n")}
	l := NewLoader()
	l.Load([]SourceFile{good})
	res := l.Load([]SourceFile{{Path: "r.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [r\n")}})
	if len(res.Desired.Routes) != 1 || res.Desired.Routes[0].Host != "r.example.com" {
		t.Fatalf("routes %v, want the last good r", res.Desired.Routes)
	}
	st := res.Desired.Statuses[0]
	if st.State != RouteStale || len(st.Reasons) == 0 || !strings.HasPrefix(st.Reasons[0], "r.yaml:2:1: invalid YAML") {
		t.Fatalf("status %+v, want stale with the file's error", st)
	}
	if res := l.Load([]SourceFile{good}); res.Desired.Statuses[0].State != RouteAdmitted {
		t.Fatalf("fixed: status %+v, want admitted", res.Desired.Statuses[0])
	}
}

// The endpoints of a file that no longer decodes serve their last good
// version too, and count as stale: haroute_stale_objects left them out.
func TestEndpointsOfABrokenFileAreStale(t *testing.T) {
	eps := "apiVersion: v1\nkind: Endpoints\nmetadata: {name: svc, namespace: ns}\nsubsets:\n- addresses: [{ip: 10.0.0.1}]\n  ports: [{port: 8080}]\n"
	route := SourceFile{Path: "r.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r, namespace: ns}\nspec: {host: r.example.com, to: {name: svc}}\n")}
	l := NewLoader()
	l.Load([]SourceFile{{Path: "eps.yaml", Data: []byte(eps)}, route})
	res := l.Load([]SourceFile{{Path: "eps.yaml", Data: []byte(eps + "  - [broken\n")}, route})
	if !res.Diagnostics.HasErrors(false) {
		t.Fatal("the broken file reported no error")
	}
	if got := len(res.Desired.Routes[0].Services[0].Servers); got != 1 {
		t.Fatalf("route serves %d endpoints, want the last good 1", got)
	}
	if got := res.StaleCount(); got != 1 {
		t.Fatalf("StaleCount = %d, want 1 (the endpoints of the broken file)", got)
	}
	if !res.StalePaths()["eps.yaml"] {
		t.Fatalf("StalePaths = %v, want eps.yaml", res.StalePaths())
	}
	if got, want := res.StaleOthers(), []string{"eps.yaml: its last good content serves 1 Endpoints, EndpointSlice or Secret object(s); the file has errors"}; !slices.Equal(got, want) {
		t.Fatalf("StaleOthers = %q, want %q", got, want)
	}
	if res := l.Load([]SourceFile{{Path: "eps.yaml", Data: []byte(eps)}, route}); res.StaleCount() != 0 {
		t.Fatalf("fixed: StaleCount = %d, want 0", res.StaleCount())
	}
}

// A route and its Endpoints moved to a new file and edited there, the old
// file left broken: the new definitions serve, as `check` (no history)
// says. The last good copy of the broken file won as the incumbent, and
// the Endpoints of both were served together. A copy that was there
// before the break (a duplicate rejected, Endpoints served together) does
// not take over: a typo in the file that serves must not hand its host
// to a leftover copy, nor drop addresses that served.
func TestBrokenFilesLastGoodYieldsToANewDefinition(t *testing.T) {
	file := func(path, host string, ip string) SourceFile {
		return SourceFile{Path: path, Data: []byte(routeYAML("app", host) +
			"---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: svc, namespace: ns}\nsubsets:\n- addresses: [{ip: " + ip + "}]\n  ports: [{port: 8080}]\n")}
	}
	old := file("a.yaml", "old.example.test", "10.0.0.1")
	moved := file("b.yaml", "new.example.test", "10.0.0.2")
	broken := SourceFile{Path: "a.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [app\n")}
	for _, tc := range []struct {
		name     string
		steps    [][]SourceFile
		wantHost string
		wantIPs  []string
	}{
		{"moved in the generation that breaks the old file", [][]SourceFile{{old}, {broken, moved}}, "new.example.test", []string{"10.0.0.2"}},
		{"a copy there before the old file broke", [][]SourceFile{{old}, {old, moved}, {broken, moved}}, "old.example.test", []string{"10.0.0.1", "10.0.0.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLoader()
			var res Result
			for _, step := range tc.steps {
				res = l.Load(step)
			}
			if got := servedHost(res.Desired, "app"); got != tc.wantHost {
				t.Fatalf("serves host %q, want %q", got, tc.wantHost)
			}
			var ips []string
			for _, s := range res.Desired.Routes[0].Services[0].Servers {
				ips = append(ips, s.Address)
			}
			if !slices.Equal(ips, tc.wantIPs) {
				t.Fatalf("serves endpoints %v, want %v", ips, tc.wantIPs)
			}
			// The broken file mended as it was: the route that serves
			// keeps serving.
			res = l.Load([]SourceFile{old, moved})
			if got := servedHost(res.Desired, "app"); got != tc.wantHost {
				t.Fatalf("mended: serves host %q, want %q, which served", got, tc.wantHost)
			}
		})
	}
}

// The same for a file that could not be read (its permissions changed),
// whose last good content the daemon gives again (Loader.Unread).
func TestUnreadFilesLastGoodYieldsToACurrentDefinition(t *testing.T) {
	old := SourceFile{Path: "a.yaml", Data: []byte(routeYAML("app", "old.example.test"))}
	moved := SourceFile{Path: "b.yaml", Data: []byte(routeYAML("app", "new.example.test"))}
	l := NewLoader()
	l.Load([]SourceFile{old})
	l.Unread(map[string]string{"a.yaml": "a.yaml: permission denied"})
	res := l.Load([]SourceFile{old, moved})
	if got := servedHost(res.Desired, "app"); got != "new.example.test" {
		t.Fatalf("serves host %q, want b.yaml's new.example.test", got)
	}
	// Readable again, as it was: the route that serves keeps serving.
	l.Unread(nil)
	if got := servedHost(l.Load([]SourceFile{old, moved}).Desired, "app"); got != "new.example.test" {
		t.Fatalf("readable again: serves host %q, want new.example.test, which served", got)
	}
}

// Result.Definitions names the file whose definition of a doubled route
// serves; a fresh loader told so (a restart) serves the same one, where
// it would take the first by position.
func TestDefinitionsSurviveAFreshLoader(t *testing.T) {
	zz := SourceFile{Path: "zz.yaml", Data: []byte(routeYAML("app", "zz.example.test"))}
	aa := SourceFile{Path: "aa.yaml", Data: []byte(routeYAML("app", "aa.example.test"))}
	l := NewLoader()
	l.Load([]SourceFile{zz})
	res := l.Load([]SourceFile{aa, zz})
	if got := servedHost(res.Desired, "app"); got != "zz.example.test" {
		t.Fatalf("serves %q, want zz.yaml's, which served first", got)
	}
	want := map[RouteKey]string{{Namespace: "ns", Name: "app"}: "zz.yaml"}
	if !reflect.DeepEqual(res.Definitions, want) {
		t.Fatalf("Definitions = %v, want %v", res.Definitions, want)
	}
	fresh := NewLoader()
	fresh.PreferDefinitions(res.Definitions)
	if got := servedHost(fresh.Load([]SourceFile{aa, zz}).Desired, "app"); got != "zz.example.test" {
		t.Fatalf("fresh loader serves %q, want zz.yaml's", got)
	}
	if got := servedHost(NewLoader().Load([]SourceFile{aa, zz}).Desired, "app"); got != "aa.example.test" {
		t.Fatalf("without the preference, %q; the test needs the first by position to differ", got)
	}
}

// A RouterConfig whose current version cannot be used (invalid, or a file
// that no longer parses) serves its last good settings: a stale object,
// counted and listed as one (the stale alert never fired for it).
func TestRouterConfigServingItsLastGoodSettingsIsStale(t *testing.T) {
	rc := func(port string) SourceFile {
		return SourceFile{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  bindOptions:\n    ports:\n      http: " + port + "\n")}
	}
	l := NewLoader()
	if res := l.Load([]SourceFile{rc("8080")}); res.StaleCount() != 0 {
		t.Fatalf("good: StaleCount = %d", res.StaleCount())
	}
	for name, f := range map[string]SourceFile{
		"invalid":        rc("99999"),
		"does not parse": {Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nspec: [\n")},
	} {
		res := l.Evaluate([]SourceFile{f})
		if res.Desired.Router.HTTPPort != 8080 {
			t.Fatalf("%s: port %d, want the last good 8080", name, res.Desired.Router.HTTPPort)
		}
		if got := res.StaleCount(); got != 1 {
			t.Errorf("%s: StaleCount = %d, want 1", name, got)
		}
		if others := res.StaleOthers(); len(others) != 1 || !strings.HasPrefix(others[0], "RouterConfig router.yaml:") {
			t.Errorf("%s: StaleOthers = %q", name, others)
		}
	}
}

// A served edge route whose tls block slips under spec.to keeps its last
// good version, edge, stale with the error at the line: ignored as an
// unknown field, the slip served the route in clear. A field no level
// owns alone stays a warning, and shows on the route's status.
func TestMisplacedRouteFieldKeepsTheLastGoodVersion(t *testing.T) {
	const head = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: app, namespace: ns}\nspec:\n  host: app.example.test\n  to:\n    name: svc\n"
	l := NewLoader()
	res := l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(head + "  tls:\n    termination: edge\n")}})
	if r := res.Desired.Routes; len(r) != 1 || r[0].Termination != TerminationEdge {
		t.Fatalf("first load: routes %v, want app, edge", r)
	}
	res = l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(head + "    tls:\n      termination: edge\n")}})
	if r := res.Desired.Routes; len(r) != 1 || r[0].Termination != TerminationEdge {
		t.Fatalf("tls under spec.to: routes %v, want the last good app, edge", r)
	}
	st := statusOf(t, res.Desired, "app")
	if st.State != RouteStale || len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "r.yaml:8:5") || !strings.Contains(st.Reasons[0], "tls belongs at spec.tls") {
		t.Fatalf("tls under spec.to: status %+v, want stale naming r.yaml:8:5 and spec.tls", st)
	}

	res = l.Load([]SourceFile{{Path: "r.yaml", Data: []byte(head + "  tls:\n    termination: edge\n  colour: blue\n")}})
	st = statusOf(t, res.Desired, "app")
	if st.State != RouteAdmittedWithWarnings || !slices.Contains(st.Warnings, "spec.colour: unknown field") {
		t.Fatalf("a stray field: status %+v, want admitted with the warning spec.colour: unknown field", st)
	}
}

// A wildcard route is listed by the domain it serves: its host alone
// (www.apps.example.test) read as one name.
func TestWildcardRouteStatusNamesItsDomain(t *testing.T) {
	f := SourceFile{Path: "r.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: apps, namespace: ns}\n" +
		"spec:\n  host: www.apps.example.test\n  wildcardPolicy: Subdomain\n  to: {name: svc}\n---\n" +
		"apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: rc}\nspec:\n  routeAdmission: {wildcardPolicy: WildcardsAllowed}\n")}
	res := NewLoader().Load([]SourceFile{f})
	if st := statusOf(t, res.Desired, "apps"); st.Host != "*.apps.example.test" || st.State == RouteRejected {
		t.Fatalf("status %+v, want host *.apps.example.test, admitted", st)
	}
}

// A field of the Route's own one level off is an error of that route,
// at its line, not of its file: a file with such a slip still loads its
// other objects. As the file's error, at the first start of a haroute
// with the rule, a file that had served with a slip had no last good
// content left, and every route in it went down.
func TestMisplacedRouteFieldsAreTheRoutesErrors(t *testing.T) {
	const head = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n"
	f := SourceFile{Path: "f.yaml", Data: []byte(head + "spec:\n  to:\n    name: s\n    tls: {termination: edge}\n    alternateBackends: []\n" +
		"  targetPort: http\n  tls:\n    host: a.example.com\n  annotations: {}\n" + routeYAML("other", "other.example.test"))}
	res := NewLoader().Load([]SourceFile{f})
	var got []string
	for _, d := range res.Diagnostics {
		// Validated as any route is: its host is missing too.
		if d.Severity == SeverityError && strings.Contains(d.Message, "unknown field here") {
			got = append(got, d.String())
		}
	}
	want := []string{
		"f.yaml:8:5: error: spec.to.tls: unknown field here: tls belongs at spec.tls; check its indentation",
		"f.yaml:9:5: error: spec.to.alternateBackends: unknown field here: alternateBackends belongs at spec.alternateBackends; check its indentation",
		"f.yaml:10:3: error: spec.targetPort: unknown field here: targetPort belongs at spec.port.targetPort; check its indentation",
		"f.yaml:12:5: error: spec.tls.host: unknown field here: host belongs at spec.host; check its indentation",
		"f.yaml:13:3: error: spec.annotations: unknown field here: annotations belongs at metadata.annotations; check its indentation",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := statusOf(t, res.Desired, "r"); st.State != RouteRejected {
		t.Errorf("r: %s, want rejected (never good)", st.State)
	}
	if got := servedHost(res.Desired, "other"); got != "other.example.test" {
		t.Errorf("the file's other route serves %q, want other.example.test: the slip failed the whole file", got)
	}
}

// A document that decodes with errors keeps its object's last good version
// alone (DESIGN §7, per object): the file's other objects apply, a fix of
// one of them too, and a route that was rejected before and is now fixed
// shows no error from its old text (an audit found the daemon reporting
// "must be lowercase" for a host no longer in the file, and the fix held
// back). Routes gone from the broken content stay until it decodes.
func TestBrokenDocumentKeepsItsObjectOnly(t *testing.T) {
	file := func(docs ...string) []SourceFile {
		return []SourceFile{{Path: "r.yaml", Data: []byte(strings.Join(docs, ""))}}
	}
	brokenB := "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: b\n  namespace: ns\nspec:\n  host: [b3.example.test]\n  to: {name: svc}\n"
	l := NewLoader()
	l.Load(file(routeYAML("a", "a.example.test"), routeYAML("b", "b.example.test"), routeYAML("c", "c.example.test")))
	// a: an invalid edit, rejected and stale.
	res := l.Load(file(routeYAML("a", "A2.example.test"), routeYAML("b", "b.example.test"), routeYAML("c", "c.example.test")))
	if st := statusOf(t, res.Desired, "a"); st.State != RouteStale {
		t.Fatalf("a uppercased: %+v, want stale", st)
	}
	// a fixed, b broken in decoding, c removed.
	res = l.Load(file(routeYAML("a", "a3.example.test"), brokenB))
	for name, want := range map[string]string{"a": "a3.example.test", "b": "b.example.test", "c": "c.example.test"} {
		if got := servedHost(res.Desired, name); got != want {
			t.Errorf("%s serves %q, want %q", name, got, want)
		}
	}
	if st := statusOf(t, res.Desired, "a"); st.State != RouteAdmitted {
		t.Errorf("fixed a: %+v, want admitted", st)
	}
	for _, name := range []string{"b", "c"} {
		if st := statusOf(t, res.Desired, name); st.State != RouteStale || len(st.Reasons) != 1 || !strings.HasPrefix(st.Reasons[0], "r.yaml:17:9: spec.host") {
			t.Errorf("%s: %+v, want stale with b's error at r.yaml:17:9", name, st)
		}
	}
	var got []string
	for _, d := range res.Diagnostics {
		if d.Severity != SeverityNote {
			got = append(got, d.String())
		}
	}
	want := []string{
		"r.yaml:1:1: warning: file has errors: its objects that decode apply; 2 other(s), with errors or gone from it, keep their last good version",
		`r.yaml:17:9: error: spec.host: expected a string, got a list`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics:\n got %q\nwant %q", got, want)
	}
	// A new route that breaks has no last good version: left out.
	res = l.Load(file(routeYAML("a", "a3.example.test"), brokenB, strings.ReplaceAll(brokenB, "name: b", "name: d")))
	if got := servedHost(res.Desired, "d"); got != "" || len(res.Desired.Routes) != 3 {
		t.Errorf("broken new route d serves %q; %d routes, want a, b, c", got, len(res.Desired.Routes))
	}
	// Fixed: the file's content is whole again, c is gone.
	res = l.Load(file(routeYAML("a", "a3.example.test"), routeYAML("b", "b4.example.test")))
	if servedHost(res.Desired, "b") != "b4.example.test" || servedHost(res.Desired, "c") != "" || res.StaleCount() != 0 {
		t.Errorf("fixed: b %q, c %q, %d stale; want b4, none, 0", servedHost(res.Desired, "b"), servedHost(res.Desired, "c"), res.StaleCount())
	}
}

// A deletion the daemon holds back (its deletion guard) is committed
// with the held routes (and their rivals) as they were: a file that comes
// back broken meanwhile still has its last good content, and a rival does
// not take its host. Once a result without the file is committed, the file
// is gone for good. Evaluated, the file's last good content was dropped
// at once, and the rival took the host.
func TestFileBackBrokenBeforeItsDeletionIsCommitted(t *testing.T) {
	shop := SourceFile{Path: "shop.yaml", Data: []byte(routeYAML("shop", "shop.example.test"))}
	rival := SourceFile{Path: "rival.yaml", Data: []byte(strings.Replace(routeYAML("rival", "shop.example.test"),
		"namespace: ns", "namespace: ns\n  creationTimestamp: \"2000-01-01T00:00:00Z\"", 1))}
	broken := SourceFile{Path: "shop.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [shop\n")}
	held := []RouteKey{{Namespace: "ns", Name: "shop"}, {Namespace: "ns", Name: "rival"}}

	l := NewLoader()
	l.Load([]SourceFile{shop})
	l.Load([]SourceFile{shop, rival}) // the rival, older, loses to the route serving the host
	res := l.Evaluate([]SourceFile{rival})
	if got := servedHost(res.Desired, "rival"); got != "shop.example.test" {
		t.Fatalf("without shop.yaml the rival serves %q, want shop.example.test", got)
	}
	if kept := l.CommitHeld(res, held); !kept["shop.yaml"] {
		t.Errorf("files set aside %v, want shop.yaml", kept)
	}
	res = l.Evaluate([]SourceFile{broken, rival})
	if got := servedHost(res.Desired, "shop"); got != "shop.example.test" {
		t.Errorf("shop.yaml back broken before its deletion was committed: shop serves %q, want shop.example.test (its last good content)", got)
	}
	if got := servedHost(res.Desired, "rival"); got != "" {
		t.Errorf("the rival serves %q, want nothing (shop keeps its host)", got)
	}

	l.Commit(l.Evaluate([]SourceFile{rival})) // the deletion applied
	res = l.Evaluate([]SourceFile{broken, rival})
	if got := servedHost(res.Desired, "shop"); got != "" {
		t.Errorf("shop.yaml back broken after its deletion was committed: shop serves %q, want nothing", got)
	}
	if got := servedHost(res.Desired, "rival"); got != "shop.example.test" {
		t.Errorf("the rival serves %q after shop's deletion was committed, want shop.example.test", got)
	}
}

// While the guard holds, the rest of the directory applies, and is last
// good as it applies (T24): an edit made during the hold and then broken
// keeps the edited version, and a file deleted during the hold, its
// deletion served (another file still gives the service an endpoint),
// contributes nothing when it comes back broken. Committing nothing of a
// held result, the broken edit fell back to the version from before the
// hold, and the deleted file came back whole. The held route's own
// endpoints file is kept (T25): held because its service lost its last
// endpoint, the route went down at the end of the hold when the file came
// back broken.
func TestHeldResultIsLastGoodButForTheHeldRoutes(t *testing.T) {
	endpoints := func(path, svc, ip string) SourceFile {
		return SourceFile{Path: path, Data: []byte("apiVersion: v1\nkind: Endpoints\nmetadata: {name: " + svc + ", namespace: ns}\nsubsets:\n- addresses: [{ip: " + ip + "}]\n  ports: [{port: 8080}]\n")}
	}
	broken := func(path string) SourceFile {
		return SourceFile{Path: path, Data: []byte("apiVersion: v1\nkind: Endpoints\nmetadata: {name: [x\n")}
	}
	shop := SourceFile{Path: "shop.yaml", Data: []byte(strings.Replace(routeYAML("shop", "shop.example.test"), "name: svc", "name: shopsvc", 1))}
	edit := func(host string) SourceFile {
		return SourceFile{Path: "edit.yaml", Data: []byte(routeYAML("edit", host))}
	}
	shopEps, eps1, eps2 := endpoints("shop-eps.yaml", "shopsvc", "10.0.1.1"), endpoints("eps1.yaml", "svc", "10.0.0.1"), endpoints("eps2.yaml", "svc", "10.0.0.2")
	held := []RouteKey{{Namespace: "ns", Name: "shop"}}
	servers := func(d *Desired, name string) int {
		for _, r := range d.Routes {
			if r.Key.Name == name {
				return r.ActiveServers()
			}
		}
		return -1
	}

	l := NewLoader()
	l.Load([]SourceFile{shop, shopEps, edit("v1.example.test"), eps1, eps2})
	// shop's drop held (its servers gone); eps2.yaml's deletion served.
	res := l.Evaluate([]SourceFile{shop, edit("v2.example.test"), eps1})
	if kept := l.CommitHeld(res, held); !kept["shop.yaml"] || !kept["shop-eps.yaml"] || kept["eps2.yaml"] {
		t.Errorf("files set aside %v, want shop.yaml and shop-eps.yaml", kept)
	}
	// Another held generation, an unrelated change: shop-eps.yaml stays
	// aside (T26: found through the last good state only once).
	res = l.Evaluate([]SourceFile{shop, edit("v2.example.test"), eps1, endpoints("other.yaml", "other", "10.0.2.1")})
	if kept := l.CommitHeld(res, held); !kept["shop-eps.yaml"] {
		t.Errorf("files set aside at the second held commit %v, want shop-eps.yaml still", kept)
	}

	res = l.Evaluate([]SourceFile{shop, broken("shop-eps.yaml"), edit("v2.example.test:80"), eps1, broken("eps2.yaml")})
	if got := servedHost(res.Desired, "edit"); got != "v2.example.test" {
		t.Errorf("the edit made during the hold, broken: served on %q, want v2.example.test (its last good version)", got)
	}
	if n := servers(res.Desired, "edit"); n != 1 {
		t.Errorf("edit has %d servers, want 1: eps2.yaml, deleted during the hold and back broken, came back whole", n)
	}
	if n := servers(res.Desired, "shop"); n != 1 {
		t.Errorf("shop has %d servers, want 1: shop-eps.yaml, whose loss the guard holds, back broken has its last good content", n)
	}
}

// A route whose current version is rejected, and whose last good version
// the settings now in force reject too (its host came from a domain the
// RouterConfig no longer has), serves nothing; it is reported as its
// current version is, as a fresh load reports it, not with the path and
// the errors of the version gone from its file (T46).
func TestLastGoodRejectedAsWellReportsTheCurrentVersion(t *testing.T) {
	rc := func(domain string) SourceFile {
		return SourceFile{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  allowWildcardRoutes: true\n" + domain)}
	}
	route := func(extra string) SourceFile {
		return SourceFile{Path: "route.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n  namespace: ns\nspec:\n" + extra + "  to:\n    kind: Service\n    name: svc\n")}
	}
	warm := NewLoader()
	if st := statusOf(t, warm.Load([]SourceFile{rc("  domain: apps.test\n"), route("  path: /old\n")}).Desired, "r"); st.State != RouteAdmitted || st.Host != "r-ns.apps.test" {
		t.Fatalf("first generation: %+v, want admitted on the domain", st)
	}
	rejectedAsWhenFresh(t, warm, []SourceFile{rc(""), route("  wildcardPolicy: Subdomain\n")}, "r")
}

// rejectedAsWhenFresh loads files with the warm loader and checks that
// the route name is rejected, serves nothing, and reads as a fresh load
// of the same files reads: its status and every diagnostic.
func rejectedAsWhenFresh(t *testing.T, warm *Loader, files []SourceFile, name string) {
	t.Helper()
	got, want := warm.Load(files), NewLoader().Load(files)
	gotSt, wantSt := statusOf(t, got.Desired, name), statusOf(t, want.Desired, name)
	if gotSt.State != RouteRejected || !reflect.DeepEqual(gotSt, wantSt) {
		t.Errorf("status %+v, want a fresh load's %+v", gotSt, wantSt)
	}
	if !reflect.DeepEqual(lines(got.Diagnostics), lines(want.Diagnostics)) {
		t.Errorf("diagnostics:\n%s\nwant a fresh load's:\n%s", strings.Join(lines(got.Diagnostics), "\n"), strings.Join(lines(want.Diagnostics), "\n"))
	}
	if got.StaleCount() != 0 || len(got.Desired.Routes) != 0 {
		t.Errorf("%d stale, %d routes served, want none", got.StaleCount(), len(got.Desired.Routes))
	}
}

// A route whose current version is rejected, and whose last good version
// a new routeSelector no longer selects (its old labels), serves nothing
// and is reported as its current version, as a fresh load reports it: it
// was missing from the statuses altogether (T46).
func TestLastGoodNoLongerSelectedReportsTheCurrentVersion(t *testing.T) {
	rc := func(selector string) SourceFile {
		return SourceFile{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n" + selector)}
	}
	route := func(shard, host string) SourceFile {
		return SourceFile{Path: "route.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n  namespace: ns\n  labels:\n    shard: " + shard + "\nspec:\n  host: " + host + "\n  to:\n    kind: Service\n    name: svc\n")}
	}
	warm := NewLoader()
	if st := statusOf(t, warm.Load([]SourceFile{rc("  {}\n"), route("b", "r.example.test")}).Desired, "r"); st.State != RouteAdmitted {
		t.Fatalf("first generation: %+v, want admitted", st)
	}
	rejectedAsWhenFresh(t, warm, []SourceFile{rc("  routeSelector:\n    matchLabels:\n      shard: a\n"), route("a", "r.example.test:80")}, "r")
}
