package model

import (
	"reflect"
	"slices"
	"time"
)

// Admission memos. At 10k routes most snapshots change one file, yet
// admitting everything again (validating hosts and PEM, parsing endpoint
// addresses, naming every server) was most of the per-change cost. The
// Loader keeps, next to the decoded objects of each file, what admission
// computed from them, and reuses it while the file is unchanged and the
// inputs the result depends on are the same. A memo hit returns exactly
// what recomputing would: each memo records the inputs it was made from
// and is ignored when they differ.
//
// Memos live in the Loader's per-file state, never in a package variable:
// admit without memos (as model's tests call it) computes everything.

// fileMemo holds admission results for one file's objects, parallel to
// its Objects. It is replaced whenever the file's objects are.
type fileMemo struct {
	routes    []routeMemo
	endpoints []groupsMemo // parallel to Objects.Endpoints
	slices    []groupsMemo // parallel to Objects.EndpointSlices
}

func newFileMemo(o *Objects) *fileMemo {
	return &fileMemo{
		routes:    make([]routeMemo, len(o.Routes)),
		endpoints: make([]groupsMemo, len(o.Endpoints)),
		slices:    make([]groupsMemo, len(o.EndpointSlices)),
	}
}

// carryOver gives the Endpoints and EndpointSlices of a file read again
// (objs) the memos of their unchanged versions in the file's last good
// objects (old, with memos oldMemo). A file of 50 services is read again
// whenever one of them changes; without this, the groups of the other
// 49 changed identity, so every route of those services resolved again
// and got a new pointer in Desired at every change. An object is
// unchanged when its metadata and content are equal; memos holding
// diagnostics stay behind, since those name positions in the file, which
// may have moved. The memos own their strings (ownKey, validPorts), so
// carrying one keeps no old version of the file alive. Route memos are
// not carried: they hold the route's strings, pieces of the old text, and
// carrying them measured no faster.
func (f *fileMemo) carryOver(old *Objects, oldMemo *fileMemo, objs *Objects) {
	if oldMemo == nil {
		return
	}
	carryGroups(f.endpoints, oldMemo.endpoints, old.Endpoints, objs.Endpoints,
		func(e **Endpoints) (ObjectMeta, any) { return (*e).Meta, (*e).Subsets })
	carryGroups(f.slices, oldMemo.slices, old.EndpointSlices, objs.EndpointSlices,
		func(s *EndpointSlice) (ObjectMeta, any) { return s.Meta, [3]any{s.AddressType, s.Endpoints, s.Ports} })
}

// carryGroups is carryOver for Endpoints or EndpointSlices: dst[i], the
// memo of news[i], takes the memo of the old object with the same
// namespace and name when their metadata and content (what an object
// says, its position aside) are equal. The groups slice comes along, so
// routes of an unchanged service still resolve from their memos (see
// groupsID).
func carryGroups[T any](dst, oldMemos []groupsMemo, olds, news []T, parts func(*T) (ObjectMeta, any)) {
	if len(olds) == 0 || len(news) == 0 {
		return
	}
	type key struct{ ns, name string }
	at := make(map[key]int, len(olds))
	for j := range olds {
		meta, _ := parts(&olds[j])
		at[key{meta.Namespace, meta.Name}] = j
	}
	for i := range news {
		meta, content := parts(&news[i])
		j, ok := at[key{meta.Namespace, meta.Name}]
		if !ok || !oldMemos[j].done || len(oldMemos[j].diags) > 0 {
			continue
		}
		if oldMeta, oldContent := parts(&olds[j]); reflect.DeepEqual(oldMeta, meta) && reflect.DeepEqual(oldContent, content) {
			dst[i] = oldMemos[j]
		}
	}
}

// memos points at the memo of each object handed to admission, parallel
// to the Objects the Loader assembled.
type memos struct {
	routes    []*routeMemo
	endpoints []*groupsMemo
	slices    []*groupsMemo
}

// validationKey is every setting validateRoute reads.
type validationKey struct {
	allowWildcardRoutes bool
	healthCheckInterval time.Duration
	domain              string
	// The RouterConfig's header actions share a message's buffer with
	// a route's own (routerSetBytes).
	requestSetBytes, responseSetBytes int
}

func validationKeyOf(s *Settings) validationKey {
	return validationKey{allowWildcardRoutes: s.AllowWildcardRoutes, healthCheckInterval: s.HealthCheckInterval, domain: s.Domain,
		requestSetBytes: routerSetBytes(s.RequestHeaderActions), responseSetBytes: routerSetBytes(s.ResponseHeaderActions)}
}

