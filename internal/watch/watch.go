// Package watch turns filesystem activity in the config directory into
// "something may have changed" triggers for the daemon. It never reads
// config files: the daemon reads a snapshot and compares hashes, so a
// spurious trigger costs one cheap read, while a missed one would leave the
// router stale. Hence watches on directories (never on files, which the
// publishers replace), a periodic resync, and recovery when the directory
// vanishes and comes back.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/haroute/haroute/internal/snapshot"
)

// Defaults for zero Options fields.
const (
	DefaultDebounce = 250 * time.Millisecond
	DefaultResync   = 60 * time.Second
	DefaultPoll     = time.Second
	// maxDebounceFactor caps a trailing debounce at this many Debounce
	// periods, so a file rewritten without pause cannot hold back a
	// trigger forever.
	maxDebounceFactor = 10
	// maxWriterHold bounds how long a plain-mode change waits for a file
	// still open for writing (see writing): a process that keeps one
	// open for good must not hold every change back.
	maxWriterHold = 30 * time.Second
)

// Options configure Watch.
type Options struct {
	// Dir is the config directory (--config-dir).
	Dir string
	// Mode is the layout; ModeAuto (or "") detects it each time the watches
	// are set up, so a directory that comes back in another layout works.
	Mode snapshot.Mode
	// Debounce is the trailing quiet period in plain mode (default 250ms).
	// Atomic and link modes have a commit point and trigger at once.
	Debounce time.Duration
	// Resync triggers periodically even without events (default 60s), so a
	// missed event costs at most one interval.
	Resync time.Duration
	// Poll is how often a missing directory is looked for (default 1s); a
	// watch on its parent usually notices it sooner.
	Poll time.Duration
	// Logger receives watch problems and state changes (default: discard).
	Logger *slog.Logger
	// OnEvent, when set, is called once for every filesystem event that
	// counts as a change (for metrics); not for resyncs or ignored events.
	OnEvent func()
	// Settling, when set, is true while a plain-mode burst of changes has
	// not yet triggered (its quiet period, or a file still open for
	// writing): a resync the daemon is asked for (SIGHUP) waits for the
	// burst's trigger rather than read files half written.
	Settling *atomic.Bool
}

// Watch sends on out whenever the config directory may have changed, until
// ctx is done (then it returns nil). Sends never block: out should have
// capacity 1, so a burst collapses into one pending trigger. One trigger is
// sent as soon as the watches are in place, so a change made before
// watching began is not missed. When no watcher can be made (inotify
// limits), it polls until one can (pollUntilWatcher). It fails only on an
// empty Dir or a watcher whose streams close.
func Watch(ctx context.Context, opts Options, out chan<- struct{}) error {
	if opts.Dir == "" {
		return errors.New("watch: no config dir")
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("watch %s: %w", opts.Dir, err)
	}
	w := &watcher{
		opts:   opts,
		dir:    abs,
		parent: filepath.Dir(abs),
		out:    out,
		log:    opts.Logger,
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.opts.Debounce <= 0 {
		w.opts.Debounce = DefaultDebounce
	}
	if w.opts.Resync <= 0 {
		w.opts.Resync = DefaultResync
	}
	if w.opts.Poll <= 0 {
		w.opts.Poll = DefaultPoll
	}
	if w.opts.Mode == "" {
		w.opts.Mode = snapshot.ModeAuto
	}
	if w.fw = w.pollUntilWatcher(ctx); w.fw == nil {
		return nil // ctx is done
	}
	defer w.fw.Close()
	return w.run(ctx)
}

// newWatcher makes the inotify watcher, and addWatch adds a directory of
// a plain tree to it; tests replace them.
var (
	newWatcher = fsnotify.NewWatcher
	addWatch   = (*fsnotify.Watcher).Add
)

// pollUntilWatcher returns a new watcher, or nil once ctx is done.
// inotify instances are counted per user (fs.inotify.max_user_instances,
// 128 by default), and a busy host runs out of them. Without a watcher
// nothing would trigger again, and the router would go stale for good,
// silently. So until one can be made, the directory is polled: every Poll
// its signature is taken, and a change that has held for one Poll (a
// debounce: a file still being written must not be read) triggers; the
// resync keeps running. It tries for a watcher again at every Poll.
func (w *watcher) pollUntilWatcher(ctx context.Context) *fsnotify.Watcher {
	fw, err := newWatcher()
	if err == nil {
		return fw
	}
	w.log.Warn("cannot watch the config dir; polling it until a watcher can be made "+
		"(raise fs.inotify.max_user_instances if inotify instances run out)",
		"dir", w.dir, "every", w.opts.Poll, "err", err)
	// The signature to compare with is taken before the trigger: a change
	// made after the read the trigger causes must differ from it.
	w.polled.reset(w.dir, w.opts.Mode)
	w.trigger()
	resync := time.NewTicker(w.opts.Resync)
	defer resync.Stop()
	tick := time.NewTicker(w.opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-resync.C:
			w.trigger()
		case <-tick.C:
			w.poll()
			if fw, err := newWatcher(); err == nil {
				w.log.Info("config dir watched again", "dir", w.dir)
				return fw
			}
		}
	}
}

