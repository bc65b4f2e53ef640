package plan

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// AdminState is a server's administrative state as the runtime API shows
// it: ready, or in maintenance (drained, or not enabled yet).
type AdminState string

const (
	AdminReady AdminState = "ready"
	AdminMaint AdminState = "maint"
)

// ExpectedServer is what a read-back must show for one server.
type ExpectedServer struct {
	Name   model.ServerName
	Addr   string
	Port   int
	Weight int
	Admin  AdminState
	// Checked is whether its health checks are enabled.
	Checked bool
}

// ObservedServer is one server as read back from HAProxy (`show servers
// state`): the haproxy package fills it in from srv_addr, srv_port,
// srv_uweight, srv_admin_state (any maintenance bit = AdminMaint) and
// srv_check_state (the "enabled" bit = Checked).
type ObservedServer struct {
	Name    model.ServerName
	Addr    string
	Port    int
	Weight  int
	Admin   AdminState
	Checked bool
}

// Expectation is what HAProxy must show once a desired state is applied.
type Expectation struct {
	Servers map[model.BackendName][]ExpectedServer
	// Maps holds entries in file order, by the map's absolute path: maps
	// replaced whole, read back whole.
	Maps map[string][]render.MapEntry
	// Edited are maps edited in place (MapEdit), by absolute path: they
	// are probed rather than listed (see EditedMap).
	Edited map[string]EditedMap
}

// EditedMap is what a map edited in place must show: the desired number
// of entries, and for every key the edit set, added or deleted, what a
// lookup of that key matches. Together they prove the edit: each wanted
// key is there and wins its lookup (no other entry shadows it), each
// deleted key is gone, and nothing was duplicated or left behind. Entries
// the edit did not touch are not listed again: at 10k routes that listing
// was 8 ms of every route added or deleted. A map replaced whole is still
// read back whole.
type EditedMap struct {
	Entries int
	Probes  []MapProbe
}

// MapProbe is one key looked up in an edited map, and the entry that must
// match it: Want nil means the key itself must not match (it was
// deleted; a shorter prefix may still match under map_beg).
type MapProbe struct {
	Key  string
	Want *render.MapEntry
}

// Keys returns the probed keys, in order.
func (e EditedMap) Keys() []string {
	keys := make([]string, len(e.Probes))
	for i, p := range e.Probes {
		keys[i] = p.Key
	}
	return keys
}

// ObservedMap is what probing an edited map saw: its entry count, and the
// entry each probe's lookup matched (nil for none), in probe order.
type ObservedMap struct {
	Entries int
	Matches []*render.MapEntry
}

// Expect is what HAProxy must show once p has brought it to desired: the
// backends p touched, the maps it replaced, and probes of the maps it
// edited.
func Expect(desired State, p Plan) Expectation {
	backends, replaced := p.Touched()
	exp := ExpectTouched(desired, backends, replaced)
	edits := editsOf(p)
	if len(edits) == 0 || desired.Bundle == nil {
		return exp
	}
	exp.Edited = make(map[string]EditedMap, len(edits))
	for _, m := range desired.Bundle.Maps {
		path := absPath(desired.Input.Dir, m.Name)
		if probes, ok := edits[path]; ok {
			exp.Edited[path] = EditedMap{Entries: len(m.Entries), Probes: probes}
		}
	}
	return exp
}

// editsOf returns the probes of every map p edits in place, by path.
func editsOf(p Plan) map[string][]MapProbe {
	out := map[string][]MapProbe{}
	for _, op := range p.Ops {
		o, ok := op.(MapEdit)
		if !ok {
			continue
		}
		probes := out[o.Path]
		for _, set := range [][]render.MapEntry{o.Set, o.Add} {
			for _, e := range set {
				probes = append(probes, MapProbe{Key: e.Key, Want: &e})
			}
		}
		for _, k := range o.Del {
			probes = append(probes, MapProbe{Key: k})
		}
		out[o.Path] = probes
	}
	return out
}

