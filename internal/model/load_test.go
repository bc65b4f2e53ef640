package model

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// load runs l.Load; a helper so the corpus and loader tests read alike.
func load(t *testing.T, l *Loader, files []SourceFile) Result {
	t.Helper()
	return l.Load(files)
}

func routeFile(path string, names ...string) SourceFile {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: %s\nspec:\n  host: %s.example.com\n  to: {name: %s}\n", n, n, n)
	}
	return SourceFile{Path: path, Data: []byte(b.String())}
}

func routeNames(objs Objects) []string {
	var out []string
	for _, r := range objs.Routes {
		out = append(out, r.Meta.Name)
	}
	return out
}

func TestLoaderIncremental(t *testing.T) {
	broken := func(path string) SourceFile {
		return SourceFile{Path: path, Data: []byte("apiVersion: v1\nkind: Route\nmetadata:\n  name: [oops\n")}
	}
	steps := []struct {
		name       string
		files      []SourceFile
		wantRoutes []string
		wantDiags  []string
		wantParsed int
		// commit: the result is committed (what the daemon serves whole),
		// which makes a removal final.
		commit bool
	}{
		{
			name:       "first load, path order",
			files:      []SourceFile{routeFile("b.yaml", "b1", "b2"), routeFile("a.yaml", "a1")},
			wantRoutes: []string{"a1", "b1", "b2"},
			wantParsed: 2,
		},
		{
			name:       "unchanged files are not parsed again",
			files:      []SourceFile{routeFile("a.yaml", "a1"), routeFile("b.yaml", "b1", "b2")},
			wantRoutes: []string{"a1", "b1", "b2"},
			wantParsed: 2,
		},
		{
			name:       "a broken file keeps its last good objects",
			files:      []SourceFile{routeFile("a.yaml", "a1"), broken("b.yaml")},
			wantRoutes: []string{"a1", "b1", "b2"},
			wantDiags: []string{
				"b.yaml:1:1: warning: file has errors: its last good content stays in force",
				"b.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'",
			},
			wantParsed: 3,
		},
		{
			name:       "still broken: reported again, not parsed again",
			files:      []SourceFile{routeFile("a.yaml", "a1"), broken("b.yaml")},
			wantRoutes: []string{"a1", "b1", "b2"},
			wantDiags: []string{
				"b.yaml:1:1: warning: file has errors: its last good content stays in force",
				"b.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'",
			},
			wantParsed: 3,
		},
		{
			name:       "a new broken file contributes nothing",
			files:      []SourceFile{routeFile("a.yaml", "a1"), broken("b.yaml"), broken("c.yaml")},
			wantRoutes: []string{"a1", "b1", "b2"},
			wantDiags: []string{
				"b.yaml:1:1: warning: file has errors: its last good content stays in force",
				"b.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'",
				"c.yaml:1:1: note: file has errors: it contributes nothing until fixed",
				"c.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'",
			},
			wantParsed: 4,
		},
		{
			name:       "removed files drop their objects",
			files:      []SourceFile{routeFile("b.yaml", "b3")},
			wantRoutes: []string{"b3"},
			wantParsed: 5,
		},
		{
			// The daemon's deletion guard may hold a removal back.
			name:       "a file back broken before its removal is committed keeps its last good objects",
			files:      []SourceFile{routeFile("b.yaml", "b3"), broken("a.yaml")},
			wantRoutes: []string{"a1", "b3"},
			wantDiags: []string{
				"a.yaml:1:1: warning: file has errors: its last good content stays in force",
				"a.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'",
			},
			wantParsed: 6,
		},
		{
			name:       "a removal committed",
			files:      []SourceFile{routeFile("b.yaml", "b3")},
			wantRoutes: []string{"b3"},
			wantParsed: 6,
			commit:     true,
		},
		{
			name:       "a file that breaks after a committed removal has nothing to keep",
			files:      []SourceFile{routeFile("b.yaml", "b3"), broken("a.yaml")},
			wantRoutes: []string{"b3"},
			wantDiags: []string{
				"a.yaml:1:1: note: file has errors: it contributes nothing until fixed",
				"a.yaml:3:1: error: invalid YAML: did not find expected ',' or ']'",
			},
			wantParsed: 7,
		},
	}
	l := NewLoader()
	for _, s := range steps {
		objs, diags := l.decode(s.files)
		if s.commit {
			l.Commit(Result{})
		}
		diags.Sort()
		if got := routeNames(objs); !reflect.DeepEqual(got, s.wantRoutes) {
			t.Errorf("%s: routes = %q, want %q", s.name, got, s.wantRoutes)
		}
		if got := diagStrings(diags); !reflect.DeepEqual(got, s.wantDiags) && len(got)+len(s.wantDiags) > 0 {
			t.Errorf("%s: diagnostics:\n got %q\nwant %q", s.name, got, s.wantDiags)
		}
		if l.parsed != s.wantParsed {
			t.Errorf("%s: %d files parsed so far, want %d", s.name, l.parsed, s.wantParsed)
		}
	}
}