// loseWatches marks the watches lost: from now on the poll ticks look
// at the directory, from its state at this moment.
func (w *watcher) loseWatches() {
	w.lost = true
	w.polled.reset(w.dir, w.opts.Mode)
}

// poll triggers when the directory's signature changed and then held for
// one poll.
func (w *watcher) poll() {
	if w.polled.settled(signature(w.dir, w.opts.Mode)) {
		w.log.Debug("config dir changed (polled)", "dir", w.dir)
		w.counted()
		w.trigger()
	}
}

// polledState is what polling remembers between ticks.
type polledState struct {
	last, pending string
}

func (p *polledState) reset(dir string, mode snapshot.Mode) {
	p.last = signature(dir, mode)
	p.pending = p.last
}

// settled reports whether sig is a change that held since the last tick.
func (p *polledState) settled(sig string) bool {
	switch {
	case sig == p.last:
		return false
	case sig == p.pending:
		p.last = sig
		return true
	default:
		p.pending = sig
		return false
	}
}

// signature describes what a poll compares: the generation the link names
// in atomic and link modes (their commit point), and in plain mode every
// entry's path, size and modification time. A directory that cannot be
// read has the error as its signature.
func signature(dir string, mode snapshot.Mode) string {
	if mode == snapshot.ModeAuto {
		m, err := snapshot.Detect(dir)
		if err != nil {
			return "error: " + err.Error()
		}
		mode = m
	}
	switch mode {
	case snapshot.ModeAtomic:
		target, err := os.Readlink(filepath.Join(dir, snapshot.DataLink))
		if err != nil {
			return "error: " + err.Error()
		}
		return "atomic " + target
	case snapshot.ModeLink:
		target, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return "error: " + err.Error()
		}
		return "link " + target
	}
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s error %v\n", p, err)
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	if err != nil {
		return "error: " + err.Error()
	}
	return b.String()
}

type watcher struct {
	opts   Options
	dir    string // absolute config dir
	parent string
	fw     *fsnotify.Watcher
	out    chan<- struct{}
	log    *slog.Logger

	mode snapshot.Mode // the layout the current watches serve
	lost bool          // the watches could not be set up; polling
	// armed is the identity (device and inode) of the directory the
	// watches were set on, to see it replaced without an event;
	// parentArmed that of the parent, whose watch holds on to the
	// directory the parent's path named then.
	armed, parentArmed dirID
	// polled is the polling state, while there are no watches.
	polled polledState

	// Trailing debounce state (plain mode).
	debounce   *time.Timer
	burstStart time.Time
	// touched are the files written in the burst, checked for writers
	// still at work when it ends; heldBy is the one last found open.
	touched map[string]bool
	heldBy  string
	// leaseWarned is set once the lease check was found not to work.
	leaseWarned bool
}

