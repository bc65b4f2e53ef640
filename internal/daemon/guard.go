package daemon

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/status"
)

// The deletion guard (DESIGN §7). A directory that vanishes, is torn down
// half-way (the kubelet removing a volume when a MicroShift holder pod is
// recreated) or reappears empty reads as a well-formed generation without
// routes. Applying it would take every route down. So a generation that
// would drop all routes, or more than DeletionShare of them, is applied
// only once the same routes have been dropped for DeletionQuiet: read
// when first seen, and again after the quiet period, dropping the same.
// In plain mode, where files are edited in place and a file cut off
// mid-write can read as fewer routes, any generation that drops a route
// waits the same way. A route counts as dropped when it disappears or
// loses its last server. A changed file that does not end with a newline
// may be cut off too: it alone waits (holdCutOff), its served version
// standing in for it, and a drop is not applied while such a file waits,
// since what the drop lacks may be in it.

// deletionGuard is what the guard holds back, if anything.
type deletionGuard struct {
	// hash names what is held: the routes dropped, or the cut file and
	// its content. The quiet period runs while it stays the same, however
	// the rest of the directory changes: keyed on the whole directory, a
	// deletion under steady churn (an endpoints file a script rewrites)
	// never applied.
	hash  string
	since time.Time // when it was first seen
	// at is when to read the directory again (zero: nothing held).
	at time.Time
}

// hold is what the deletion guard holds back of a generation.
type hold int

const (
	holdNothing hold = iota
	// holdDrops: the routes it drops wait; the rest applies (withoutDrops).
	holdDrops
)

// holdDeletion reports what of next must wait, and arranges the second
// read when anything does.
//
// At start, before anything was accepted, the saved last good state is
// the baseline: a directory found empty while haroute was down is held
// too (and the saved state served meanwhile; see sync).
func (d *Daemon) holdDeletion(snap *snapshot.Snapshot, next plan.State) hold {
	if d.opts.DeletionQuiet < 0 {
		return holdNothing
	}
	var prev []*model.AdmittedRoute
	switch {
	case d.desired.Desired != nil:
		prev = d.desired.Desired.Routes
	case d.restored != nil:
		prev = d.restored.routes
	default:
		return holdNothing
	}
	dropped, names, held := droppedRoutes(prev, next.Desired.Routes, d.rivals)
	if dropped == 0 || !d.guarded(snap, dropped, len(prev)) {
		d.releaseGuard()
		d.loader.PreferWinners(nil) // what a hold kept is not served any more
		return holdNothing
	}
	now := time.Now()
	g := &d.guard
	fresh := g.hash != held
	if fresh {
		*g = deletionGuard{hash: held, since: now}
		// Once per hold: read again (its second read, a resync), the
		// same drop is the same hold.
		d.metrics.DeletionGuardHeld()
	}
	// A drop of all or most routes is a warning; one of a few routes of
	// a plain directory, which the guard holds too, is routine (T42:
	// four warnings for one route deleted). Each is said once a hold.
	level := slog.LevelInfo
	if d.mostDropped(dropped, len(prev)) {
		level = slog.LevelWarn
	}
	if now.Sub(g.since) >= d.opts.DeletionQuiet {
		if len(d.cutWaiting) > 0 {
			// What the drop lacks may be in a file holdCutOff holds: a
			// route or endpoints moved to a new file written without a
			// final newline, which reads as a drop until the file is
			// taken (T29: applied on the guard's own clock, the moved
			// routes answered 503 until then, for good under a writer
			// that kept rewriting it). The file's own read comes at
			// cutAt; the drop is judged again then.
			d.log.Warn("deletion guard: the routes a generation drops stayed dropped for the quiet period, but files that may be cut off mid-write are held and may hold them; waiting for those",
				"dropped", dropped, "of", len(prev), "routes", names, "files", strings.Join(d.cutWaiting, ", "))
			d.setGuardStatus(g.since, dropped, len(prev), guardForFiles)
			return holdDrops
		}
		d.log.Log(context.Background(), level, "deletion guard: the same routes stayed dropped for the quiet period; applying",
			"dropped", dropped, "of", len(prev), "stable_for", now.Sub(g.since).Round(time.Millisecond))
		d.releaseGuard()
		d.loader.PreferWinners(nil)
		return holdNothing
	}
	g.at = g.since.Add(d.opts.DeletionQuiet)
	if !fresh {
		level = slog.LevelDebug
	}
	d.log.Log(context.Background(), level, "deletion guard: holding back the routes a generation drops until the drop has held for the quiet period",
		"dropped", dropped, "of", len(prev), "routes", names, "until", g.at.Format(time.RFC3339))
	d.setGuardStatus(g.since, dropped, len(prev), guardQuiet)
	return holdDrops
}