func TestLoaderHashFromSnapshot(t *testing.T) {
	l := NewLoader()
	f := routeFile("a.yaml", "a1")
	f.Hash = "h1"
	l.decode([]SourceFile{f})
	// Same hash, different bytes: the snapshot's hash is trusted.
	g := routeFile("a.yaml", "a2")
	g.Hash = "h1"
	objs, _ := l.decode([]SourceFile{g})
	if got := routeNames(objs); !reflect.DeepEqual(got, []string{"a1"}) || l.parsed != 1 {
		t.Errorf("routes = %q after %d parses, want [a1] after 1", got, l.parsed)
	}
	g.Hash = "h2"
	objs, _ = l.decode([]SourceFile{g})
	if got := routeNames(objs); !reflect.DeepEqual(got, []string{"a2"}) || l.parsed != 2 {
		t.Errorf("routes = %q after %d parses, want [a2] after 2", got, l.parsed)
	}
}

func TestLoadAdmitsAndKeepsRouterConfig(t *testing.T) {
	rc := func(spec string) SourceFile {
		return SourceFile{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n" + spec)}
	}
	l := NewLoader()
	res := load(t, l, []SourceFile{rc("  bindOptions:\n    ports: {http: 8080}\n"), routeFile("routes.yaml", "web")})
	if res.Diagnostics.HasErrors(false) || res.Desired == nil {
		t.Fatalf("diagnostics = %q, want no errors", diagStrings(res.Diagnostics))
	}
	if res.Desired.Router.HTTPPort != 8080 || len(res.Desired.Routes) != 1 {
		t.Fatalf("http port %d, %d routes; want 8080, 1", res.Desired.Router.HTTPPort, len(res.Desired.Routes))
	}

	// A RouterConfig that no longer decodes: its last good content stays.
	res = load(t, l, []SourceFile{rc("  bindOptions:\n    ports: {http: 8081}\n  colour: red\n"), routeFile("routes.yaml", "web")})
	if !res.Diagnostics.HasErrors(false) || res.Desired.Router.HTTPPort != 8080 {
		t.Errorf("http port %d with diagnostics %q; want 8080 and an error", res.Desired.Router.HTTPPort, diagStrings(res.Diagnostics))
	}

	// A RouterConfig that decodes but fails validation: Admit keeps the
	// previous settings, which the Loader hands it.
	res = load(t, l, []SourceFile{rc("  bindOptions:\n    ports: {http: 8082, https: 8082}\n"), routeFile("routes.yaml", "web")})
	if !res.Diagnostics.HasErrors(false) || res.Desired.Router.HTTPPort != 8080 {
		t.Errorf("http port %d with diagnostics %q; want 8080 and an error", res.Desired.Router.HTTPPort, diagStrings(res.Diagnostics))
	}
}

// A load whose only RouterConfig cannot be used commits no settings: the
// defaults it stood on are no last good settings, and the next load of an
// invalid RouterConfig leaves the router unsettled rather than on ports
// 80, 443 and 1936 (a restart whose saved RouterConfig a newer version
// refuses).
func TestInvalidRouterConfigCommitsNoSettings(t *testing.T) {
	bad := SourceFile{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  bindOptions:\n    ports: {http: 8082, https: 8082}\n")}
	l := NewLoader()
	if res := l.Load([]SourceFile{bad, routeFile("routes.yaml", "web")}); !res.RouterUnsettled {
		t.Fatalf("first load unsettled %v, want true", res.RouterUnsettled)
	}
	if s := l.Settings(); s != nil {
		t.Fatalf("settings committed from an unusable RouterConfig: http port %d", s.HTTPPort)
	}
	if res := l.Load([]SourceFile{bad, routeFile("routes.yaml", "web")}); !res.RouterUnsettled {
		t.Errorf("second load unsettled %v, want true", res.RouterUnsettled)
	}
	// Without a RouterConfig, the defaults are the settings.
	l.Load([]SourceFile{routeFile("routes.yaml", "web")})
	if s := l.Settings(); s == nil || s.HTTPPort != 80 {
		t.Errorf("settings without a RouterConfig: %+v, want the defaults", s)
	}
}

// Which routes a load serves is chosen once for a set of routes and kept
// while they stay (an endpoint change), but chosen again when the
// RouterConfig's namespaces or route selector change with the routes
// untouched; a duplicate's error stands at every load.
func TestRouteChoiceFollowsTheSettings(t *testing.T) {
	rc := func(spec string) SourceFile {
		return SourceFile{Path: "rc.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: router}\nspec:\n" + spec)}
	}
	routes := SourceFile{Path: "routes.yaml", Data: []byte(`apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: a, namespace: team-a, labels: {shard: x}}
spec: {host: a.example.com, to: {name: a}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: b, namespace: team-b}
spec: {host: b.example.com, to: {name: b}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: b, namespace: team-b}
spec: {host: b2.example.com, to: {name: b}}
`)}
	eps := func(n int) SourceFile {
		return SourceFile{Path: "eps.yaml", Data: []byte(fmt.Sprintf("apiVersion: v1\nkind: Endpoints\nmetadata: {name: a, namespace: team-a}\nsubsets: [{addresses: [{ip: 10.0.0.%d}], ports: [{port: 80}]}]\n", n))}
	}
	l := NewLoader()
	for i, step := range []struct {
		spec string
		want []string
	}{
		{"  namespaces: [team-a]\n", []string{"team-a/a"}},
		{"  namespaces: [team-a]\n", []string{"team-a/a"}}, // an endpoint change
		{"  namespaces: [team-a, team-b]\n", []string{"team-a/a", "team-b/b"}},
		{"  namespaces: [team-a, team-b]\n  routeSelector: {matchLabels: {shard: x}}\n", []string{"team-a/a"}},
		{"  namespaces: [team-b]\n", []string{"team-b/b"}},
	} {
		res := load(t, l, []SourceFile{rc(step.spec), routes, eps(i + 1)})
		var got []string
		for _, r := range res.Desired.Routes {
			got = append(got, r.Key.String())
		}
		if !reflect.DeepEqual(got, step.want) {
			t.Errorf("step %d (%q): routes %v, want %v", i, step.spec, got, step.want)
		}
		dup := false
		for _, d := range res.Diagnostics {
			dup = dup || strings.Contains(d.Message, "route team-b/b is already defined at routes.yaml")
		}
		if !dup {
			t.Errorf("step %d: the duplicate's error is missing: %v", i, res.Diagnostics)
		}
	}
}

// A route whose file stays the same changes status when another route
// gives its host back, and keeps it when that route, although older,
// claims it again: statuses kept from load to load follow what decides
// them.
func TestStatusFollowsConflictsOfUnchangedRoute(t *testing.T) {
	route := func(path, name, host, created string) SourceFile {
		return SourceFile{Path: path, Data: []byte(fmt.Sprintf("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: %s, namespace: ns, creationTimestamp: %q}\nspec: {host: %s, to: {name: svc}}\n", name, created, host))}
	}
	a := route("a.yaml", "a", "h.example.com", "2024-02-01T00:00:00Z")
	l := NewLoader()
	for i, step := range []struct {
		bHost string
		a, b  RouteState
	}{
		{"h.example.com", RouteRejected, RouteAdmitted}, // both new: b is older, it wins the host
		{"h.example.com", RouteRejected, RouteAdmitted},
		{"other.example.com", RouteAdmitted, RouteAdmitted},
		{"other.example.com", RouteAdmitted, RouteAdmitted},
		// a serves the host: it keeps it, and b's last good version serves
		{"h.example.com", RouteAdmitted, RouteStale},
		{"h.example.com", RouteAdmitted, RouteStale},
	} {
		res := load(t, l, []SourceFile{a, route("b.yaml", "b", step.bHost, "2024-01-01T00:00:00Z")})
		if got := statusOf(t, res.Desired, "a").State; got != step.a {
			t.Errorf("step %d (b on %s): a is %s, want %s", i, step.bHost, got, step.a)
		}
		if got := statusOf(t, res.Desired, "b").State; got != step.b {
			t.Errorf("step %d (b on %s): b is %s, want %s", i, step.bHost, got, step.b)
		}
	}
}

// Admission's routes come in key order whatever the order of the files
// and of the objects in them, and InKeyOrder knows it without a check;
// a reordered copy (a slice admission never built) is checked and
// refused.
func TestAdmittedRoutesInKeyOrder(t *testing.T) {
	l := NewLoader()
	res := load(t, l, []SourceFile{routeFile("z.yaml", "m", "c", "x"), routeFile("a.yaml", "q", "b")})
	rs := res.Desired.Routes
	if len(rs) != 5 {
		t.Fatalf("%d routes admitted, want 5: %v", len(rs), res.Diagnostics)
	}
	if !slices.IsSortedFunc(rs, func(a, b *AdmittedRoute) int { return a.Key.Compare(b.Key) }) {
		t.Fatalf("admitted routes out of key order: %v", keysOf(rs))
	}
	if !keyOrdered.known(rs) || !InKeyOrder(rs) {
		t.Fatalf("admission's own slice is not known to be in key order")
	}
	swapped := slices.Clone(rs)
	swapped[0], swapped[3] = swapped[3], swapped[0]
	if InKeyOrder(swapped) {
		t.Fatalf("a reordered copy reads as in key order: %v", keysOf(swapped))
	}
	if sorted := slices.Clone(rs); !InKeyOrder(sorted) || !keyOrdered.known(sorted) {
		t.Fatalf("a sorted copy, once checked, is not remembered")
	}
}

func keysOf(rs []*AdmittedRoute) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key.String())
	}
	return out
}

