package daemon

import (
	"fmt"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// An edge or reencrypt route that also serves plain HTTP (Allow) renders
// its sticky cookie without Secure, as OpenShift does, so it needs spares
// of its own class: its backend reads like theirs and not like the others'.
func TestAllowRoutesHaveTheirOwnSpares(t *testing.T) {
	s := model.DefaultSettings()
	for _, term := range []model.Termination{model.TerminationEdge, model.TerminationReencrypt} {
		route := model.SpareRoute(term, false, "x", &s)
		route.Key, route.Slot, route.InsecurePolicy = model.RouteKey{Namespace: "ns", Name: "r"}, "", model.InsecurePolicyAllow
		plain := model.SpareRoute(term, false, "be_pool:"+model.BackendName(term)+":1", &s)
		allow := model.SpareRoute(term, true, "be_pool:"+model.BackendName(term)+"-allow:2", &s)
		in := render.Input{Desired: &model.Desired{Router: s}}
		if render.SameBackend(route, plain, in) {
			t.Errorf("%s Allow route reads like a spare without Allow", term)
		}
		if !render.SameBackend(route, allow, in) {
			t.Errorf("%s Allow route does not read like an Allow spare", term)
		}
		if got, want := poolClass(classOf(&route)), string(term)+"-allow"; got != want {
			t.Errorf("class %q, want %q", got, want)
		}
	}
}

// A burst that binds more spares than the pool keeps leaves the next
// top-up sized for it (twice the burst), within the class's route count,
// so a second burst like it needs no reload; the demand then starts over.
func TestTopUpGrowsWithDemand(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	desired := func(n int) *model.Desired {
		d := &model.Desired{Router: s}
		for i := range n {
			r := model.SpareRoute(model.TerminationNone, false, "x", &s)
			r.Key, r.Slot = model.RouteKey{Namespace: "ns", Name: fmt.Sprint("r", i)}, ""
			d.Routes = append(d.Routes, &r)
		}
		return d
	}
	http := spareClass{t: model.TerminationNone}
	st := poolState{settings: s}.topUp(desired(100))
	if got := st.freeCounts()[http]; got != 16 {
		t.Fatalf("%d free http spares at 100 routes, want poolTarget's 16", got)
	}
	bindAll := func(st poolState, from int) poolState {
		for k := range st.spares {
			if classOf(&st.spares[k]) == http && !st.used[st.spares[k].Slot] {
				st = st.bind(model.RouteKey{Namespace: "ns", Name: fmt.Sprint("new", from, "-", k)}, k)
			}
		}
		return st
	}
	st = bindAll(st, 0)
	if got := st.demand[http]; got != 16 {
		t.Fatalf("demand %d after binding 16 spares, want 16", got)
	}
	st = st.topUp(desired(116))
	if got := st.freeCounts()[http]; got != 32 {
		t.Errorf("%d free http spares after a burst of 16, want 32", got)
	}
	if len(st.demand) != 0 {
		t.Errorf("demand %v after a top-up, want none", st.demand)
	}
	// The bound is the class's route count: a burst of 16 into a class
	// of 10 routes keeps poolTarget's 16, not 32.
	st = bindAll(poolState{settings: s}.topUp(desired(10)), 1)
	if got := st.topUp(desired(10)).freeCounts()[http]; got != 16 {
		t.Errorf("%d free http spares for 10 routes after a burst of 16, want 16", got)
	}

	// Without another burst, the pool sized for one sheds half its
	// excess at each top-up, back towards its target: churn does not
	// ratchet it up for good (T50). Bound spares stay.
	st = poolState{settings: s}.topUp(desired(1000))
	for range 3 {
		st = bindAll(st, len(st.spares)).topUp(desired(1000))
	}
	grown := st.freeCounts()[http]
	bound := len(st.bound)
	if grown < 150 {
		t.Fatalf("%d free http spares after three bursts, want the pool grown well past its target of 100", grown)
	}
	for _, want := range []int{100 + (grown-100)/2} {
		st = st.topUp(desired(1000))
		if got := st.freeCounts()[http]; got != want || len(st.bound) != bound {
			t.Errorf("after a quiet top-up: %d free (from %d), %d bound; want %d free, %d bound", got, grown, len(st.bound), want, bound)
		}
	}
	for range 20 {
		st = st.topUp(desired(1000))
	}
	if got := st.freeCounts()[http]; got > 101 || got < 100 {
		t.Errorf("%d free http spares after many quiet top-ups at 1000 routes, want poolTarget's 100", got)
	}
}

// A route whose balance algorithm is not its termination's default binds
// only to spares rendered with that algorithm; a route that names the
// default in its annotation is of the default class.
func TestBalanceClasses(t *testing.T) {
	s := model.DefaultSettings()
	in := render.Input{Desired: &model.Desired{Router: s}}
	for _, tc := range []struct {
		term    model.Termination
		balance model.BalanceAlgorithm
		class   string
	}{
		{model.TerminationNone, model.BalanceLeastConn, "http-leastconn"},
		{model.TerminationNone, model.BalanceSource, "http-source"},
		{model.TerminationNone, model.BalanceRoundRobin, "http"},
		{model.TerminationEdge, model.BalanceRandom, "edge-random"},
		{model.TerminationPassthrough, model.BalanceRoundRobin, "passthrough-roundrobin"},
		{model.TerminationPassthrough, model.BalanceSource, "passthrough"},
	} {
		route := model.SpareRoute(tc.term, false, "x", &s)
		route.Key, route.Slot, route.Backend.Balance = model.RouteKey{Namespace: "ns", Name: "r"}, "", tc.balance
		c := classOf(&route)
		if got := poolClass(c); got != tc.class {
			t.Errorf("%s %s: class %q, want %q", tc.term, tc.balance, got, tc.class)
		}
		own := spareOf(c, model.BackendName("be_pool:"+tc.class+":1"), &s)
		if !render.SameBackend(route, own, in) || classOf(&own) != c {
			t.Errorf("%s %s: the route does not read like a spare of its class", tc.term, tc.balance)
		}
		if c.balance == "" {
			continue
		}
		plain := spareOf(spareClass{t: tc.term}, "be_pool:plain:2", &s)
		if render.SameBackend(route, plain, in) {
			t.Errorf("%s %s: the route reads like a spare with the default algorithm", tc.term, tc.balance)
		}
	}
}

// Spares of a class with its own algorithm are made while routes of it
// exist, after the classes every pool has, and not before.
func TestTopUpMakesBalanceClassesInUse(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	route := model.SpareRoute(model.TerminationNone, false, "x", &s)
	route.Key, route.Slot, route.Backend.Balance = model.RouteKey{Namespace: "ns", Name: "r"}, "", model.BalanceLeastConn
	leastconn := classOf(&route)

	none := poolState{settings: s}.topUp(&model.Desired{Router: s})
	if got := none.freeCounts()[leastconn]; got != 0 {
		t.Fatalf("%d leastconn spares with no leastconn route, want 0", got)
	}
	if !none.low(&model.Desired{Router: s, Routes: []*model.AdmittedRoute{&route}}) {
		t.Error("a pool with no spare for a route's class in use is not low")
	}
	st := poolState{settings: s}.topUp(&model.Desired{Router: s, Routes: []*model.AdmittedRoute{&route}})
	if got := st.freeCounts()[leastconn]; got != poolTarget(1) {
		t.Fatalf("%d leastconn spares with one leastconn route, want %d", got, poolTarget(1))
	}
	last := st.spares[len(st.spares)-1]
	if classOf(&last) != leastconn || last.Backend.Balance != model.BalanceLeastConn {
		t.Errorf("the last spare is %s (%s), want the leastconn class after the others", last.Slot, last.Backend.Balance)
	}
	// Its routes gone, the next top-up keeps none of its spares (T52:
	// they stayed until a restart).
	if got := st.topUp(&model.Desired{Router: s}).freeCounts()[leastconn]; got != 0 {
		t.Errorf("%d leastconn spares once no leastconn route is left, want 0", got)
	}

	// Random too: its servers carry ids (render.ServerID), with which
	// HAProxy 2.6 balances those added at runtime.
	route.Backend.Balance = model.BalanceRandom
	random := poolState{settings: s}.topUp(&model.Desired{Router: s, Routes: []*model.AdmittedRoute{&route}})
	if got := random.freeCounts()[classOf(&route)]; got != poolTarget(1) {
		t.Errorf("%d random spares with one random route, want %d", got, poolTarget(1))
	}
}

// A deleted route's backend kept as it was (retire) is never bound to
// another route, and does not stop the spares of its class from binding:
// free took the first spare of a class to stand for all of them. A reload
// (dropRetired) drops it unless its route came back to it.
func TestRetiredBackendsStayOutOfThePool(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	in := render.Input{Desired: &model.Desired{Router: s}}
	own := model.SpareRoute(model.TerminationNone, false, "x", &s)
	own.Key, own.Slot = model.RouteKey{Namespace: "ns", Name: "old"}, ""
	own.Backend.CookieName = "old_session" // no spare has it
	prev := []*model.AdmittedRoute{&own}
	st := poolState{settings: s}.topUp(&model.Desired{Router: s})
	st = st.retire(prev, &model.Desired{Router: s}, in)
	k := st.slotNamed(own.BackendName())
	if k < 0 || !st.retired[own.BackendName()] {
		t.Fatalf("the deleted route's backend was not kept retired: %v", st.retired)
	}
	if render.SameBackend(own, st.spares[k], in) == false {
		t.Fatal("the retired backend does not read as the route's own did")
	}
	// First in its class, as if it sorted first: move it there.
	st.spares[0], st.spares[k] = st.spares[k], st.spares[0]
	st = st.drained(nil)
	newRoute := model.SpareRoute(model.TerminationNone, false, "x", &s)
	newRoute.Key, newRoute.Slot = model.RouteKey{Namespace: "ns", Name: "new"}, ""
	got := st.free(classOf(&newRoute), func(sp model.AdmittedRoute) bool { return render.SameBackend(newRoute, sp, in) }, nil)
	if got < 0 || st.spares[got].Slot == own.BackendName() {
		t.Fatalf("free = %d, want a spare of the pool, not the retired backend", got)
	}
	if !st.hasRetired() {
		t.Fatal("hasRetired = false with a retired backend unbound")
	}
	if dropped := st.dropRetired(); dropped.slotNamed(own.BackendName()) >= 0 || dropped.hasRetired() {
		t.Fatal("dropRetired kept an unbound retired backend")
	}
	bound := st.bind(own.Key, 0)
	if kept := bound.dropRetired(); kept.slotNamed(own.BackendName()) < 0 {
		t.Fatal("dropRetired dropped the backend its route came back to")
	}
}

// A restart adopts the slots the live haproxy.cfg names for its routes,
// where the route still reads like a spare of that slot's class, and
// numbers new slots after them.
func TestAdoptEarlierBindings(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	route := func(name string, term model.Termination) *model.AdmittedRoute {
		r := model.SpareRoute(term, false, "x", &s)
		r.Key, r.Slot = model.RouteKey{Namespace: "ns", Name: name}, ""
		return &r
	}
	d := &model.Desired{Router: s, Routes: []*model.AdmittedRoute{
		route("a", model.TerminationNone), route("b", model.TerminationEdge), route("c", model.TerminationNone), route("d", model.TerminationNone),
		route("e", model.TerminationNone), route("f", model.TerminationNone),
	}}
	d.Routes[2].Backend.CookieName = "mine" // c has a setting no spare has
	cfg := []byte("global\n\n# route ns/a\nbackend be_pool:http:7 from routes_http\n  cookie x\n" +
		"# route ns/b\nbackend be_pool:http:3 from routes_http\n" + // b is edge now
		"# route ns/c\nbackend be_pool:http:9 from pool_http\n" +
		"# route ns/gone\nbackend be_pool:http:4 from routes_http\n" +
		"# route ns/d\nbackend be_http:ns:d from routes_http\n" +
		"# route ns/e\nbackend be_pool:http:+17 from routes_http\n" + // edited by hand
		"# route ns/f\nbackend be_pool:http:017 from routes_http\n")
	earlier := boundSlots(cfg)
	if len(earlier) != 6 || earlier[model.RouteKey{Namespace: "ns", Name: "a"}] != "be_pool:http:7" {
		t.Fatalf("boundSlots = %v, want a, b, c, gone, e and f, a on be_pool:http:7", earlier)
	}
	st := poolState{settings: s}.adopt(earlier, d, render.Input{Desired: d})
	if len(st.bound) != 1 || st.bound[d.Routes[0].Key] != "be_pool:http:7" {
		t.Fatalf("adopted %v, want only a on be_pool:http:7", st.bound)
	}
	if st.seq != 7 || len(st.demand) != 0 {
		t.Fatalf("seq %d, demand %v: want 7 and none", st.seq, st.demand)
	}
	st = st.topUp(d)
	for _, sp := range st.spares[1:] {
		if _, seq, _ := slotClass(sp.Slot); seq <= 7 {
			t.Fatalf("topped-up slot %s numbered before the adopted one", sp.Slot)
		}
	}
}

// A reload drops the backends of deleted routes kept as spares that no
// route is bound to; the pool's own slots, sized for the last burst,
// stay. Nothing dropped them, and the pool grew by a backend per deletion
// until a restart.
func TestReloadDropsKeptBackends(t *testing.T) {
	s := model.DefaultSettings()
	s.DynamicConfigManager = true
	desired := &model.Desired{Router: s}
	for i := range 100 {
		r := model.SpareRoute(model.TerminationNone, false, "x", &s)
		r.Key, r.Slot = model.RouteKey{Namespace: "ns", Name: fmt.Sprint("r", i)}, ""
		desired.Routes = append(desired.Routes, &r)
	}
	http := spareClass{t: model.TerminationNone}
	st := poolState{settings: s}.topUp(desired)
	pooled := len(st.spares)
	var kept []model.AdmittedRoute
	for i := range 3 {
		kept = append(kept, spareOf(http, model.BackendName(fmt.Sprintf("be_http:ns:gone%d", i)), &s))
	}
	st = st.withKept(kept, nil)                                                                    // draining
	st = st.bind(model.RouteKey{Namespace: "ns", Name: "gone0"}, st.slotNamed("be_http:ns:gone0")) // came back to it
	if !st.hasKept() {
		t.Fatal("hasKept is false with two kept backends unbound")
	}
	got := st.dropKept()
	if len(got.spares) != pooled+1 || got.slotNamed("be_http:ns:gone0") < 0 {
		t.Errorf("after the drop: %v; want the %d slots of the pool and be_http:ns:gone0, which a route is bound to", slotsOf(got), pooled)
	}
	if got.draining["be_http:ns:gone1"] || got.draining["be_http:ns:gone2"] {
		t.Errorf("dropped backends still draining: %v", got.draining)
	}
	if got.hasKept() {
		t.Error("hasKept after the drop")
	}
}

func slotsOf(st poolState) []model.BackendName {
	var out []model.BackendName
	for _, sp := range st.spares {
		out = append(out, sp.Slot)
	}
	return out
}

// A spare that does not fit ends the search only among the pool's own
// spares, which render alike: a deleted route's backend kept as a spare
// renders as that route did, and a pool slot after it may still fit (T50:
// routes reloaded for a backend of their own while a served pool slot
// fitted them).
func TestFreeLooksPastAKeptBackendThatDoesNotFit(t *testing.T) {
	st := poolState{spares: []model.AdmittedRoute{
		{Key: model.RouteKey{Namespace: "ns", Name: "deleted"}, Slot: "be_http:ns:deleted"},
		{Slot: "be_pool:http:1"},
		{Slot: "be_pool:http:2"},
	}}
	c := classOf(&st.spares[1])
	served := map[model.BackendName]bool{"be_pool:http:1": true}
	poolFits := func(s model.AdmittedRoute) bool { return strings.HasPrefix(string(s.Slot), model.PoolSlotPrefix) }
	if k := st.free(c, poolFits, served); k != 2 {
		t.Errorf("free = %d, want 2 (the pool slot that served no route yet)", k)
	}
	served["be_pool:http:2"] = true
	if k := st.free(c, poolFits, served); k != 1 {
		t.Errorf("free with every pool slot served = %d, want 1 (the first)", k)
	}
	// A kept backend that fits comes after every pool slot that does,
	// served or not (T53: a route bound to one reloaded at its next
	// forwarded-headers change, and carried the deleted route's counts).
	all := func(model.AdmittedRoute) bool { return true }
	if k := st.free(c, all, served); k != 1 {
		t.Errorf("free with everything fitting = %d, want 1 (a pool slot, served, before the kept backend)", k)
	}
	onlyKept := func(s model.AdmittedRoute) bool { return !strings.HasPrefix(string(s.Slot), model.PoolSlotPrefix) }
	if k := st.free(c, onlyKept, served); k != 0 {
		t.Errorf("free with only the kept backend fitting = %d, want 0", k)
	}
	// A pool slot that does not fit: none of the pool's does, and the
	// rest of them are not asked.
	asked := 0
	none := func(s model.AdmittedRoute) bool { asked++; return false }
	if k := st.free(c, none, served); k != -1 || asked != 2 {
		t.Errorf("free with nothing fitting = %d after %d asked, want -1 after 2 (the kept backend, one pool slot)", k, asked)
	}
}
