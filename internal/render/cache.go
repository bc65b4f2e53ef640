package render

import (
	"bytes"
	"reflect"
	"slices"

	"github.com/haroute/haroute/internal/model"
)

// Cache lets Render reuse what it rendered for routes that did not change
// since an earlier call. At 10k routes a change usually touches one route,
// yet rendering every backend again was most of the per-change cost.
//
// A route's output is reused only when the route is equal, field by
// field, to the one it was rendered from, and the rest of the Input it
// depends on (bundle and run dirs, router settings, whether a default
// destination CA is set) is equal too: a hit returns exactly what
// rendering would. Outputs are kept for the two most recently used
// combinations of the latter, so the daemon's live and candidate
// directories do not evict each other.
//
// The zero value is ready to use. A Cache is not safe for concurrent use.
// Desired values rendered with a Cache, and the bundles returned, share
// memory with later renders and must not be modified.
type Cache struct {
	tables []*cacheTable // most recently used first
}

// cacheTables is how many Input environments a Cache remembers.
const cacheTables = 2

// cacheTable holds the outputs rendered for one environment.
type cacheTable struct {
	dir, runDir   string
	defaultDestCA bool
	router        model.Settings

	// rendered is set once a Render with this table succeeded; entries
	// are then its routes' outputs, in its order.
	rendered bool
	entries  []*routeOut
	maps     []Map
	mapData  [][]byte // parallel to maps
	// contested is "<map> <key>" for each key that more than one entry
	// claimed in the last full build of the maps (mapsEdited keeps off
	// them); keyOrdered, that the last render's routes were in key order.
	contested map[string]bool
	// dependent are the maps that held HTTPSOnlyValue entries in the last
	// full build: which of them stand depends on other routes' entries
	// (shadowRedirectsOnly), so mapsEdited, which edits route by route,
	// keeps off them.
	dependent  map[string]bool
	keyOrdered bool
	skeleton   []byte   // of the last successful render: a head, then parts
	parts      [][]byte // the parts of skeleton after its head: the slots, then the other routes
	// spareParts is a list for the next render's parts (buildConfig).
	spareParts [][]byte
	spares     map[model.BackendName]renderedSpare
	// shift is where lookup last found a route, relative to where it was
	// asked for.
	shift int
	// headFull and headSkel are the sizes of the last head (everything
	// before the route parts), to size the next one's buffers.
	headFull, headSkel int
}

// table returns the table for in's environment, making it the most
// recently used.
func (c *Cache) table(in Input) *cacheTable {
	for i, t := range c.tables {
		if t.matches(in) {
			copy(c.tables[1:i+1], c.tables[:i])
			c.tables[0] = t
			return t
		}
	}
	t := &cacheTable{dir: in.Dir, runDir: in.RunDir, defaultDestCA: len(in.DefaultDestinationCA) > 0, router: in.Desired.Router}
	c.tables = append([]*cacheTable{t}, c.tables[:min(len(c.tables), cacheTables-1)]...)
	return t
}

// matches reports whether in has the environment t was made for: every
// Input value that route outputs depend on, other than the route itself.
func (t *cacheTable) matches(in Input) bool {
	return t.dir == in.Dir && t.runDir == in.RunDir && t.defaultDestCA == (len(in.DefaultDestinationCA) > 0) &&
		reflect.DeepEqual(t.router, in.Desired.Router)
}

// lookup returns the output rendered last time for the route with key,
// which was at index i if the routes did not move, or nil. After a route
// added or deleted, the routes behind it sit one place off: lookup tries
// first where the last route was found (shift), then a binary search, as
// the entries are in key order (model.Desired's routes are). Were they
// not, a route the search misses is only rendered again. (A map of every
// key, built at the first miss, cost a route change at 10k routes a
// millisecond and a megabyte.)
func (t *cacheTable) lookup(i int, key model.RouteKey) *routeOut {
	if !t.rendered {
		return nil
	}
	for _, j := range [2]int{i + t.shift, i} {
		if j >= 0 && j < len(t.entries) && t.entries[j].route.Key == key {
			t.shift = j - i
			return t.entries[j]
		}
	}
	j, ok := slices.BinarySearchFunc(t.entries, key, func(e *routeOut, k model.RouteKey) int {
		return e.route.Key.Compare(k)
	})
	if !ok {
		return nil
	}
	t.shift = j - i
	return t.entries[j]
}

// commit records a successful render's outputs. A parts list other than
// the one the table holds replaces it, and the one it replaces, emptied
// so that it keeps no old text alive, is the spare for the next render
// (buildConfig). Swapped here, not before: until the render commits, the
// spare and the table's list must stay two lists, or the next render
// would compare its parts with themselves.
func (t *cacheTable) commit(outs []*routeOut, m []Map, data [][]byte, skeleton []byte, parts [][]byte) {
	t.rendered, t.entries, t.maps, t.mapData, t.shift = true, outs, m, data, 0
	if !sameList(parts, t.parts) {
		clear(t.parts[:cap(t.parts)])
		t.parts, t.spareParts = parts, t.parts
	}
	t.skeleton = skeleton
}

// sameList reports whether a and b are slices of one array.
func sameList(a, b [][]byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}

// sameSkeleton reports whether the skeleton joined from head and parts
// would equal the last successful render's, which was joined from its
// head and its parts: with every part equal and the total length equal,
// the heads have equal length and are compared in place. The parts of
// routes served from the cache are the same slices.
func (t *cacheTable) sameSkeleton(head []byte, parts [][]byte) bool {
	if !t.rendered || len(parts) != len(t.parts) || len(head) > len(t.skeleton) {
		return false
	}
	n := len(head)
	for i, p := range parts {
		if !bytes.Equal(p, t.parts[i]) {
			return false
		}
		n += len(p)
	}
	return n == len(t.skeleton) && bytes.Equal(head, t.skeleton[:len(head)])
}
