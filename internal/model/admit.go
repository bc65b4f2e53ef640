package model

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/haroute/haroute/internal/parallel"
)

// Admission decides which routes are served. Three rules, as in OpenShift:
//
//   - A route with a validation error is rejected alone; the rest serve.
//   - Two routes claiming the same host and path (for wildcard routes, the
//     wildcard domain) conflict, and so do a passthrough and a
//     non-passthrough route on the same host, since the SNI can send a host
//     only one way. The older route (metadata.creationTimestamp; a route
//     without one is treated as the newest) wins, then namespace/name order;
//     the loser is rejected with a reason naming the winner.
//   - Routes that do not match the RouterConfig's routeSelector or
//     namespaces allow-list belong to another router sharing the tree: they
//     get no status, only a note, and claim nothing.
//
// Rejections are errors in the diagnostics, so `haroute check` fails on
// them, and they are listed as reasons in the route's status.

// admitScratch is admission's working memory, kept by the Loader so that a
// load at 10k routes does not allocate (and collect) megabytes of
// candidates and claim maps again. Nothing in it outlives one admit call:
// results are copied out of the candidates.
type admitScratch struct {
	slab   []candidate
	claims map[hostPath]*candidate
	hosts  map[string]*candidate
	index  endpointIndex // empty between calls
	// epIndex is the endpoint index of the last call with the Loader's
	// memos, updated rather than built again (epindex.go).
	epIndex epIndexCache

	// The conflict decisions of the last call and what they were made
	// from: the same valid candidates, with the same conflictKeys in the
	// same order, lose the same way. spare is a buffer for the next keys.
	conflictIn, spare []conflictKey
	conflictOut       []conflictLoss
	conflictInterNS   bool
	// conflictFrom is the admitted route each conflictIn key was taken
	// from (or one that makes the same key): read-only and shared from
	// load to load, so a load that changed no claim is known to, by
	// pointer where the route is unchanged and by its own key where it
	// changed otherwise, without building 10k keys to compare (0.7 ms at
	// 10k routes).
	conflictFrom, spareFrom []*AdmittedRoute
	// claimants counts the conflictIn keys claiming each host; nil when
	// a wildcard route was among them (see conflictsFromLast).
	claimants map[string]int32
	// contested caches contestedWinners for the decision whose losses
	// are contestedOf: a decision replayed at every change keeps its
	// conflictOut slice, and every new decision makes a new one (the one
	// held here cannot be reallocated under it).
	contested   []RouteKey
	contestedOf []conflictLoss
	// preferred, when set, are routes to take as served in the next full
	// decision, besides those the last good state served: a restart's
	// saved winners, the routes the deletion guard holds
	// (Loader.PreferWinners).
	preferred map[RouteKey]bool
	// preferredDefs, when set, names for routes defined in more than one
	// file the file whose definition serves, where the last good state
	// has none: a restart's saved choice (Loader.PreferDefinitions).
	preferredDefs map[RouteKey]string
	// definitions are, for the routes of the last sorted view defined in
	// more than one file, the file of the definition first in order, the
	// one that serves (definitionsOf).
	definitions map[RouteKey]string

	// external is set when a candidate of the last validateRoutes names
	// an external certificate.
	external bool

	// statuses is the last pass's Desired.Statuses (read-only).
	statuses []*RouteStatus

	// sorted is validateRoutes' order of the last routes and memos it was
	// given. The Loader hands over the very same slices while no route
	// changed, and they are never modified, so the order still holds.
	// Holding them keeps their addresses from being reused.
	sorted sortedRoutes
	// order is validateRoutes' buffer for sorting, reused: fresh, its
	// 160 kB at 10k routes were faulted in at every route change.
	order []ordered
}

// ordered is a route on its way through validateRoutes' sort.
type ordered struct {
	r   *Route
	idx int // input order, so the sort is stable
}

// sortedRoutes is routes and memos in namespace/name order.
type sortedRoutes struct {
	routes    []*Route
	memos     []*routeMemo
	byKey     []*Route
	memoByKey []*routeMemo

	// selection is which of byKey validateSorted kept, and the
	// diagnostics of those it passed over, under the settings that chose.
	selection *selection
}

// selection is validateSorted's choice of routes: not duplicates, in the
// namespaces served, matching the route selector. It depends on the
// sorted routes and those two settings alone, so an endpoint change (the
// same routes) makes the same choice: it is kept rather than made again
// by a walk through every route, a millisecond and a half at 10k routes.
type selection struct {
	namespaces []string
	selector   *LabelSelector
	kept       []int32 // indexes into byKey, in order
	diags      Diagnostics
}

// chose reports whether sel was made under settings' namespaces and
// route selector.
func (sel *selection) chose(settings *Settings) bool {
	return sel != nil && slices.Equal(sel.namespaces, settings.Namespaces) &&
		reflect.DeepEqual(sel.selector, settings.RouteSelector)
}

// sameSlice reports whether a and b are the same slice: same start and
// length.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// conflictKey is everything decideConflicts reads from a valid candidate.
// Times compare with ==, so a time equal only by Equal is a miss, never a
// wrong hit.
type conflictKey struct {
	key         RouteKey
	created     time.Time
	host, path  string
	passthrough bool
	tls         bool // a plain route may share a passthrough route's host
}

// conflictLoss is one candidate rejected by decideConflicts: its position
// among the valid candidates and the message.
type conflictLoss struct {
	valid int
	msg   string
}

