package daemon

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// The pool of spare backends (DESIGN §5; render/pool.go). HAProxy 2.6
// cannot add a backend at runtime, so every reload renders, per class of
// route in use, a few empty spare backends; a new route that fits one is
// bound to it and served through the runtime API, with no reload. A
// deleted route that was bound gives its spare back once its servers have
// drained. The pool is topped up when a reload happens anyway, or, when
// it runs low, by one reload at a quiet moment. Bindings live in memory
// and in the rendered haproxy.cfg, which names each bound slot's route: a
// restart takes them from there (adopt), so a route keeps the slot whose
// cookie name and key its clients' sticky cookies carry.

// poolState is the pool as rendered for one generation. Its maps and
// slice are never modified once made, so states can share them.
type poolState struct {
	// spares are every slot of the pool, free or bound, in a fixed order
	// (render.Input.Spares).
	spares []model.AdmittedRoute
	// bound maps routes to the slot they are bound to; used is the
	// reverse.
	bound map[model.RouteKey]model.BackendName
	used  map[model.BackendName]bool
	// draining are free spares whose last route's servers still drain:
	// not bound again until they are gone.
	draining map[model.BackendName]bool
	// retired are the backends of deleted routes whose settings no spare
	// has (retire): rendered, emptied, until the next reload drops them,
	// and bound again only by the same route.
	retired map[model.BackendName]bool
	// settings are what the spares were made under.
	settings model.Settings
	seq      int // the last slot number used
	// demand counts, by class, the spares bound since the last top-up:
	// the size of the burst the pool last had to absorb.
	demand map[spareClass]int
}

// poolQuiet is how long no change may arrive before a low pool is topped
// up with a reload of its own: never in the middle of a burst.
const poolQuiet = 10 * time.Second

// spareClass is what decides which spares a route binds to: its
// termination; for edge and reencrypt, whether it also serves plain HTTP
// (Allow), which changes its sticky cookie; and its balance algorithm
// when it is not the one a route of its termination has by default (the
// balance annotation, or a passthrough route split between services).
// HAProxy 2.6 cannot change a backend's algorithm at runtime, so such
// routes need spares rendered with theirs.
type spareClass struct {
	t       model.Termination
	allow   bool
	balance model.BalanceAlgorithm // "" for the default
}

// classOf is the class of a route or spare.
func classOf(r *model.AdmittedRoute) spareClass {
	allow := r.InsecurePolicy == model.InsecurePolicyAllow &&
		(r.Termination == model.TerminationEdge || r.Termination == model.TerminationReencrypt)
	c := spareClass{t: r.Termination, allow: allow}
	if b := r.Backend.Balance; b != "" && b != defaultSpareBalance(r.Termination) {
		c.balance = b
	}
	return c
}

// defaultSpareBalance is the balance algorithm of a spare of termination t
// made without one (model.SpareRoute): a route without the annotation
// that sends to one service.
func defaultSpareBalance(t model.Termination) model.BalanceAlgorithm {
	if t == model.TerminationPassthrough {
		return model.DefaultPassthroughBalance
	}
	return model.DefaultBalance
}

// spareOf makes a spare of class c named slot under settings s.
func spareOf(c spareClass, slot model.BackendName, s *model.Settings) model.AdmittedRoute {
	sp := model.SpareRoute(c.t, c.allow, slot, s)
	if c.balance != "" {
		sp.Backend.Balance = c.balance
	}
	return sp
}

// poolClass names the spares of a class.
func poolClass(c spareClass) string {
	name := "http"
	switch c.t {
	case model.TerminationEdge:
		name = "edge"
	case model.TerminationReencrypt:
		name = "reencrypt"
	case model.TerminationPassthrough:
		name = "passthrough"
	}
	if c.allow {
		name += "-allow"
	}
	if c.balance != "" {
		name += "-" + string(c.balance)
	}
	return name
}

// poolClasses are the classes that always have spares, in use or not.
// A class with another balance algorithm has spares only while routes of
// it exist (classesInUse): the first such route takes a reload, which
// makes them, and the routes after it bind.
var poolClasses = []spareClass{{t: model.TerminationNone}, {t: model.TerminationEdge}, {t: model.TerminationEdge, allow: true},
	{t: model.TerminationReencrypt}, {t: model.TerminationReencrypt, allow: true}, {t: model.TerminationPassthrough}}

