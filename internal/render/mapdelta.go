package render

import (
	"slices"

	"github.com/haroute/haroute/internal/model"
)

// maxMapDelta is how many routes may change for the maps to be edited
// from the last render's rather than built afresh.
const maxMapDelta = 16

// mapsEdited returns the last render's maps (t's) with the entries of the
// routes that changed since taken out and put in, and their file data;
// ok is false when they must be built afresh instead.
//
// Built afresh, the maps cost every route added or deleted a sort of all
// entries and a rewrite of every map file: 2 ms of CPU at 10k routes (of
// the daemon's 11). An edit is exact only where no entry's key is
// contested, so it is refused (and the maps built afresh) when a route
// that changed has a weak entry (one that gives way to another route's),
// when an entry to take out is not the one the map holds or its key had a
// duplicate in the last full build, or when an entry to put in finds its
// key taken: duplicates are resolved by route order, which only a full
// build sees.
func mapsEdited(t *cacheTable, outs []*routeOut, routes []*model.AdmittedRoute) (maps []Map, data [][]byte, ok bool) {
	// Both renders' routes are walked together by key.
	if t == nil || !t.rendered || t.maps == nil || t.contested == nil || !t.keyOrdered || !model.InKeyOrder(routes) {
		return nil, nil, false
	}
	var removes, adds []mapAdd
	changed := 0
	for old, cur := range model.ChangedByKey(t.entries, outs, routeOutKey) {
		same := old != nil && cur != nil && slices.Equal(old.maps, cur.maps) // re-rendered, same entries
		if old != nil && !same {
			removes = append(removes, old.maps...)
		}
		if cur != nil && !same {
			adds = append(adds, cur.maps...)
		}
		if changed++; changed > maxMapDelta {
			return nil, nil, false
		}
	}
	// HTTPSOnlyValue entries depend on other routes' entries
	// (shadowRedirectsOnly): a map that has or gets some is built afresh.
	for _, e := range slices.Concat(removes, adds) {
		if e.Value == HTTPSOnlyValue || t.dependent[e.name] {
			return nil, nil, false
		}
	}
	maps = slices.Clone(t.maps)
	data = slices.Clone(t.mapData)
	edited := make([]bool, len(maps))
	at := func(name string) int {
		for k := range maps {
			if maps[k].Name == name {
				return k
			}
		}
		return -1
	}
	for _, e := range removes {
		k := at(e.name)
		if e.weak || k < 0 || t.contested[e.name+" "+e.Key] {
			return nil, nil, false
		}
		n, found := maps[k].find(e.Key)
		if !found || maps[k].Entries[n].Value != e.Value {
			return nil, nil, false
		}
		if !edited[k] {
			maps[k].Entries, edited[k] = slices.Clone(maps[k].Entries), true
		}
		maps[k].Entries = slices.Delete(maps[k].Entries, n, n+1)
	}
	for _, e := range adds {
		k := at(e.name)
		if e.weak || k < 0 || t.contested[e.name+" "+e.Key] {
			return nil, nil, false
		}
		n, found := maps[k].find(e.Key)
		if found {
			return nil, nil, false
		}
		if !edited[k] {
			maps[k].Entries, edited[k] = slices.Clone(maps[k].Entries), true
		}
		maps[k].Entries = slices.Insert(maps[k].Entries, n, e.MapEntry)
	}
	for _, h := range hostMaps {
		if from, host := at(h.from), at(h.host); from >= 0 && host >= 0 && edited[from] {
			maps[host].Entries, edited[host] = hostEntries(maps[from].Entries), true
		}
	}
	for k := range maps {
		if edited[k] {
			data[k] = mapFileData(maps[k])
		}
	}
	return maps, data, true
}

// routeOutKey is the key of the route a cached output was rendered from,
// for model.ChangedByKey.
func routeOutKey(o *routeOut) model.RouteKey { return o.route.Key }

// find returns where key is in m's entries, or where it would go.
func (m *Map) find(key string) (int, bool) {
	host, path := splitKey(key)
	return slices.BinarySearchFunc(m.Entries, key, func(e MapEntry, _ string) int {
		h, p := splitKey(e.Key)
		return compareKeys(h, p, host, path)
	})
}