// admit validates objs, applies defaults, resolves services to endpoints
// and decides admission. Invalid routes are rejected alone; an invalid
// RouterConfig leaves prev (the last good settings; nil = defaults) in
// force. It reuses, and fills in, the memos of the objects when m is not
// nil (the Loader's); m is parallel to objs. sc, when not nil, is reused
// working memory.
//
// lg, when not nil, is the last good version of each object (the Loader's,
// see lastgood.go): a route or endpoints object whose current version is
// rejected keeps serving its last good version, marked stale. The return
// value is what to remember as last good if this result is committed.
func admit(objs Objects, prev *Settings, m *memos, sc *admitScratch, lg *lastGood) (*Desired, Diagnostics, *lastGood) {
	if sc == nil {
		sc = &admitScratch{}
	}
	d, ds, pass := admitOnce(objs, prev, m, sc, lg)
	if lg == nil {
		return d, ds, nil
	}
	// Some routes were rejected and have a last good version: admit again
	// with those versions in their place. This second pass runs only while
	// a route is stale.
	for subs := lg.substitutes(pass); len(subs) > 0; {
		objs2, m2 := withSubstitutes(objs, m, subs)
		d2, ds2, pass2 := admitOnce(objs2, prev, m2, sc, lg)
		// A last good version that the settings now in force reject, or
		// no longer select (a routeSelector its old labels miss), serves
		// nothing: its route is reported as its current version is, not
		// with the path and errors of one gone from its file, or not at
		// all (T46). The others are admitted again without it.
		kept := slices.DeleteFunc(slices.Clone(subs), func(s substitute) bool { return !admits(d2, s.bad.key) })
		if len(kept) < len(subs) {
			if subs = kept; len(subs) == 0 {
				d, ds, pass = admitOnce(objs, prev, m, sc, lg)
			}
			continue
		}
		ds2 = append(ds2, staleDiagnostics(d2, subs)...)
		ds2.Sort()
		// A route served as its last good version is stale for its own
		// file, whatever its Secret.
		pass2.secretStale = slices.DeleteFunc(pass2.secretStale, func(k RouteKey) bool {
			return slices.ContainsFunc(subs, func(s substitute) bool { return s.bad.key == k })
		})
		return d2, ds2, pass2.next()
	}
	return d, ds, pass.next()
}

// admits reports whether d serves the route key.
func admits(d *Desired, key RouteKey) bool {
	return slices.ContainsFunc(d.Statuses, func(st *RouteStatus) bool { return st.Key == key && st.State != RouteRejected })
}

// refusedSettings are the settings in force while HAProxy refuses rc:
// the last good ones, or, with none, the defaults marked as not to be
// started on (the routerConfigKept note makes the Result unsettled).
func refusedSettings(rc *RouterConfig, problems []SettingsProblem, prev *Settings) (Settings, Diagnostics) {
	var ds Diagnostics
	for _, p := range problems {
		ds = append(ds, Diagnostic{Pos: rc.Source.At(p.Field), Severity: SeverityError, Field: p.Field, Message: p.Message})
	}
	ds = append(ds, Diagnostic{Pos: rc.Source.Pos, Severity: SeverityNote, Message: routerConfigKept})
	if prev != nil {
		return *prev, ds
	}
	return DefaultSettings(), ds
}

// admitOnce is one admission pass over objs.
func admitOnce(objs Objects, prev *Settings, m *memos, sc *admitScratch, lg *lastGood) (*Desired, Diagnostics, *admitPass) {
	var settings Settings
	var ds Diagnostics
	switch {
	case lg != nil && len(objs.RouterConfigs) == 0 && lg.fromConfig && prev != nil:
		settings, ds = *prev, Diagnostics{routerConfigVanished()}
	case lg != nil && len(lg.refusedConfig) > 0 && len(objs.RouterConfigs) > 0:
		settings, ds = refusedSettings(&objs.RouterConfigs[0], lg.refusedConfig, prev)
	default:
		settings, ds = resolveSettings(objs.RouterConfigs, prev)
	}
	var idx endpointIndex
	var eds Diagnostics
	var eps []staleEndpoints
	var delta *indexDelta
	if m != nil {
		// The Loader's memos: the index is kept and updated (epindex.go).
		idx, eds, eps = sc.epIndex.index(&objs, m, lg)
		delta = &sc.epIndex.delta
	} else {
		idx, eds, eps = buildEndpointIndex(&objs, m, sc.index, lg)
		// Emptied for the next load: the index must not keep groups alive.
		defer func() { clear(idx); sc.index = idx }()
	}
	ds = append(ds, eds...)

	var routeMemos []*routeMemo
	if m != nil {
		routeMemos = m.routes
	}
	cands := validateRoutes(objs.Routes, routeMemos, &settings, &ds, sc, lg)
	var secrets map[RouteKey]secretPair
	var staleSecrets, secretSources []string
	if sc.external {
		var sds Diagnostics
		secrets, staleSecrets, secretSources, sds = resolveExternalCertificates(cands, objs.Secrets, lg)
		ds = append(ds, sds...)
	}
	decideConflicts(cands, sc, settings.InterNamespaceAllowed, lg)

	d := &Desired{
		Router: settings,
		Routes: make([]*AdmittedRoute, 0, len(cands)),
	}
	// Resolving services is independent per route, and the bulk of
	// admission at scale: spread it over the cores, then collect in order.
	// A route's status is its memo's while the same (a pointer, shared
	// and read-only: staleDiagnostics copies before it marks), and the
	// statuses are the last pass's slice when all are: an endpoint change
	// alters none, and a route added or deleted makes one status and a
	// slice of pointers.
	last := sc.statuses
	var differ atomic.Bool
	differ.Store(last == nil || len(last) != len(cands))
	parallel.For(len(cands), admitGrain, func(i int) {
		c := cands[i]
		switch {
		case c.check.bad:
		case c.memo != nil:
			c.memo.resolve(c, idx, delta)
		default:
			resolveServices(c, idx)
		}
		c.statusOf()
		if !differ.Load() && c.st != last[i] {
			differ.Store(true)
		}
	})
	d.Statuses = last
	if differ.Load() {
		d.Statuses = make([]*RouteStatus, len(cands))
		for i, c := range cands {
			d.Statuses[i] = c.st
		}
		sc.statuses = d.Statuses
	}
	pass := &admitPass{
		fromConfig: len(objs.RouterConfigs) > 0 || (lg != nil && lg.fromConfig),
		settings:   settings,
		byKey:      sc.sorted.byKey, memoByKey: sc.sorted.memoByKey,
		endpoints: endpointsView{endpoints: objs.Endpoints, slices: objs.EndpointSlices, stale: eps},
		secrets:   secrets, staleSecrets: staleSecrets, secretSources: secretSources,
	}
	if m != nil {
		pass.endpoints.epMemos, pass.endpoints.slMemos = m.endpoints, m.slices
	}
	for i, c := range cands {
		if len(c.staleReasons) > 0 {
			pass.secretStale = append(pass.secretStale, c.admitted.Key)
		}
		ds = append(ds, c.check.diags...)
		if lg != nil && c.check.bad {
			pass.rejected = append(pass.rejected, servedRoute{key: c.admitted.Key, route: c.route, memo: c.memo, diags: c.check.diags})
		}
		if d.Statuses[i].State != RouteRejected {
			d.Routes = append(d.Routes, c.output())
		}
	}
	// Candidates come in key order (validateRoutes), so the routes do:
	// plan need not check them again.
	keyOrdered.remember(d.Routes)
	ds.Sort()
	return d, ds, pass
}

