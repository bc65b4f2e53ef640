package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/snapshot"
)

// Last good survives restarts (DESIGN §7). A package upgrade restarts
// haroute; if the tree holds a broken file at that moment, the objects it
// held must keep serving. So every accepted generation's inputs are saved
// in <state-dir>/lastgood: the files as accepted, and, for a path whose
// accepted content is broken or holds stale objects, the last content of
// that path that was good (its anchor). At start the anchors are loaded
// first and the accepted files over them, which rebuilds the same last
// good versions; a config dir that cannot be read at all then serves the
// saved state.
//
// File contents are stored once each, by content hash, so a change writes
// the files that changed and a small index; the writes run off the
// reconcile loop, latest state wins, so a burst of changes costs one save.

const lastGoodDir = "lastgood"

// savedVersion is the version of lastgood/index.json this haroute writes.
// Version 2 added Definitions: an index of version 1 records no choice
// between two definitions of one route, and the first load takes the first
// by position (README, Upgrading). A newer version is read for what this
// one knows, with a warning.
const savedVersion = 2

// The index is written twice, to indexFile and then to indexCopyFile: an
// index that cannot be read (a bad block, a hand's edit) lost the whole
// saved state, and with it every last good version that a file broken at
// the next restart needed.
const indexFile, indexCopyFile = "index.json", "index.copy.json"

// savedIndex is lastgood/index.json.
type savedIndex struct {
	Version int          `json:"version"`
	Files   []savedEntry `json:"files"`
	Anchors []savedEntry `json:"anchors,omitempty"`
	// RouterConfig is the file of the last RouterConfig whose settings
	// were in force: loaded before anything else at start, so a
	// RouterConfig that is missing, invalid, doubled or refused by
	// HAProxy at that moment keeps its settings across a restart too.
	RouterConfig *savedEntry `json:"routerConfig,omitempty"`
	// DefaultCertificate and DefaultDestinationCA are content hashes of
	// the TLS material in force.
	DefaultCertificate   string `json:"defaultCertificate,omitempty"`
	DefaultDestinationCA string `json:"defaultDestinationCA,omitempty"`
	// Layout is the config dir's layout when the state was read
	// (snapshot.Mode): at start, an empty directory that had a commit
	// point is not a generation without routes (Reader.AssumeLayout).
	Layout string `json:"layout,omitempty"`
	// StatsCredentials is the content hash of "user:password".
	StatsCredentials string `json:"statsCredentials,omitempty"`
	// ClientCA is the content hash of the client certificates' CA.
	ClientCA string `json:"clientCA,omitempty"`
	// ErrorPages are the content hashes of custom error pages, by code.
	ErrorPages map[int]string `json:"errorPages,omitempty"`
	// ConflictWinners are the routes that served a claim another route
	// lost: a restart keeps them (model.Loader.PreferWinners), where its
	// history-free first decision would go by creationTimestamp.
	ConflictWinners []savedRoute `json:"conflictWinners,omitempty"`
	// Definitions are, for routes defined in more than one file, the file
	// whose definition served: a restart keeps it
	// (model.Loader.PreferDefinitions), where its first load would take
	// the first by position (and a route went to a copy without
	// endpoints).
	Definitions []savedRoute `json:"definitions,omitempty"`
	// RefusedSecrets is the Secret material HAProxy refused, by
	// fingerprint, with its message (model.Loader.RefusedMaterial): a
	// restart must not take it for good, or serve it when a Secret's
	// last good version is there to serve.
	RefusedSecrets map[string]string `json:"refusedSecrets,omitempty"`
}

type savedRoute struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Path      string `json:"path,omitempty"` // Definitions only
}

type savedEntry struct {
	Path string `json:"path"`
	Hash string `json:"hash"`
}

// saved is the last good state read back at start.
type saved struct {
	files, anchors []model.SourceFile
	routerConfig   *model.SourceFile
	material       *certgen.Material
	// routes are what the saved state admits: what a first generation
	// read at start is compared with by the deletion guard.
	routes      []*model.AdmittedRoute
	winners     []model.RouteKey
	definitions map[model.RouteKey]string
	refused     map[string]string
	layout      snapshot.Mode
	// rivals are the saved state's rejected and stale routes (rivalsOf),
	// for the deletion guard before the first sync.
	rivals map[model.RouteKey]bool
	// lost names the saved entries that could not be used (missing or
	// damaged on disk), with why.
	lost []string
}