// classesInUse returns poolClasses, then the other classes routes has
// routes of, in a fixed order (slot numbers follow it).
func classesInUse(routes map[spareClass]int) []spareClass {
	out := slices.Clone(poolClasses)
	var more []spareClass
	for c, n := range routes {
		if n > 0 && c.balance != "" {
			more = append(more, c)
		}
	}
	slices.SortFunc(more, func(a, b spareClass) int { return strings.Compare(poolClass(a), poolClass(b)) })
	return append(out, more...)
}

// poolTarget is how many free spares a class with n routes keeps: a few
// for a class not in use yet, so that its first route needs no reload.
func poolTarget(n int) int {
	if n == 0 {
		return 4
	}
	return max(16, n/10)
}

// bindPool binds the new routes of desired that fit a free spare, keeps
// the bindings of the routes that stay, and frees those of routes gone.
// With refill, it tops the spares up to their targets (a reload follows).
// desired.Routes is the loader's fresh slice for this load, but the
// routes in it are shared (model.Desired): a bound route is replaced
// with a copy naming its slot.
func (d *Daemon) bindPool(desired *model.Desired, in render.Input, refill bool) poolState {
	st := d.pool
	if !desired.Router.DynamicConfigManager {
		return poolState{settings: desired.Router} // every change reloads anyway
	}
	if !reflect.DeepEqual(st.settings, desired.Router) {
		// Spares render from the settings: remade under the new ones
		// (the settings change is a reload anyway).
		spares := make([]model.AdmittedRoute, len(st.spares))
		for i, s := range st.spares {
			spares[i] = spareOf(classOf(&s), s.Slot, &desired.Router)
		}
		st.spares, st.settings = spares, desired.Router
	}

	if d.applied.Desired == nil && len(st.spares) == 0 {
		// A first start: the slots an earlier run bound routes to.
		st = st.adopt(d.earlierBindings(), desired, in)
	}

	// Routes that stay keep their slots; the spares of routes gone go
	// back to the pool, draining. desired.Routes is in key order: each
	// bound route is found by a binary search, where a lookup of every
	// route in the bindings cost a millisecond of every change at 10k.
	var prev []*model.AdmittedRoute
	if d.desired.Desired != nil {
		prev = d.desired.Desired.Routes
	}
	for key, slot := range st.bound {
		i, found := model.FindRoute(desired.Routes, key)
		if !found {
			st = st.unbind(key, slot)
			d.servedSlots[slot] = true
			// A route whose settings changed while bound (a reload) left
			// its slot reading unlike the spare: kept as it reads.
			if j, ok := model.FindRoute(prev, key); ok {
				st = st.keepUnlike(prev[j], slot, in)
			}
			continue
		}
		desired.Routes[i] = withSlot(desired.Routes[i], slot)
	}

	// Routes deleted that had a backend of their own: when it reads like
	// a spare, it stays as one (draining first), so the deletion needs no
	// reload either.
	if d.applied.Desired != nil {
		st = st.retire(prev, desired, in)
	}
	j := 0
	for i, r := range desired.Routes {
		if r.Slot != "" && st.bound[r.Key] == r.Slot {
			continue // bound above
		}
		// Both sides are in key order and mostly the same routes: equal
		// keys (cheap to compare) first.
		if j < len(prev) && prev[j].Key == r.Key {
			d.moveToSpare(&st, desired, i, prev[j], in)
			j++
			continue
		}
		for j < len(prev) && prev[j].Key.Compare(r.Key) < 0 {
			j++
		}
		isNew := j == len(prev) || prev[j].Key != r.Key
		if !isNew {
			d.moveToSpare(&st, desired, i, prev[j], in)
			continue
		}
		if d.applied.Desired == nil {
			continue
		}
		if k := st.slotNamed(r.BackendName()); k >= 0 && !st.used[st.spares[k].Slot] && render.SameBackend(*r, st.spares[k], in) {
			// Its own backend, kept when it was deleted: back to it (with
			// other settings, a spare of the pool may fit instead).
			desired.Routes[i] = withSlot(r, st.spares[k].Slot)
			st = st.bind(r.Key, k)
			continue
		}
		if k := st.free(classOf(r), func(s model.AdmittedRoute) bool { return render.SameBackend(*r, s, in) }, d.servedSlots); k >= 0 {
			desired.Routes[i] = withSlot(r, st.spares[k].Slot)
			st = st.bind(r.Key, k)
		}
	}
	st = st.yieldNames(desired)
	if refill || d.applied.Desired == nil {
		st = st.dropRetired().dropKept().topUp(desired)
	}
	return st
}