// output is the admitted route as Desired holds it. A candidate that
// changed nothing of its memo's route holds the memo's output already; a
// changed one, its own copy, which becomes the memo's output. A route
// with an external certificate is not recorded: its certificate comes
// from a Secret, which the memo does not follow.
func (c *candidate) output() *AdmittedRoute {
	if c.memo == nil || c.admitted.TLS.ExternalCertificate != "" {
		return c.writable()
	}
	if c.memo.out == nil {
		c.memo.out = c.writable()
		c.memo.admitted = c.memo.out
	}
	return c.memo.out
}

// writable returns the candidate's route for writing: a copy of its own
// the first time, since until then it may be the memo's (read-only and
// shared with earlier loads' Desired).
func (c *candidate) writable() *AdmittedRoute {
	if !c.owned {
		cp := *c.admitted
		c.admitted, c.owned = &cp, true
	}
	return c.admitted
}

// admitGrain is how many routes one goroutine takes at a time.
const admitGrain = 256

// candidate is one selected route on its way through admission.
type candidate struct {
	route *Route
	memo  *routeMemo // nil when admission runs without memos
	// admitted is the route as admission has it so far: the memo's while
	// nothing differs from it (read-only), else the candidate's own
	// (owned; see writable). Pointing rather than copying spares a 456
	// byte copy per route and change.
	admitted *AdmittedRoute
	owned    bool
	check    *routeCheck
	// checkBuf is where a memo hit puts check, sparing an allocation per
	// route and load.
	checkBuf routeCheck
	// valid is the candidate's position among the valid ones, for
	// decideConflicts.
	valid int
	// incumbent is set by decideConflicts when the route served, in the
	// last committed admission, a version that claims what it claims now
	// (lastGood.servedClaim), or is preferred.
	incumbent bool
	// preferred is set for the routes the daemon says it serves
	// (Loader.PreferWinners), ranked before the last good state's: at a
	// restart, and while the deletion guard holds a route the directory
	// dropped, that state lags behind what serves.
	preferred bool
	// st is the route's status (statusOf).
	st *RouteStatus
	// staleReasons are set when what the route serves is the last good
	// version of an object it depends on (a Secret), with why.
	staleReasons []string
}

// Answers503 ends the note of a route whose service has no endpoints;
// the deletion guard drops it from a route it keeps serving.
const Answers503 = "the route answers 503"

// statusOf sets c.st: the memo's status when it reads the same, else a
// new one, which the memo keeps. A candidate made from the memo's very
// route and diagnostics has its status without making it again (at 10k
// routes, making and comparing every status was 1.7 ms of each change).
func (c *candidate) statusOf() {
	m := c.memo
	if len(c.staleReasons) > 0 {
		m = nil // not the route's own verdict: not to be remembered as such
	}
	if m != nil && m.status != nil && m.statusFrom == c.admitted && sameSlice(m.statusDiags, c.check.diags) {
		c.st = m.status
		return
	}
	st := c.status()
	if m != nil && m.status != nil && m.status.Same(&st) {
		c.st = m.status
	} else {
		c.st = &st
	}
	if m != nil {
		m.status, m.statusFrom, m.statusDiags = c.st, c.admitted, c.check.diags
	}
}

// validateRoutes validates every selected route, in namespace/name order.
// Routes defined twice (same namespace and name) keep one definition: one
// from a file that decodes over the last good copy of a broken one, then
// the one from the file whose definition served last (lg), else the first
// by position; the others are errors. A copy of a route file, edited, must
// not silently replace the route that serves because its name sorts
// first. memos, when not nil, is parallel to routes.
func validateRoutes(routes []*Route, memos []*routeMemo, settings *Settings, ds *Diagnostics, sc *admitScratch, lg *lastGood) []*candidate {
	if lg != nil && lg.stale != nil {
		// Which duplicate wins depends on which files are broken, which
		// the cached order does not record; broken files are rare and
		// short-lived.
		sc.sorted = sortedRoutes{}
	}
	if last := &sc.sorted; last.byKey != nil && sameSlice(routes, last.routes) && sameSlice(memos, last.memos) && (memos == nil) == (last.memos == nil) {
		return validateSorted(last.byKey, last.memoByKey, settings, ds, sc)
	}
	// Defaulting must not write into the caller's objects, which the
	// Loader shares between loads: routes without a namespace are copied.
	// (Decoded routes always have one, so a load copies nothing.)
	if cap(sc.order) < len(routes) {
		sc.order = make([]ordered, len(routes))
	}
	sorted := sc.order[:len(routes)]
	defer clear(sorted) // keeps no route alive
	for i, r := range routes {
		if r.Meta.Namespace == "" {
			cp := *r
			cp.Meta.Namespace = namespaceOrDefault(cp.Meta.Namespace)
			r = &cp
		}
		sorted[i] = ordered{r: r, idx: i}
	}
	slices.SortFunc(sorted, func(x, y ordered) int {
		a, b := x.r, y.r
		if c := strings.Compare(a.Meta.Namespace, b.Meta.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Meta.Name, b.Meta.Name); c != 0 {
			return c
		}
		// The last good copy kept for a broken file yields to a current
		// definition that is new since the last good pass (see
		// lastGood.stale).
		if as, bs := lg.isStale(a.Source.Pos.Path), lg.isStale(b.Source.Pos.Path); as != bs {
			cur := a
			if as {
				cur = b
			}
			if !lg.routeDefinedIn(cur.Meta.Namespace, cur.Meta.Name, cur.Source.Pos.Path) {
				if bs {
					return -1
				}
				return 1
			}
		}
		served := lg.servedPath(a.Meta.Namespace, a.Meta.Name)
		if served == "" {
			served = sc.preferredDefs[RouteKey{Namespace: a.Meta.Namespace, Name: a.Meta.Name}]
		}
		if served != "" {
			if as, bs := a.Source.Pos.Path == served, b.Source.Pos.Path == served; as != bs {
				if as {
					return -1
				}
				return 1
			}
		}
		if positionLess(a.Source.Pos, b.Source.Pos) {
			return -1
		}
		if positionLess(b.Source.Pos, a.Source.Pos) {
			return 1
		}
		return x.idx - y.idx
	})
	byKey := make([]*Route, len(sorted))
	var memoByKey []*routeMemo
	if memos != nil {
		memoByKey = make([]*routeMemo, len(sorted))
	}
	for i, o := range sorted {
		byKey[i] = o.r
		if memos != nil {
			memoByKey[i] = memos[o.idx]
		}
	}
	sc.sorted = sortedRoutes{routes: routes, memos: memos, byKey: byKey, memoByKey: memoByKey}
	sc.definitions = definitionsOf(byKey)
	return validateSorted(byKey, memoByKey, settings, ds, sc)
}