// saveRequest is one state to save: the files as accepted, the anchors
// of broken paths, and the TLS material. It shares memory with the
// daemon's snapshot, which is never modified.
type saveRequest struct {
	layout         snapshot.Mode
	files, anchors []model.SourceFile
	routerConfig   *model.SourceFile
	material       certgen.Material
	winners        []model.RouteKey
	definitions    map[model.RouteKey]string
	refused        map[string]string
}

// lastGoodStore saves states in the background.
type lastGoodStore struct {
	dir  string
	log  *slog.Logger
	reqs chan saveRequest
	// done is closed when the writer has stopped (tests wait on it).
	done chan struct{}
	// stored is the set of content hashes on disk (the writer's own);
	// saved is the index last written, with whether there is one.
	stored map[string]bool
	saved  savedIndex
	wrote  bool
	// every is the least time between two saves: a burst of changes
	// costs one save, and the index (a line per file) is not rewritten
	// for every endpoint change at 10k routes.
	every time.Duration
	// failed, when set, is told of a save that failed (status shows it);
	// retryAfter is the first wait before the same state is saved again.
	failed     func(error)
	retryAfter time.Duration
}

func newLastGoodStore(stateDir string, log *slog.Logger) *lastGoodStore {
	return &lastGoodStore{dir: filepath.Join(stateDir, lastGoodDir), log: log,
		reqs: make(chan saveRequest, 1), done: make(chan struct{}), every: time.Second, retryAfter: 5 * time.Second}
}

// save queues r, replacing a queued state not yet written.
func (s *lastGoodStore) save(r saveRequest) {
	for {
		select {
		case s.reqs <- r:
			return
		default:
		}
		select {
		case <-s.reqs:
		default:
		}
	}
}

// run writes queued states until ctx ends, then writes what is queued.
// A save that fails (a full or read-only state disk) is tried again,
// 5 s then doubling up to 5 min, until it succeeds or a newer state
// replaces it: saved only at the next accepted change, the state on disk
// lagged what served, and a restart brought back older versions.
func (s *lastGoodStore) run(ctx context.Context) {
	defer close(s.done)
	for {
		select {
		case r := <-s.reqs:
			s.writeRetrying(ctx, r)
			select {
			case <-time.After(s.every):
			case <-ctx.Done():
			}
		case <-ctx.Done():
			select {
			case r := <-s.reqs:
				s.write(r)
			default:
			}
			return
		}
	}
}

// writeRetrying writes r, and after a failure again, 5 s then doubling up
// to 5 min, until it succeeds, a newer state replaces it (written at
// once), or ctx ends.
func (s *lastGoodStore) writeRetrying(ctx context.Context, r saveRequest) {
	wait := s.retryAfter
	for {
		err := s.write(r)
		if err == nil {
			return
		}
		if s.failed != nil {
			s.failed(fmt.Errorf("save the last good state in %s (will retry): %w", s.dir, err))
		}
		select {
		case r = <-s.reqs:
		case <-time.After(wait):
			wait = min(2*wait, 5*time.Minute)
		case <-ctx.Done():
			return
		}
	}
}

