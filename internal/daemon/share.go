package daemon

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
)

// Runtime updates are not throttled (DESIGN §5). A plan with one change
// that needs a reload went in whole by that reload, so while the reload
// waited (its interval, or the backoff of one that failed: a run dir with
// no room, a master out of reach) every other change waited with it: an
// endpoint scaled away kept its traffic, a new route its 503. While a
// reload waits, what of the desired state needs none is applied at
// runtime now: the desired state with each route whose change needs the
// reload as HAProxy runs it (or left out, when it is new). The files on
// disk hold the whole desired state already, which the reload loads.

// applyWhatDoesNotWait applies the runtime share of d.desired while the
// reload it needs waits. It does nothing when the reload runs now, or
// waits for something other than routes (settings, the pool, a heal, a
// fallback), or when the share cannot be had without a reload either.
// p is d.desired's plan from d.applied when the caller has it (nil: made
// here): at 10k routes a plan is a few milliseconds.
func (d *Daemon) applyWhatDoesNotWait(ctx context.Context, p *plan.Plan) {
	if d.proc == nil || d.applied.Desired == nil || d.desired.Desired == nil || d.onDisk {
		return
	}
	now := time.Now()
	if at, ok := d.throttle.due(now); !ok || !at.After(now) {
		return
	}
	for _, r := range d.throttle.reasons {
		switch r.Kind {
		case plan.KindRuntimeFallback, plan.KindHeal, plan.KindPoolRefill, plan.KindRouterSettings, plan.KindDCMDisabled:
			return // HAProxy's state or the whole config is in question
		}
	}
	base := d.applied
	base.PendingDeletes = d.pending
	if p == nil {
		computed := plan.Compute(base, d.desired)
		p = &computed
	}
	if !p.Reload {
		return
	}
	share, held, why := d.runtimeShare(*p)
	if why != "" {
		level := slog.LevelInfo
		if why == noRouteWaits {
			level = slog.LevelDebug // the reload is for settings or files
		}
		d.log.Log(ctx, level, "every change waits for the pending reload", "why", why, "waiting", reasonStrings(p.Reasons), "held", held)
		return
	}
	sp := plan.Compute(base, share)
	if sp.Reload {
		d.log.Info("every change waits for the pending reload", "why", "what does not wait needs a reload too", "reasons", reasonStrings(sp.Reasons))
		return
	}
	if len(sp.Ops) == 0 {
		return
	}
	// held: routes kept as they serve beside those whose change needs the
	// reload (holdHosts); their own changes, endpoints included, wait.
	d.log.Info("applying at runtime what does not wait for the pending reload", "ops", len(sp.Ops), "waiting", reasonStrings(p.Reasons), "held", held)
	d.applyRuntime(ctx, sp, share)
}

// runtimeShare is d.desired with the routes whose change in p needs a
// reload as d.applied serves them (and those holdHosts adds), rendered,
// and the routes held beside those whose own change needs the reload.
// Without a share, why says why not: a route held is bound to a spare in
// d.applied (its slot may be free, or another's, in d.desired's pool) or
// is a wildcard route, or the share does not render.
func (d *Daemon) runtimeShare(p plan.Plan) (share plan.State, held []string, why string) {
	prev, next := d.applied.Desired, d.desired.Desired
	waits := map[model.RouteKey]bool{}
	for _, c := range p.Changes {
		ns, name, ok := strings.Cut(c.Subject, "/")
		if c.Mode != plan.ModeReload || !ok {
			continue
		}
		key := model.RouteKey{Namespace: ns, Name: name}
		_, inPrev := model.FindRoute(prev.Routes, key)
		_, inNext := model.FindRoute(next.Routes, key)
		if inPrev || inNext {
			waits[key] = true
		}
	}
	if len(waits) == 0 {
		return plan.State{}, nil, noRouteWaits
	}
	own := maps.Clone(waits)
	holdHosts(prev.Routes, next.Routes, waits)
	for key := range waits {
		if !own[key] {
			held = append(held, key.String())
		}
	}
	slices.Sort(held)
	routes, ok := shareRoutes(prev.Routes, next.Routes, waits)
	if !ok {
		return plan.State{}, held, "a route it holds is on a spare, or is a wildcard route"
	}
	env := envOf(d.desired)
	env.spares = shareSpares(d.applied.Input.Spares, env.spares, routes)
	// A route held as it serves that the directory deletes or moves off
	// its own backend has that backend kept in d.desired's pool, empty:
	// the share renders the route's instead of the kept one.
	heldBackends := map[model.BackendName]bool{}
	for _, r := range routes {
		if waits[r.Key] && r.Slot == "" {
			heldBackends[r.BackendName()] = true
		}
	}
	for _, r := range routes {
		if r.Slot != "" && heldBackends[r.Slot] {
			return plan.State{}, held, "a route binds the kept backend of a route it holds"
		}
	}
	env.spares = slices.DeleteFunc(slices.Clone(env.spares), func(sp model.AdmittedRoute) bool { return heldBackends[sp.Slot] })
	merged := *next
	merged.Routes = routes
	merged.Statuses = statusesAsServed(next.Statuses, prev.Statuses, waits)
	share, err := d.prepare(&merged, d.live.path, env)
	if err != nil {
		return plan.State{}, held, err.Error()
	}
	return share, held, ""
}

