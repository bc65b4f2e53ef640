package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Last good, per object (DESIGN §7). A file that fails to parse keeps its
// last good objects (load.go); this file covers the objects inside files
// that parse: a Route whose new version is rejected (validation,
// admission, or HAProxy refusing it) keeps serving its last good version,
// and so does an Endpoints or EndpointSlice whose new version has errors.
// Such objects are *stale*: served, with the errors of their current
// version reported. Only a generation in which the object is absent
// deletes it. A route that was never good is simply rejected.
//
// Last good is what the Loader remembers from the last committed load
// (Loader.Commit): the daemon commits only what HAProxy accepted, so a
// version HAProxy refused never becomes anyone's last good.

// lastGood is the last good version of every object of a committed load.
// It refers to what that load's admission already holds (the routes in
// key order, the endpoint objects and their memos), so remembering it
// costs nothing per change; only rejected and stale objects are listed.
type lastGood struct {
	// byKey and memoByKey are the routes of the pass in namespace/name
	// order (admission's sorted view, never modified once made).
	byKey     []*Route
	memoByKey []*routeMemo
	// rejected are the routes of the pass that were not good.
	rejected map[RouteKey]bool
	// settings decide which routes the pass selected.
	settings  Settings
	endpoints endpointsView
	// fromConfig is set when the settings came from a RouterConfig, so
	// that one vanishing keeps them (ports never move because a file
	// disappeared).
	fromConfig bool
	// refusedMaterial is the Secret material HAProxy refused, by
	// fingerprint, with its message (Loader.Refuse).
	refusedMaterial map[string]string
	// refusedConfig is what HAProxy refused of the current RouterConfig
	// (Loader.RefuseRouterConfig); not part of what is committed.
	refusedConfig []SettingsProblem
	// stale are the paths whose current content fails to decode (or could
	// not be read: Loader.Unread), whose last good content stays in
	// force; not part of what is committed.
	// Such content yields to a definition of the same object that is new
	// in a file that decodes (the last good pass had none from that
	// file): an operator who moved a route to a new file, edited, and
	// left the old file broken, meant the new one, which `check` (no
	// history) admits; the old copy won as the incumbent, and the
	// Endpoints of both were served together. A copy that was there
	// already (a duplicate rejected, Endpoints served together) does not
	// take over when the file that served breaks: a typo must not hand a
	// host to a leftover copy, nor drop addresses that served.
	stale map[string]bool
	// secrets is the certificate material in force for each Secret an
	// externalCertificate names (resolveExternalCertificates).
	secrets map[RouteKey]secretPair
	// staleSecrets are the files of Secrets whose current version cannot
	// serve, whose last good material does, and secretStale the routes
	// stale for that reason alone (their own file is current); not part
	// of what is committed.
	staleSecrets []string
	secretStale  []RouteKey
	// secretSources are the files the last good versions of stale
	// Secrets came from, where those are not their current files.
	secretSources []string
}

// secret is the last good material of Secret k.
func (lg *lastGood) secret(k RouteKey) (secretPair, bool) {
	if lg == nil {
		return secretPair{}, false
	}
	p, ok := lg.secrets[k]
	return p, ok
}

// routeDefinedIn reports whether the last good pass had a definition of
// route namespace/name from path, served or not (a rejected duplicate
// counts).
func (lg *lastGood) routeDefinedIn(namespace, name, path string) bool {
	return slices.ContainsFunc(lg.defined(namespace, name), func(r *Route) bool { return r.Source.Pos.Path == path })
}

// endpointsDefinedIn is the set of endpoint objects of the last good
// pass, each with the file that defined it.
func (lg *lastGood) endpointsDefinedIn() map[endpointsKey]map[string]bool {
	out := map[endpointsKey]map[string]bool{}
	add := func(k endpointsKey, path string) {
		if out[k] == nil {
			out[k] = map[string]bool{}
		}
		out[k][path] = true
	}
	for _, ep := range lg.endpoints.endpoints {
		add(endpointsKey{namespace: namespaceOrDefault(ep.Meta.Namespace), name: ep.Meta.Name}, ep.Source.Pos.Path)
	}
	for i := range lg.endpoints.slices {
		sl := &lg.endpoints.slices[i]
		add(endpointsKey{slice: true, namespace: namespaceOrDefault(sl.Meta.Namespace), name: sl.Meta.Name}, sl.Source.Pos.Path)
	}
	return out
}