// withoutDrops is gen with the routes it drops (droppedRoutes) kept as
// they are served, where no route of gen claims their host and path:
// while the guard holds a deletion, everything else in the directory
// still applies. A whole generation held back kept endpoint removals
// from applying for the quiet period, and changes that kept coming kept
// resetting it. It reports false when the generation must wait whole.
func (d *Daemon) withoutDrops(gen generation) (generation, bool) {
	if d.desired.Desired == nil {
		return gen, false
	}
	next := gen.state.Desired
	rivals := d.rivals()
	claimed := sync.OnceValue(func() map[string]bool { return claims(next.Routes, rivals) })
	// Both in key order: merged in key order, as a Desired's must be.
	prev := d.desired.Desired.Routes
	routes := make([]*model.AdmittedRoute, 0, len(next.Routes))
	kept := 0
	var keptKeys []model.RouteKey
	keptClaims := map[string]bool{}
	for p, c := range byKey(prev, next.Routes) {
		switch {
		case p != nil && isDropped(p, c, claimed):
			routes = append(routes, p) // kept as served
			kept++
			keptKeys = append(keptKeys, p.Key)
			keptClaims[p.Claim()] = true
		case c != nil:
			routes = append(routes, c)
		}
	}
	if kept == 0 {
		return gen, true // nothing it drops needs keeping: it applies as it is
	}
	// A rival the served state rejected waits while the route it lost to
	// is held, rather than share its host (one that was stale keeps
	// serving the version it served); and the next admission takes
	// the held routes as served, so that one coming back (a teardown
	// republished) keeps its claims.
	waiting := map[model.RouteKey]model.RouteState{}
	for i, r := range routes {
		if !rivals[r.Key] || !keptClaims[r.Claim()] {
			continue
		}
		waiting[r.Key] = model.RouteRejected
		routes[i] = nil
		if at, ok := model.FindRoute(prev, r.Key); ok && !keptClaims[prev[at].Claim()] {
			waiting[r.Key], routes[i] = model.RouteStale, prev[at]
		}
	}
	routes = slices.DeleteFunc(routes, func(r *model.AdmittedRoute) bool { return r == nil })
	d.loader.PreferWinners(keptKeys)
	merged := *next
	merged.Routes = routes
	// A copy (withHeld): admission shares its statuses between loads.
	merged.Statuses = withHeld(merged.Statuses, d.desired.Desired.Statuses, keptKeys)
	if len(waiting) > 0 {
		// Shown as what they are, rejected or stale still: the next
		// hold reads the rivals from these statuses.
		for i, st := range merged.Statuses {
			if state, ok := waiting[st.Key]; ok {
				cp := *st
				cp.State = state
				cp.Reasons = append(slices.Clip(cp.Reasons), "its host is held by the deletion guard for the route it lost to, deleted from the directory; it is served if that stays deleted for the quiet period")
				merged.Statuses[i] = &cp
			}
		}
	}
	g, err := d.withPool(gen, &merged, d.refill)
	if err != nil {
		d.recordError(err)
		return gen, false
	}
	g.fitted, g.held = &merged, true
	g.keep = slices.Concat(keptKeys, slices.Collect(maps.Keys(waiting)))
	return g, true
}

// byKey walks prev and next, both in key order, as one list in key
// order: each route key once, with its version in each (nil where it has
// none).
func byKey(prev, next []*model.AdmittedRoute) iter.Seq2[*model.AdmittedRoute, *model.AdmittedRoute] {
	return func(yield func(old, cur *model.AdmittedRoute) bool) {
		for i, j := 0, 0; i < len(prev) || j < len(next); {
			var old, cur *model.AdmittedRoute
			switch {
			case j == len(next) || i < len(prev) && prev[i].Key.Compare(next[j].Key) < 0:
				old, i = prev[i], i+1
			case i == len(prev) || prev[i].Key.Compare(next[j].Key) > 0:
				cur, j = next[j], j+1
			default:
				old, cur, i, j = prev[i], next[j], i+1, j+1
			}
			if !yield(old, cur) {
				return
			}
		}
	}
}

// heldReason is why a held route still serves; heldServersReason, one
// still in the directory whose service lost its last endpoint.
const (
	heldReason        = "deleted from the directory; served until it has stayed deleted for the deletion guard's quiet period"
	heldServersReason = "its service lost its last endpoint; the last ones serve until that has held for the deletion guard's quiet period"
)

