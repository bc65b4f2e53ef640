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
}

// Watch sends on out whenever the config directory may have changed, until
// ctx is done (then it returns nil). Sends never block: out should have
// capacity 1, so a burst collapses into one pending trigger. One trigger is
// sent as soon as the watches are in place, so a change made before
// watching began is not missed. The only errors are an empty Dir and
// failing to create the watcher itself (e.g. inotify limits).
func Watch(ctx context.Context, opts Options, out chan<- struct{}) error {
	if opts.Dir == "" {
		return errors.New("watch: no config dir")
	}
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("watch %s: %w", opts.Dir, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", abs, err)
	}
	defer fw.Close()

	w := &watcher{
		opts:   opts,
		dir:    abs,
		parent: filepath.Dir(abs),
		fw:     fw,
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
	return w.run(ctx)
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

	// Trailing debounce state (plain mode).
	debounce   *time.Timer
	burstStart time.Time
}

func (w *watcher) run(ctx context.Context) error {
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
			w.trigger()
		case <-w.debounce.C:
			w.burstStart = time.Time{}
			w.trigger()
		case <-poll.C:
			if !w.lost {
				continue
			}
			if err := w.setup(); err == nil {
				w.log.Info("config dir is back", "dir", w.dir, "mode", w.mode)
				w.trigger()
			}
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
func (w *watcher) setup() error {
	for _, p := range w.fw.WatchList() {
		_ = w.fw.Remove(p) // may already be gone with its directory
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
	w.log.Debug("watching config dir", "dir", w.dir, "mode", mode)
	return nil
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
		if err := w.fw.Add(p); err != nil {
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
		w.counted()
		w.trigger()
		if ev.Has(fsnotify.Create) && w.opts.Mode == snapshot.ModeAuto {
			// The link may have been replaced by a real directory.
			if m, err := snapshot.Detect(w.dir); err == nil && m != w.mode {
				w.resetup()
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
	w.log.Warn("config dir vanished; waiting for it to come back", "dir", w.dir, "op", ev.Op.String())
	for _, p := range w.fw.WatchList() {
		if p != w.parent || ev.Name == w.parent {
			_ = w.fw.Remove(p)
		}
	}
	w.lost = true
	w.trigger()
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
	now := time.Now()
	if w.burstStart.IsZero() {
		w.burstStart = now
	}
	wait := w.opts.Debounce
	if limit := w.burstStart.Add(maxDebounceFactor * w.opts.Debounce).Sub(now); limit < wait {
		wait = max(limit, 0)
	}
	w.debounce.Reset(wait)
}