// definitionsOf returns, for the routes of sorted (by key, the definition
// that serves first) defined more than once, the file of the one that
// serves; nil when none is.
func definitionsOf(sorted []*Route) map[RouteKey]string {
	var out map[RouteKey]string
	for i := 1; i < len(sorted); i++ {
		a, b := sorted[i-1], sorted[i]
		if a.Meta.Namespace != b.Meta.Namespace || a.Meta.Name != b.Meta.Name {
			continue
		}
		if out == nil {
			out = map[RouteKey]string{}
		}
		k := RouteKey{Namespace: a.Meta.Namespace, Name: a.Meta.Name}
		if _, ok := out[k]; !ok {
			out[k] = a.Source.Pos.Path
		}
	}
	return out
}

// validateSorted validates routes sorted by namespace, name and position;
// memos, when not nil, is parallel to sorted.
func validateSorted(sorted []*Route, memos []*routeMemo, settings *Settings, ds *Diagnostics, sc *admitScratch) []*candidate {
	// One allocation for all of them, reused from load to load.
	if cap(sc.slab) < len(sorted) {
		sc.slab = make([]candidate, len(sorted))
	}
	slab := sc.slab[:len(sorted)]
	sel := sc.sorted.selection
	if !sameSlice(sorted, sc.sorted.byKey) || !sel.chose(settings) {
		sel = selectRoutes(sorted, settings)
		if sameSlice(sorted, sc.sorted.byKey) {
			sc.sorted.selection = sel
		}
		// A slot this choice leaves out must not keep an earlier load's
		// candidate (and its routes) alive; the same choice as the
		// last load's writes the same slots as it did.
		clear(sc.slab[:cap(sc.slab)])
	}
	*ds = append(*ds, sel.diags...)
	cands := make([]*candidate, 0, len(sel.kept))
	for _, i := range sel.kept {
		c := &slab[i]
		*c = candidate{route: sorted[i]}
		if memos != nil {
			c.memo = memos[i]
		}
		cands = append(cands, c)
	}
	// Each route is validated on its own: on all cores. Whether any names
	// an external certificate is noted on the way, while the route is at
	// hand: a pass over 10k candidates to find none was 0.4 ms of every
	// change.
	var external atomic.Bool
	key := validationKeyOf(settings) // once: it sums the RouterConfig's header actions
	parallel.For(len(cands), admitGrain, func(i int) {
		c := cands[i]
		if c.memo != nil {
			c.admitted, c.check = c.memo.validate(c.route, settings, key, &c.checkBuf)
		} else {
			ar, check := validateRoute(c.route, settings)
			c.admitted, c.owned, c.check = &ar, true, check
		}
		if c.admitted.TLS.ExternalCertificate != "" && !external.Load() {
			external.Store(true)
		}
	})
	sc.external = external.Load()
	return cands
}

// selectRoutes chooses the sorted routes this router serves: the first
// definition of each key, in the namespaces served, matching the route
// selector. The others get a diagnostic each.
func selectRoutes(sorted []*Route, settings *Settings) *selection {
	sel := &selection{namespaces: slices.Clone(settings.Namespaces), selector: settings.RouteSelector,
		kept: make([]int32, 0, len(sorted))}
	allowed := make(map[string]bool, len(settings.Namespaces))
	for _, ns := range settings.Namespaces {
		allowed[ns] = true
	}
	for i, r := range sorted {
		if i > 0 && sorted[i-1].Meta.Namespace == r.Meta.Namespace && sorted[i-1].Meta.Name == r.Meta.Name {
			key := RouteKey{Namespace: r.Meta.Namespace, Name: r.Meta.Name}
			sel.diags = append(sel.diags, Diagnostic{Pos: r.Source.At("metadata.name"), Severity: SeverityError, Field: "metadata.name",
				Message: fmt.Sprintf("route %s is already defined at %s; this definition is ignored", key, firstOf(sorted, i).Source.At("metadata.name"))})
			continue
		}
		if len(allowed) > 0 && !allowed[r.Meta.Namespace] {
			sel.diags = append(sel.diags, Diagnostic{Pos: r.Source.Pos, Severity: SeverityNote,
				Message: fmt.Sprintf("route not served by this router: namespace %q is not in the RouterConfig's spec.namespaces", r.Meta.Namespace)})
			continue
		}
		if !settings.RouteSelector.Matches(r.Meta.Labels) {
			sel.diags = append(sel.diags, Diagnostic{Pos: r.Source.Pos, Severity: SeverityNote,
				Message: "route not served by this router: its labels do not match the RouterConfig's spec.routeSelector"})
			continue
		}
		sel.kept = append(sel.kept, int32(i))
	}
	return sel
}

// firstOf returns the first definition of the route at sorted[i].
func firstOf(sorted []*Route, i int) *Route {
	for i > 0 && sorted[i-1].Meta.Namespace == sorted[i].Meta.Namespace && sorted[i-1].Meta.Name == sorted[i].Meta.Name {
		i--
	}
	return sorted[i]
}

// hostPath is what a route claims in the HAProxy maps.
type hostPath struct {
	host string // the host, or the wildcard domain "*.example.com"
	path string
}

// claimHost returns the host a valid route claims.
func (c *candidate) claimHost() string { return claimHostOf(c.admitted) }

// claimHostOf returns the host an admitted route claims: its host, or
// the domain of its wildcard.
func claimHostOf(a *AdmittedRoute) string {
	if a.Wildcard {
		return WildcardDomain(a.Host)
	}
	return a.Host
}