// ExpectTouched computes what HAProxy must show, once desired is applied,
// for the given backends and maps (those a plan touched; see Touched)
// alone: a one-endpoint change at 10k routes must not pay for an
// expectation of every route. Names the desired state lacks are left out.
func ExpectTouched(desired State, backends []model.BackendName, maps []string) Expectation {
	wantBE := make(map[model.BackendName]bool, len(backends))
	for _, be := range backends {
		wantBE[be] = true
	}
	wantMap := make(map[string]bool, len(maps))
	for _, m := range maps {
		wantMap[m] = true
	}
	return expect(desired, wantBE, wantMap)
}

// expect builds the expectation; nil filters mean everything (tests).
func expect(desired State, backends map[model.BackendName]bool, maps map[string]bool) Expectation {
	exp := Expectation{
		Servers: make(map[model.BackendName][]ExpectedServer),
		Maps:    make(map[string][]render.MapEntry),
	}
	for _, r := range routesIn(desired.Desired.Routes, backends) {
		be := r.BackendName()
		if backends != nil && !backends[be] {
			continue
		}
		checked := r.HealthChecked()
		servers := r.Servers()
		list := make([]ExpectedServer, 0, len(servers))
		for _, s := range servers {
			list = append(list, ExpectedServer{Name: s.Name, Addr: s.Address, Port: s.Port,
				Weight: s.Weight, Admin: AdminReady, Checked: checked})
		}
		exp.Servers[be] = list
	}
	if desired.Bundle != nil {
		for _, m := range desired.Bundle.Maps {
			path := absPath(desired.Input.Dir, m.Name)
			if maps != nil && !maps[path] {
				continue
			}
			exp.Maps[path] = m.Entries
		}
	}
	return exp
}

// routesIn returns the routes whose backends may be among backends (all
// of them when backends is nil), for a read-back of one or two backends
// at 10k routes: a route's own backend ("be_http:<ns>:<name>", …) names
// its key (BackendName.RouteKey), found by a binary search, and only a
// spare backend of the pool needs a look at every route, for the one
// bound to it.
func routesIn(routes []*model.AdmittedRoute, backends map[model.BackendName]bool) []*model.AdmittedRoute {
	if backends == nil {
		return routes
	}
	routes = sortedRoutes(routes)
	var out []*model.AdmittedRoute
	slots := false
	for be := range backends {
		key, ok := be.RouteKey()
		if !ok || strings.HasPrefix(string(be), model.PoolSlotPrefix) {
			slots = true
			continue
		}
		if i, found := model.FindRoute(routes, key); found && routes[i].Slot == "" {
			out = append(out, routes[i])
		}
	}
	if slots {
		for _, r := range routes {
			if r.Slot != "" && backends[r.Slot] {
				out = append(out, r)
			}
		}
	}
	return out
}

// maxMismatches bounds how many differences a Verify error lists.
const maxMismatches = 5

// Verify compares a read-back with an expectation. Every expected backend
// and map must have been read. Servers that are not expected may exist
// only in maintenance: they are drained servers waiting for deletion.
// The error lists the first differences, for the reload reason
// "runtime-fallback: …".
func Verify(exp Expectation, servers map[model.BackendName][]ObservedServer, maps map[string][]render.MapEntry, edited map[string]ObservedMap) error {
	var bad []string
	for _, be := range sortedKeys(exp.Servers) {
		observed, ok := servers[be]
		if !ok {
			bad = append(bad, fmt.Sprintf("backend %s: not read back", be))
			continue
		}
		bad = append(bad, verifyBackend(be, exp.Servers[be], observed)...)
	}
	bad = verifyMaps(bad, exp.Maps, maps, verifyMap)
	bad = verifyMaps(bad, exp.Edited, edited, verifyEditedMap)
	if len(bad) == 0 {
		return nil
	}
	if len(bad) > maxMismatches {
		bad = append(bad[:maxMismatches], fmt.Sprintf("and %d more", len(bad)-maxMismatches))
	}
	return errors.New(strings.Join(bad, "; "))
}