// shareSpares is the pool the runtime share renders: desired's, with the
// spares the running HAProxy has (applied) that desired dropped for its
// pending reload (a deleted route's kept backend, a retired one) back in
// their places, and without those only desired has that no route of the
// share is bound to (a top-up). The share is what runs until the reload:
// rendered with desired's pool, it read as a reload itself, and every
// change waited for the pending one (T25: an endpoint change for 20 s).
func shareSpares(applied, desired []model.AdmittedRoute, routes []*model.AdmittedRoute) []model.AdmittedRoute {
	in := make(map[model.BackendName]int, len(desired))
	for i := range desired {
		in[desired[i].Slot] = i
	}
	out := make([]model.AdmittedRoute, 0, max(len(applied), len(desired)))
	running := make(map[model.BackendName]bool, len(applied))
	for _, sp := range applied {
		running[sp.Slot] = true
		if i, ok := in[sp.Slot]; ok {
			sp = desired[i]
		}
		out = append(out, sp)
	}
	bound := map[model.BackendName]bool{}
	for _, r := range routes {
		if r.Slot != "" {
			bound[r.Slot] = true
		}
	}
	for _, sp := range desired {
		if !running[sp.Slot] && bound[sp.Slot] {
			out = append(out, sp)
		}
	}
	return out
}

// holdHosts adds to waits, until nothing changes, the routes whose host a
// waiting route's would share in the runtime share, so that each host
// keeps one claimant until the reload:
//   - a route that takes a host a waiting route still serves (the
//     waiting one moves away from it in the directory): the two would
//     claim it together, admitted by no one;
//   - a route that leaves a host (deleted, renamed, moved) that a waiting
//     route takes in the directory: the share applied the leaving, and
//     the host answered 503 until the reload, where the route that
//     leaves used to serve it until then.
//
// A route whose claim is the same in both is left alone: it shared the
// host that way already.
func holdHosts(prev, next []*model.AdmittedRoute, waits map[model.RouteKey]bool) {
	sameClaim := func(other []*model.AdmittedRoute, r *model.AdmittedRoute) bool {
		i, found := model.FindRoute(other, r.Key)
		return found && other[i].Claim() == r.Claim()
	}
	for {
		served, taken := map[string]bool{}, map[string]bool{}
		for key := range waits {
			if i, found := model.FindRoute(prev, key); found {
				served[prev[i].ClaimHost()] = true
			}
			if j, found := model.FindRoute(next, key); found {
				taken[next[j].ClaimHost()] = true
			}
		}
		grew := false
		for _, r := range next {
			if !waits[r.Key] && served[r.ClaimHost()] && !sameClaim(prev, r) {
				waits[r.Key], grew = true, true
			}
		}
		for _, r := range prev {
			if !waits[r.Key] && taken[r.ClaimHost()] && !sameClaim(next, r) {
				waits[r.Key], grew = true, true
			}
		}
		if !grew {
			return
		}
	}
}

// shareRoutes merges prev and next (both in key order) into the routes
// of a share: next's, but those in waits as prev has them (or left out
// when prev has none). It reports false when a waiting route is bound to
// a spare in prev (its slot may be free, or another's, in d.desired's
// pool) or is a wildcard route, whose claims reach other hosts.
func shareRoutes(prev, next []*model.AdmittedRoute, waits map[model.RouteKey]bool) ([]*model.AdmittedRoute, bool) {
	routes := make([]*model.AdmittedRoute, 0, len(next))
	for old, cur := range byKey(prev, next) {
		key := model.RouteKey{}
		if old != nil {
			key = old.Key
		} else {
			key = cur.Key
		}
		switch {
		case !waits[key]:
			if cur != nil {
				routes = append(routes, cur)
			}
		case old != nil && old.Slot != "", old != nil && old.Wildcard, cur != nil && cur.Wildcard:
			return nil, false
		case old != nil:
			routes = append(routes, old)
		}
	}
	return routes, true
}

// noRouteWaits is why there is no share when no route's change needs the
// reload.
const noRouteWaits = "no route waits for it"

// statusesAsServed is statuses with those of the routes in waits as prev
// has them, or left out when prev has none: status shows what serves.
func statusesAsServed(statuses, prev []*model.RouteStatus, waits map[model.RouteKey]bool) []*model.RouteStatus {
	out := make([]*model.RouteStatus, 0, len(statuses))
	for _, st := range statuses {
		if !waits[st.Key] {
			out = append(out, st)
		}
	}
	for _, st := range prev {
		if waits[st.Key] {
			out = append(out, st)
		}
	}
	slices.SortStableFunc(out, func(a, b *model.RouteStatus) int { return a.Key.Compare(b.Key) })
	return out
}