func (w *watcher) run(ctx context.Context) error {
	// A burst this watcher leaves behind triggers with the next one.
	defer w.settling(false)
	if err := w.setup(); err != nil {
		w.log.Warn("config dir not watchable yet; polling", "dir", w.dir, "err", err)
	}
	w.trigger()

	resync := time.NewTicker(w.opts.Resync)
	defer resync.Stop()
	poll := time.NewTicker(w.opts.Poll)
	defer poll.Stop()
	w.debounce = time.NewTimer(time.Hour)
	w.debounce.Stop()
	defer w.debounce.Stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fw.Events:
			if !ok {
				return fmt.Errorf("watch %s: event stream closed", w.dir)
			}
			w.handle(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return fmt.Errorf("watch %s: error stream closed", w.dir)
			}
			// Overflow means events were dropped: assume a change.
			w.log.Warn("watch error", "dir", w.dir, "err", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.trigger()
			}
		case <-resync.C:
			if !w.burstStart.IsZero() {
				// A burst is under way: its trigger comes when it ends
				// (and its writers are done); a read now could take a
				// file half written.
				continue
			}
			w.trigger()
		case <-w.debounce.C:
			if path := w.writing(); path != "" {
				if path != w.heldBy {
					w.log.Info("config file still open for writing; waiting for its writer", "file", path, "at_most", maxWriterHold)
					w.heldBy = path
				}
				w.debounce.Reset(w.opts.Debounce)
				continue
			}
			w.burstStart, w.touched, w.heldBy = time.Time{}, nil, ""
			w.settling(false)
			w.trigger()
		case <-poll.C:
			if !w.lost {
				switch id := idOf(w.dir); {
				case w.replacedInPlace():
					w.log.Info("config dir replaced in place; watching it again", "dir", w.dir)
					w.resetup()
				case idOf(w.parent) != w.parentArmed:
					// The parent's path is itself a link, moved (a
					// release directory switched): its watch saw the old
					// one, and every later swap waited for the resync.
					w.log.Info("config dir's parent moved; watching it again", "parent", w.parent)
					w.resetup()
				case w.mode == snapshot.ModeLink && id != w.armed:
					// A link that pointed nowhere now points at a
					// directory (created after the link), or at another
					// one without an event of its parent: its entry did
					// not change, so no event came. Swaps, which the
					// parent sees, pass here too, once.
					w.armed = id
					w.counted()
					w.trigger()
				}
				continue
			}
			if err := w.setup(); err == nil {
				w.log.Info("config dir is back", "dir", w.dir, "mode", w.mode)
				w.trigger()
				continue
			}
			// Still not watchable: a missing directory, or one whose
			// watches cannot be added (fs.inotify.max_user_watches used
			// up by a large tree). Changes to one that is there must
			// not wait for the resync.
			w.poll()
		}
	}
}

// trigger is the non-blocking send: a pending trigger already covers this
// one.
func (w *watcher) trigger() {
	select {
	case w.out <- struct{}{}:
	default:
	}
}

func (w *watcher) counted() {
	if w.opts.OnEvent != nil {
		w.opts.OnEvent()
	}
}

// setup replaces all watches with the ones the current layout needs: the
// parent always (the link lives there, and it sees the directory vanish and
// come back), plus the directory itself for atomic mode and the whole tree
// for plain mode. On failure the watcher is lost and polls.
func (w *watcher) setup() (err error) {
	for _, p := range w.fw.WatchList() {
		_ = w.fw.Remove(p) // may already be gone with its directory
	}
	if !w.lost {
		defer func() {
			if err != nil {
				w.loseWatches()
			}
		}()
	}
	w.lost = true
	parentErr := w.fw.Add(w.parent)
	mode := w.opts.Mode
	if mode == snapshot.ModeAuto {
		var err error
		if mode, err = snapshot.Detect(w.dir); err != nil {
			return fmt.Errorf("watch %s: %w", w.dir, err)
		}
	}
	if parentErr != nil {
		return fmt.Errorf("watch parent of %s: %w", w.dir, parentErr)
	}
	switch mode {
	case snapshot.ModeAtomic:
		if err := w.fw.Add(w.dir); err != nil {
			return fmt.Errorf("watch %s: %w", w.dir, err)
		}
	case snapshot.ModePlain:
		if err := w.addTree(w.dir); err != nil {
			return err
		}
	}
	w.mode = mode
	w.lost = false
	w.armed, w.parentArmed = idOf(w.dir), idOf(w.parent)
	w.log.Debug("watching config dir", "dir", w.dir, "mode", mode)
	return nil
}