// withHeld returns a copy of statuses with the routes of keys (sorted),
// which the guard keeps serving, listed as held: they had vanished from
// status while HAProxy still served them (their served statuses come from
// prev), or, still in the directory with the claim they serve, showed
// "admitted" while the guard held the loss of their last endpoint.
func withHeld(statuses, prev []*model.RouteStatus, keys []model.RouteKey) []*model.RouteStatus {
	out := make([]*model.RouteStatus, 0, len(statuses)+len(keys))
	out = append(out, statuses...)
	for _, k := range keys {
		i, ok := model.FindStatus(prev, k)
		if !ok {
			continue
		}
		if j, dup := model.FindStatus(statuses, k); dup {
			if cur := statuses[j]; cur.Host == prev[i].Host && cur.Path == prev[i].Path && cur.State != model.RouteRejected {
				cp := *cur
				cp.State, cp.Reasons = model.RouteHeld, []string{heldServersReason}
				// Its note that it answers 503 is what the held change
				// would do; it serves meanwhile.
				cp.Notes = slices.DeleteFunc(slices.Clone(cur.Notes), func(n string) bool { return strings.Contains(n, model.Answers503) })
				out[j] = &cp
			}
			continue // else still in the directory, under another claim
		}
		cp := *prev[i]
		cp.State, cp.Reasons, cp.Warnings, cp.Notes = model.RouteHeld, []string{heldReason}, nil, nil
		out = append(out, &cp)
	}
	slices.SortFunc(out, func(a, b *model.RouteStatus) int { return a.Key.Compare(b.Key) })
	return out
}

// claims is the set of what routes claim in the maps (AdmittedRoute.Claim),
// rivals left out.
func claims(routes []*model.AdmittedRoute, rivals map[model.RouteKey]bool) map[string]bool {
	out := make(map[string]bool, len(routes))
	for _, r := range routes {
		if !rivals[r.Key] {
			out[r.Claim()] = true
		}
	}
	return out
}

// rivals are the routes whose current version the state served rejected
// (rejected or stale): one that claims a dropped route's host is no rename
// or move of it but a rival that lost to it, and the drop is a deletion
// the guard holds (a teardown must not hand a served host to its rival).
// Before the first sync after a start, the saved state's.
func (d *Daemon) rivals() map[model.RouteKey]bool {
	switch {
	case d.desired.Desired != nil:
		return rivalsOf(d.desired.Desired.Statuses)
	case d.restored != nil:
		return d.restored.rivals
	}
	return nil
}

// rivalsOf returns the routes of statuses that are rejected or stale.
func rivalsOf(statuses []*model.RouteStatus) map[model.RouteKey]bool {
	var out map[model.RouteKey]bool
	for _, st := range statuses {
		if st.State == model.RouteRejected || st.State == model.RouteStale {
			if out == nil {
				out = map[model.RouteKey]bool{}
			}
			out[st.Key] = true
		}
	}
	return out
}

// cutHold is a file held by holdCutOff: its content, by hash, since when
// it has read so, and whether its hold is over.
type cutHold struct {
	hash  string
	since time.Time
	over  bool
}

// holdCutOff returns snap with each file that may be cut off mid-write
// replaced by its served version (left out when it has none), until the
// file has read the same for the quiet period, and arranges the read that
// takes it then (cutAt).
//
// In plain mode a writer may stall mid-file, and what it wrote so far
// can still be valid YAML with other values (a port cut from 29101 to
// 2910). Editors and serializers end YAML with a newline, so a file
// changed since the served generation that does not end with one waits;
// one that really ends without one is applied after the quiet period.
// Only the file waits: when the whole generation did, every other change
// of the directory waited as long as such a file kept being rewritten
// (T27: a script replacing one every 3 s kept an unrelated endpoint move
// from applying for good).
func (d *Daemon) holdCutOff(snap *snapshot.Snapshot) *snapshot.Snapshot {
	if snap.Mode != snapshot.ModePlain || d.opts.DeletionQuiet < 0 {
		d.cutHeld = nil
		d.holdingFiles(nil)
		return snap
	}
	var served []model.SourceFile
	switch {
	case d.desiredFrom != nil:
		served = d.desiredFrom.Files
	case d.restored != nil:
		served = d.restored.files // at start: the saved state serves
	default:
		return snap // a first start: nothing is served to keep
	}
	// The served files by path, once a file lacks its final newline:
	// most reads have none, and this runs at every read.
	var was map[string]model.SourceFile
	now := time.Now()
	held := map[string]cutHold{}
	var waiting []string // in path order, as snap.Files
	for _, f := range snap.Files {
		if len(f.Data) == 0 || f.Data[len(f.Data)-1] == '\n' {
			continue
		}
		if was == nil {
			was = make(map[string]model.SourceFile, len(served))
			for _, sf := range served {
				was[sf.Path] = sf
			}
		}
		if old, ok := was[f.Path]; ok && old.Hash == f.Hash {
			continue
		}
		h, ok := d.cutHeld[f.Path]
		if !ok || h.hash != f.Hash {
			h = cutHold{hash: f.Hash, since: now}
			d.metrics.DeletionGuardHeld()
		}
		at := h.since.Add(d.opts.DeletionQuiet)
		switch {
		case now.Before(at):
			waiting = append(waiting, f.Path)
			d.cutAt = earliest(d.cutAt, at)
			if h.since == now {
				d.log.Warn("holding back a file that may be cut off mid-write: it changed and does not end with a newline; its served version stays until it reads the same for the quiet period",
					"file", f.Path, "until", at.Format(time.RFC3339))
			}
		case !h.over:
			h.over = true
			d.log.Warn("a file without a final newline read the same for the quiet period; applying it", "file", f.Path)
		}
		held[f.Path] = h
	}
	d.cutHeld = held
	d.holdingFiles(waiting)
	if len(waiting) == 0 {
		return snap
	}
	files := make([]model.SourceFile, 0, len(snap.Files))
	for _, f := range snap.Files {
		if h, ok := held[f.Path]; !ok || h.over {
			files = append(files, f)
		} else if old, ok := was[f.Path]; ok {
			files = append(files, old)
		}
	}
	// Its own hash: the read's would name content that does not run in
	// status. (sync reads again whatever comes while a file is held.)
	return snap.WithFiles(files)
}