// A load that changes no route replays the last conflict decisions from
// the same admitted routes (decideConflicts' pointer check); a load that
// changes one decides again. Either way the verdicts are those of a
// fresh load.
func TestConflictsReplayedAndDecidedAgain(t *testing.T) {
	routes := func(young string) SourceFile {
		return SourceFile{Path: "routes.yaml", Data: []byte(`---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: old, namespace: a, creationTimestamp: "2020-01-01T00:00:00Z"}
spec: {host: shared.example.com, to: {name: s}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: young, namespace: a, creationTimestamp: "2021-01-01T00:00:00Z"}
spec: {host: ` + young + `, to: {name: s}}
`)}
	}
	eps := func(ip string) SourceFile {
		return SourceFile{Path: "eps.yaml", Data: []byte("apiVersion: v1\nkind: Endpoints\nmetadata: {name: s, namespace: a}\nsubsets:\n- addresses: [{ip: " + ip + "}]\n  ports: [{port: 80}]\n")}
	}
	rejected := func(res Result) []string {
		var out []string
		for _, st := range res.Desired.Statuses {
			if st.State == RouteRejected {
				out = append(out, st.Key.String())
			}
		}
		return out
	}
	l := NewLoader()
	for _, step := range []struct {
		files []SourceFile
		want  []string
	}{
		{[]SourceFile{routes("shared.example.com"), eps("10.0.0.1")}, []string{"a/young"}},
		{[]SourceFile{routes("shared.example.com"), eps("10.0.0.2")}, []string{"a/young"}}, // replayed
		{[]SourceFile{routes("other.example.com"), eps("10.0.0.2")}, nil},                  // decided again
		{[]SourceFile{routes("other.example.com"), eps("10.0.0.3")}, nil},
		// (Back on the shared host, young would be stale, serving its
		// last good version: not a fresh load's verdict.)
	} {
		got, fresh := rejected(l.Load(step.files)), rejected(NewLoader().Load(step.files))
		if !slices.Equal(got, step.want) || !slices.Equal(fresh, step.want) {
			t.Fatalf("rejected %v (a fresh load: %v), want %v", got, fresh, step.want)
		}
	}
}

