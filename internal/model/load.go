package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/haroute/haroute/internal/parallel"
)

// SourceFile is one input file of a snapshot. Path is relative to the
// snapshot root, slash-separated; Hash is a content hash (hex sha256).
// Data must not change once loaded: decoded strings share its memory.
type SourceFile struct {
	Path string
	Data []byte
	Hash string
}

// Result is the outcome of loading one snapshot.
type Result struct {
	Desired     *Desired
	Objects     Objects
	Diagnostics Diagnostics
	// next is the last good state to remember if this result is committed.
	next *lastGood
	// RouterUnsettled is set when the tree holds a RouterConfig that
	// cannot be used (it fails to parse or validate) and no earlier one
	// was ever good: the settings in force are the defaults only for lack
	// of better, and a router must not start listening on them.
	RouterUnsettled bool
	// staleFiles count, by path, the Endpoints, EndpointSlices and
	// Secrets served from the last good content of files that no longer
	// decode (their routes are marked in Desired.Statuses).
	staleFiles map[string]int
	// routerConfigStale is set when the RouterConfig serves its last good
	// settings (it is counted and listed as a stale object).
	routerConfigStale bool
	// Definitions are, for routes defined in more than one file, the file
	// whose definition serves: what a restart must keep
	// (Loader.PreferDefinitions), where its first load, without history,
	// would take the first by position.
	Definitions map[RouteKey]string
	// ConflictWinners are the routes that won a contested claim (see
	// admitScratch.contestedWinners), in key order: what a restart must
	// know to keep them (Loader.PreferWinners).
	ConflictWinners []RouteKey
}

// routerConfigKind finds a `kind: RouterConfig` line (YAML or JSON) in a
// file that failed to decode: the word alone, in a comment or a value of a
// broken Route file, must not hold a cold start back.
var routerConfigKind = regexp.MustCompile(`(?m)^[\s{,]*"?kind"?\s*:\s*["']?RouterConfig\b`)

// routerUnsettled reports whether a RouterConfig is present in the tree but
// unusable.
func (l *Loader) routerUnsettled(objs Objects, admitDiags Diagnostics) bool {
	for _, st := range l.files {
		if st.mayConfigure && st.good == nil {
			return true
		}
	}
	for _, d := range admitDiags {
		if d.Message == routerConfigKept {
			return true
		}
	}
	return len(objs.RouterConfigs) > 1
}

// Loader decodes snapshots incrementally. It is not safe for concurrent use.
//
// It remembers, per path, the content hash of the last load and the objects
// of the last content that decoded cleanly, so that unchanged files are not
// parsed again and a file that breaks does not take its routes down.
type Loader struct {
	limits Limits
	files  map[string]*fileState
	// gone are the files of earlier loads absent from the last ones,
	// until a Commit (or, for those defining routes the daemon's
	// deletion guard still serves, until CommitHeld no longer keeps
	// them): a deletion held back is not applied, so a file that comes
	// back broken meanwhile still has its last good content. Dropped at
	// once, it contributed nothing, and a rival route took its host.
	gone map[string]*fileState
	// aside are the files of gone the last CommitHeld kept for the
	// routes it kept: an Endpoints file found through the last good
	// state once is not found there at the next held commit (T26).
	aside map[string]bool
	// prev is the last good router settings, handed to admission so that an
	// invalid RouterConfig keeps the last good one in force.
	prev *Settings
	// parsed counts files decoded, so tests can see what was skipped.
	parsed int
	// scratch is admission's working memory, reused between loads.
	scratch admitScratch
	// good is the last good version of each object, from the last
	// committed result (lastgood.go).
	good *lastGood
	// rcRefusal is the RouterConfig version HAProxy refused, if any.
	rcRefusal *rcRefusal
	// refusedMaterial is the Secret material HAProxy refused, by
	// fingerprint, with its message (Refuse); inForce, the Secrets'
	// material the last Evaluate gave the routes.
	refusedMaterial map[string]string
	inForce         map[RouteKey]secretPair
	// unread are the paths whose content the caller gave again from the
	// last good state, as the file could not be read, with why (Unread);
	// broken, those whose current content fails to decode and whose last
	// good content serves, as the last decode found them.
	unread map[string]string
	broken []string
	// routes, endpoints and slices are the last load's assembled objects
	// of each kind, reused while every file that has some still holds
	// the same decoded objects: at 10k routes most changes touch one
	// kind, and copying all the others was a large part of what a load
	// allocates.
	routes    assembled[*Route, routeMemo]
	endpoints assembled[*Endpoints, groupsMemo]
	slices    assembled[EndpointSlice, groupsMemo]
}