// yieldNames drops from the pool each slot named like the own backend a
// route of desired renders: the kept backend of a route deleted or moved
// that came back where no spare fits it (a review found it kept as a
// spare, bound to another route meanwhile). Two backends of one name fail
// `haproxy -c`; the route takes a reload for its own backend anyway. A
// route bound to such a slot leaves it for a backend of its own, in the
// same reload. Only kept backends bear route names: pool slots are
// be_pool:….
func (st poolState) yieldNames(desired *model.Desired) poolState {
	var clash map[model.BackendName]bool
	for i := range st.spares {
		slot := st.spares[i].Slot
		if strings.HasPrefix(string(slot), model.PoolSlotPrefix) {
			continue
		}
		key, ok := slot.RouteKey()
		if !ok {
			continue
		}
		if j, found := model.FindRoute(desired.Routes, key); found && desired.Routes[j].Slot == "" && desired.Routes[j].BackendName() == slot {
			if clash == nil {
				clash = map[model.BackendName]bool{}
			}
			clash[slot] = true
		}
	}
	if len(clash) == 0 {
		return st
	}
	for key, slot := range st.bound {
		if !clash[slot] {
			continue
		}
		st = st.unbind(key, slot)
		if j, found := model.FindRoute(desired.Routes, key); found {
			cp := *desired.Routes[j]
			cp.Slot = ""
			desired.Routes[j] = &cp
		}
	}
	st.spares = slices.DeleteFunc(slices.Clone(st.spares), func(sp model.AdmittedRoute) bool { return clash[sp.Slot] })
	st.draining, st.retired, st.used = cloneOr(st.draining), cloneOr(st.retired), cloneOr(st.used)
	for slot := range clash {
		delete(st.draining, slot)
		delete(st.retired, slot)
		delete(st.used, slot)
	}
	return st
}

// moveToSpare binds route i of desired, whose last version p had a backend
// of its own, to a free spare that reads like its new version, when its
// own backend would read otherwise (its settings, or its termination,
// changed): the change is then a move at runtime, as a delete and an add
// are, not a reload. Its own backend stays rendered, as a deleted route's
// does (retire). A route whose own backend reads the same stays in it,
// and a route bound to a slot keeps it (its map-driven settings change at
// runtime there). Its clients' sticky cookies name the old backend's
// cookie, so they stick anew once.
//
// st is updated in place: it is called for every route that stays, and
// a pool state passed and returned by value (624 bytes, twice) was most
// of the pool's share of an endpoint change at 10k routes.
func (d *Daemon) moveToSpare(st *poolState, desired *model.Desired, i int, p *model.AdmittedRoute, in render.Input) {
	r := desired.Routes[i]
	// A route bound to a slot keeps it, whatever changed (a change its
	// slot cannot read like takes a reload there). Moving it to a spare of
	// its new kind instead crashed HAProxy 2.6.12 ("malloc(): unaligned
	// tcache chunk detected", the worker aborted) once the servers of a
	// reencrypt slot it passed through were deleted: an edge route made
	// reencrypt and edge again.
	if p == r || d.applied.Desired == nil || p.Slot != "" {
		return
	}
	if r.Slot != "" {
		// Moved by an earlier pass over this very generation (advance
		// binds the pool again when a reload refits it), from a pool
		// state this one does not share: judged afresh, or it kept a
		// slot the new state has free for another route.
		cp := *r
		cp.Slot = ""
		r = &cp
		desired.Routes[i] = r
	}
	if p.Backend == r.Backend && p.Termination == r.Termination && p.InsecurePolicy == r.InsecurePolicy && p.Path == r.Path {
		// What the backend section is made of is the same (the common
		// case: its endpoints changed), without rendering it twice. A
		// change this misses reloads, as before.
		return
	}
	if render.SameBackend(*r, *p, in) {
		return
	}
	k := st.free(classOf(r), func(s model.AdmittedRoute) bool { return render.SameBackend(*r, s, in) }, d.servedSlots)
	if k < 0 {
		return
	}
	desired.Routes[i] = withSlot(r, st.spares[k].Slot)
	*st = st.bind(r.Key, k).keepBackendOf(p, &desired.Router, in)
}