// A copy of a route's file, edited and named so that it sorts first ("r1
// copy.yaml" before "r1.yaml"), defines the route twice. The definition
// that was serving keeps serving, and the copy is the error; a route new
// to the router keeps its first definition by position.
func TestDuplicateRouteKeepsTheServingDefinition(t *testing.T) {
	route := func(path, host string) SourceFile {
		return SourceFile{Path: path, Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r1, namespace: ns}\nspec: {host: " + host + ", to: {name: svc}}\n")}
	}
	hostOf := func(res Result) string {
		if len(res.Desired.Routes) != 1 {
			t.Fatalf("routes %v, want one", res.Desired.Routes)
		}
		return res.Desired.Routes[0].Host
	}
	l := NewLoader()
	if h := hostOf(l.Load([]SourceFile{route("routes/r1.yaml", "old.example.com")})); h != "old.example.com" {
		t.Fatalf("host %q", h)
	}
	res := l.Load([]SourceFile{route("routes/r1 copy.yaml", "new.example.com"), route("routes/r1.yaml", "old.example.com")})
	if h := hostOf(res); h != "old.example.com" {
		t.Errorf("a copy sorting first took the route over: host %q, want old.example.com", h)
	}
	want := "routes/r1 copy.yaml:3:18: error: metadata.name: route ns/r1 is already defined at routes/r1.yaml:3:18; this definition is ignored"
	found := false
	for _, d := range res.Diagnostics {
		found = found || d.String() == want
	}
	if !found {
		t.Errorf("diagnostics %v, want %q", res.Diagnostics, want)
	}

	fresh := NewLoader().Load([]SourceFile{route("routes/r1 copy.yaml", "new.example.com"), route("routes/r1.yaml", "old.example.com")})
	if h := hostOf(fresh); h != "new.example.com" {
		t.Errorf("a new route: host %q, want its first definition's, new.example.com", h)
	}
}