// replacedInPlace reports whether the directory watched in atomic or plain
// mode was unmounted or mounted over (a ConfigMap volume remounted when its
// pod is recreated). The parent sees no entry change then, and inotify
// drops the directory's watch without an event fsnotify passes on
// (IN_UNMOUNT, IN_IGNORED): every later change waited for the resync. In
// link mode the name is a link whose target moves at every swap, which
// the parent's watch sees.
func (w *watcher) replacedInPlace() bool {
	if w.mode == snapshot.ModeLink {
		return false
	}
	switch id := idOf(w.dir); {
	case id == dirID{}:
		// Gone, not replaced: the parent's watch reports it (vanished),
		// and a plain directory is read after the quiet period. Taken
		// for a replacement by a poll that came first, it was read at
		// once, in the moment between the two renames of a swap.
		return false
	case id != w.armed:
		return true
	}
	// A file system mounted anew can reuse the device number and root
	// inode of the one before: the lost watch tells.
	for _, p := range w.fw.WatchList() {
		if p == w.dir {
			return false
		}
	}
	return true
}

// dirID identifies a directory: its device and inode.
type dirID struct{ dev, ino uint64 }

// idOf is the identity of the directory at path (followed, as the
// snapshot reads it), zero when it cannot be read.
func idOf(path string) dirID {
	fi, err := os.Stat(path)
	if err != nil {
		return dirID{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return dirID{}
	}
	return dirID{dev: uint64(st.Dev), ino: st.Ino}
}

// addTree watches dir and every directory below it, skipping dot names
// (.git churns without changing what is read) and symlinked directories
// (the snapshot does not follow them either).
func (w *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking; its parent saw that
			}
			return fmt.Errorf("watch %s: %w", p, err)
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err := addWatch(w.fw, p); err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return fmt.Errorf("watch %s: %w", p, err)
		}
		return nil
	})
}

// changeOps are the operations that can mean a new generation.
const changeOps = fsnotify.Create | fsnotify.Write | fsnotify.Rename | fsnotify.Remove

func (w *watcher) handle(ev fsnotify.Event) {
	if !ev.Has(changeOps) {
		return // chmod: content is unchanged
	}
	switch {
	case ev.Name == w.parent:
		// The parent itself went away: nothing left to watch.
		if ev.Has(fsnotify.Remove | fsnotify.Rename) {
			w.vanished(ev)
		}
	case ev.Name == w.dir:
		w.dirEvent(ev)
	case w.lost || filepath.Dir(ev.Name) == w.parent:
		// A sibling of the config dir, or an event from a watch that was
		// removed since: not ours.
	case ev.Name == filepath.Join(w.dir, snapshot.DataLink):
		w.dataLinkEvent(ev)
	case w.mode == snapshot.ModePlain:
		w.plainEvent(ev)
	}
}

// dataLinkEvent handles ..data: the commit point in atomic mode, and under
// auto detection the sign that the layout changed (kubelet creates the
// directory before its first ..data, so it briefly looks plain).
func (w *watcher) dataLinkEvent(ev fsnotify.Event) {
	if w.opts.Mode == snapshot.ModeAuto {
		if m, err := snapshot.Detect(w.dir); err == nil && m != w.mode {
			w.resetup()
			return
		}
	}
	if w.mode == snapshot.ModeAtomic {
		w.log.Debug("new generation", "dir", w.dir, "op", ev.Op.String())
		w.counted()
		w.trigger()
	}
}

// dirEvent handles the config dir's own name: in link mode the link swap,
// in every mode the directory vanishing or (re)appearing.
func (w *watcher) dirEvent(ev fsnotify.Event) {
	if w.mode == snapshot.ModeLink && !w.lost {
		w.log.Debug("new generation", "dir", w.dir, "op", ev.Op.String())
		w.armed = idOf(w.dir) // what the poll compares with
		w.counted()
		w.trigger()
		if ev.Has(fsnotify.Create) {
			// The link may have been replaced by a real directory.
			m, err := snapshot.Detect(w.dir)
			switch {
			case err != nil || m == w.mode:
			case w.opts.Mode == snapshot.ModeAuto:
				w.resetup()
			default:
				w.log.Warn("--watch-mode link, but the config dir is no longer a symlink: edits inside it are seen only at the resync; --watch-mode auto follows it",
					"dir", w.dir, "now", string(m))
			}
		}
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		w.resetup()
	case ev.Has(fsnotify.Remove | fsnotify.Rename):
		w.vanished(ev)
	}
}