// assembled is one kind of object (Routes, Endpoints or EndpointSlices)
// and their memos as assembled from the good objects in from, in path
// order.
type assembled[T, M any] struct {
	from  []*Objects
	objs  []T
	memos []*M
}

// update assembles the objects of files (the good ones, in path order),
// which part finds in each file's Objects and memos, reusing the last
// assembly when no file with objects of this kind changed.
func (a *assembled[T, M]) update(files []*fileState, part func(*fileState) (*[]T, []M)) ([]T, []*M) {
	var from []*Objects
	n := 0
	for _, st := range files {
		if objs, _ := part(st); len(*objs) > 0 {
			from, n = append(from, st.good), n+len(*objs)
		}
	}
	if n == 0 {
		*a = assembled[T, M]{}
		return nil, nil
	}
	if slices.Equal(from, a.from) {
		return a.objs, a.memos
	}
	all, memos := make([]T, 0, n), make([]*M, 0, n)
	for _, st := range files {
		objs, ms := part(st)
		if len(*objs) == 0 {
			continue
		}
		off := len(all)
		all = append(all, *objs...)
		// The file's objects were appended one by one as it was
		// decoded; it now takes its part of the copy, so each object is
		// held once instead of twice, without the slack of growing.
		// (Routes are held by pointer: what is copied at each change of
		// a file is 8 bytes a route, not the route.)
		*objs = all[off:len(all):len(all)]
		for i := range ms {
			memos = append(memos, &ms[i])
		}
	}
	*a = assembled[T, M]{from: from, objs: all, memos: memos}
	return all, memos
}

// fileState is what the Loader keeps about one path.
type fileState struct {
	hash   string
	diags  Diagnostics // of the current content
	failed bool        // the current content has errors
	// mayConfigure is set when the current content failed and looks like
	// it holds a RouterConfig.
	mayConfigure bool
	good         *Objects  // of the last content without errors; nil if none yet
	memo         *fileMemo // admission results for good, made as needed
	// kept is set when the current content failed only in some objects
	// (fileResult.partial): good then holds the current content's other
	// objects, and kept lists the objects that serve their last good
	// version in it (stale).
	kept    map[objectID]bool
	partial bool
}

// NewLoader returns a Loader with the default limits.
func NewLoader() *Loader {
	return &Loader{limits: DefaultLimits(), files: make(map[string]*fileState)}
}

// Load decodes files (unchanged hashes are not parsed again), keeps the last
// good objects of files that now fail, and admits the result. Objects are in
// path order, then document order; diagnostics are sorted. The objects
// handed to admission, and the Desired returned, share memory with later loads
// and must not be modified: admission results of unchanged files are
// reused rather than computed again (see memo.go).
func (l *Loader) Load(files []SourceFile) Result {
	res := l.Evaluate(files)
	l.Commit(res)
	return res
}