// A route that serves a host keeps it: a route of another namespace added
// later, with no creationTimestamp (namespace/name order would put it
// first) or one that backdates it, is rejected, with the error on its own
// file. Without that history (a first load, as `haroute check` judges a
// directory), the timestamps and names decide, as on OpenShift.
func TestServedRouteKeepsItsHostFromNewerClaims(t *testing.T) {
	route := func(path, ns, name, host, extra string) SourceFile {
		return SourceFile{Path: path, Data: []byte(fmt.Sprintf("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: %s, namespace: %s%s}\nspec: {host: %s, to: {name: svc}}\n", name, ns, extra, host))}
	}
	shop := route("shop.yaml", "team5", "shop", "shop.example.test", "")
	grab := route("grab.yaml", "team0", "grab", "shop.example.test, path: /login", "")
	steal := route("steal.yaml", "team9", "steal", "shop.example.test", `, creationTimestamp: "2000-01-01T00:00:00Z"`)
	errorsOf := func(res Result) []string {
		var out []string
		for _, d := range res.Diagnostics {
			if d.Severity == SeverityError {
				out = append(out, d.String())
			}
		}
		return out
	}

	l := NewLoader()
	l.Commit(load(t, l, []SourceFile{shop}))
	for _, newer := range []SourceFile{grab, steal} {
		res := load(t, l, []SourceFile{shop, newer})
		name := strings.TrimSuffix(newer.Path, ".yaml")
		if got := statusOf(t, res.Desired, "shop").State; got != RouteAdmitted {
			t.Errorf("with %s added: shop is %s, want admitted", name, got)
		}
		if got := statusOf(t, res.Desired, name).State; got != RouteRejected {
			t.Errorf("with %s added: %s is %s, want rejected", name, name, got)
		}
		if errs := errorsOf(res); len(errs) != 1 || !strings.HasPrefix(errs[0], newer.Path+":") || !strings.Contains(errs[0], "route team5/shop") {
			t.Errorf("with %s added: errors %q, want one on %s naming team5/shop", name, errs, newer.Path)
		}
		l.Commit(res)
	}

	res := load(t, NewLoader(), []SourceFile{shop, grab, steal})
	for name, want := range map[string]RouteState{"steal": RouteAdmitted, "grab": RouteRejected, "shop": RouteRejected} {
		if got := statusOf(t, res.Desired, name).State; got != want {
			t.Errorf("first load of all three: %s is %s, want %s (the oldest creationTimestamp wins)", name, got, want)
		}
	}
}