// earlierBindings reads which route each pool slot of the live
// haproxy.cfg serves, from the comment render writes before a bound slot
// (a file an earlier run left, else none).
func (d *Daemon) earlierBindings() map[model.RouteKey]model.BackendName {
	cfg, err := fsutil.ReadRegular(filepath.Join(d.live.path, render.ConfigFile))
	if err != nil {
		return nil
	}
	return boundSlots(cfg)
}

// boundSlots finds, in a rendered haproxy.cfg, each "# route ns/name"
// line followed by a pool slot's backend line.
func boundSlots(cfg []byte) map[model.RouteKey]model.BackendName {
	var out map[model.RouteKey]model.BackendName
	const comment, backend = "# route ", "backend " + model.PoolSlotPrefix
	for rest := cfg; len(rest) > 0; {
		i := bytes.Index(rest, []byte("\n"+comment))
		if i < 0 {
			break
		}
		rest = rest[i+1+len(comment):]
		key, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok || !bytes.HasPrefix(after, []byte(backend)) {
			continue
		}
		ns, name, ok := strings.Cut(string(key), "/")
		slot, _, _ := bytes.Cut(after[len("backend "):], []byte(" "))
		if !ok || ns == "" || name == "" {
			continue
		}
		if out == nil {
			out = map[model.RouteKey]model.BackendName{}
		}
		out[model.RouteKey{Namespace: ns, Name: name}] = model.BackendName(slot)
	}
	return out
}

// adopt returns st with the routes of desired an earlier run had bound
// (earlier) bound to the same slots, where the route still reads like a
// spare of the slot's class: their clients' sticky cookies name the slot
// (render.CookieName) and its key makes their values. Rendered under
// their own names, the routes were balanced afresh at every restart.
func (st poolState) adopt(earlier map[model.RouteKey]model.BackendName, desired *model.Desired, in render.Input) poolState {
	type slotOf struct {
		route *model.AdmittedRoute
		slot  model.BackendName
		seq   int
	}
	var slots []slotOf
	for key, slot := range earlier {
		i, found := model.FindRoute(desired.Routes, key)
		if !found {
			continue
		}
		class, seq, ok := slotClass(slot)
		if !ok || class != poolClass(classOf(desired.Routes[i])) {
			continue
		}
		slots = append(slots, slotOf{desired.Routes[i], slot, seq})
	}
	// Slot order is render order: by number, as topUp made them.
	slices.SortFunc(slots, func(a, b slotOf) int { return a.seq - b.seq })
	for _, s := range slots {
		sp := spareOf(classOf(s.route), s.slot, &desired.Router)
		if st.slotNamed(s.slot) >= 0 || !render.SameBackend(*s.route, sp, in) {
			continue
		}
		st.spares = append(slices.Clone(st.spares), sp)
		st = st.bind(s.route.Key, len(st.spares)-1)
		st.seq = max(st.seq, s.seq)
	}
	st.demand = nil // not a burst: the pool is sized by its routes
	return st
}

// slotClass splits a slot's name into its class (poolClass) and number,
// for a name topUp would make: a live haproxy.cfg edited by hand (`+17`,
// `017`, a number that overflows the next) must not be adopted, or the
// slot's name reached HAProxy, which refused it at every start.
func slotClass(slot model.BackendName) (string, int, bool) {
	rest, ok := strings.CutPrefix(string(slot), model.PoolSlotPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return "", 0, false
	}
	digits := rest[i+1:]
	seq, err := strconv.Atoi(digits)
	return rest[:i], seq, err == nil && seq > 0 && seq < 1<<30 && strconv.Itoa(seq) == digits
}

// withSlot returns r bound to slot: r itself when it already is, else a
// copy, since admitted routes are shared between loads.
func withSlot(r *model.AdmittedRoute, slot model.BackendName) *model.AdmittedRoute {
	if r.Slot == slot {
		return r
	}
	cp := *r
	cp.Slot = slot
	return &cp
}

