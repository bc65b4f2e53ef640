package daemon

import (
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
)

// httpRoute is an HTTP route named name with the given sticky cookie.
func httpRoute(s *model.Settings, name, cookie string) *model.AdmittedRoute {
	r := model.SpareRoute(model.TerminationNone, false, "x", s)
	r.Key, r.Slot, r.Host = model.RouteKey{Namespace: "ns", Name: name}, "", name+".example.com"
	r.Backend.CookieName = cookie
	return &r
}

// A route whose own backend would change moves to a spare that reads like
// its new version. When a reload refits the pool, advance binds the same
// generation again, from the committed pool state: the route found in its
// slot from the first pass must be judged afresh, not left in a slot the
// second pass's state has free (a review found a new route then bound to
// the same slot, and the moved route's traffic sent to its servers).
func TestMovedRouteBoundAgainInASecondPass(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	spare := spareOf(spareClass{t: model.TerminationNone}, "be_pool:http:1", &s)
	before := httpRoute(&s, "a", "own_cookie") // an annotation no spare has
	prev := &model.Desired{Router: s, Routes: []*model.AdmittedRoute{before}}
	d := &Daemon{servedSlots: map[model.BackendName]bool{}}
	d.pool = poolState{settings: s, spares: []model.AdmittedRoute{spare}, seq: 1}
	d.applied, d.desired = plan.State{Desired: prev}, plan.State{Desired: prev}

	// a drops its annotation (it now reads like the spare); b is new.
	desired := &model.Desired{Router: s, Routes: []*model.AdmittedRoute{
		httpRoute(&s, "a", spare.Backend.CookieName), httpRoute(&s, "b", spare.Backend.CookieName),
	}}
	in := render.Input{Desired: desired}
	first := d.bindPool(desired, in, false)
	if got := desired.Routes[0].Slot; got != spare.Slot || first.bound[desired.Routes[0].Key] != spare.Slot {
		t.Fatalf("first pass: a in %q (bound %v), want moved to %s", got, first.bound, spare.Slot)
	}
	if !first.retired["be_http:ns:a"] && first.slotNamed("be_http:ns:a") < 0 {
		t.Errorf("first pass: a's own backend neither kept nor retired: %v", first.spares)
	}
	second := d.bindPool(desired, in, true)
	a, b := desired.Routes[0], desired.Routes[1]
	if a.Slot != "" && a.Slot == b.Slot {
		t.Fatalf("second pass: a and b both in %s", a.Slot)
	}
	for _, r := range []*model.AdmittedRoute{a, b} {
		if r.Slot != "" && second.bound[r.Key] != r.Slot {
			t.Errorf("second pass: %s renders in %s, but the pool binds %v", r.Key, r.Slot, second.bound)
		}
	}
}

// The kept backend of a route that moved (or was deleted) stays in the
// pool as a spare when it reads like one, under the route's backend name,
// and another route may be bound to it. When the route comes back where
// no spare fits it, it renders its own backend of that very name: the
// slot is given up, and the route bound to it gets a backend of its own,
// in the one reload both take. Two backends of one name made HAProxy
// refuse the configuration (a review found it).
func TestKeptBackendYieldsItsNameToItsRoute(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	kept := spareOf(spareClass{t: model.TerminationNone}, "be_http:ns:a", &s)
	st := poolState{settings: s, spares: []model.AdmittedRoute{kept}, seq: 1}
	st = st.bind(model.RouteKey{Namespace: "ns", Name: "c"}, 0)
	a := httpRoute(&s, "a", "own_cookie") // back, fitting no spare
	c := httpRoute(&s, "c", kept.Backend.CookieName)
	c.Slot = kept.Slot
	desired := &model.Desired{Router: s, Routes: []*model.AdmittedRoute{a, c}}

	st = st.yieldNames(desired)
	if got := st.slotNamed("be_http:ns:a"); got >= 0 {
		t.Errorf("the slot named be_http:ns:a is still in the pool")
	}
	if _, ok := st.bound[c.Key]; ok || desired.Routes[1].Slot != "" {
		t.Errorf("c still bound (%v), in slot %q; want a backend of its own", st.bound, desired.Routes[1].Slot)
	}
	names := map[model.BackendName]int{}
	for _, r := range desired.Routes {
		names[r.BackendName()]++
	}
	for _, sp := range st.spares {
		names[sp.Slot]++
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("backend %s rendered %d times", name, n)
		}
	}
}