// A second Endpoints of one service in another file (a leftover copy) is
// served with the first, as before, and now said, whether the index is
// built afresh or kept from the last load.
func TestDuplicateEndpointsWarned(t *testing.T) {
	eps := func(path, ip string) SourceFile {
		return SourceFile{Path: path, Data: []byte(fmt.Sprintf("apiVersion: v1\nkind: Endpoints\nmetadata: {name: svc, namespace: ns}\nsubsets: [{addresses: [{ip: %s}], ports: [{port: 8080}]}]\n", ip))}
	}
	route := SourceFile{Path: "r.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r, namespace: ns}\nspec: {host: r.example.com, to: {name: svc}}\n")}
	// Other services' Endpoints, enough for the index to be kept and
	// updated for one object added.
	var others strings.Builder
	for i := range 100 {
		fmt.Fprintf(&others, "---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: other%d, namespace: ns}\nsubsets: [{addresses: [{ip: 10.1.0.%d}], ports: [{port: 8080}]}]\n", i, i+1)
	}
	base := []SourceFile{route, eps("eps.yaml", "10.0.0.1"), {Path: "others.yaml", Data: []byte(others.String())}}
	l := NewLoader()
	if res := load(t, l, base); len(res.Diagnostics) != 0 {
		t.Fatalf("one Endpoints: %v", res.Diagnostics)
	}
	if l.scratch.epIndex.idx == nil {
		t.Fatal("the endpoint index was not kept")
	}
	res := load(t, l, append(base, eps("zzz-old.yaml", "10.0.0.2")))
	want := `zzz-old.yaml:3:18: warning: metadata.name: Endpoints ns/svc is also defined at eps.yaml:3:18; the addresses of both are served`
	if got := lines(res.Diagnostics); !slices.Equal(got, []string{want}) {
		t.Errorf("diagnostics %q, want %q", got, want)
	}
	if n := len(res.Desired.Routes[0].Servers()); n != 2 {
		t.Errorf("%d servers, want both copies' 2", n)
	}
}

// A served route with a rival waiting on its host keeps the host when its
// new version is rejected (it goes stale, its last good version serves),
// when it gains a creationTimestamp (a re-export adds one), and when it
// moves to another path: whatever admission saw in between, what decides
// is what the committed state served.
func TestServedRouteKeepsItsClaimWhileItChanges(t *testing.T) {
	route := func(ns, name, spec, extra string) SourceFile {
		return SourceFile{Path: name + ".yaml", Data: []byte(fmt.Sprintf("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: %s, namespace: %s%s}\nspec: {%s, to: {name: svc}}\n", name, ns, extra, spec))}
	}
	rival := route("nsa", "y", "host: h.example.test, path: /b", `, creationTimestamp: "2001-01-01T00:00:00Z"`)
	for _, c := range []struct {
		name string
		x    SourceFile
		want RouteState
	}{
		{"rejected version", route("nsb", "x", "host: h.example.test, path: /a, tls: {termination: bogus}", ""), RouteStale},
		{"timestamp added", route("nsb", "x", "host: h.example.test, path: /a", `, creationTimestamp: "2026-11-27T00:00:00Z"`), RouteAdmitted},
		{"path moved", route("nsb", "x", "host: h.example.test, path: /c", ""), RouteStale},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := NewLoader()
			served := route("nsb", "x", "host: h.example.test, path: /a", "")
			l.Commit(load(t, l, []SourceFile{served}))
			res := load(t, l, []SourceFile{served, rival})
			if got := statusOf(t, res.Desired, "y").State; got != RouteRejected {
				t.Fatalf("the rival is %s, want rejected", got)
			}
			l.Commit(res)
			for i := range 2 { // and again, from the state that committed
				res = load(t, l, []SourceFile{c.x, rival})
				if got := statusOf(t, res.Desired, "x").State; got != c.want {
					t.Errorf("load %d: x is %s, want %s: %v", i, got, c.want, res.Diagnostics)
				}
				if got := statusOf(t, res.Desired, "y").State; got != RouteRejected {
					t.Errorf("load %d: the rival is %s, want rejected", i, got)
				}
				l.Commit(res)
			}
		})
	}
}

// TestPlainRouteTurningTLSOnAPassthroughHostIsDecidedAgain: a plain route
// may share a passthrough route's host, a TLS one may not. The conflict
// decisions replayed from the last load must see the route gain or lose
// its TLS: they kept both admitted (the edge route never served), and a
// restart then rejected the passthrough route.
func TestPlainRouteTurningTLSOnAPassthroughHostIsDecidedAgain(t *testing.T) {
	// Without timestamps, name order puts acme first: serving its path
	// over HTTP, it must still not take the host's TLS from pt.
	for _, stamps := range []bool{true, false} {
		t.Run(fmt.Sprintf("timestamps=%v", stamps), func(t *testing.T) { plainTurningTLS(t, stamps) })
	}
}