// isStale reports whether path is a file whose last good content serves
// in place of a current content that fails to decode or to be read.
func (lg *lastGood) isStale(path string) bool { return lg != nil && lg.stale[path] }

// servedPath is the file the last good pass took route namespace/name
// from; "" when it had none (or lg is nil).
func (lg *lastGood) servedPath(namespace, name string) string {
	defs := lg.defined(namespace, name)
	if len(defs) == 0 || lg.rejected[RouteKey{Namespace: namespace, Name: name}] {
		return ""
	}
	return defs[0].Source.Pos.Path // the definition that serves comes first
}

// defined is every definition of route namespace/name the last
// good pass had, the one that served first (nil when lg is).
func (lg *lastGood) defined(namespace, name string) []*Route {
	if lg == nil {
		return nil
	}
	cmp := func(r *Route, k RouteKey) int {
		if c := strings.Compare(r.Meta.Namespace, k.Namespace); c != 0 {
			return c
		}
		return strings.Compare(r.Meta.Name, k.Name)
	}
	k := RouteKey{Namespace: namespace, Name: name}
	i, _ := slices.BinarySearchFunc(lg.byKey, k, cmp)
	j := i
	for j < len(lg.byKey) && cmp(lg.byKey[j], k) == 0 {
		j++
	}
	return lg.byKey[i:j]
}

// servedRoute is a route version: the object, its memo, and, for a
// rejected one, the diagnostics why.
type servedRoute struct {
	key   RouteKey
	route *Route
	memo  *routeMemo
	diags Diagnostics
}

// endpointsKey names an endpoints object; Endpoints and EndpointSlices
// with the same name are different objects.
type endpointsKey struct {
	slice           bool
	namespace, name string
}

// endpointsView is the endpoint objects of a pass with their memos, and
// those that served an earlier version.
type endpointsView struct {
	endpoints []*Endpoints
	epMemos   []*groupsMemo
	slices    []EndpointSlice
	slMemos   []*groupsMemo
	stale     []staleEndpoints
}

// staleEndpoints is an endpoints object whose current version has errors,
// and the earlier version that serves.
type staleEndpoints struct {
	key  endpointsKey
	memo *groupsMemo
	path string // the file of the current version
}

// admitPass is what one admission pass saw, for deciding substitutions and
// for the next last good.
type admitPass struct {
	byKey         []*Route
	memoByKey     []*routeMemo
	rejected      []servedRoute
	settings      Settings
	endpoints     endpointsView
	fromConfig    bool
	secrets       map[RouteKey]secretPair
	staleSecrets  []string
	secretStale   []RouteKey
	secretSources []string
}

// find returns the last good version of route key.
func (lg *lastGood) find(key RouteKey) (servedRoute, bool) {
	if lg.rejected[key] {
		return servedRoute{}, false
	}
	i, ok := slices.BinarySearchFunc(lg.byKey, key, func(r *Route, k RouteKey) int {
		return RouteKey{Namespace: r.Meta.Namespace, Name: r.Meta.Name}.Compare(k)
	})
	if !ok {
		return servedRoute{}, false
	}
	// BinarySearch finds some definition; the first one is what served.
	for i > 0 && lg.byKey[i-1].Meta.Namespace == key.Namespace && lg.byKey[i-1].Meta.Name == key.Name {
		i--
	}
	r := lg.byKey[i]
	if !selects(&lg.settings, r) {
		return servedRoute{}, false // another router's route then
	}
	g := servedRoute{key: key, route: r}
	if lg.memoByKey != nil {
		g.memo = lg.memoByKey[i]
	}
	return g, true
}