// claimPath returns the path a route claims in the maps. A path of slashes
// alone ("/", "//") matches what no path matches, every request to the
// host, and renders the same map key: were they told apart here, two
// routes would share one key and the map, not their age, would pick the
// winner.
func claimPath(path string) string {
	if strings.Trim(path, "/") == "" {
		return ""
	}
	return path
}

// Claim names what a route claims in the maps: its host or wildcard
// domain, its path as the map keys it, and whether it is passthrough. Two
// routes with one claim serve the same requests.
func (a *AdmittedRoute) Claim() string {
	// Concatenated, not formatted: the deletion guard names every route's
	// claim when one is deleted, 10k of them at 10k routes.
	return claimHostOf(a) + "|" + strconv.FormatBool(a.Wildcard) + "|" + claimPath(a.Path) + "|" +
		strconv.FormatBool(a.Termination == TerminationPassthrough)
}

// ClaimHost is the host a route claims in admission: its host, or for a
// wildcard route the domain it covers.
func (a *AdmittedRoute) ClaimHost() string { return claimHostOf(a) }

// conflictKeyOf is what decideConflicts decides a valid route's claim by.
func conflictKeyOf(a *AdmittedRoute) conflictKey {
	return conflictKey{key: a.Key, created: a.CreationTimestamp, host: claimHostOf(a),
		path: claimPath(a.Path), passthrough: a.Termination == TerminationPassthrough, tls: a.Termination != TerminationNone}
}

// sameClaim reports whether two admitted routes make the same conflict
// key: the same pointer (an unchanged route, handed over by the loader),
// or a route whose servers or settings changed but not its claim, as
// after an endpoint change, which then replays the last decisions without
// building 10k keys.
func sameClaim(was, now *AdmittedRoute) bool {
	return was == now || conflictKeyOf(was) == conflictKeyOf(now)
}

// decideConflicts rejects the losers among valid routes claiming the same
// host and path, or sharing a host across passthrough and termination.
// The decisions depend on the valid candidates' conflictKeys alone: when
// those are what the last call saw, its losses are replayed.
//
// Under Strict namespace ownership (interNS false, the default, as on
// OpenShift) a host belongs to the namespace of its oldest route: routes of
// other namespaces lose it, whatever their path, and a wildcard route and
// a route for a host under its domain cannot come from two namespaces.
// With InterNamespaceAllowed only the same host and path conflict.
func decideConflicts(cands []*candidate, sc *admitScratch, interNS bool, lg *lastGood) {
	byAge := make([]*candidate, 0, len(cands))
	from := sc.spareFrom[:0]
	same := interNS == sc.conflictInterNS && sc.conflictIn != nil
	for _, c := range cands {
		if !c.check.bad {
			c.valid = len(byAge)
			same = same && len(from) < len(sc.conflictFrom) && sameClaim(sc.conflictFrom[len(from)], c.admitted)
			byAge = append(byAge, c)
			from = append(from, c.admitted)
		}
	}
	if same && len(from) == len(sc.conflictFrom) {
		for _, l := range sc.conflictOut {
			byAge[l.valid].check.errorf("spec.host", "%s", l.msg)
		}
		sc.spareFrom, sc.conflictFrom = sc.conflictFrom, from
		return
	}
	// From here on the decisions are made from these candidates.
	sc.spareFrom, sc.conflictFrom = sc.conflictFrom, from
	keys := sc.spare[:0]
	for _, c := range byAge {
		keys = append(keys, conflictKeyOf(c.admitted))
	}
	if slices.Equal(keys, sc.conflictIn) && interNS == sc.conflictInterNS {
		for _, l := range sc.conflictOut {
			byAge[l.valid].check.errorf("spec.host", "%s", l.msg)
		}
		sc.spare = keys
		return
	}
	if losses, ok := sc.conflictsFromLast(keys, interNS); ok {
		for _, l := range losses {
			byAge[l.valid].check.errorf("spec.host", "%s", l.msg)
		}
		sc.spare, sc.conflictIn, sc.conflictOut = sc.conflictIn, keys, losses
		return
	}
	for _, c := range byAge {
		c.preferred = sc.preferred[c.admitted.Key]
		c.incumbent = c.preferred || lg.servedClaim(c.admitted)
	}
	sc.preferred = nil
	sc.spare, sc.conflictIn, sc.conflictInterNS = sc.conflictIn, keys, interNS
	sc.claimants = countClaimants(keys)
	var losses []conflictLoss
	defer func() { sc.conflictOut = losses }()
	lose := func(c *candidate, msg string) {
		c.check.errorf("spec.host", "%s", msg)
		losses = append(losses, conflictLoss{valid: c.valid, msg: msg})
	}
	// A total order: candidates have distinct keys (duplicates were
	// dropped), so an unstable sort orders them as a stable one would.
	// Routes that served the same claim in the last committed admission
	// rank first: on OpenShift the API server sets creationTimestamp when a
	// route is created, so a route created later never takes a host from
	// one that serves it. In a directory the timestamp is whatever a file
	// says, or nothing (then namespace/name order would decide): a new
	// file could take a served host, and its route down.
	slices.SortFunc(byAge, func(a, b *candidate) int {
		switch {
		case a.preferred != b.preferred:
			if a.preferred {
				return -1
			}
			return 1
		case a.incumbent != b.incumbent:
			if a.incumbent {
				return -1
			}
			return 1
		case olderFirst(a.admitted, b.admitted):
			return -1
		case olderFirst(b.admitted, a.admitted):
			return 1
		}
		return 0
	})

	// The maps are emptied, not dropped, so their storage is reused.
	if sc.claims == nil {
		sc.claims = make(map[hostPath]*candidate, len(byAge))
		sc.hosts = make(map[string]*candidate, len(byAge))
	}
	claims, hosts := sc.claims, sc.hosts
	defer clear(claims)
	defer clear(hosts)
	// The first route with TLS on each host, kept only when a passthrough
	// route is among the candidates: no other conflicts on it.
	var tlsHosts map[string]*candidate
	if slices.ContainsFunc(byAge, func(c *candidate) bool { return c.admitted.Termination == TerminationPassthrough }) {
		tlsHosts = map[string]*candidate{}
	}
	var ownership namespaceOwnership
	if !interNS && slices.ContainsFunc(byAge, func(c *candidate) bool { return c.admitted.Wildcard }) {
		// Only wildcard routes make domains matter; without one, the
		// domain maps would cost 10k entries for nothing.
		ownership = namespaceOwnership{wildcards: map[string]*candidate{}, hosts: map[string]domainClaimer{}}
	}
	cover := newSNICover(byAge)
	for _, c := range byAge {
		host := c.claimHost()
		hp := hostPath{host: host, path: claimPath(c.admitted.Path)}
		if w, ok := claims[hp]; ok {
			what := fmt.Sprintf("host %q", host)
			if hp.path != "" {
				what += fmt.Sprintf(" path %q", hp.path)
			}
			lose(c, fmt.Sprintf("%s is already claimed by route %s, which wins (%s)",
				what, w.admitted.Key, winsOrder))
			continue
		}
		if !interNS {
			if msg := ownership.claim(c, hosts[host]); msg != "" {
				lose(c, msg)
				continue
			}
		}
		// A passthrough route and one that terminates TLS cannot share a
		// host: the SNI sends its connections one way. A plain HTTP route
		// shares it with either, as OpenShift's host index lets it (only
		// two routes with TLS conflict there): an ACME http-01 path on a
		// passthrough host, say.
		passthrough := c.admitted.Termination == TerminationPassthrough
		hasTLS := c.admitted.Termination != TerminationNone
		if w, ok := tlsHosts[host]; ok && hasTLS && (w.admitted.Termination == TerminationPassthrough) != passthrough {
			kind := "passthrough"
			if passthrough {
				kind = "TLS-terminating"
			}
			lose(c, fmt.Sprintf("host %q is already served by %s route %s, which wins (%s): passthrough and TLS-terminating routes cannot share a host, the SNI sends it one way (a plain HTTP route can)",
				host, kind, w.admitted.Key, winsOrder))
			continue
		}
		if msg := cover.claim(c); msg != "" {
			lose(c, msg)
			continue
		}
		claims[hp] = c
		if _, ok := hosts[host]; !ok {
			hosts[host] = c
		}
		if _, ok := tlsHosts[host]; !ok && hasTLS && tlsHosts != nil {
			tlsHosts[host] = c
		}
		if !interNS {
			ownership.record(c)
		}
		cover.record(c)
	}
}