func plainTurningTLS(t *testing.T, stamps bool) {
	pt, acme := `, creationTimestamp: "2020-01-01T00:00:00Z"`, `, creationTimestamp: "2021-01-01T00:00:00Z"`
	if !stamps {
		pt, acme = "", ""
	}
	files := func(acmeTLS string) []SourceFile {
		return []SourceFile{{Path: "routes.yaml", Data: []byte(`---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: pt, namespace: a` + pt + `}
spec: {host: pt.example.com, to: {name: s}, tls: {termination: passthrough}}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: acme, namespace: a` + acme + `}
spec: {host: pt.example.com, path: /.well-known, to: {name: s}` + acmeTLS + `}
`)}}
	}
	states := func(res Result) string {
		var out []string
		for _, st := range res.Desired.Statuses {
			out = append(out, st.Key.Name+"="+string(st.State))
		}
		return strings.Join(out, " ")
	}
	l := NewLoader()
	// Edited to edge, acme's new version loses, and its last good (plain)
	// version serves: stale. A fresh loader has no history: the older
	// route wins, or without timestamps the first by name.
	freshEdge := "acme=rejected pt=admitted"
	if !stamps {
		freshEdge = "acme=admitted pt=rejected"
	}
	for i, step := range []struct{ tls, want, fresh string }{
		{"", "acme=admitted pt=admitted", "acme=admitted pt=admitted"},
		{", tls: {termination: edge}", "acme=stale pt=admitted", freshEdge},
		{"", "acme=admitted pt=admitted", "acme=admitted pt=admitted"},
	} {
		res := l.Load(files(step.tls))
		if got := states(res); got != step.want {
			t.Fatalf("step %d: %s, want %s", i, got, step.want)
		}
		fresh := NewLoader().Load(files(step.tls))
		if got := states(fresh); got != step.fresh {
			t.Fatalf("step %d, fresh loader: %s, want %s", i, got, step.fresh)
		}
	}
}

// What a load keeps holds no text of the files it read: the parser's
// values are pieces of a file's bytes, so an object that outlived its
// file's version (a host kept as a key from one conflict decision to the
// next, a route's output cached while the route reads the same, a pool
// binding) pinned the whole version, one per object (audit T21: the heap
// grew about 50 kB a change under churn at 1500 routes).
func TestLoaderKeepsNoFileText(t *testing.T) {
	var files []SourceFile
	hosts := []string{"a.example.test", "b.example.test"}
	tree := func() []SourceFile {
		var b strings.Builder
		for i, h := range hosts {
			fmt.Fprintf(&b, "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r%d\n  namespace: ns\n  labels: {app: shop}\n"+
				"  annotations: {haproxy.router.openshift.io/timeout: 5s}\nspec:\n  host: %s\n  path: /p\n  to: {name: s}\n"+
				"  tls: {termination: edge, insecureEdgeTerminationPolicy: Redirect}\n", i, h)
		}
		b.WriteString("---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: s, namespace: ns}\nsubsets:\n- addresses: [{ip: 10.0.0.1}]\n  ports: [{name: http, port: 8080}]\n")
		f := SourceFile{Path: "routes.yaml", Data: []byte(b.String())}
		files = append(files, f)
		return []SourceFile{f}
	}
	l := NewLoader()
	l.Load(tree())
	hosts[1] = "moved.example.test" // decided from the last decision
	res := l.Load(tree())
	text := func(what, s string) {
		t.Helper()
		for _, f := range files {
			if within(s, f.Data) {
				t.Errorf("%s %q is text of a loaded file", what, s)
			}
		}
	}
	for host := range l.scratch.claimants {
		text("claimants key", host)
	}
	if len(l.scratch.claimants) != 2 {
		t.Errorf("claimants %v, want the two hosts", l.scratch.claimants)
	}
	for _, r := range res.Objects.Routes {
		text("name", r.Meta.Name)
		text("namespace", r.Meta.Namespace)
		text("host", r.Spec.Host)
		text("path", r.Spec.Path)
		text("service", r.Spec.To.Name)
		for k, v := range r.Meta.Labels {
			text("label", k)
			text("label value", v)
		}
		for k, v := range r.Meta.Annotations {
			text("annotation", k)
			text("annotation value", v)
		}
	}
	for _, r := range res.Desired.Routes {
		text("admitted host", r.Host)
		text("admitted key", r.Key.Name)
	}
	for _, e := range res.Objects.Endpoints {
		text("endpoints name", e.Meta.Name)
	}
}

// within reports whether s's bytes lie in b.
func within(s string, b []byte) bool {
	if len(s) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p < lo+uintptr(len(b))
}