// verifyMaps appends to bad what check finds wrong with each expected map,
// by path, against what was read back of it.
func verifyMaps[W, G any](bad []string, want map[string]W, got map[string]G, check func(W, G) string) []string {
	for _, path := range sortedKeys(want) {
		observed, ok := got[path]
		if !ok {
			bad = append(bad, fmt.Sprintf("map %s: not read back", path))
			continue
		}
		if msg := check(want[path], observed); msg != "" {
			bad = append(bad, fmt.Sprintf("map %s: %s", path, msg))
		}
	}
	return bad
}

func verifyBackend(be model.BackendName, want []ExpectedServer, got []ObservedServer) []string {
	var bad []string
	byName := make(map[model.ServerName]ObservedServer, len(got))
	for _, o := range got {
		byName[o.Name] = o
	}
	expected := make(map[model.ServerName]bool, len(want))
	for _, w := range want {
		expected[w.Name] = true
		ref := serverRef(be, w.Name)
		o, ok := byName[w.Name]
		if !ok {
			bad = append(bad, ref+": missing")
			continue
		}
		if !sameAddr(o.Addr, w.Addr) || o.Port != w.Port {
			bad = append(bad, fmt.Sprintf("%s: address %s, want %s", ref, render.HostPort(o.Addr, o.Port), render.HostPort(w.Addr, w.Port)))
		}
		if o.Weight != w.Weight {
			bad = append(bad, fmt.Sprintf("%s: weight %d, want %d", ref, o.Weight, w.Weight))
		}
		if o.Admin != w.Admin {
			bad = append(bad, fmt.Sprintf("%s: state %s, want %s", ref, o.Admin, w.Admin))
		}
		if o.Checked != w.Checked {
			bad = append(bad, fmt.Sprintf("%s: health checks %s, want %s", ref, onOff(o.Checked), onOff(w.Checked)))
		}
	}
	for _, o := range got {
		if !expected[o.Name] && o.Admin != AdminMaint {
			bad = append(bad, fmt.Sprintf("%s: unexpected server in state %s", serverRef(be, o.Name), o.Admin))
		}
	}
	return bad
}

func verifyMap(want, got []render.MapEntry) string {
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			return fmt.Sprintf("entry %d is %q, want %q", i+1, got[i].Key+" "+got[i].Value, want[i].Key+" "+want[i].Value)
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d entries, want %d", len(got), len(want))
	}
	return ""
}

// verifyEditedMap checks the probes of a map edited in place.
func verifyEditedMap(want EditedMap, got ObservedMap) string {
	if len(got.Matches) != len(want.Probes) {
		return fmt.Sprintf("%d lookups read back, want %d", len(got.Matches), len(want.Probes))
	}
	for i, p := range want.Probes {
		m := got.Matches[i]
		switch {
		case p.Want == nil && m != nil && m.Key == p.Key:
			return fmt.Sprintf("deleted key %q still matches (value %q)", p.Key, m.Value)
		case p.Want != nil && m == nil:
			return fmt.Sprintf("key %q matches nothing, want %q", p.Key, p.Want.Value)
		case p.Want != nil && *m != *p.Want:
			return fmt.Sprintf("key %q matches %q, want %q", p.Key, m.Key+" "+m.Value, p.Want.Key+" "+p.Want.Value)
		}
	}
	if got.Entries != want.Entries {
		return fmt.Sprintf("%d entries, want %d", got.Entries, want.Entries)
	}
	return ""
}

// sameAddr compares IP literals by value, so "::ffff:10.0.0.1" or a
// differently abbreviated IPv6 address read back still matches.
func sameAddr(a, b string) bool {
	if a == b {
		return true
	}
	x, errX := netip.ParseAddr(a)
	y, errY := netip.ParseAddr(b)
	return errX == nil && errY == nil && x.Unmap() == y.Unmap()
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