// retire returns st with the backends of the routes prev has and desired
// lacks kept: as spares where they read like one, else as they are,
// emptied and retired, so that the deletion needs no reload either.
func (st poolState) retire(prev []*model.AdmittedRoute, desired *model.Desired, in render.Input) poolState {
	cur := desired.Routes
	j := 0
	var add []model.AdmittedRoute
	var retired []model.BackendName
	for _, p := range prev {
		if j < len(cur) && cur[j].Key == p.Key {
			j++
			continue
		}
		for j < len(cur) && cur[j].Key.Compare(p.Key) < 0 {
			j++
		}
		if (j < len(cur) && cur[j].Key == p.Key) || p.Slot != "" {
			continue
		}
		if sp, ok, retire := st.backendOf(p, &desired.Router, in); ok {
			add = append(add, sp)
			if retire {
				retired = append(retired, sp.Slot)
			}
		}
	}
	return st.withKept(add, retired)
}

// backendOf is what route p's own backend stays as once p no longer
// serves from it: a spare where it reads like one, else p's backend
// emptied, to retire. ok is false when the pool has it already.
func (st poolState) backendOf(p *model.AdmittedRoute, s *model.Settings, in render.Input) (sp model.AdmittedRoute, ok, retire bool) {
	sp = spareOf(classOf(p), p.BackendName(), s)
	switch {
	case st.slotNamed(sp.Slot) >= 0:
		return sp, false, false
	case render.SameBackend(*p, sp, in):
		return sp, true, false
	default:
		return emptied(p), true, true
	}
}

// keepBackendOf returns st with route p's own backend kept (backendOf),
// draining.
func (st poolState) keepBackendOf(p *model.AdmittedRoute, s *model.Settings, in render.Input) poolState {
	sp, ok, retire := st.backendOf(p, s, in)
	if !ok {
		return st
	}
	var retired []model.BackendName
	if retire {
		retired = []model.BackendName{sp.Slot}
	}
	return st.withKept([]model.AdmittedRoute{sp}, retired)
}

// withKept returns st with the backends add in the pool, draining, and
// those named in retired retired.
func (st poolState) withKept(add []model.AdmittedRoute, retired []model.BackendName) poolState {
	if len(add) == 0 {
		return st
	}
	st.spares = append(slices.Clone(st.spares), add...)
	st.draining = cloneOr(st.draining)
	for _, sp := range add {
		st.draining[sp.Slot] = true
	}
	if len(retired) > 0 {
		st.retired = cloneOr(st.retired)
		for _, slot := range retired {
			st.retired[slot] = true
		}
	}
	return st
}

// keepUnlike returns st with slot, just unbound from route r, retired
// with r's backend text when that no longer reads like the spare the slot
// was made as: putting the spare's text back would take a reload.
func (st poolState) keepUnlike(r *model.AdmittedRoute, slot model.BackendName, in render.Input) poolState {
	k := st.slotNamed(slot)
	if k < 0 || r.Slot != slot || render.SameBackend(*r, st.spares[k], in) {
		return st
	}
	st.spares = slices.Clone(st.spares)
	st.spares[k] = emptied(r)
	st.retired = cloneOr(st.retired)
	st.retired[slot] = true
	return st
}

// emptied is route p as a slot named after its own backend: the same
// backend text (settings, cookie name) without servers, map entries or
// the route's comment. It names no file: only servers do (ca-file, crt).
// (For a route bound to a pool slot, the slot is its backend.) The path
// stays where the backend's rewrite-target rule holds it: without it the
// backend read unlike the running one, and the deletion reloaded. Map
// entries need a host, so the path adds none.
func emptied(p *model.AdmittedRoute) model.AdmittedRoute {
	cp := *p
	cp.Slot = p.BackendName()
	cp.Key = model.RouteKey{Name: string(cp.Slot)}
	cp.Host, cp.Wildcard = "", false
	if p.Backend.RewriteTarget == "" {
		cp.Path = ""
	}
	cp.Services = nil
	return cp
}

// dropRetired returns st without the retired backends no route is bound
// to: a reload loads the files without them. (Servers still draining in
// them stay with the worker that has them.)
func (st poolState) dropRetired() poolState {
	if len(st.retired) == 0 {
		return st
	}
	keep := make([]model.AdmittedRoute, 0, len(st.spares))
	retired := map[model.BackendName]bool{}
	draining := maps.Clone(st.draining)
	for _, sp := range st.spares {
		switch {
		case !st.retired[sp.Slot]:
		case st.used[sp.Slot]:
			retired[sp.Slot] = true
		default:
			delete(draining, sp.Slot)
			continue
		}
		keep = append(keep, sp)
	}
	st.spares, st.retired, st.draining = keep, retired, draining
	return st
}