// routeMemo is what admission computed for one route object.
type routeMemo struct {
	// validated is set once validateRoute ran under the settings in under.
	validated bool
	under     validationKey
	// admitted is the route as validated: services named and weighted.
	// Once admission has produced out from it, it is out itself, which
	// differs only in the servers that resolve fills in (and overwrites
	// whenever it resolves again); keeping both was 4.5 MB at 10k routes.
	admitted *AdmittedRoute
	diags    Diagnostics // capacity-limited, so appending copies
	bad      bool
	// refused is HAProxy's message when it refused this version of the
	// route (Loader.Refuse); it rejects the route whatever validation said.
	refused string

	// resolved is set once the services were resolved against the
	// endpoint groups named in from (one per service, in order).
	resolved bool
	from     []groupsID
	services []ServiceBackend // with servers; shared, read-only
	resDiags Diagnostics
	// resolvedAt is the generation of the endpoint index it last resolved
	// against (or found unchanged in); 0 when that index had none.
	resolvedAt uint64

	// out is the route admission last produced from this memo, shared
	// with the Desired that holds it; nil when validate or resolve
	// recomputed since.
	out *AdmittedRoute
	// status is the route's status admission last gave, shared with the
	// Desired that holds it; kept while the next is the same. It was
	// made from statusFrom and statusDiags: while a candidate has those
	// very values (read-only, so unchanged), it has the same status.
	status      *RouteStatus
	statusFrom  *AdmittedRoute
	statusDiags Diagnostics
}

// groupsID identifies the endpoint groups a service resolved against.
// Groups built from an unchanged Endpoints or EndpointSlice are the same
// memoized slice from load to load; groups gathered from several objects
// are a fresh slice every time, so they never match. A memo referring to
// a slice keeps it alive, so its address cannot be reused by another.
type groupsID struct {
	first *endpointGroup
	n     int
}

func idOf(groups []endpointGroup) groupsID {
	if len(groups) == 0 {
		return groupsID{}
	}
	return groupsID{first: &groups[0], n: len(groups)}
}

// groupsMemo is what one Endpoints or EndpointSlice contributes to the
// endpoint index. It depends on the object alone.
type groupsMemo struct {
	done   bool
	key    serviceKey
	ok     bool            // the object belongs to a service
	groups []endpointGroup // capacity-limited, so appending copies
	diags  Diagnostics
}

// validate returns the route validated under settings, from the memo when
// it was made under the same settings (key, validationKeyOf(settings));
// the check is made in dst. The route returned is the memo's: read-only
// (see candidate.writable).
func (m *routeMemo) validate(r *Route, settings *Settings, key validationKey, dst *routeCheck) (*AdmittedRoute, *routeCheck) {
	if !m.validated || m.under != key {
		ar, c := validateRoute(r, settings)
		*m = routeMemo{validated: true, under: key, admitted: &ar, diags: slices.Clip(c.diags), bad: c.bad}
		// (out went with the rest: the route may differ.)
	}
	*dst = routeCheck{src: r.Source, diags: m.diags, bad: m.bad}
	if m.refused != "" {
		dst.errorf("metadata.name", "HAProxy refused this route: %s", m.refused)
	}
	return m.admitted, dst
}

// resolve fills in the servers of a valid candidate, from the memo when
// every service resolves against the same endpoint groups as when it was
// made. Its validation came from the same memo, so the rest of the
// inputs (namespace, services, weights, targetPort) are the same too.
//
// delta, when the index has a generation, spares the lookups: services
// the index did not change since the memo's last resolution resolve as
// they did.
func (m *routeMemo) resolve(c *candidate, idx endpointIndex, delta *indexDelta) {
	ns := c.admitted.Key.Namespace
	hit := m.resolved && len(m.from) == len(c.admitted.Services)
	if hit && delta != nil && m.resolvedAt != 0 && delta.unchangedFor(m.resolvedAt, ns, c.admitted.Services) {
		// The same groups as when from was taken.
	} else {
		for i := 0; hit && i < len(m.from); i++ {
			hit = idOf(idx[serviceKey{ns, c.admitted.Services[i].Name}]) == m.from[i]
		}
	}
	m.resolvedAt = 0
	if delta != nil {
		m.resolvedAt = delta.gen
	}
	if hit {
		switch {
		case m.out != nil && !c.owned:
			c.admitted = m.out // the very route this memo produced last
		default:
			c.writable().Services = m.services
		}
		for _, d := range m.resDiags {
			c.check.diags = append(c.check.diags, d)
			c.check.bad = c.check.bad || d.Severity == SeverityError
		}
		return
	}
	from := make([]groupsID, len(c.admitted.Services))
	for i, s := range c.admitted.Services {
		from[i] = idOf(idx[serviceKey{ns, s.Name}])
	}
	n := len(c.check.diags)
	c.writable().Services = slices.Clone(c.admitted.Services)
	resolveServices(c, idx)
	m.resolved, m.from, m.services, m.out = true, from, c.admitted.Services, nil
	m.resDiags = slices.Clone(c.check.diags[n:])
}
