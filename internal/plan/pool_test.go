package plan

import (
	"bytes"
	"slices"
	"strings"
	"testing"

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
	bound.Routes = append(bound.Routes, r)
	slices.SortFunc(bound.Routes, func(a, b model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
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
	timed := plain
	timed.Backend.Timeout = 7e9
	if render.SameBackend(timed, spare, in) {
		t.Fatal("a route with its own timeout fits the spare")
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			edit, ok := safeEdit("/m", olds, tc.news)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, edit)
			}
			if ok && strings.Join(edit.Commands(), "\n") != tc.want {
				t.Fatalf("commands %q, want %q", edit.Commands(), tc.want)
			}
		})
	}
}