// hasRetired reports whether a retired backend waits for a reload to
// drop it.
func (st poolState) hasRetired() bool {
	for slot := range st.retired {
		if !st.used[slot] {
			return true
		}
	}
	return false
}

// slotNamed returns the index of the slot named name, or -1.
func (st poolState) slotNamed(name model.BackendName) int {
	for k := range st.spares {
		if st.spares[k].Slot == name {
			return k
		}
	}
	return -1
}

// free returns the index of a free spare of class c that fits, or -1.
// The pool's own spares come first, and of those the ones that have not
// served a route since HAProxy last loaded (served): HAProxy's counters
// of a spare carry the traffic of the routes it served, and a route bound
// to one showed a deleted route's requests as its own in the per-route
// metrics. A deleted route's backend kept as a spare comes last: it
// carries that route's traffic, and it renders the settings a pool spare
// reads from maps (timeouts, forwarded headers) as fixed lines, so a
// route bound to it reloads when it changes one of them (T53).
func (st poolState) free(c spareClass, fits func(model.AdmittedRoute) bool, served map[model.BackendName]bool) int {
	reused, kept := -1, -1
	ownMisfit := false
	for k := range st.spares {
		s := &st.spares[k]
		if classOf(s) != c || st.used[s.Slot] || st.draining[s.Slot] || st.retired[s.Slot] {
			continue
		}
		own := strings.HasPrefix(string(s.Slot), model.PoolSlotPrefix)
		if own && ownMisfit {
			continue
		}
		if !fits(*s) {
			// The pool's own spares of a class render alike: when one
			// does not fit, none does. A deleted route's backend kept
			// as a spare renders as that route did, so the next may
			// fit: giving up at one had a route that a served pool slot
			// fitted reload for a backend of its own (T50).
			ownMisfit = ownMisfit || own
			continue
		}
		switch {
		case !own:
			if kept < 0 {
				kept = k
			}
		case !served[s.Slot]:
			return k
		case reused < 0:
			reused = k
		}
	}
	if reused >= 0 {
		return reused
	}
	return kept
}

// bind returns st with spare k bound to key.
func (st poolState) bind(key model.RouteKey, k int) poolState {
	slot := st.spares[k].Slot
	st.bound, st.used = cloneOr(st.bound), cloneOr(st.used)
	st.bound[key] = slot
	st.used[slot] = true
	st.demand = cloneOr(st.demand)
	st.demand[classOf(&st.spares[k])]++
	if st.draining[slot] {
		st.draining = maps.Clone(st.draining)
		delete(st.draining, slot)
	}
	return st
}

// unbind returns st with the slot of key free again, draining. (The
// daemon notes the slot as served: see free.)
func (st poolState) unbind(key model.RouteKey, slot model.BackendName) poolState {
	st.bound, st.used, st.draining = cloneOr(st.bound), cloneOr(st.used), cloneOr(st.draining)
	delete(st.bound, key)
	delete(st.used, slot)
	st.draining[slot] = true
	return st
}

// cloneOr is a copy of m, or a new map when m is nil.
func cloneOr[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return maps.Clone(m)
}

// topUp returns st with each class in use holding its target of free
// spares, or twice the spares bound since the last top-up when that is
// more: a burst of new routes that emptied the pool (and so cost a
// reload) finds a pool sized for it the next time, instead of one reload
// per poolTarget routes. A class never keeps more spares than it has
// routes beyond its target, which bounds HAProxy's memory (about 12 kB a
// spare, BENCHMARKS.md figure 12). A class holding more free spares than
// it wants sheds half the excess: a pool sized for one burst stays for
// the next top-up, but churn no longer ratchets it up for good (T50: 1,340
// spares for 1,955 routes after 20 minutes of churn), and a balance class
// whose routes are all gone keeps none (T52).
func (st poolState) topUp(desired *model.Desired) poolState {
	routes := routesByClass(desired)
	free := st.freeCounts()
	var add []model.AdmittedRoute
	shed := map[spareClass]int{}
	inUse := classesInUse(routes)
	for c, n := range free {
		if !slices.Contains(inUse, c) {
			shed[c] = n // a balance class whose routes are gone: none kept
		}
	}
	for _, c := range inUse {
		want := max(poolTarget(routes[c]), min(2*st.demand[c], routes[c]))
		for n := free[c]; n < want; n++ {
			st.seq++
			slot := model.BackendName(fmt.Sprintf("%s%s:%d", model.PoolSlotPrefix, poolClass(c), st.seq))
			add = append(add, spareOf(c, slot, &desired.Router))
		}
		if excess := free[c] - want; excess > 1 {
			shed[c] = excess / 2
		}
	}
	if len(shed) > 0 {
		st.spares = st.shed(shed)
	}
	if len(add) > 0 {
		st.spares = append(slices.Clone(st.spares), add...)
	}
	st.demand = nil
	return st
}