// sniCover keeps a wildcard passthrough route and a TLS-terminating route
// for a host under its domain apart. The SNI frontend looks the exact
// passthrough hosts up first, then the wildcard ones, and only then hands
// the connection to termination: admitted together, the wildcard would
// take every TLS connection for the other route's host, which would stay
// listed as admitted and never be served. The older of the two wins, as
// for a passthrough and a terminating route on one host. Tracked only
// when a wildcard passthrough route is among the candidates.
type sniCover struct {
	wildcards map[string]*candidate // domain → oldest wildcard passthrough route
	hosts     map[string]*candidate // domain → oldest terminating route of a host in it
}

// newSNICover returns a tracker for cands, idle (claiming nothing) when
// none of them is a wildcard passthrough route.
func newSNICover(cands []*candidate) sniCover {
	if !slices.ContainsFunc(cands, func(c *candidate) bool {
		return c.admitted.Wildcard && c.admitted.Termination == TerminationPassthrough
	}) {
		return sniCover{}
	}
	return sniCover{wildcards: map[string]*candidate{}, hosts: map[string]*candidate{}}
}

// terminates reports whether a is an exact host whose TLS is terminated.
func terminates(a *AdmittedRoute) bool {
	return !a.Wildcard && (a.Termination == TerminationEdge || a.Termination == TerminationReencrypt)
}

// claim says why c would shadow, or be shadowed by, an older route over
// TLS; "" when it would not.
func (o *sniCover) claim(c *candidate) string {
	if o.wildcards == nil {
		return ""
	}
	a := c.admitted
	domain := parentDomainOf(a.Host)
	switch {
	case terminates(a):
		if w := o.wildcards[domain]; w != nil {
			return fmt.Sprintf("host %q is under *.%s, which passthrough wildcard route %s holds and wins ("+winsOrder+"): the SNI would send its TLS connections to that route",
				a.Host, domain, w.admitted.Key)
		}
	case a.Wildcard && a.Termination == TerminationPassthrough:
		if h := o.hosts[domain]; h != nil {
			return fmt.Sprintf("*.%s covers host %q of route %s, which terminates TLS and wins ("+winsOrder+"): the SNI would send that host's TLS connections to this passthrough route",
				domain, h.admitted.Host, h.admitted.Key)
		}
	}
	return ""
}

// record notes the admitted c.
func (o *sniCover) record(c *candidate) {
	if o.wildcards == nil {
		return
	}
	a := c.admitted
	domain := parentDomainOf(a.Host)
	switch {
	case terminates(a):
		if o.hosts[domain] == nil {
			o.hosts[domain] = c
		}
	case a.Wildcard && a.Termination == TerminationPassthrough:
		if o.wildcards[domain] == nil {
			o.wildcards[domain] = c
		}
	}
}

// maxConflictDelta bounds the keys conflictsFromLast compares one by one;
// past it the full decision is as cheap.
const maxConflictDelta = 64