// write saves r. Contents no index names any more are removed once they
// are as many as the ones named (and after a failed save, which may have
// found the disk full): an edited file's old versions piled up before,
// until a small state disk was full for good.
func (s *lastGoodStore) write(r saveRequest) error {
	objects := filepath.Join(s.dir, "objects")
	if err := os.MkdirAll(objects, 0o700); err != nil {
		s.log.Error("save last good state", "err", err)
		return err
	}
	if s.stored == nil {
		s.stored = map[string]bool{}
		if entries, err := os.ReadDir(objects); err == nil {
			for _, e := range entries {
				s.stored[e.Name()] = true
			}
		}
	}
	idx := savedIndex{Version: savedVersion, RefusedSecrets: r.refused, Layout: string(r.layout)}
	for _, k := range r.winners {
		idx.ConflictWinners = append(idx.ConflictWinners, savedRoute{Namespace: k.Namespace, Name: k.Name})
	}
	for k, path := range r.definitions {
		idx.Definitions = append(idx.Definitions, savedRoute{Namespace: k.Namespace, Name: k.Name, Path: path})
	}
	slices.SortFunc(idx.Definitions, func(a, b savedRoute) int {
		return model.RouteKey{Namespace: a.Namespace, Name: a.Name}.Compare(model.RouteKey{Namespace: b.Namespace, Name: b.Name})
	})
	store := func(data []byte) (string, error) {
		hash := contentHash(data)
		if s.stored[hash] {
			return hash, nil
		}
		// Contents may hold private keys.
		if err := fsutil.WriteFileAtomic(filepath.Join(objects, hash), data, 0o600); err != nil {
			return "", err
		}
		s.stored[hash] = true
		return hash, nil
	}
	entries := func(fs []model.SourceFile) ([]savedEntry, error) {
		out := make([]savedEntry, 0, len(fs))
		for _, f := range fs {
			hash := f.Hash
			if hash == "" || !s.stored[hash] {
				var err error
				if hash, err = store(f.Data); err != nil {
					return nil, err
				}
			}
			out = append(out, savedEntry{Path: f.Path, Hash: hash})
		}
		return out, nil
	}
	var err error
	if idx.Files, err = entries(r.files); err == nil {
		idx.Anchors, err = entries(r.anchors)
	}
	if err == nil && r.routerConfig != nil {
		var rc []savedEntry
		if rc, err = entries([]model.SourceFile{*r.routerConfig}); err == nil {
			idx.RouterConfig = &rc[0]
		}
	}
	m := r.material
	if err == nil && len(m.DefaultCertificate) > 0 {
		idx.DefaultCertificate, err = store(m.DefaultCertificate)
	}
	if err == nil && len(m.DefaultDestinationCA) > 0 {
		idx.DefaultDestinationCA, err = store(m.DefaultDestinationCA)
	}
	if c := m.StatsCredentials; err == nil && c.Set() {
		idx.StatsCredentials, err = store([]byte(c.User + ":" + c.Password + "\n"))
	}
	if err == nil && len(m.ClientCA) > 0 {
		idx.ClientCA, err = store(m.ClientCA)
	}
	for code, page := range m.ErrorPages {
		if err != nil {
			break
		}
		if idx.ErrorPages == nil {
			idx.ErrorPages = map[int]string{}
		}
		idx.ErrorPages[code], err = store(page)
	}
	if err == nil {
		var data []byte
		if data, err = json.Marshal(idx); err == nil {
			err = fsutil.WriteFileAtomic(filepath.Join(s.dir, indexFile), data, 0o600)
		}
		if err == nil {
			s.writeCopy(data)
		}
	}
	if err != nil {
		s.log.Error("save last good state", "err", err)
		if s.wrote {
			s.prune(named(s.saved)) // what the index on disk names stays
		}
		return err
	}
	s.saved, s.wrote = idx, true
	if keep := named(idx); len(s.stored) > 2*len(keep)+16 {
		s.prune(keep)
	}
	return nil
}

// writeCopy writes the index's copy. The index itself is saved: a copy
// that cannot be written fails nothing, but it is removed, so that an
// older state cannot come back from it (and failing the save made its
// clean-up delete what the new index names).
func (s *lastGoodStore) writeCopy(data []byte) {
	path := filepath.Join(s.dir, indexCopyFile)
	err := fsutil.WriteFileAtomic(path, data, 0o600)
	if err == nil {
		return
	}
	if rerr := os.RemoveAll(path); rerr != nil {
		err = errors.Join(err, rerr)
	}
	s.log.Warn("saved last good index: its copy not written; the index alone holds the state", "err", err)
}

