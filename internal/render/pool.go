package render

import (
	"bytes"
	"maps"

	"github.com/haroute/haroute/internal/model"
)

// The pool of spare backends (DESIGN §5). HAProxy 2.6 cannot add a
// backend at runtime, so haroute renders empty spare backends ahead of
// need; a new route whose backend would read exactly like a spare's is
// bound to one (AdmittedRoute.Slot) and served through the runtime API:
// servers added, map entries written. in.Spares lists every slot, free or
// bound, in a fixed order; a bound slot is rendered from its route, in
// the slot's place, so binding and unbinding leave the skeleton as it
// was (the route is named in a comment of the full config only) and
// HAProxy needs no reload. The rendered files always say what runtime
// built.

// slotParts renders every slot of the pool, as parts of the config and
// of its skeleton: the bound route's backend where one is bound, else the
// spare. They are parts of their own (the same slices from render to
// render while unchanged), not copied into the head: a thousand spares at
// 10k routes are 600 kB of text, which every change copied twice.
func slotParts(in Input, outs []*routeOut, t *cacheTable) (full, skel [][]byte) {
	if len(in.Spares) == 0 {
		if t != nil {
			clear(t.spares) // the pool emptied (DCM turned off): nothing to keep (T54)
		}
		return nil, nil
	}
	var bound map[model.BackendName]*routeOut
	for i := range in.Desired.Routes {
		if slot := in.Desired.Routes[i].Slot; slot != "" {
			if bound == nil {
				bound = make(map[model.BackendName]*routeOut)
			}
			bound[slot] = outs[i]
		}
	}
	full, skel = make([][]byte, 0, len(in.Spares)), make([][]byte, 0, len(in.Spares))
	for i := range in.Spares {
		sp := &in.Spares[i]
		if o := bound[sp.Slot]; o != nil {
			full, skel = append(full, o.full), append(skel, o.skel)
			continue
		}
		text := spareText(sp, in, t)
		full, skel = append(full, text.full), append(skel, text.skel)
	}
	if t != nil && len(t.spares) > len(in.Spares) {
		// Spares the pool no longer has (shed, or kept backends dropped)
		// are forgotten: the daemon renders with one cache for its whole
		// run, and each top-up names new spares (T52).
		keep := make(map[model.BackendName]bool, len(in.Spares))
		for i := range in.Spares {
			keep[in.Spares[i].Slot] = true
		}
		maps.DeleteFunc(t.spares, func(slot model.BackendName, _ renderedSpare) bool { return !keep[slot] })
	}
	return full, skel
}

// renderedSpare is the text of one spare.
type renderedSpare struct {
	from       model.AdmittedRoute
	full, skel []byte
}

// spareText renders a spare, from t when it was rendered before.
func spareText(sp *model.AdmittedRoute, in Input, t *cacheTable) renderedSpare {
	if t != nil {
		if r, ok := t.spares[sp.Slot]; ok && r.from.SameOutput(sp) {
			return r
		}
	}
	sw := &cfgWriter{}
	sw.line("")
	backend(sw, sp, in)
	r := renderedSpare{from: *sp, full: sw.full, skel: sw.skel}
	if t != nil {
		if t.spares == nil {
			t.spares = make(map[model.BackendName]renderedSpare)
		}
		t.spares[sp.Slot] = r
	}
	return r
}

// SameBackend reports whether route r, bound to slot, renders the same
// backend section (servers aside) as the spare: then binding it needs no
// reload.
func SameBackend(r, spare model.AdmittedRoute, in Input) bool {
	r.Slot = spare.Slot
	a, b := &cfgWriter{}, &cfgWriter{}
	backend(a, &r, in)
	backend(b, &spare, in)
	return bytes.Equal(a.skel, b.skel)
}