// conflictsFromLast decides conflicts from the last decision when only a
// few keys changed (a route added, deleted or moved), without sorting and
// indexing every route again: at 10k routes that was 5 ms of each route
// added. Without wildcard routes, who loses a host depends only on the
// routes claiming that host (same host and path, the namespace of its
// oldest route, passthrough against termination), and a host claimed by
// one route has no loser. So when every host the changed keys leave or
// claim had one claimant at most and has one at most now, the last
// losses stand, at their new positions, and nothing else loses. Otherwise
// it reports false and the caller decides in full. keys, like conflictIn,
// is in RouteKey order.
func (sc *admitScratch) conflictsFromLast(keys []conflictKey, interNS bool) ([]conflictLoss, bool) {
	if sc.claimants == nil || interNS != sc.conflictInterNS {
		return nil, false
	}
	old := sc.conflictIn
	var delta map[string]int32 // change in claimants, by host
	count := func(k conflictKey, d int32) bool {
		if delta == nil {
			delta = make(map[string]int32)
		}
		delta[k.host] += d
		return len(delta) <= maxConflictDelta && !strings.HasPrefix(k.host, "*.")
	}
	for i, j := 0, 0; i < len(old) || j < len(keys); {
		var c int
		switch {
		case i == len(old):
			c = 1
		case j == len(keys):
			c = -1
		default:
			c = old[i].key.Compare(keys[j].key)
		}
		ok := true
		switch {
		case c == 0 && old[i] == keys[j]:
		case c == 0: // the same route, changed
			ok = count(old[i], -1) && count(keys[j], +1)
		case c < 0: // gone
			ok = count(old[i], -1)
		default: // new
			ok = count(keys[j], +1)
		}
		if !ok {
			return nil, false
		}
		if c <= 0 {
			i++
		}
		if c >= 0 {
			j++
		}
	}
	for host, d := range delta {
		if before := sc.claimants[host]; before > 1 || before+d > 1 {
			return nil, false
		}
	}
	// The last losers are on hosts no changed key touched: the same
	// routes, found at their new positions.
	losses := make([]conflictLoss, 0, len(sc.conflictOut))
	for _, l := range sc.conflictOut {
		key := old[l.valid].key
		at, found := slices.BinarySearchFunc(keys, key, func(k conflictKey, key RouteKey) int { return k.key.Compare(key) })
		if !found {
			return nil, false // cannot happen: its host had two claimants
		}
		losses = append(losses, conflictLoss{valid: at, msg: l.msg})
	}
	for host, d := range delta {
		if n := sc.claimants[host] + d; n == 0 {
			delete(sc.claimants, host)
		} else {
			sc.claimants[host] = n
		}
	}
	return losses, true
}

// countClaimants counts the keys claiming each host, or returns nil when
// one of them is a wildcard route: a wildcard's domain ties hosts
// together, which conflictsFromLast does not follow.
func countClaimants(keys []conflictKey) map[string]int32 {
	n := make(map[string]int32, len(keys))
	for _, k := range keys {
		if strings.HasPrefix(k.host, "*.") {
			return nil
		}
		n[k.host]++
	}
	return n
}

// namespaceOwnership tracks, for Strict namespace ownership, who holds
// each wildcard domain: the oldest wildcard route of the domain, and the
// namespaces of the routes admitted for hosts in it. Candidates arrive
// oldest first, so whoever is recorded first is older.
type namespaceOwnership struct {
	wildcards map[string]*candidate    // domain → oldest wildcard route
	hosts     map[string]domainClaimer // domain → namespaces of its plain hosts
}

// domainClaimer is the namespace of the first plain route in a domain and
// whether routes of other namespaces followed.
type domainClaimer struct {
	first *candidate
	mixed bool
}

// claim says why c, under Strict ownership, cannot have its host: the
// host's owner (its oldest route, hostOwner) is of another namespace, or
// a wildcard of its domain is held across namespaces. "" when it may.
func (o *namespaceOwnership) claim(c, hostOwner *candidate) string {
	ns := c.admitted.Key.Namespace
	if hostOwner != nil && hostOwner.admitted.Key.Namespace != ns {
		return fmt.Sprintf("host %q is owned by namespace %q (route %s holds it: %s); with routeAdmission.namespaceOwnership Strict, routes of other namespaces cannot claim any path on it",
			c.claimHost(), hostOwner.admitted.Key.Namespace, hostOwner.admitted.Key, winsOrder)
	}
	if o.wildcards == nil {
		return ""
	}
	domain := parentDomainOf(c.admitted.Host)
	if w := o.wildcards[domain]; w != nil && w.admitted.Key.Namespace != ns {
		return fmt.Sprintf("wildcard route %s of namespace %q holds *.%s ("+winsOrder+"); with routeAdmission.namespaceOwnership Strict, routes of other namespaces cannot claim hosts under it",
			w.admitted.Key, w.admitted.Key.Namespace, domain)
	}
	if c.admitted.Wildcard {
		if h, ok := o.hosts[domain]; ok && (h.mixed || h.first.admitted.Key.Namespace != ns) {
			other := h.first
			return fmt.Sprintf("route %s of namespace %q serves host %q under *.%s ("+winsOrder+"); with routeAdmission.namespaceOwnership Strict, a wildcard route cannot cover hosts of other namespaces",
				other.admitted.Key, other.admitted.Key.Namespace, other.admitted.Host, domain)
		}
	}
	return ""
}

// record notes the admitted c. Domains are tracked only once a wildcard
// route is seen among the candidates (see begin).
func (o *namespaceOwnership) record(c *candidate) {
	if o.wildcards == nil {
		return
	}
	domain := parentDomainOf(c.admitted.Host)
	if c.admitted.Wildcard {
		if o.wildcards[domain] == nil {
			o.wildcards[domain] = c
		}
		return
	}
	h, ok := o.hosts[domain]
	switch {
	case !ok:
		o.hosts[domain] = domainClaimer{first: c}
	case h.first.admitted.Key.Namespace != c.admitted.Key.Namespace && !h.mixed:
		h.mixed = true
		o.hosts[domain] = h
	}
}

// parentDomainOf is host without its first label ("example.com" for
// "www.example.com"), OpenShift's GetDomainForHost.
func parentDomainOf(host string) string {
	if i := strings.IndexByte(host, '.'); i >= 0 {
		return host[i+1:]
	}
	return ""
}

// winsOrder is why the winner of a conflict wins, as decideConflicts
// ranks routes. It does not say which rule decided: a decision replayed
// from an earlier one (conflictsFromLast) keeps that one's message, so
// the message must not depend on which routes served at the time.
const winsOrder = "a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order"

// contestedWinners returns, in key order, the routes of the last decision
// that won a claim another route lost: those on a loser's host, or in a
// loser's domain (a wildcard and the hosts under it). nil when no route
// lost, the common case, so that a restart's saved state costs nothing
// then.
func (sc *admitScratch) contestedWinners() []RouteKey {
	if len(sc.conflictOut) == 0 {
		return nil
	}
	if sameSlice(sc.conflictOut, sc.contestedOf) {
		return sc.contested
	}
	lost := make(map[int]bool, len(sc.conflictOut))
	hosts := make(map[string]bool, 2*len(sc.conflictOut))
	for _, l := range sc.conflictOut {
		lost[l.valid] = true
		h := strings.TrimPrefix(sc.conflictIn[l.valid].host, "*.")
		hosts[h], hosts[parentDomainOf(h)] = true, true
	}
	var out []RouteKey
	for i, k := range sc.conflictIn {
		h := strings.TrimPrefix(k.host, "*.")
		if !lost[i] && (hosts[h] || hosts[parentDomainOf(h)]) {
			out = append(out, k.key)
		}
	}
	sc.contested, sc.contestedOf = out, sc.conflictOut
	return out
}

