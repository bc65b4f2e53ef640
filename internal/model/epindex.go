package model

import "sync/atomic"

// epIndexCache keeps the endpoint index of the last admission with what it
// was built from, so the next admission changes only the services whose
// objects changed. Built afresh, the index cost 1.5–2 ms of every endpoint
// change at 10k services: a map insert per object.
//
// It serves only while no object in force has a diagnostic: then no last
// good version stands in for an object (lastGood.lastGoodEndpoints looks
// only at objects with errors), and there is nothing to report, so the
// index is all there is. Otherwise, or when many objects changed, the
// index is built afresh (buildEndpointIndex) and kept for the next time
// if it qualifies.
type epIndexCache struct {
	// ep and sl are the memos of the Endpoints and EndpointSlices the
	// index was built from, by position.
	ep, sl []*groupsMemo
	idx    endpointIndex
	// delta is how the last call's index differs from the one before.
	delta indexDelta
}

// indexDelta tells a route's memo whether the services it resolved
// against can have changed since (routeMemo.resolve): each index has a
// generation, and one updated from the last names the services it
// changed. At 10k routes, looking every route's services up again to
// find out was 3.5 ms of every change.
type indexDelta struct {
	gen uint64
	// updated is set when this index is the last one with changed's
	// services changed, and nothing else.
	updated bool
	changed []serviceKey
}

// indexGens numbers the indexes of every cache.
var indexGens atomic.Uint64

// maxNamedChanges is how many changed services a delta names; past it,
// every route looks its services up.
const maxNamedChanges = 8

// unchangedFor reports whether the services of namespace ns named in
// services resolve against the same groups in this index as they did in
// the index of generation gen.
func (d *indexDelta) unchangedFor(gen uint64, ns string, services []ServiceBackend) bool {
	if gen == d.gen {
		return true
	}
	if gen+1 != d.gen || !d.updated {
		return false
	}
	for _, k := range d.changed {
		if k.namespace != ns {
			continue
		}
		for i := range services {
			if services[i].Name == k.name {
				return false
			}
		}
	}
	return true
}

// maxIncremental is the share of objects above which a change rebuilds
// the index rather than update it (1 in 8).
const maxIncremental = 8

// index returns the endpoint index of objs, with memos m (parallel to
// objs, as the Loader hands them), and what buildEndpointIndex returns
// besides. The index is the cache's: it must not be modified, and it
// stays valid until the next call.
func (c *epIndexCache) index(objs *Objects, m *memos, lg *lastGood) (endpointIndex, Diagnostics, []staleEndpoints) {
	// Unique across caches, so that a memo never mistakes a cache made
	// afresh (or another Loader's) for the one it resolved against.
	gen := indexGens.Add(1)
	if lg != nil && lg.stale != nil {
		// Which copies are shadowed depends on which files are broken,
		// which the cache does not record (see buildEndpointIndex).
		*c = epIndexCache{}
	}
	if changed, ok := c.update(objs, m); ok {
		// Named changes hold only against this cache's last index,
		// which must be the generation just before (another cache's may
		// have come in between).
		follows := c.delta.gen != 0 && gen == c.delta.gen+1
		c.delta = indexDelta{gen: gen, updated: follows && len(changed) <= maxNamedChanges, changed: changed}
		return c.idx, nil, nil
	}
	// The last index's storage is reused: no one holds on to the map
	// (memos keep the groups, not the index).
	reuse := c.idx
	clear(reuse)
	idx, ds, stale := buildEndpointIndex(objs, m, reuse, lg)
	*c = epIndexCache{delta: indexDelta{gen: gen}}
	if len(ds) == 0 && len(stale) == 0 {
		c.ep, c.sl, c.idx = m.endpoints, m.slices, idx
	}
	return idx, ds, stale
}

// update brings the cached index to the objects of m, when that is a
// change of a few objects none of which has a diagnostic; it reports
// whether it did, and the services it changed. A file read again gives
// all its objects new memos, so objects are compared by what the index
// takes from them: the service and the very groups.
func (c *epIndexCache) update(objs *Objects, m *memos) ([]serviceKey, bool) {
	if c.idx == nil || m == nil {
		return nil, false
	}
	limit := (len(c.ep) + len(c.sl)) / maxIncremental
	affected := map[serviceKey]bool{}
	// fill brings the memo of object i up to date and reports whether it
	// is free of diagnostics; same, whether it gives the index what old
	// gave (false, with ok unset, when it has a diagnostic).
	fill := func(cur *groupsMemo, i int, slice bool) bool {
		if !cur.done {
			if slice {
				*cur = sliceGroups(&objs.EndpointSlices[i])
			} else {
				*cur = endpointsGroups(objs.Endpoints[i])
			}
		}
		return len(cur.diags) == 0
	}
	ok := true
	same := func(old, cur *groupsMemo, i int, slice bool) bool {
		if cur == old {
			return true
		}
		if !fill(cur, i, slice) {
			ok = false
			return false
		}
		return cur.ok == old.ok && cur.key == old.key && idOf(cur.groups) == idOf(old.groups)
	}
	touch := func(g *groupsMemo) {
		if g.ok {
			affected[g.key] = true
		}
	}
	look := func(olds, curs []*groupsMemo, slice bool) bool {
		if len(olds) == len(curs) {
			for i, cur := range curs {
				if !same(olds[i], cur, i, slice) {
					if !ok {
						return false
					}
					touch(olds[i])
					touch(cur)
					if len(affected) > limit {
						return false
					}
				}
			}
			return true
		}
		// Objects added or removed (a route's service with it): those
		// between the objects both lists start with and those they end
		// with are the change.
		n := min(len(olds), len(curs))
		head := 0
		for head < n && same(olds[head], curs[head], head, slice) {
			head++
		}
		tail := 0
		for tail < n-head && same(olds[len(olds)-1-tail], curs[len(curs)-1-tail], len(curs)-1-tail, slice) {
			tail++
		}
		if !ok || len(olds)+len(curs)-2*(head+tail) > limit {
			return false
		}
		for _, g := range olds[head : len(olds)-tail] {
			touch(g)
		}
		for i := head; i < len(curs)-tail; i++ {
			if !fill(curs[i], i, slice) {
				return false
			}
			touch(curs[i])
		}
		return true
	}
	if !look(c.ep, m.endpoints, false) || !look(c.sl, m.slices, true) {
		return nil, false
	}
	c.ep, c.sl = m.endpoints, m.slices
	// A service's objects are found by a scan rather than kept in an
	// index of their own (half a megabyte at 10k services): a few
	// services change at a time, and a scan is 20k comparisons.
	changed := make([]serviceKey, 0, len(affected))
	for key := range affected {
		changed = append(changed, key)
		// As buildEndpointIndex: Endpoints, then EndpointSlices, in
		// order; the first object's groups as they are (capacity-limited,
		// so appending copies), the others appended.
		var groups []endpointGroup
		found, endpoints := false, 0
		for k, memos := range [2][]*groupsMemo{c.ep, c.sl} {
			for _, g := range memos {
				if !g.ok || g.key != key {
					continue
				}
				if k == 0 {
					// An Endpoints is named for its service: a second one
					// is a duplicate, which buildEndpointIndex reports.
					if endpoints++; endpoints > 1 {
						return nil, false
					}
				}
				if !found {
					groups, found = g.groups, true
				} else {
					groups = append(groups, g.groups...)
				}
			}
		}
		if found {
			c.idx[key] = groups
		} else {
			delete(c.idx, key)
		}
	}
	return changed, true
}