// Evaluate is Load without committing: the result's objects do not become
// anyone's last good version, nor its settings the fallback for a broken
// RouterConfig, until Commit. The daemon commits only what HAProxy
// accepted.
func (l *Loader) Evaluate(files []SourceFile) Result {
	objs, m, diags := l.decodeWithMemos(files)
	good := l.good
	if good == nil {
		good = &lastGood{}
	}
	if r := l.rcRefusal; r != nil {
		if st := l.files[r.path]; st != nil && st.hash == r.hash {
			cp := *good
			cp.refusedConfig = r.problems
			good = &cp
		} else {
			l.rcRefusal = nil // the RouterConfig changed: try it afresh
		}
	}
	if stale := l.stalePaths(); stale != nil {
		cp := *good
		cp.stale = stale
		good = &cp
	}
	if len(l.refusedMaterial) > 0 {
		l.forgetRefusedMaterial(objs.Secrets)
		cp := *good
		cp.refusedMaterial = l.refusedMaterial
		good = &cp
	}
	desired, admitDiags, next := admit(objs, l.prev, m, &l.scratch, good)
	l.inForce = nil
	if next != nil {
		l.inForce = next.secrets
	}
	staleFiles := l.markBrokenFiles(desired)
	diags = append(diags, admitDiags...)
	diags.Sort()
	res := Result{Desired: desired, Objects: objs, Diagnostics: diags, next: next, staleFiles: staleFiles,
		ConflictWinners: l.scratch.contestedWinners(), Definitions: l.scratch.definitions}
	if l.prev == nil {
		res.RouterUnsettled = l.routerUnsettled(objs, admitDiags)
	}
	if rcs := objs.RouterConfigs; len(rcs) > 0 && !res.RouterUnsettled {
		// The settings in force are the last good ones: the RouterConfig
		// is invalid, refused, doubled, or its file no longer parses.
		res.routerConfigStale = !res.RouterConfigInForce() || l.Failed(rcs[0].Source.Pos.Path)
	}
	return res
}

// Unread names the paths whose content the caller gives from the last
// good state because the file could not be read (permissions, the size
// limit), each with why: like a broken file's last good content, it
// yields to a new definition of the same object (lastGood.stale), and
// what it serves is stale. It holds until the next call.
func (l *Loader) Unread(why map[string]string) { l.unread = why }

// stalePaths are the paths whose current content fails to decode, or
// could not be read, and whose last good content stays in force; nil
// when there are none.
func (l *Loader) stalePaths() map[string]bool {
	if len(l.broken) == 0 && len(l.unread) == 0 {
		return nil
	}
	stale := make(map[string]bool, len(l.broken)+len(l.unread))
	for _, path := range l.broken {
		stale[path] = true
	}
	for path := range l.unread {
		stale[path] = true
	}
	return stale
}

// markBrokenFiles marks stale the routes served from the last good
// content of a file whose current content fails to decode (YAML, a file
// too large): like a route whose new version is rejected, they serve
// their last good version, and status and haroute_stale_objects say so,
// with the file's errors. It returns how many other objects (endpoints,
// secrets) each such file serves from its last good content.
func (l *Loader) markBrokenFiles(d *Desired) map[string]int {
	broken := map[string][]string{}
	var others map[string]int
	for path, st := range l.files {
		why, unread := l.unread[path]
		if unread && st.good != nil {
			// Given again from the last good state: what it serves is
			// stale, as a broken file's is.
			if n := len(st.good.Endpoints) + len(st.good.EndpointSlices) + len(st.good.Secrets); n > 0 {
				if others == nil {
					others = map[string]int{}
				}
				others[path] = n
			}
			broken[path] = []string{why}
			continue
		}
		if !st.failed || st.good == nil {
			continue
		}
		n := len(st.good.Endpoints) + len(st.good.EndpointSlices) + len(st.good.Secrets)
		if st.partial {
			n = 0
			for id := range st.kept {
				if id.kind != "Route" {
					n++
				}
			}
		}
		if n > 0 {
			if others == nil {
				others = map[string]int{}
			}
			others[path] = n
		}
		var reasons []string
		for _, diag := range st.diags {
			if diag.Severity == SeverityError {
				reasons = append(reasons, fmt.Sprintf("%s: %s", diag.Pos, fieldMessage(diag)))
			}
		}
		broken[path] = reasons
	}
	if len(broken) == 0 || d == nil {
		return others
	}
	d.Statuses = slices.Clone(d.Statuses) // shared with other loads
	for i, st := range d.Statuses {
		reasons, ok := broken[st.Source.Path]
		if !ok || (st.State != RouteAdmitted && st.State != RouteAdmittedWithWarnings) {
			continue
		}
		if f := l.files[st.Source.Path]; f != nil && f.partial &&
			!f.kept[objectID{"Route", namespaceOrDefault(st.Key.Namespace), st.Key.Name}] {
			continue // its current version decoded: it is not stale
		}
		marked := *st
		marked.State, marked.Reasons = RouteStale, reasons
		d.Statuses[i] = &marked
	}
	return others
}