// olderFirst orders routes for conflicts: older creationTimestamp first, a
// missing timestamp last, then namespace/name.
func olderFirst(a, b *AdmittedRoute) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if ta.IsZero() != tb.IsZero() {
		return !ta.IsZero()
	}
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.Key.Namespace != b.Key.Namespace {
		return a.Key.Namespace < b.Key.Namespace
	}
	return a.Key.Name < b.Key.Name
}

// emptyService is a service of a route without endpoints, for its note:
// at field, what is missing and until when.
type emptyService struct{ field, what, until string }

func duplicateService(before []ServiceBackend, name string) bool {
	for i := range before {
		if before[i].Name == name {
			return true
		}
	}
	return false
}

// resolveServices fills in the servers of an admitted route and warns about
// services that have none.
func resolveServices(c *candidate, idx endpointIndex) {
	ar := c.writable()
	ns := ar.Key.Namespace
	// Which service each server name went to; only routes with
	// alternateBackends can see a name twice.
	var seen map[ServerName]string
	if len(ar.Services) > 1 {
		seen = make(map[ServerName]string)
	}
	var empty []emptyService
	for _, i := range claimOrder(ar.Services) {
		svc := &ar.Services[i]
		field := "spec.to.name"
		if i > 0 {
			field = "spec.alternateBackends[" + strconv.Itoa(i-1) + "].name"
		}
		if duplicateService(ar.Services[:i], svc.Name) {
			// Named again (validateServices warned): its endpoints
			// serve under the first mention, with the last weight.
			svc.Servers = nil
			continue
		}
		if svc.Weight == 0 && ar.Termination == TerminationPassthrough {
			// The OpenShift router leaves a weight-0 service out of a
			// passthrough backend (an HTTP backend keeps its servers at
			// weight 0): no servers, no checks, and its endpoints stay
			// free for a weighted service that shares them.
			svc.Servers = nil
			continue
		}
		res := idx.resolve(ns, svc.Name, c.route.Spec.Port)
		// A service without endpoints is a state, not a mistake (not yet
		// deployed, scaled to zero): a note, once it is known whether
		// another service takes its share (empty). A targetPort that
		// matches nothing is most likely a mistake.
		switch {
		case !res.found:
			empty = append(empty, emptyService{field, fmt.Sprintf("no Endpoints or EndpointSlice found for service %q", svc.Name), " until one appears"})
		case res.portMiss:
			c.check.warnf(field, "service %q has no port matching targetPort %s", svc.Name, describeTargetPort(c.route.Spec.Port))
		case len(res.endpoints) == 0:
			empty = append(empty, emptyService{field, fmt.Sprintf("service %q has no ready endpoints", svc.Name), ""})
		}
		svc.Servers = make([]Server, 0, len(res.endpoints))
		for _, e := range res.endpoints {
			addr := e.addr.String()
			name := ServerNameFor(addr, e.port)
			if other, dup := seen[name]; dup {
				// Server names must be unique in a backend; the
				// endpoint already receives traffic via the other service.
				c.check.warnf(field, "endpoint %s:%d of service %q is also an endpoint of service %q; it is used once, for %q",
					addr, e.port, svc.Name, other, other)
				continue
			}
			if seen != nil {
				seen[name] = svc.Name
			}
			svc.Servers = append(svc.Servers, Server{Name: name, Address: addr, Port: e.port, H2C: e.h2c})
		}
	}
	if len(empty) > 0 {
		// The route answers 503 only when no service with a weight has
		// servers: otherwise the others serve it, as on OpenShift (its
		// weights count only services with endpoints). The note said
		// 503 while the route served.
		consequence := Answers503
		for _, svc := range ar.Services {
			if svc.Weight > 0 && len(svc.Servers) > 0 {
				consequence = "the route is served by its other services"
				break
			}
		}
		for _, e := range empty {
			c.check.add(SeverityNote, c.check.pos(e.field), e.field, e.what+"; "+consequence+e.until)
		}
	}
	spreadWeights(ar.Services)
	ar.NameServers()
}

// claimOrder is the order in which a route's services claim the server
// names of their endpoints: services with a weight first, in route order,
// then those of weight 0. An endpoint shared by two services then serves
// at the weight of one that gets traffic, as it does under the OpenShift
// router, which keeps a server per service.
func claimOrder(services []ServiceBackend) []int {
	if len(services) == 1 {
		return onlyService // most routes: no allocation
	}
	order := make([]int, 0, len(services))
	for i, s := range services {
		if s.Weight > 0 {
			order = append(order, i)
		}
	}
	for i, s := range services {
		if s.Weight <= 0 {
			order = append(order, i)
		}
	}
	return order
}

var onlyService = []int{0}

// status reports the route's admission outcome.
func (c *candidate) status() RouteStatus {
	r := c.route
	st := RouteStatus{
		Key: c.admitted.Key,
		// spec.host, or the generated one; a wildcard route as the
		// domain it serves (*.apps.example.com): listed by its host
		// alone, www.apps.example.com read as one name.
		Host:   claimHostOf(c.admitted),
		Path:   r.Spec.Path,
		State:  RouteAdmitted,
		Source: r.Source.Pos,
	}
	// Decoding's warnings (unknown fields) first, then admission's.
	for _, ds := range [...]Diagnostics{r.warnings, c.check.diags} {
		for _, d := range ds {
			msg := d.Message
			if d.Field != "" {
				msg = d.Field + ": " + msg
			}
			switch d.Severity {
			case SeverityError:
				// At its file, line and column, as a stale route's are:
				// the operator goes from status straight to the line.
				st.Reasons = append(st.Reasons, fmt.Sprintf("%s: %s", d.Pos, msg))
			case SeverityWarning:
				st.Warnings = append(st.Warnings, msg)
			case SeverityNote:
				st.Notes = append(st.Notes, msg)
			}
		}
	}
	switch {
	case len(st.Reasons) > 0:
		st.State = RouteRejected
	case len(c.staleReasons) > 0:
		st.State, st.Reasons = RouteStale, c.staleReasons
	case len(st.Warnings) > 0:
		st.State = RouteAdmittedWithWarnings
	}
	return st
}