// named is the set of content hashes idx names.
func named(idx savedIndex) map[string]bool {
	keep := map[string]bool{}
	for _, h := range []string{idx.DefaultCertificate, idx.DefaultDestinationCA, idx.StatsCredentials, idx.ClientCA} {
		if h != "" {
			keep[h] = true
		}
	}
	for _, h := range idx.ErrorPages {
		keep[h] = true
	}
	for _, e := range append(idx.Files, idx.Anchors...) {
		keep[e.Hash] = true
	}
	if idx.RouterConfig != nil {
		keep[idx.RouterConfig.Hash] = true
	}
	return keep
}

// prune removes the contents not in keep.
func (s *lastGoodStore) prune(keep map[string]bool) {
	objects := filepath.Join(s.dir, "objects")
	entries, err := os.ReadDir(objects)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			_ = os.Remove(filepath.Join(objects, e.Name()))
			delete(s.stored, e.Name())
		}
	}
}

var hashName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// readIndex reads the index named name; none there is (nil, nil).
func (s *lastGoodStore) readIndex(name string) (*savedIndex, error) {
	path := filepath.Join(s.dir, name)
	data, err := fsutil.ReadRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var idx savedIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if idx.Version > savedVersion {
		s.log.Warn("saved last good state written by a newer haroute; what this one does not know of it is ignored (a downgrade)",
			"index", path, "version", idx.Version, "known", savedVersion)
	}
	return &idx, nil
}

// copyBehind is how much older the index's copy was last written than the
// index itself (zero when either cannot be looked at).
func (s *lastGoodStore) copyBehind() time.Duration {
	idx, err := os.Stat(filepath.Join(s.dir, indexFile))
	if err != nil {
		return 0
	}
	cp, err := os.Stat(filepath.Join(s.dir, indexCopyFile))
	if err != nil {
		return 0
	}
	return max(idx.ModTime().Sub(cp.ModTime()), 0)
}

// load reads the saved state; none saved is (nil, nil). An index that
// cannot be used gives way to its copy, which says the same.
func (s *lastGoodStore) load() (*saved, error) {
	idx, err := s.readIndex(indexFile)
	if idx == nil {
		cp, cerr := s.readIndex(indexCopyFile)
		switch {
		case cp != nil && err != nil:
			s.log.Warn("saved last good index unusable; its copy is used", "err", err)
			if behind := s.copyBehind(); behind > time.Second {
				// Written together, they are as old as each other: a
				// version that keeps no copy (a downgrade) updated the
				// index alone, and the copy is a state from before.
				s.log.Error("the copy of the saved index is older than the index: it may be a state from before a downgrade, and bring back what was changed since",
					"older_by", behind.Round(time.Second))
			}
		case cp != nil:
			s.log.Warn("saved last good index missing; its copy is used", "copy", filepath.Join(s.dir, indexCopyFile))
		default:
			err = errors.Join(err, cerr)
		}
		if idx = cp; idx == nil {
			return nil, err
		}
	}
	read := func(hash string) ([]byte, error) {
		// The hash names a file: it must not name anything else.
		if !hashName.MatchString(hash) {
			return nil, fmt.Errorf("saved state names %q, not a content hash", hash)
		}
		b, err := fsutil.ReadRegular(filepath.Join(s.dir, "objects", hash))
		if err != nil {
			return nil, err
		}
		if contentHash(b) != hash {
			return nil, fmt.Errorf("saved content %s is damaged", hash)
		}
		return b, nil
	}
	// One unusable entry (a file lost or damaged on the state disk) costs
	// what it held, not the whole state: every other file keeps its last
	// good version. The losses are reported.
	var sv saved
	files := func(es []savedEntry) []model.SourceFile {
		out := make([]model.SourceFile, 0, len(es))
		for _, e := range es {
			b, err := read(e.Hash)
			if err != nil {
				sv.lost = append(sv.lost, fmt.Sprintf("%s: %v", e.Path, err))
				continue
			}
			out = append(out, model.SourceFile{Path: e.Path, Data: b, Hash: e.Hash})
		}
		return out
	}
	for _, r := range idx.ConflictWinners {
		sv.winners = append(sv.winners, model.RouteKey{Namespace: r.Namespace, Name: r.Name})
	}
	for _, r := range idx.Definitions {
		if sv.definitions == nil {
			sv.definitions = map[model.RouteKey]string{}
		}
		sv.definitions[model.RouteKey{Namespace: r.Namespace, Name: r.Name}] = r.Path
	}
	sv.refused, sv.layout = idx.RefusedSecrets, snapshot.Mode(idx.Layout)
	sv.files = files(idx.Files)
	sv.anchors = files(idx.Anchors)
	if idx.RouterConfig != nil {
		if rc := files([]savedEntry{*idx.RouterConfig}); len(rc) == 1 {
			sv.routerConfig = &rc[0]
		}
	}
	if idx.DefaultCertificate != "" {
		// The TLS material is used whole or not at all: a default
		// certificate without the client CA its settings require would
		// not render.
		m, err := readMaterial(*idx, read)
		if err != nil {
			sv.lost = append(sv.lost, fmt.Sprintf("TLS material: %v", err))
		} else {
			sv.material = m
		}
	}
	return &sv, nil
}