// Settings returns the last good settings (those of the last committed
// result), or nil before any.
func (l *Loader) Settings() *Settings { return l.prev }

// PreferWinners makes routes keys the winners of the last decision for
// the next admission that decides conflicts, as if they had served their
// claims (none: forgets earlier ones): a restart restores what the last
// run served, whose decisions the new process has not seen
// (Result.ConflictWinners), and the deletion guard serves routes the
// directory no longer has.
func (l *Loader) PreferWinners(keys []RouteKey) {
	if len(keys) == 0 {
		l.scratch.preferred = nil
		return
	}
	l.scratch.preferred = make(map[RouteKey]bool, len(keys))
	for _, k := range keys {
		l.scratch.preferred[k] = true
	}
}

// PreferDefinitions names, for routes defined in more than one file, the
// file whose definition is to serve where the loader has no history of
// its own (a restart: the saved state's Result.Definitions). It is only
// consulted where the last good state has no served definition of the
// route.
func (l *Loader) PreferDefinitions(defs map[RouteKey]string) { l.scratch.preferredDefs = defs }

// RestoreSettings makes s the last good settings again: those of a
// RouterConfig accepted and committed, then found unloadable before HAProxy
// loaded it (a port taken meanwhile), are not.
func (l *Loader) RestoreSettings(s Settings) { l.prev = &s }

// Commit makes res the last good state: its settings and the versions of
// the objects it served. Settings that only stood in for a RouterConfig
// that could not be used (the last good ones, or the defaults when there
// were none) are not made good: committed, the defaults became what a
// later invalid RouterConfig fell back to, and a restart whose saved
// RouterConfig a newer version refuses moved the router to ports 80, 443
// and 1936 on every address instead of waiting (Result.RouterUnsettled).
func (l *Loader) Commit(res Result) {
	l.commitSettings(res)
	if res.next != nil {
		l.good = res.next
	}
	l.gone, l.aside = nil, nil
}

// CommitHeld is Commit for a result served only in part: the daemon's
// deletion guard serves the routes of keep (those the result drops, and
// the rivals that wait on them) as they were. Those keep their last good
// versions, and the files that defined them their last good content, in
// case they come back broken; every other object's version becomes last
// good, as Commit makes it. Committed whole, a rival the held result
// admitted on a held route's host had that as its last good version, and
// once the directory came back whole it had none that could serve; not
// committed at all, every edit made during the hold had none.
//
// It returns the files set aside for keep's routes and their services'
// endpoints (see gone).
func (l *Loader) CommitHeld(res Result, keep []RouteKey) map[string]bool {
	l.commitSettings(res)
	old := l.good
	if res.next == nil || old == nil {
		l.Commit(res)
		return nil
	}
	l.good = res.next.keeping(old, keep)
	// The files of keep's routes and of their services' endpoints: a
	// route the guard keeps because its service lost its last endpoint
	// (its Endpoints file gone) has its servers from those (T25: the
	// file back broken had nothing to keep, and the route went down
	// when the hold ended).
	paths := map[string]bool{}
	services := map[serviceKey]bool{}
	for _, k := range keep {
		for _, r := range old.defined(k.Namespace, k.Name) {
			paths[r.Source.Pos.Path] = true
			for _, ref := range r.Spec.targets() {
				services[serviceKey{r.Meta.Namespace, ref.Name}] = true
			}
		}
	}
	for _, e := range old.endpoints.endpoints {
		if services[serviceKey{e.Meta.Namespace, e.Meta.Name}] {
			paths[e.Source.Pos.Path] = true
		}
	}
	for _, sl := range old.endpoints.slices {
		if services[serviceKey{sl.Meta.Namespace, sl.Meta.Labels[ServiceNameLabel]}] {
			paths[sl.Source.Pos.Path] = true
		}
	}
	for path := range l.aside {
		if l.gone[path] != nil {
			paths[path] = true // still gone, still kept
		}
	}
	for path := range l.gone {
		if !paths[path] {
			delete(l.gone, path) // its deletion is served
		}
	}
	l.aside = paths
	return paths
}

