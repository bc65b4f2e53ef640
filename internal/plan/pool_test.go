package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// withSpares renders d with an http spare backend named slot; a route of d
// may be bound to it.
func withSpares(t *testing.T, d *model.Desired, slots ...model.BackendName) State {
	t.Helper()
	in := testInput(d)
	for _, s := range slots {
		in.Spares = append(in.Spares, model.SpareRoute(model.TerminationNone, false, s, &d.Router))
	}
	return stateOf(t, in)
}

// A new route bound to a spare backend, and a bound route deleted, are
// runtime changes: servers and map entries; the skeleton stays as it was.
func TestPoolBindAndUnbindAreRuntime(t *testing.T) {
	const slot = model.BackendName("be_pool:http:1")
	base := baseDesired()
	applied := withSpares(t, base, slot)

	bound := baseDesired()
	r := httpRoute("new", "new.example.com", svc("new", 100, srv("127.0.0.1", 18099, 256)))
	r.Slot = slot
	r.Backend = model.SpareRoute(model.TerminationNone, false, slot, &bound.Router).Backend // as admission defaults it
	bound.Routes = append(bound.Routes, &r)
	slices.SortFunc(bound.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
	desired := withSpares(t, bound, slot)
	if !bytes.Equal(applied.Bundle.Skeleton, desired.Bundle.Skeleton) {
		t.Fatal("binding a route to a spare changed the skeleton")
	}
	p := Compute(applied, desired)
	if p.Reload {
		t.Fatalf("binding reloads: %v", reasonStrings(p))
	}
	lines := strings.Join(changeLines(p), "\n")
	for _, want := range []string{"runtime | route bound to a spare backend | default/new | be_pool:http:1", "runtime | endpoint added"} {
		if !strings.Contains(lines, want) {
			t.Errorf("changes lack %q:\n%s", want, lines)
		}
	}
	cmds := strings.Join(commands(p), "\n")
	if !strings.Contains(cmds, "add server be_pool:http:1/ep_127.0.0.1_18099 127.0.0.1:18099") ||
		!strings.Contains(cmds, "new.example.com") {
		t.Fatalf("commands do not add the server and the map entry:\n%s", cmds)
	}

	// Deleted again: unbound at runtime.
	p = Compute(desired, withSpares(t, baseDesired(), slot))
	if p.Reload {
		t.Fatalf("unbinding reloads: %v", reasonStrings(p))
	}
	lines = strings.Join(changeLines(p), "\n")
	if !strings.Contains(lines, "runtime | route unbound from its spare backend | default/new") {
		t.Fatalf("changes:\n%s", lines)
	}
	cmds = strings.Join(commands(p), "\n")
	if !strings.Contains(cmds, "set server be_pool:http:1/ep_127.0.0.1_18099 state maint") {
		t.Fatalf("the server is not drained:\n%s", cmds)
	}

	// A route bound to a slot the running HAProxy does not have reloads.
	p = Compute(applied, withSpares(t, bound, slot, "be_pool:http:2"))
	if !p.Reload {
		t.Fatal("a new spare backend did not reload")
	}
}

// A route whose backend differs from the spare's (an annotation) fits no
// spare; render tells.
func TestSameBackend(t *testing.T) {
	d := baseDesired()
	in := testInput(d)
	spare := model.SpareRoute(model.TerminationNone, false, "be_pool:http:1", &d.Router)
	plain := *routeByName(t, d, "hello")
	if !render.SameBackend(plain, spare, in) {
		t.Fatal("a plain route does not fit the spare")
	}
	// Timeouts come from maps on spares: a route with its own fits.
	timed := plain
	timed.Backend.Timeout, timed.Backend.TunnelTimeout = 7e9, 3600e9
	if !render.SameBackend(timed, spare, in) {
		t.Fatal("a route with its own timeouts does not fit the spare")
	}
	// So does an edge route's HSTS header, from a map.
	edgeSpare := model.SpareRoute(model.TerminationEdge, false, "be_pool:edge:3", &d.Router)
	secured := edgeSpare
	secured.Key, secured.Slot, secured.Backend.HSTSHeader = model.RouteKey{Namespace: "ns", Name: "hsts"}, "", "max-age=60"
	if !render.SameBackend(secured, edgeSpare, in) {
		t.Fatal("an edge route with HSTS does not fit an edge spare")
	}
	rewritten := plain
	rewritten.Backend.RewriteTarget = "/v2"
	if render.SameBackend(rewritten, spare, in) {
		t.Fatal("a route with a rewrite-target fits the spare")
	}
	tcp := model.SpareRoute(model.TerminationPassthrough, false, "be_pool:passthrough:2", &d.Router)
	tcpTimed := *routeByName(t, d, "tcp")
	tcpTimed.Backend.Timeout = 7e9
	if render.SameBackend(tcpTimed, tcp, in) {
		t.Fatal("a passthrough route with its own timeout fits the spare: TCP backends cannot set it per connection")
	}
}

// Small map changes are edits in place only where appending cannot change
// which entry a lookup finds, and where every word passes the CLI as is.
func TestSafeEdit(t *testing.T) {
	e := func(k, v string) render.MapEntry { return render.MapEntry{Key: k, Value: v} }
	olds := []render.MapEntry{e("a.example/api", "be_a"), e("a.example/", "be_root"), e("b.example/", "be_b")}
	for _, tc := range []struct {
		name string
		news []render.MapEntry
		ok   bool
		want string
	}{
		{"new host", append(slices.Clone(olds), e("c.example/", "be_c")), true,
			"add map /m c.example/ be_c"},
		{"value changed", []render.MapEntry{olds[0], e("a.example/", "be_x"), olds[2]}, true,
			"set map /m a.example/ be_x"},
		{"deleted", olds[:2], true, "del map /m b.example/"},
		// a.example/ is a prefix of the new key and would win if the new
		// entry were appended after it.
		{"longer path under an existing one", append([]render.MapEntry{e("a.example/api/v2", "be_v2")}, olds...), false, ""},
		{"a word the CLI would split", append(slices.Clone(olds), e("c.example/a;b", "be_c")), false, ""},
		// An exact-match map (the timeout maps, keyed by backend) has no
		// prefix to fear: be_pool:http:10 after be_pool:http:1.
		{"exact", append(slices.Clone(olds), e("a.example/api/v2", "be_v2")), true, "add map /m a.example/api/v2 be_v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edit, ok := safeEdit("/m", &render.Map{Entries: olds}, &render.Map{Entries: tc.news}, tc.name == "exact")
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, edit)
			}
			if ok && strings.Join(edit.Commands(), "\n") != tc.want {
				t.Fatalf("commands %q, want %q", edit.Commands(), tc.want)
			}
		})
	}
}