// readMaterial reads the TLS material idx names.
func readMaterial(idx savedIndex, read func(hash string) ([]byte, error)) (*certgen.Material, error) {
	m := certgen.Material{}
	var err error
	if m.DefaultCertificate, err = read(idx.DefaultCertificate); err != nil {
		return nil, err
	}
	if idx.DefaultDestinationCA != "" {
		if m.DefaultDestinationCA, err = read(idx.DefaultDestinationCA); err != nil {
			return nil, err
		}
	}
	if idx.StatsCredentials != "" {
		b, err := read(idx.StatsCredentials)
		if err != nil {
			return nil, err
		}
		if m.StatsCredentials, err = model.ParseStatsCredentials(b); err != nil {
			return nil, fmt.Errorf("saved stats credentials: %w", err)
		}
	}
	if idx.ClientCA != "" {
		if m.ClientCA, err = read(idx.ClientCA); err != nil {
			return nil, err
		}
	}
	for code, h := range idx.ErrorPages {
		if m.ErrorPages == nil {
			m.ErrorPages = map[int][]byte{}
		}
		if m.ErrorPages[code], err = read(h); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// saveLastGood queues gen's inputs for saving and moves the anchors on:
// a path whose content is good now is its own anchor.
func (d *Daemon) saveLastGood(gen generation) {
	stale := gen.result.StalePaths()
	req := saveRequest{layout: d.reader.Layout(), files: gen.files, material: gen.material, winners: gen.result.ConflictWinners, definitions: gen.result.Definitions,
		refused: d.loader.RefusedMaterial()}
	// A Secret moved to another file and broken there in one change
	// serves its last good version from the content of the file it came
	// from, which is good (or gone) now: that content stays the file's
	// anchor while the Secret is stale, or a restart found no good
	// version and rejected the Secret's routes.
	keep := map[string]bool{}
	for _, p := range gen.result.SecretSources() {
		if a, ok := d.anchors[p]; ok {
			keep[p] = true
			req.anchors = append(req.anchors, a)
		}
	}
	anchored := 0
	for _, f := range gen.files {
		if keep[f.Path] {
			anchored++
			continue
		}
		if stale[f.Path] || d.loader.Failed(f.Path) {
			if a, ok := d.anchors[f.Path]; ok {
				anchored++
				if a.Hash != f.Hash {
					req.anchors = append(req.anchors, a)
				}
			}
			continue
		}
		anchored++
		if a, ok := d.anchors[f.Path]; !ok || a.Hash != f.Hash || f.Hash == "" {
			d.anchors[f.Path] = f
		}
	}
	if len(d.anchors) > anchored {
		// Some anchored path is gone from the generation.
		present := make(map[string]bool, len(gen.files))
		for _, f := range gen.files {
			present[f.Path] = true
		}
		for p := range d.anchors {
			if !present[p] && !keep[p] {
				delete(d.anchors, p)
			}
		}
	}
	// The RouterConfig whose settings are in force is saved on its own:
	// one gone from the tree, invalid, doubled or refused by HAProxy
	// keeps the last good settings while haroute runs, and must across a
	// restart too (a restart came up on 0.0.0.0:80/443/1936, or started
	// HAProxy on the refused settings).
	d.noteRouterConfig(gen.result, gen.files)
	req.routerConfig = d.rcAnchor
	d.store.save(req)
}

// noteRouterConfig remembers, from files, the file of the RouterConfig of
// res when its settings are the ones in force.
func (d *Daemon) noteRouterConfig(res model.Result, files []model.SourceFile) {
	if !res.RouterConfigInForce() {
		return
	}
	path := res.Objects.RouterConfigs[0].Source.Pos.Path
	if d.loader.Failed(path) {
		// Its settings come from the file's last good content, which is
		// what the anchor holds already. Saved, the current content
		// restored no settings at all: a restart came up on the defaults
		// (0.0.0.0:80/443/1936) when a file the RouterConfig names was
		// unusable too.
		return
	}
	for i := range files {
		if files[i].Path == path {
			if d.rcAnchor == nil || d.rcAnchor.Hash != files[i].Hash || files[i].Hash == "" {
				d.rcAnchorBefore = d.rcAnchor
			}
			f := files[i]
			d.rcAnchor = &f
			return
		}
	}
}

// restore loads the saved last good state into the loader, so objects
// broken in the tree at start keep their last good versions.
func (d *Daemon) restore() {
	sv, err := d.store.load()
	if err != nil {
		d.log.Warn("saved last good state unreadable; starting from the directory alone", "err", err)
		return
	}
	if sv == nil {
		return
	}
	if len(sv.lost) > 0 {
		d.log.Error("saved last good state partly unusable: the last good versions of these are lost; the rest is restored", "lost", sv.lost)
		d.metrics.SnapshotError()
		d.recordError(fmt.Errorf("saved last good state in %s: %d entries unusable (%s); the rest is restored",
			d.store.dir, len(sv.lost), strings.Join(sv.lost, "; ")))
	}
	// The saved state's own decisions: which routes served the claims
	// they shared with others.
	d.loader.PreferWinners(sv.winners)
	d.loader.PreferDefinitions(sv.definitions)
	var settings *model.Settings
	if rc := sv.routerConfig; rc != nil {
		// Its settings are the last good ones whatever the saved tree
		// holds (see saveLastGood): loaded first, they are the fallback
		// for a RouterConfig there that is invalid or doubled, and
		// restored last, since loading the tree commits the settings of
		// one that is valid but which HAProxy refused.
		res := d.loader.Load([]model.SourceFile{*rc})
		if res.RouterConfigInForce() && !d.loader.Failed(rc.Path) {
			s := res.Desired.Router
			settings, d.rcAnchor = &s, rc
		} else {
			// Saved by an earlier version from a file that had errors:
			// its "settings" would be the defaults, ports included.
			d.log.Warn("saved RouterConfig does not load; not restoring settings from it", "file", rc.Path)
		}
	}
	if len(sv.anchors) > 0 {
		byPath := make(map[string]model.SourceFile, len(sv.files))
		for _, f := range sv.files {
			byPath[f.Path] = f
		}
		for _, a := range sv.anchors {
			byPath[a.Path] = a
			d.anchors[a.Path] = a
		}
		first := make([]model.SourceFile, 0, len(byPath))
		for _, f := range byPath {
			first = append(first, f)
		}
		d.loader.Load(first)
	}
	// Known before the tree loads (its anchors already have): a Secret
	// holding refused material serves its last good version.
	d.loader.RestoreRefusedMaterial(sv.refused)
	res := d.loader.Load(sv.files)
	sv.routes, sv.rivals = res.Desired.Routes, rivalsOf(res.Desired.Statuses)
	if settings != nil {
		d.loader.RestoreSettings(*settings)
	}
	for _, f := range sv.files {
		d.lastFiles[f.Path] = f
		if _, ok := d.anchors[f.Path]; !ok && !d.loader.Failed(f.Path) {
			d.anchors[f.Path] = f
		}
	}
	if sv.layout != "" {
		d.reader.AssumeLayout(sv.layout)
	}
	d.material = sv.material
	d.restored = sv
	d.log.Info("restored the last good state", "files", len(sv.files), "anchors", len(sv.anchors))
}