// servedClaim reports whether route a.Key was served by the last good
// (committed) admission with a version that claims what a claims: the
// same host, path and side of the SNI split. Its creationTimestamp may
// have changed (a re-export adds one). Decided from the committed state,
// not from admission's last call: a pass over a route's rejected version
// (before its last good version stands in) or a generation not applied
// must not hand its claim to a rival.
func (lg *lastGood) servedClaim(a *AdmittedRoute) bool {
	if lg == nil {
		return false
	}
	g, ok := lg.find(a.Key)
	if !ok || g.memo == nil || g.memo.admitted == nil || g.memo.bad {
		return false
	}
	// A plain route that turns TLS never served TLS on its host: it must
	// not take the host from a passthrough route that did.
	was := g.memo.admitted
	return claimHostOf(was) == claimHostOf(a) && claimPath(was.Path) == claimPath(a.Path) &&
		(was.Termination == TerminationPassthrough) == (a.Termination == TerminationPassthrough) &&
		(was.Termination == TerminationNone) == (a.Termination == TerminationNone)
}

// selects reports whether settings select r for this router.
func selects(s *Settings, r *Route) bool {
	if len(s.Namespaces) > 0 && !slices.Contains(s.Namespaces, r.Meta.Namespace) {
		return false
	}
	return s.RouteSelector.Matches(r.Meta.Labels)
}

// substitute is a rejected route and the last good version that replaces
// it.
type substitute struct {
	bad  servedRoute
	good servedRoute
}

// substitutes lists the rejected routes of pass that have a last good
// version other than the one rejected.
func (lg *lastGood) substitutes(pass *admitPass) []substitute {
	var out []substitute
	for _, s := range pass.rejected {
		g, ok := lg.find(s.key)
		if !ok || g.memo == s.memo || (g.memo == nil && g.route == s.route) {
			continue // never good, or the good version itself is now rejected
		}
		out = append(out, substitute{bad: s, good: g})
	}
	return out
}

// withSubstitutes returns objs and m with each substituted route replaced by
// its last good version. The inputs are shared with the Loader and are not
// modified.
func withSubstitutes(objs Objects, m *memos, subs []substitute) (Objects, *memos) {
	byRoute := make(map[*Route]servedRoute, len(subs))
	for _, s := range subs {
		byRoute[s.bad.route] = s.good
	}
	routes := slices.Clone(objs.Routes)
	var m2 *memos
	if m != nil {
		cp := *m
		cp.routes = slices.Clone(m.routes)
		m2 = &cp
	}
	for i := range objs.Routes {
		// Admission may have copied a route to default its namespace, so
		// match by position as well as by address.
		g, ok := byRoute[objs.Routes[i]]
		if !ok {
			for _, s := range subs {
				if s.bad.route.Source.Pos == objs.Routes[i].Source.Pos && s.bad.key.Name == objs.Routes[i].Meta.Name {
					g, ok = s.good, true
					break
				}
			}
		}
		if ok {
			routes[i] = g.route
			if m2 != nil {
				m2.routes[i] = g.memo
			}
		}
	}
	objs.Routes = routes
	return objs, m2
}

// staleDiagnostics reports, for each substituted route, the errors of its
// current version and that its last good version keeps serving; the
// route's status becomes stale when that version was admitted.
func staleDiagnostics(d *Desired, subs []substitute) Diagnostics {
	var ds Diagnostics
	if len(subs) > 0 {
		// Admission may hand the same statuses to several Desireds.
		d.Statuses = slices.Clone(d.Statuses)
	}
	for _, s := range subs {
		ds = append(ds, s.bad.diags...)
		i := slices.IndexFunc(d.Statuses, func(st *RouteStatus) bool { return st.Key == s.bad.key })
		if i < 0 || d.Statuses[i].State == RouteRejected {
			continue
		}
		marked := *d.Statuses[i] // shared: marked as a copy
		st := &marked
		d.Statuses[i] = st
		st.State = RouteStale
		st.Source = s.bad.route.Source.Pos
		st.Reasons = nil
		for _, diag := range s.bad.diags {
			if diag.Severity == SeverityError {
				st.Reasons = append(st.Reasons, fmt.Sprintf("%s: %s", diag.Pos, fieldMessage(diag)))
			}
		}
		ds = append(ds, Diagnostic{Pos: s.bad.route.Source.Pos, Severity: SeverityWarning,
			Message: fmt.Sprintf("route %s: this version is rejected; its last good version (from %s) keeps serving until it is fixed or removed",
				s.bad.key, s.good.route.Source.Pos)})
	}
	return ds
}