// resetup re-establishes the watches after the directory (re)appeared.
func (w *watcher) resetup() {
	w.counted()
	if err := w.setup(); err != nil {
		w.log.Warn("config dir reappeared but cannot be watched; polling", "dir", w.dir, "err", err)
	} else {
		w.log.Info("config dir is back", "dir", w.dir, "mode", w.mode)
	}
	w.trigger()
}

// vanished drops the watches of a directory that went away; the daemon,
// triggered, finds it missing and keeps serving the last good state.
func (w *watcher) vanished(ev fsnotify.Event) {
	if _, err := os.Lstat(w.dir); err == nil {
		// Replaced in one step (renamed over): watch the new one.
		w.resetup()
		return
	}
	w.counted()
	for _, p := range w.fw.WatchList() {
		if p != w.parent || ev.Name == w.parent {
			_ = w.fw.Remove(p)
		}
	}
	w.loseWatches()
	if w.mode == snapshot.ModePlain && ev.Name != w.parent {
		// A plain directory is often swapped in two renames (mv dir
		// dir.old; mv dir.new dir): read at once, the moment between
		// them was an error, a snapshot error counted and alerted on,
		// at every deploy (T42). Read after the quiet period, as any
		// plain change is: gone for good by then, it is reported.
		w.log.Info("config dir vanished; reading it again after the quiet period", "dir", w.dir, "op", ev.Op.String(), "quiet", w.opts.Debounce)
		w.quiet()
		return
	}
	w.log.Warn("config dir vanished; waiting for it to come back", "dir", w.dir, "op", ev.Op.String())
	w.trigger()
}

func (w *watcher) settling(on bool) {
	if w.opts.Settling != nil {
		w.opts.Settling.Store(on)
	}
}

// writing returns a file written in the burst that some process still
// holds open for writing, "" when there is none or the burst has waited
// maxWriterHold. A writer that pauses longer than the quiet period (scp
// over a slow link, a tool that writes in chunks) left a file that ends
// at a line boundary, which parses: the routes past the cut were
// deleted, or their TLS settings lost, until the rest arrived.
func (w *watcher) writing() string {
	if time.Since(w.burstStart) >= maxWriterHold {
		return ""
	}
	for path := range w.touched {
		open, err := openForWriting(path)
		if err != nil && !w.leaseWarned {
			w.leaseWarned = true
			w.log.Warn("cannot tell whether config files are still being written (a read lease needs the file's owner or CAP_LEASE); a plain-mode change is read after the quiet period alone",
				"file", path, "err", err)
		}
		if open {
			return path
		}
	}
	return ""
}

// plainEvent handles a change below a plain directory: new directories get
// watches, and the trigger waits for a quiet period.
func (w *watcher) plainEvent(ev fsnotify.Event) {
	rel, err := filepath.Rel(w.dir, ev.Name)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	for _, elem := range strings.Split(rel, string(filepath.Separator)) {
		if strings.HasPrefix(elem, ".") {
			return // swap files, .git: never read
		}
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
			// Files may already be inside: the debounced trigger that
			// follows covers them.
			if err := w.addTree(ev.Name); err != nil {
				w.log.Warn("cannot watch new directory", "dir", ev.Name, "err", err)
			}
		}
	}
	w.counted()
	if (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create)) && snapshot.IsConfigName(filepath.Base(ev.Name)) {
		// Only files the snapshot reads: a log another process keeps
		// open in the tree held every change for the full wait.
		if w.touched == nil {
			w.touched = map[string]bool{}
		}
		w.touched[ev.Name] = true
	}
	w.quiet()
}

// quiet has the next read wait for a quiet period (the debounce), within
// the burst it starts or extends.
func (w *watcher) quiet() {
	now := time.Now()
	if w.burstStart.IsZero() {
		w.burstStart = now
		w.settling(true)
	}
	wait := w.opts.Debounce
	if limit := w.burstStart.Add(maxDebounceFactor * w.opts.Debounce).Sub(now); limit < wait {
		wait = max(limit, 0)
	}
	w.debounce.Reset(wait)
}