// commitSettings makes res's settings the last good ones, unless they
// only stand in for a RouterConfig that cannot be used.
func (l *Loader) commitSettings(res Result) {
	if res.Desired != nil && (len(res.Objects.RouterConfigs) == 0 || res.RouterConfigInForce()) {
		settings := res.Desired.Router
		l.prev = &settings
	}
}

// RefuseRouterConfig marks the current version of the RouterConfig as
// refused by HAProxy, with HAProxy's messages at the fields responsible
// (JudgeSettings): until its file changes, the last good settings stay in
// force and the routes still apply; with none yet, the router is
// unsettled (Result.RouterUnsettled) rather than started on defaults.
func (l *Loader) RefuseRouterConfig(problems []SettingsProblem) bool {
	for path, st := range l.files {
		if st.good != nil && len(st.good.RouterConfigs) > 0 {
			l.rcRefusal = &rcRefusal{path: path, hash: st.hash, problems: problems}
			return true
		}
	}
	return false
}

// RouterConfigRefusal returns what HAProxy refused of the current
// RouterConfig version (RefuseRouterConfig), or nil.
func (l *Loader) RouterConfigRefusal() []SettingsProblem {
	if l.rcRefusal == nil {
		return nil
	}
	return l.rcRefusal.problems
}

// RetryRouterConfig forgets the refusal of the current RouterConfig
// version: the next Evaluate tries it afresh, as if its file had changed.
func (l *Loader) RetryRouterConfig() { l.rcRefusal = nil }

// rcRefusal is a RouterConfig version HAProxy refused.
type rcRefusal struct {
	path, hash string
	problems   []SettingsProblem
}

// Refuse marks the current version of route key as refused by HAProxy
// (for example by `haproxy -c`), with HAProxy's message: the next
// Evaluate rejects that version, so its last good version, if any, keeps
// serving. A new version of the route (its file changed) is tried afresh.
// It reports whether the route was found.
//
// A route that takes its certificate from a Secret whose material changed
// since the last good state is refused for that material instead: the
// Secret's last good material serves the route (it is stale), as when
// Go refuses the material, and a new version of the Secret is tried
// afresh. Should the route still be refused with the last good material,
// the route is at fault.
func (l *Loader) Refuse(key RouteKey, msg string) bool {
	for _, st := range l.files {
		if st.good == nil {
			continue
		}
		for i := range st.good.Routes {
			r := st.good.Routes[i]
			if r.Meta.Name == key.Name && namespaceOrDefault(r.Meta.Namespace) == key.Namespace {
				if !l.refuseMaterialOf(r, msg) {
					st.memo.routes[i].refused = msg
				}
				return true
			}
		}
	}
	return false
}

// refuseMaterialOf records the Secret material route r was refused with,
// when the route names a Secret whose material in force differs from its
// last good one; it reports whether it did.
func (l *Loader) refuseMaterialOf(r *Route, msg string) bool {
	if r.Spec.TLS == nil || r.Spec.TLS.ExternalCertificate == "" {
		return false
	}
	k := RouteKey{Namespace: namespaceOrDefault(r.Meta.Namespace), Name: r.Spec.TLS.ExternalCertificate}
	pair, ok := l.inForce[k]
	if !ok {
		return false
	}
	if good, ok := l.good.secret(k); ok && good.fingerprint() == pair.fingerprint() {
		return false
	}
	if l.refusedMaterial == nil {
		l.refusedMaterial = map[string]string{}
	}
	l.refusedMaterial[pair.fingerprint()] = msg
	return true
}

// RefusedMaterial is the Secret material HAProxy refused (Refuse), by
// fingerprint, with its message: saved with the last good state.
func (l *Loader) RefusedMaterial() map[string]string { return maps.Clone(l.refusedMaterial) }

// RestoreRefusedMaterial takes back what RefusedMaterial gave, at a start.
func (l *Loader) RestoreRefusedMaterial(m map[string]string) {
	if len(m) > 0 {
		l.refusedMaterial = maps.Clone(m)
	}
}