func fieldMessage(d Diagnostic) string {
	if d.Field != "" {
		return d.Field + ": " + d.Message
	}
	return d.Message
}

// next is the last good to remember if the pass that produced d is
// committed: every route it admitted as it now is (a stale one as its
// last good version, which the pass admitted in its place).
func (p *admitPass) next() *lastGood {
	lg := &lastGood{byKey: p.byKey, memoByKey: p.memoByKey, settings: p.settings, endpoints: p.endpoints, fromConfig: p.fromConfig, secrets: p.secrets, staleSecrets: p.staleSecrets, secretStale: p.secretStale, secretSources: p.secretSources}
	if len(p.rejected) > 0 {
		lg.rejected = make(map[RouteKey]bool, len(p.rejected))
		for _, r := range p.rejected {
			lg.rejected[r.key] = true
		}
	}
	return lg
}

// keeping returns lg with the routes of keys as old had them: their
// definitions, memos, rejection and Secret material (Loader.CommitHeld).
func (lg *lastGood) keeping(old *lastGood, keys []RouteKey) *lastGood {
	if len(keys) == 0 {
		return lg
	}
	keep := make(map[RouteKey]bool, len(keys))
	for _, k := range keys {
		keep[k] = true
	}
	out := *lg
	keyOf := func(r *Route) RouteKey { return RouteKey{Namespace: r.Meta.Namespace, Name: r.Meta.Name} }
	out.byKey = make([]*Route, 0, len(lg.byKey)+len(keys))
	out.memoByKey = make([]*routeMemo, 0, len(lg.byKey)+len(keys))
	// Both in key order: merged, keep's routes from old, the rest from lg.
	memo := func(memos []*routeMemo, i int) *routeMemo {
		if memos == nil {
			return nil
		}
		return memos[i]
	}
	i, j := 0, 0
	for i < len(lg.byKey) || j < len(old.byKey) {
		switch {
		case j < len(old.byKey) && !keep[keyOf(old.byKey[j])]:
			j++
		case i < len(lg.byKey) && keep[keyOf(lg.byKey[i])]:
			i++
		case j == len(old.byKey) || i < len(lg.byKey) && keyOf(lg.byKey[i]).Compare(keyOf(old.byKey[j])) < 0:
			out.byKey, out.memoByKey = append(out.byKey, lg.byKey[i]), append(out.memoByKey, memo(lg.memoByKey, i))
			i++
		default:
			out.byKey, out.memoByKey = append(out.byKey, old.byKey[j]), append(out.memoByKey, memo(old.memoByKey, j))
			j++
		}
	}
	out.rejected = maps.Clone(lg.rejected)
	out.secrets = maps.Clone(lg.secrets)
	for k := range keep {
		delete(out.rejected, k)
		delete(out.secrets, k)
		if old.rejected[k] {
			if out.rejected == nil {
				out.rejected = map[RouteKey]bool{}
			}
			out.rejected[k] = true
		}
		if pair, ok := old.secrets[k]; ok {
			if out.secrets == nil {
				out.secrets = map[RouteKey]secretPair{}
			}
			out.secrets[k] = pair
		}
	}
	return &out
}

// routerConfigVanished is the warning for a generation without a
// RouterConfig after one with: the last settings stay, so ports and the
// bind address do not move because a file disappeared.
func routerConfigVanished() Diagnostic {
	return Diagnostic{Severity: SeverityWarning, Field: "kind",
		Message: "no RouterConfig in this generation, but the last good one had one: its settings stay in force " +
			"(to return to the defaults, publish a RouterConfig with an empty spec)"}
}