// guarded reports whether dropping dropped of total routes from snap needs
// the quiet period.
//
// In atomic and link mode a published generation is never changed: the
// next one is a new directory behind ..data or the link. Routes dropped
// while the directory read is still the one served are files vanishing
// from under it, the kubelet tearing the volume down file by file before
// ..data goes (os.RemoveAll), so any share of them waits, as in plain
// mode. Under the share rule alone, the first files removed took their
// routes down at every recreation of a MicroShift holder pod.
func (d *Daemon) guarded(snap *snapshot.Snapshot, dropped, total int) bool {
	if snap.Mode == snapshot.ModePlain {
		return true
	}
	if d.desiredFrom != nil && d.desiredFrom.Mode == snap.Mode && d.desiredFrom.Root == snap.Root {
		return true
	}
	return d.mostDropped(dropped, total)
}

// mostDropped reports whether dropping dropped of total routes is all or
// more than the allowed share of them.
func (d *Daemon) mostDropped(dropped, total int) bool {
	return dropped >= total || float64(dropped) > d.opts.DeletionShare*float64(total)
}

func (d *Daemon) releaseGuard() {
	if d.guard.at.IsZero() && d.guard.hash == "" {
		return
	}
	d.guard = deletionGuard{}
	d.setGuardStatus(time.Time{}, 0, 0, "")
}

// droppedRoutes counts the routes of prev that cur drops: absent, with
// what they claimed served by no route of cur (a route renamed, or its
// host moved to a new route, drops nothing), or with no server left where
// they had one. Both are in namespace/name order, as admission produces
// them. It names up to a few of them for the log, and all of them in key,
// which stays the same while the same routes are dropped.
func droppedRoutes(prev, cur []*model.AdmittedRoute, rivals func() map[model.RouteKey]bool) (n int, names, key string) {
	// Only once something is gone: every change passes here, and both
	// walk all the routes.
	claimed := sync.OnceValue(func() map[string]bool { return claims(cur, rivals()) })
	var shown []string
	var all strings.Builder
	for p, c := range model.ChangedByKey(prev, cur, model.RouteKeyOf) {
		if p == nil || !isDropped(p, c, claimed) {
			continue
		}
		n++
		if len(shown) < 5 {
			shown = append(shown, p.Key.String())
		}
		all.WriteString(p.Key.String())
		all.WriteByte(' ')
	}
	names = strings.Join(shown, ",")
	if n > len(shown) {
		names += fmt.Sprintf(",… (%d more)", n-len(shown))
	}
	return n, names, "drop " + all.String()
}

// isDropped reports whether a generation drops route p, whose version in
// it is c (nil: gone): gone, with what it claimed served by no route of
// the generation (claimed), or left without a server where it had one.
func isDropped(p, c *model.AdmittedRoute, claimed func() map[string]bool) bool {
	if c != nil {
		return servers(p) > 0 && servers(c) == 0
	}
	return !claimed()[p.Claim()]
}

func servers(r *model.AdmittedRoute) int {
	n := 0
	for _, s := range r.Services {
		n += len(s.Servers)
	}
	return n
}

// holdingFiles records the files holdCutOff holds now, and shows them in
// status.
func (d *Daemon) holdingFiles(paths []string) {
	if slices.Equal(paths, d.cutWaiting) {
		return
	}
	d.cutWaiting = paths
	d.status.Set(func(s *status.Status) { s.HeldFiles = slices.Clone(paths) })
}

// earliest is the earlier of a and b, either of which may be zero (unset).
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