// forgetRefusedMaterial drops the refusals of material no Secret holds
// any more, so the record does not grow with every bad version.
func (l *Loader) forgetRefusedMaterial(secrets []Secret) {
	held := make(map[string]bool, len(l.refusedMaterial))
	for i := range secrets {
		s := &secrets[i]
		fp := secretPair{crt: s.Data["tls.crt"], key: s.Data["tls.key"]}.fingerprint()
		if _, ok := l.refusedMaterial[fp]; ok {
			held[fp] = true
		}
	}
	for fp := range l.refusedMaterial {
		if !held[fp] {
			delete(l.refusedMaterial, fp)
		}
	}
}

// decode brings the per-path cache in step with files and returns the
// objects in force and the decoding diagnostics.
func (l *Loader) decode(files []SourceFile) (Objects, Diagnostics) {
	objs, _, diags := l.decodeWithMemos(files)
	return objs, diags
}

// decodeWithMemos is decode also returning the admission memos of the
// objects, parallel to them.
func (l *Loader) decodeWithMemos(files []SourceFile) (Objects, *memos, Diagnostics) {
	// Hashing a cold snapshot is a few milliseconds per core.
	all := make([]string, len(files))
	parallel.For(len(files), 16, func(i int) {
		if all[i] = files[i].Hash; all[i] == "" {
			sum := sha256.Sum256(files[i].Data)
			all[i] = hex.EncodeToString(sum[:])
		}
	})
	present := make(map[string]bool, len(files))
	var changed []SourceFile
	var hashes []string
	for i, f := range files {
		if present[f.Path] {
			continue // the snapshot reader never lists a path twice
		}
		present[f.Path] = true
		if st, ok := l.gone[f.Path]; ok {
			l.files[f.Path] = st // back before a commit: as it was
			delete(l.gone, f.Path)
		}
		hash := all[i]
		if st := l.files[f.Path]; st != nil && st.hash == hash {
			continue
		}
		changed = append(changed, f)
		hashes = append(hashes, hash)
	}

	for i, r := range decodeFiles(changed, l.limits) {
		l.parsed++
		st := l.files[changed[i].Path]
		if st == nil {
			st = &fileState{}
			l.files[changed[i].Path] = st
		}
		st.hash, st.diags, st.failed = hashes[i], r.diags, r.failed
		if r.failed && len(r.objs.RouterConfigs) > 0 {
			// The file contributes nothing, so its settings are never
			// resolved: their own errors (a bad duration beside an
			// unknown field) came one fix at a time. Judged here, they
			// are reported with the rest.
			st.diags = withSettingsDiags(st.diags, r.objs.RouterConfigs)
		}
		// A broken file that names the RouterConfig kind may be the
		// router's settings: see Result.RouterUnsettled.
		st.mayConfigure = r.failed && routerConfigKind.Match(changed[i].Data)
		st.kept, st.partial = nil, false
		objs := r.objs
		switch {
		case !r.failed:
		case r.partial && st.good != nil && perObject(st.good) && perObject(&objs):
			st.kept, st.partial = keepLastGood(&objs, st.good), true
		default:
			continue // the last good content stays whole
		}
		memo := newFileMemo(&objs)
		if st.good != nil {
			memo.carryOver(st.good, st.memo, &objs)
		}
		st.good, st.memo = &objs, memo
	}
	for path, st := range l.files {
		if !present[path] {
			if l.gone == nil {
				l.gone = map[string]*fileState{}
			}
			l.gone[path] = st
			delete(l.files, path)
		}
	}

	paths := make([]string, 0, len(l.files))
	for path := range l.files {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	var good []*fileState
	var nc int
	var diags Diagnostics
	l.broken = nil
	for _, path := range paths {
		st := l.files[path]
		diags = append(diags, st.diags...)
		if st.failed {
			diags = append(diags, keptNote(path, st.good != nil, st.partial, len(st.kept)))
			if st.good != nil {
				l.broken = append(l.broken, path)
			}
		}
		if st.good != nil {
			good = append(good, st)
			nc += len(st.good.RouterConfigs)
		}
	}
	var objs Objects
	m := &memos{}
	objs.Routes, m.routes = l.routes.update(good, func(st *fileState) (*[]*Route, []routeMemo) {
		return &st.good.Routes, st.memo.routes
	})
	objs.Endpoints, m.endpoints = l.endpoints.update(good, func(st *fileState) (*[]*Endpoints, []groupsMemo) {
		return &st.good.Endpoints, st.memo.endpoints
	})
	objs.EndpointSlices, m.slices = l.slices.update(good, func(st *fileState) (*[]EndpointSlice, []groupsMemo) {
		return &st.good.EndpointSlices, st.memo.slices
	})
	objs.RouterConfigs = withCap[RouterConfig](nc)
	for _, st := range good {
		objs.RouterConfigs = append(objs.RouterConfigs, st.good.RouterConfigs...)
		objs.Secrets = appendShared(objs.Secrets, st.good.Secrets)
	}
	return objs, m, diags
}

// withSettingsDiags adds to ds, the diagnostics of a file that failed to
// decode, the errors and warnings of resolving its RouterConfigs, but not
// those about a field ds already has an error on or in (a field that did
// not decode reads as unset, and "required" would say it again), nor the
// notes on what settings fall back on.
func withSettingsDiags(ds Diagnostics, rcs []RouterConfig) Diagnostics {
	_, more := resolveSettings(rcs, nil)
	related := func(f string) bool {
		for _, d := range ds {
			if d.Severity == SeverityError && d.Field != "" && f != "" &&
				(d.Field == f || strings.HasPrefix(d.Field, f+".") || strings.HasPrefix(f, d.Field+".")) {
				return true
			}
		}
		return false
	}
	out := slices.Clone(ds)
	for _, d := range more {
		if d.Severity != SeverityNote && !related(d.Field) {
			out = append(out, d)
		}
	}
	return out
}

// withCap returns an empty slice with room for n, or nil for n = 0 (as
// appending nothing would have left it).
func withCap[T any](n int) []T {
	if n == 0 {
		return nil
	}
	return make([]T, 0, n)
}

// keptNote says what a failed file contributes, so operators know the
// served state differs from the file as written.
func keptNote(path string, kept, partial bool, objects int) Diagnostic {
	d := Diagnostic{Pos: Position{Path: path, Line: 1, Col: 1}, Severity: SeverityWarning}
	switch {
	case partial && objects > 0:
		d.Message = fmt.Sprintf("file has errors: its objects that decode apply; %d other(s), with errors or gone from it, keep their last good version", objects)
	case partial:
		d.Message = "file has errors: its objects that decode apply; those with errors have no last good version and are left out"
	case kept:
		d.Message = "file has errors: its last good content stays in force"
	default:
		d.Severity = SeverityNote
		d.Message = "file has errors: it contributes nothing until fixed"
	}
	return d
}

// perObject reports whether the objects of a file can stand for
// themselves when some of them break: Routes, Endpoints and
// EndpointSlices. A file with a RouterConfig or a Secret keeps its last
// good content whole, as the settings and certificate material in force
// are saved and judged per file.
func perObject(objs *Objects) bool {
	return len(objs.RouterConfigs) == 0 && len(objs.Secrets) == 0
}

// keepLastGood adds to objs, the objects of a file's current content that
// decode, the last good version from good of every object that objs lacks:
// those that broke, and those gone from a content that is not well formed
// (DESIGN §7: only a well-formed generation deletes an object). It
// returns which objects it kept.
func keepLastGood(objs *Objects, good *Objects) map[objectID]bool {
	kept := map[objectID]bool{}
	objs.Routes = keepMissing(objs.Routes, good.Routes, routeID, kept)
	objs.Endpoints = keepMissing(objs.Endpoints, good.Endpoints, endpointsID, kept)
	objs.EndpointSlices = keepMissing(objs.EndpointSlices, good.EndpointSlices,
		func(s EndpointSlice) objectID { return sliceID(&s) }, kept)
	return kept
}

// keepMissing is keepLastGood for one kind: cur followed by the objects of
// good that cur has none of, each noted in kept. The result is a fresh
// slice: cur's may share its array with the chunks it was decoded in.
func keepMissing[T any](cur, good []T, id func(T) objectID, kept map[objectID]bool) []T {
	have := make(map[objectID]bool, len(cur))
	for _, o := range cur {
		have[id(o)] = true
	}
	out := slices.Clip(cur)
	for _, o := range good {
		if k := id(o); !have[k] {
			kept[k] = true
			out = append(out, o)
		}
	}
	return out
}