// lastGoodEndpoints returns the last good version of the endpoints object
// with key, when its current version g has errors and lg has an earlier
// version without.
func (lg *lastGood) lastGoodEndpoints(key endpointsKey, g *groupsMemo) (*groupsMemo, bool) {
	if lg == nil || !g.diags.HasErrors(false) {
		return nil, false
	}
	v := &lg.endpoints
	for _, st := range v.stale {
		if st.key == key {
			return st.memo, st.memo != g
		}
	}
	var found *groupsMemo
	if key.slice {
		for i := range v.slices {
			if sl := &v.slices[i]; sl.Meta.Name == key.name && namespaceOrDefault(sl.Meta.Namespace) == key.namespace && i < len(v.slMemos) {
				found = v.slMemos[i]
				break
			}
		}
	} else {
		for i := range v.endpoints {
			if ep := v.endpoints[i]; ep.Meta.Name == key.name && namespaceOrDefault(ep.Meta.Namespace) == key.namespace && i < len(v.epMemos) {
				found = v.epMemos[i]
				break
			}
		}
	}
	if found == nil || found == g || !found.done || found.diags.HasErrors(false) {
		return nil, false
	}
	return found, true
}

// RouterConfigInForce reports whether the tree holds exactly one
// RouterConfig and its settings are the ones in force: not kept from an
// earlier one because it is invalid, refused by HAProxy, or one of two.
func (r Result) RouterConfigInForce() bool {
	if len(r.Objects.RouterConfigs) != 1 {
		return false
	}
	for _, d := range r.Diagnostics {
		if d.Message == routerConfigKept {
			return false
		}
	}
	return true
}

// StaleCount is how many objects serve their last good version.
func (r Result) StaleCount() int {
	n := 0
	for _, st := range r.Desired.Statuses {
		if st.State == RouteStale {
			n++
		}
	}
	if r.next != nil {
		n += len(r.next.endpoints.stale)
	}
	for _, k := range r.staleFiles {
		n += k
	}
	if r.routerConfigStale {
		n++
	}
	return n
}

// StaleOthers describes the stale objects that are not routes (routes
// have their own status): each Endpoints or EndpointSlice serving its
// last good version, and each broken file whose last good endpoints or
// secrets serve, with the file of the current version.
func (r Result) StaleOthers() []string {
	var out []string
	if r.next != nil {
		for _, e := range r.next.endpoints.stale {
			kind := "Endpoints"
			if e.key.slice {
				kind = "EndpointSlice"
			}
			out = append(out, fmt.Sprintf("%s %s/%s: serving its last good version; the current one, in %s, has errors", kind, e.key.namespace, e.key.name, e.path))
		}
	}
	for path, n := range r.staleFiles {
		out = append(out, fmt.Sprintf("%s: its last good content serves %d Endpoints, EndpointSlice or Secret object(s); the file has errors", path, n))
	}
	if r.routerConfigStale {
		out = append(out, fmt.Sprintf("RouterConfig %s: its last good settings stay in force; the current one cannot be used", r.Objects.RouterConfigs[0].Source.Pos))
	}
	slices.Sort(out)
	return out
}

// StalePaths is the set of files holding the current, rejected version of
// a stale object.
func (r Result) StalePaths() map[string]bool {
	out := map[string]bool{}
	if r.Desired != nil {
		for _, st := range r.Desired.Statuses {
			if st.State == RouteStale && (r.next == nil || !slices.Contains(r.next.secretStale, st.Key)) {
				out[st.Source.Path] = true
			}
		}
	}
	if r.next != nil {
		for _, e := range r.next.endpoints.stale {
			out[e.path] = true
		}
	}
	for path := range r.staleFiles {
		out[path] = true
	}
	if r.next != nil {
		for _, path := range r.next.staleSecrets {
			out[path] = true
		}
	}
	return out
}

// SecretSources are the files whose last good content holds the version
// in force of a Secret now stale in another file (moved there and broken
// in one change): that content must stay saved for a restart to serve it.
func (r Result) SecretSources() []string {
	if r.next == nil {
		return nil
	}
	return r.next.secretSources
}

// Failed reports whether the current content of path failed to decode (its
// last good objects, if any, stay in force).
func (l *Loader) Failed(path string) bool {
	st := l.files[path]
	return st != nil && st.failed
}