// A bound route's timeouts are entries of the timeout maps, keyed by its
// spare: binding one, changing it and unbinding are map edits, at runtime.
func TestPoolTimeoutsAreMapEntries(t *testing.T) {
	const slot = model.BackendName("be_pool:http:1")
	withRoute := func(timeout, tunnel time.Duration) State {
		d := baseDesired()
		r := httpRoute("new", "new.example.com", svc("new", 100, srv("127.0.0.1", 18099, 256)))
		r.Slot = slot
		r.Backend = model.SpareRoute(model.TerminationNone, false, slot, &d.Router).Backend
		r.Backend.Timeout, r.Backend.TunnelTimeout = timeout, tunnel
		d.Routes = append(d.Routes, &r)
		slices.SortFunc(d.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
		return withSpares(t, d, slot)
	}
	empty := withSpares(t, baseDesired(), slot)
	bound := withRoute(90*time.Second, 0)
	changed := withRoute(5*time.Second, time.Hour)
	for _, step := range []struct {
		name          string
		from, to      State
		want, wantNot []string
	}{
		{"bind", empty, bound, []string{"/var/lib/haroute/bundle/maps/timeout_server.map <<\nbe_pool:http:1 90000\n",
			"commit map @1 /var/lib/haroute/bundle/maps/timeout_server.map"}, nil},
		{"change", bound, changed, []string{
			"set map /var/lib/haroute/bundle/maps/timeout_server.map be_pool:http:1 5000",
			"add map @",
			"be_pool:http:1 3600000",
		}, []string{"add server"}},
		{"unbind", changed, empty, []string{
			"del map /var/lib/haroute/bundle/maps/timeout_server.map be_pool:http:1",
			"del map /var/lib/haroute/bundle/maps/timeout_tunnel.map be_pool:http:1",
		}, nil},
	} {
		p := Compute(step.from, step.to)
		if p.Reload {
			t.Fatalf("%s: reloads: %v", step.name, reasonStrings(p))
		}
		cmds := strings.Join(commands(p), "\n")
		for _, want := range step.want {
			if !strings.Contains(cmds, want) {
				t.Errorf("%s: commands lack %q:\n%s", step.name, want, cmds)
			}
		}
		for _, not := range step.wantNot {
			if strings.Contains(cmds, not) {
				t.Errorf("%s: commands hold %q:\n%s", step.name, not, cmds)
			}
		}
		// The spare's timeouts are set before the routing entry that
		// leads to it, and deleted only after it: no request between
		// the two is served with the default timeouts.
		timeouts := strings.Index(cmds, "maps/timeout_server.map")
		routing := strings.Index(cmds, "new.example.com")
		switch {
		case step.name == "change":
		case timeouts < 0 || routing < 0:
			t.Errorf("%s: commands do not touch both the timeout and the routing map:\n%s", step.name, cmds)
		case step.name == "bind" && timeouts > routing:
			t.Errorf("bind: the routing entry comes before the timeouts:\n%s", cmds)
		case step.name == "unbind" && timeouts < routing:
			t.Errorf("unbind: the timeouts go before the routing entry:\n%s", cmds)
		}
	}
}

// A bound route's allowlist is its spare's ACL: binding fills it before
// the map entry routes to the route, unbinding opens it again only after
// the entry is gone, and a change replaces it; all at runtime.
func TestPoolAllowlistIsTheSparesACL(t *testing.T) {
	const slot = model.BackendName("be_pool:http:1")
	const acl = "#16777217"
	withRoute := func(allow model.AddressList) State {
		d := baseDesired()
		r := httpRoute("new", "new.example.com", svc("new", 100, srv("127.0.0.1", 18099, 256)))
		r.Slot = slot
		r.Backend = model.SpareRoute(model.TerminationNone, false, slot, &d.Router).Backend
		r.Backend.IPAllowlist = allow
		d.Routes = append(d.Routes, &r)
		slices.SortFunc(d.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
		return withSpares(t, d, slot)
	}
	empty := withSpares(t, baseDesired(), slot)
	bound := withRoute("10.0.0.0/8 2001:db8::/32")
	changed := withRoute("127.0.0.1")
	if !bytes.Equal(empty.Bundle.Skeleton, bound.Bundle.Skeleton) {
		t.Fatal("the allowlist's patterns are in the skeleton")
	}
	index := func(cmds []string, prefix string) int {
		return slices.IndexFunc(cmds, func(c string) bool { return strings.HasPrefix(c, prefix) })
	}
	for _, step := range []struct {
		name     string
		from, to State
		patterns []string
		aclFirst bool // the ACL is replaced before the map entry changes
	}{
		{"bind", empty, bound, []string{"10.0.0.0/8", "2001:db8::/32"}, true},
		{"change", bound, changed, []string{"127.0.0.1"}, true},
		{"unbind", changed, empty, []string{"0.0.0.0/0", "::/0"}, false},
	} {
		p := Compute(step.from, step.to)
		if p.Reload {
			t.Fatalf("%s: reloads: %v", step.name, reasonStrings(p))
		}
		cmds := commands(p)
		var want []string
		for _, pat := range step.patterns {
			want = append(want, "add acl @1 "+acl+" "+pat)
		}
		want = append(want, "commit acl @1 "+acl)
		at := index(cmds, "prepare acl "+acl)
		if at < 0 || !slices.Equal(cmds[at+1:at+1+len(want)], want) {
			t.Fatalf("%s: commands do not replace the ACL with %v:\n%s", step.name, step.patterns, strings.Join(cmds, "\n"))
		}
		if m := index(cmds, "add map "+testDir+"/maps/http.map"); step.aclFirst && m >= 0 && m < at {
			t.Errorf("%s: the map entry routes to the route before its allowlist is in force:\n%s", step.name, strings.Join(cmds, "\n"))
		}
		if m := index(cmds, "del map "+testDir+"/maps/http.map"); !step.aclFirst && (m < 0 || m > at) {
			t.Errorf("%s: the allowlist opens before the map entry is gone:\n%s", step.name, strings.Join(cmds, "\n"))
		}
	}
}

// A path route not served over HTTP (policy None) under a root that
// redirects has HTTPSOnlyValue entries in the HTTP map; unbinding it at
// runtime must delete them, or its path keeps answering 503 over HTTP
// where the root now redirects.
func TestUnboundNonePathRouteLeavesTheHTTPMap(t *testing.T) {
	const slot = model.BackendName("be_pool:edge:1")
	redirecting := func() *model.Desired {
		d := baseDesired()
		root := routeByName(t, d, "hello")
		root.Termination, root.InsecurePolicy = model.TerminationEdge, model.InsecurePolicyRedirect
		return d
	}
	bound := redirecting()
	r := httpRoute("closed", "hello.example.com", svc("closed", 100, srv("127.0.0.1", 18099, 256)))
	r.Path = "/closed"
	r.Termination, r.InsecurePolicy = model.TerminationEdge, model.InsecurePolicyNone
	r.Slot = slot
	r.Backend = model.SpareRoute(model.TerminationEdge, false, slot, &bound.Router).Backend
	bound.Routes = append(bound.Routes, &r)
	slices.SortFunc(bound.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
	edgeSpares := func(d *model.Desired) State {
		in := testInput(d)
		in.Spares = append(in.Spares, model.SpareRoute(model.TerminationEdge, false, slot, &d.Router))
		return stateOf(t, in)
	}
	applied := edgeSpares(bound)
	if !strings.Contains(string(applied.Bundle.File(render.HTTPMap).Bytes()), "hello.example.com/closed/ "+render.HTTPSOnlyValue) {
		t.Fatalf("no %s entry in the HTTP map:\n%s", render.HTTPSOnlyValue, applied.Bundle.File(render.HTTPMap).Bytes())
	}
	p := Compute(applied, edgeSpares(redirecting()))
	if p.Reload {
		t.Fatalf("unbinding reloads: %v", reasonStrings(p))
	}
	cmds := strings.Join(commands(p), "\n")
	for _, key := range []string{"hello.example.com/closed/", "hello.example.com/closed?"} {
		if !strings.Contains(cmds, "del map "+absPath(testDir, render.HTTPMap)+" "+key) {
			t.Errorf("the HTTP map keeps %s:\n%s", key, cmds)
		}
	}
}

// A map keyed by backend that is sent whole keeps the settings of every
// route still routed while the routing maps change: first both
// versions' entries, then the map as it is to be. HSTS values hold ';',
// so hsts.map is always sent whole: one edge route unbound and another
// bound in one batch served the first without its header for a moment
// (T47); so did 40 routes unbound and 30 bound, for their timeouts.
func TestSettingsMapsSentWholeKeepEveryRoutedRoutesEntries(t *testing.T) {
	bound := func(d *model.Desired, name string, slot model.BackendName, port int, set func(*model.BackendSettings)) {
		r := httpRoute(name, name+".example.com", svc(name, 100, srv("127.0.0.1", port, 256)))
		r.Termination, r.InsecurePolicy = model.TerminationEdge, model.InsecurePolicyNone
		r.Slot = slot
		r.Backend = model.SpareRoute(model.TerminationEdge, false, slot, &d.Router).Backend
		set(&r.Backend)
		d.Routes = append(d.Routes, &r)
	}
	state := func(d *model.Desired, slots []model.BackendName) State {
		slices.SortFunc(d.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
		in := testInput(d)
		for _, s := range slots {
			in.Spares = append(in.Spares, model.SpareRoute(model.TerminationEdge, false, s, &d.Router))
		}
		return stateOf(t, in)
	}
	// index is the first command that holds all of parts.
	index := func(cmds []string, parts ...string) int {
		return slices.IndexFunc(cmds, func(c string) bool { return containsAll(c, parts...) })
	}
	// lastIndex is the last such command.
	lastIndex := func(cmds []string, parts ...string) int {
		for i := len(cmds) - 1; i >= 0; i-- {
			if containsAll(cmds[i], parts...) {
				return i
			}
		}
		return -1
	}

	t.Run("hsts, one unbound and one bound", func(t *testing.T) {
		slots := []model.BackendName{"be_pool:edge:1", "be_pool:edge:2"}
		hsts := func(v string) func(*model.BackendSettings) {
			return func(b *model.BackendSettings) { b.HSTSHeader = v }
		}
		from, to := baseDesired(), baseDesired()
		bound(from, "oldr", slots[0], 18099, hsts("max-age=1;includeSubDomains"))
		bound(to, "newr", slots[1], 18098, hsts("max-age=2;includeSubDomains"))
		p := Compute(state(from, slots), state(to, slots))
		if p.Reload {
			t.Fatalf("reloads: %v", reasonStrings(p))
		}
		cmds := commands(p)
		routedNew, unroutedOld := index(cmds, "add map", "newr.example.com"), index(cmds, "del map", "oldr.example.com")
		newHSTS := index(cmds, "be_pool:edge:2 max-age=2;includeSubDomains")
		oldGone := lastIndex(cmds, "commit map", "maps/hsts.map")
		if routedNew < 0 || unroutedOld < 0 || newHSTS < 0 || oldGone < 0 {
			t.Fatalf("commands lack the routing or HSTS changes:\n%s", strings.Join(cmds, "\n"))
		}
		if newHSTS > routedNew || oldGone < unroutedOld {
			t.Errorf("newr's HSTS at %d, newr routed at %d; oldr unrouted at %d, its HSTS gone at %d:\n%s",
				newHSTS, routedNew, unroutedOld, oldGone, strings.Join(cmds, "\n"))
		}
	})

	t.Run("timeouts, 40 unbound and 30 bound", func(t *testing.T) {
		var slots []model.BackendName
		for i := range 70 {
			slots = append(slots, model.BackendName(fmt.Sprintf("be_pool:edge:%d", i+1)))
		}
		build := func(from, to int) State {
			d := baseDesired()
			for i := from; i < to; i++ {
				bound(d, fmt.Sprintf("r%02d", i), slots[i], 18100+i, func(b *model.BackendSettings) { b.Timeout = 90 * time.Second })
			}
			return state(d, slots)
		}
		p := Compute(build(0, 40), build(40, 70))
		if p.Reload {
			t.Fatalf("reloads: %v", reasonStrings(p))
		}
		cmds := commands(p)
		// Each map goes whole: what counts is when each version is
		// committed.
		timeoutsIn := index(cmds, "commit map", "maps/timeout_server.map")
		timeoutsOut := lastIndex(cmds, "commit map", "maps/timeout_server.map")
		routed := index(cmds, "commit map", "maps/https")
		unrouted := lastIndex(cmds, "commit map", "maps/https")
		if timeoutsIn < 0 || routed < 0 || !strings.Contains(strings.Join(cmds, "\n"), "be_pool:edge:46 90000") {
			t.Fatalf("commands lack the routing or timeout changes:\n%s", strings.Join(cmds, "\n"))
		}
		if timeoutsIn > routed || timeoutsOut < unrouted {
			t.Errorf("the new timeouts at %d, the routing maps committed at %d to %d, the old timeouts gone at %d",
				timeoutsIn, routed, unrouted, timeoutsOut)
		}
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