// shed returns st's spares without n of the pool's own free spares of
// each class c in n, the newest first: for a reload, which drops them
// from haproxy.cfg.
func (st poolState) shed(n map[spareClass]int) []model.AdmittedRoute {
	drop := make([]bool, len(st.spares))
	for k := len(st.spares) - 1; k >= 0; k-- {
		s := &st.spares[k]
		c := classOf(s)
		if n[c] == 0 || !strings.HasPrefix(string(s.Slot), model.PoolSlotPrefix) ||
			st.used[s.Slot] || st.draining[s.Slot] || st.retired[s.Slot] {
			continue
		}
		drop[k] = true
		n[c]--
	}
	out := make([]model.AdmittedRoute, 0, len(st.spares))
	for k := range st.spares {
		if !drop[k] {
			out = append(out, st.spares[k])
		}
	}
	return out
}

// dropKept returns st without the backends of deleted routes it kept as
// spares (retire, keepBackendOf) that no route is bound to, for a reload
// that follows anyway: the pool's own slots, sized by topUp, stay. Nothing
// else dropped those, and the pool grew by a backend per deletion until a
// restart (T21: 153 backends of 162 deleted routes after five reloads).
// (Servers still draining in them stay with the worker that has them.)
func (st poolState) dropKept() poolState {
	if !st.hasKept() {
		return st
	}
	st.spares = slices.DeleteFunc(slices.Clone(st.spares), st.unboundKept)
	st.draining = cloneOr(st.draining)
	for slot := range st.draining {
		if !strings.HasPrefix(string(slot), model.PoolSlotPrefix) && !st.used[slot] {
			delete(st.draining, slot)
		}
	}
	return st
}

// hasKept reports whether a deleted route's backend kept as a spare waits
// for a reload to drop it (dropKept).
func (st poolState) hasKept() bool { return slices.ContainsFunc(st.spares, st.unboundKept) }

// unboundKept reports whether sp is a deleted route's backend kept as a
// spare (named after the route, not a slot of the pool), unbound.
func (st poolState) unboundKept(sp model.AdmittedRoute) bool {
	return !strings.HasPrefix(string(sp.Slot), model.PoolSlotPrefix) && !st.used[sp.Slot] && !st.retired[sp.Slot]
}

// low reports whether a class in use has less than a quarter of its
// target of free spares.
func (st poolState) low(desired *model.Desired) bool {
	if desired == nil || !desired.Router.DynamicConfigManager {
		return false
	}
	routes := routesByClass(desired)
	free := st.freeCounts()
	for _, c := range classesInUse(routes) {
		if free[c] < max(1, poolTarget(routes[c])/4) {
			return true
		}
	}
	return false
}

// routesByClass counts desired's routes by the class of spare they bind to.
func routesByClass(desired *model.Desired) map[spareClass]int {
	routes := map[spareClass]int{}
	for i := range desired.Routes {
		routes[classOf(desired.Routes[i])]++
	}
	return routes
}

// freeCounts counts the spares free to bind, by class.
func (st poolState) freeCounts() map[spareClass]int {
	free := map[spareClass]int{}
	for i := range st.spares {
		s := &st.spares[i]
		if !st.used[s.Slot] && !st.draining[s.Slot] && !st.retired[s.Slot] {
			free[classOf(s)]++
		}
	}
	return free
}

// drained returns st with the spares whose servers are all gone free to
// bind again.
func (st poolState) drained(pending map[model.BackendName]map[model.ServerName]string) poolState {
	var done []model.BackendName
	for slot := range st.draining {
		if len(pending[slot]) == 0 {
			done = append(done, slot)
		}
	}
	if len(done) == 0 {
		return st
	}
	st.draining = maps.Clone(st.draining)
	for _, slot := range done {
		delete(st.draining, slot)
	}
	return st
}
