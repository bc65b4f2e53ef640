package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/model"
)

// Defaults for a zero Reader (DESIGN §2); the size limits are the model's,
// so the reader and the decoder agree on what "too large" means.
const (
	DefaultMaxFileSize  int64 = model.MaxFileSize
	DefaultMaxTotalSize int64 = model.MaxTotalSize
	DefaultRetries            = 5
	DefaultBackoff            = 10 * time.Millisecond
)

// Reader reads consistent snapshots. The zero value uses the defaults and
// is safe for concurrent use. A Reader remembers the files of its last
// snapshot only to skip work: a file whose bytes equal the remembered ones
// reuses their hash and buffer, so results are the same as a fresh
// Reader's. A Reader must not be copied after its first Read.
type Reader struct {
	// MaxFileSize bounds one file; a larger file becomes a FileError.
	MaxFileSize int64
	// MaxTotalSize bounds all files together; exceeding it fails the read.
	MaxTotalSize int64
	// Retries is how many times a read starts over when a new generation
	// appears under it (0 means DefaultRetries, negative means none).
	Retries int
	// Backoff is the first pause before starting over; it doubles each time.
	Backoff time.Duration

	// last is the previous snapshot's files by path. At 10k routes one
	// change touches one of ~200 files; comparing bytes is several times
	// cheaper than hashing them, and reusing the old buffer saves
	// allocating the whole tree again on every change.
	last lastFiles
}

// lastFiles holds the previous snapshot's files and layout. The map is
// never changed once stored, so a read may use it after releasing the
// lock.
type lastFiles struct {
	mu    sync.Mutex
	files map[string]model.SourceFile
	mode  Mode
}

func (l *lastFiles) layout() Mode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mode
}

func (l *lastFiles) get() map[string]model.SourceFile {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files
}

func (l *lastFiles) set(files []model.SourceFile, mode Mode) {
	m := make(map[string]model.SourceFile, len(files))
	for _, f := range files {
		m[f.Path] = f
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files = m
	if mode == ModePlain && len(files) == 0 && (l.mode == ModeAtomic || l.mode == ModeLink) {
		// A directory being torn down, read half way (only links left
		// dangling): it is not plain until it holds a file to read.
		return
	}
	l.mode = mode
}

// Layout is the layout of the last snapshot read; "" before the first.
func (r *Reader) Layout() Mode { return r.last.layout() }

// AssumeLayout makes m the layout of the last snapshot until one is read:
// a restarted daemon gives the layout of the state it saved, so that an
// empty directory at start (a volume torn down while it was stopped) is
// judged as the reader that read the saved state would have judged it.
func (r *Reader) AssumeLayout(m Mode) {
	r.last.mu.Lock()
	defer r.last.mu.Unlock()
	if r.last.mode == "" {
		r.last.mode = m
	}
}

// commitPointLost fails a detected plain read of an empty directory that
// the last read found published through a commit point (..data, or the
// directory being a link). Such a directory is a volume torn down or
// unmounted, or a checkout half removed, not a generation without routes:
// read as one, it deleted every route once the deletion guard's quiet
// period had passed. It is reported as not found, so the last good state
// keeps serving; a generation published again, or plain files put in the
// directory, are read as usual.
func (r *Reader) commitPointLost(dir string, detected Mode) error {
	was := r.last.layout()
	if detected != ModePlain || (was != ModeAtomic && was != ModeLink) || !isEmpty(dir) {
		return nil
	}
	return fmt.Errorf("read config dir %s: %w: it was published through %s and is now empty; its commit point is gone (a volume unmounted?), so it is not read as a generation without routes: publish one, or put plain files in it",
		dir, ErrNotFound, commitPointOf(was))
}

// isEmpty reports whether dir holds nothing but hidden entries. A commit
// point (..data, or the link) that names such a directory is a checkout
// or volume emptied under it, like one that is gone (commitPointLost):
// read as a generation without routes, it deleted every route once the
// deletion guard's quiet period had passed (an audit's `rm -rf
// worktree/*`).
func isEmpty(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false // the read itself reports it
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			return false
		}
	}
	return true
}

// commitPointOf names the commit point of a layout, for messages.
func commitPointOf(m Mode) string {
	if m == ModeLink {
		return "a symlink swapped in its place"
	}
	return DataLink
}

func (r *Reader) maxFileSize() int64 {
	if r.MaxFileSize > 0 {
		return r.MaxFileSize
	}
	return DefaultMaxFileSize
}

func (r *Reader) maxTotalSize() int64 {
	if r.MaxTotalSize > 0 {
		return r.MaxTotalSize
	}
	return DefaultMaxTotalSize
}

func (r *Reader) retries() int {
	switch {
	case r.Retries > 0:
		return r.Retries
	case r.Retries < 0:
		return 0
	default:
		return DefaultRetries
	}
}

func (r *Reader) backoff() time.Duration {
	if r.Backoff > 0 {
		return r.Backoff
	}
	return DefaultBackoff
}

// errMoved aborts a walk whose generation was replaced under it.
var errMoved = errors.New("generation replaced during read")

// Read returns one consistent generation of dir. The link (dir/..data in
// atomic mode, dir itself in link mode) is resolved once, every file is read
// from the resolved target, and the link is resolved again; if it moved, or
// a file vanished because the old generation was reclaimed, the read starts
// over on the new target, at most Retries times, pausing with a doubling
// backoff. It never returns a mix of two generations. ModeAuto detects the
// layout on every attempt.
func (r *Reader) Read(ctx context.Context, dir string, mode Mode) (*Snapshot, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("read config dir %s: %w", dir, err)
	}
	pause := r.backoff()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read config dir %s: %w", dir, err)
		}
		m := mode
		if m == ModeAuto || m == "" {
			if m, err = Detect(abs); err != nil {
				return nil, err
			}
			if err := r.commitPointLost(abs, m); err != nil {
				return nil, err
			}
		}
		root, err := resolve(abs, m)
		if err != nil && !errors.Is(err, errMoved) {
			return nil, err
		}
		if err == nil {
			snap, err := r.readRoot(ctx, abs, m, root)
			if err == nil && len(snap.Files) == 0 && isEmpty(root) && (m == ModeAtomic || m == ModeLink) {
				return nil, fmt.Errorf("read config dir %s: %w: its commit point (%s) names an empty directory (a checkout or volume emptied?), which is not read as a generation without routes: publish one with files",
					dir, ErrNotFound, commitPointOf(m))
			}
			if err == nil {
				snap.Attempts = attempt + 1
				r.last.set(snap.Files, m)
				return snap, nil
			}
			if !errors.Is(err, errMoved) {
				return nil, err
			}
		}
		if attempt >= r.retries() {
			return nil, fmt.Errorf("read config dir %s: %w (%d attempts)", dir, ErrUnstable, attempt+1)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read config dir %s: %w", dir, ctx.Err())
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// readRoot reads one generation from root; errMoved means the link moved
// during the read and the caller should start over.
func (r *Reader) readRoot(ctx context.Context, dir string, mode Mode, root string) (*Snapshot, error) {
	w := walker{
		ctx:          ctx,
		dir:          dir,
		mode:         mode,
		root:         root,
		maxFileSize:  r.maxFileSize(),
		maxTotalSize: r.maxTotalSize(),
		last:         r.last.get(),
		snap:         &Snapshot{Root: root, Mode: mode},
		total:        new(atomic.Int64),
	}
	err := w.walk("")
	if w.below != nil {
		w.below.close()
	}
	if err != nil {
		return nil, err
	}
	// The second resolution: only an unchanged link proves that every file
	// came from the generation that is still current.
	if w.moved() {
		return nil, errMoved
	}
	// Files read on the fast path were opened below the root directory
	// listed first, whatever its path names now; stillAt's check that the
	// path still names it is made once, here, for all of them. A plain
	// directory replaced during the read is read again.
	if w.below != nil {
		if fi, err := os.Lstat(w.root); err != nil || !os.SameFile(fi, w.rootInfo) {
			return nil, errMoved
		}
	}
	w.snap.sortAndHash()
	return w.snap, nil
}

// linkChanged reports whether link no longer holds the value before: the
// sign of a swap in progress rather than a dangling link.
func linkChanged(link, before string) bool {
	now, _ := os.Readlink(link)
	return now != before
}

// resolve returns the physical directory that holds the current generation.
// Every link on the way is resolved, so "inside the root" checks on symlinked
// files compare physical paths.
//
// A publisher may swap the link and delete the old target while it is being
// resolved; that shows as a vanished target behind a link whose value
// changed meanwhile, and is reported as errMoved (retry), not ErrNotFound.
func resolve(dir string, mode Mode) (string, error) {
	link := dir
	if mode == ModeAtomic {
		link = filepath.Join(dir, DataLink)
	}
	before, _ := os.Readlink(link)
	root, err := filepath.EvalSymlinks(link)
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(root)
	}
	if err != nil {
		if vanished(err) && linkChanged(link, before) {
			return "", errMoved
		}
		return "", rootError("resolve", link, err)
	}
	if !fi.IsDir() {
		return "", rootError("resolve", link, errNotDir)
	}
	if mode == ModeAtomic {
		if err := dataInside(dir, link, root); err != nil {
			return "", err
		}
	}
	return root, nil
}

// dataInside checks that ..data leads to a directory directly inside the
// config dir, as kubelet's ..2026_… generations are: anyone who can write a
// ..data link must not be able to make the router read /etc. Links are
// compared as physical paths, so a config dir reached through a symlink
// still qualifies.
func dataInside(dir, link, root string) error {
	physical, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return rootError("resolve", dir, err)
	}
	if filepath.Dir(root) != physical {
		return fmt.Errorf("resolve %s: %w: %s is not a directory directly inside %s", link, ErrOutside, root, physical)
	}
	return nil
}

// walker reads the files below one resolved root.
type walker struct {
	ctx                       context.Context
	dir                       string
	mode                      Mode
	root                      string
	maxFileSize, maxTotalSize int64
	total                     *atomic.Int64 // shared by the walkers of one read
	snap                      *Snapshot

	// rootInfo identifies the root directory the walk opened; every file
	// read must still be reachable from that very directory afterwards.
	rootInfo os.FileInfo
	// below, when the kernel has openat2, opens files under that very
	// directory (readBelow).
	below *below

	// last is the previous snapshot's files by path (read-only); scratch
	// is the buffer files found there are read into before comparing.
	last    map[string]model.SourceFile
	scratch []byte
}

// moved reports whether the link no longer leads to the root being read. A
// plain directory has no link and never moves.
func (w *walker) moved() bool {
	if w.mode == ModePlain {
		return false
	}
	now, err := resolve(w.dir, w.mode)
	return err != nil || now != w.root
}

// vanished reports whether err means a path disappeared under the reader.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func (w *walker) fileError(rel string, err error) {
	w.snap.Errors = append(w.snap.Errors, FileError{Path: rel, Err: rootless{err: err, root: w.root}})
}

// rootless words err with the paths below the root relative to it. The
// root of a kubelet or git-sync generation is a directory named for it:
// with its name in the text, the same unreadable file read as a new error
// in every generation (T48), a new snapshot hash each time, and status
// counted it resolved and standing again at every publish, pushing the
// rest out of its history.
type rootless struct {
	err  error
	root string
}

// Error cuts the root from the paths that begin with it, at the start of
// the text or after a space or a quote; a path elsewhere that holds it
// (a symlink's target outside the root) is left whole (T49).
func (e rootless) Error() string {
	text, prefix := e.err.Error(), e.root+string(filepath.Separator)
	var b strings.Builder
	for from := 0; ; {
		i := strings.Index(text[from:], prefix)
		if i < 0 {
			b.WriteString(text[from:])
			return b.String()
		}
		i += from
		b.WriteString(text[from:i])
		if i > 0 && text[i-1] != ' ' && text[i-1] != '"' {
			b.WriteString(prefix)
		}
		from = i + len(prefix)
	}
}
func (e rootless) Unwrap() error { return e.err }

// path turns a slash-separated path relative to the root into a physical one.
func (w *walker) path(rel string) string {
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

// walk reads the directory rel (slash-separated, "" for the root). Only
// errors that make the whole snapshot unusable are returned.
func (w *walker) walk(rel string) error {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("read config dir %s: %w", w.dir, err)
	}
	entries, err := w.list(rel)
	switch {
	case err == nil:
	case rel == "" && vanished(err):
		// The generation was reclaimed (or the plain dir removed): the
		// caller resolves again and either retries or reports ErrNotFound.
		return errMoved
	case rel == "":
		return rootError("read", w.root, err)
	case vanished(err):
		if w.moved() {
			return errMoved
		}
		return nil // removed in place since its parent was listed
	default:
		w.fileError(rel, fmt.Errorf("list directory: %w", err))
		return nil
	}
	var files []string // regular files, read together after the loop
	for _, e := range entries {
		name := e.Name()
		// Dot names are the writers' bookkeeping: ..data, ..2026_…,
		// ..data_tmp, .git, .worktrees, editors' swap files.
		if strings.HasPrefix(name, ".") {
			continue
		}
		child := path.Join(rel, name)
		var err error
		switch t := e.Type(); {
		case t.IsDir():
			err = w.walk(child)
		case t&fs.ModeSymlink != 0 && !hasConfigExt(name):
			w.dirLink(child)
		case !hasConfigExt(name):
			continue
		case t&fs.ModeSymlink != 0:
			err = w.readLink(child)
		case t.IsRegular():
			files = append(files, child)
		default:
			// FIFOs, sockets and devices are refused without being opened:
			// opening some devices has effects of its own.
			w.fileError(child, fsutil.NotRegular(t))
		}
		if err != nil {
			return err
		}
	}
	return w.readFiles(files)
}

// readWorkers is how many files of a directory are read at once. Reading
// is system calls (open, fstat, read, close, and the checks that the
// path still names the file), so more readers than cores still help: a
// git-sync or ConfigMap tree of 200 files, all of them new inodes after
// every swap, took 7–8 ms to read one at a time.
const readWorkers = 4

// minParallelFiles is the fewest files worth reading on several walkers.
const minParallelFiles = 16

// readFiles reads the regular files rels (root-relative, as listed) into
// the snapshot. Each worker reads on a copy of the walker with a snapshot
// and scratch buffer of its own, merged afterwards: sortAndHash orders the
// result, so it does not depend on which worker read what.
func (w *walker) readFiles(rels []string) error {
	if len(rels) < minParallelFiles {
		for _, rel := range rels {
			if err := w.readFile(rel, rel, w.path(rel)); err != nil {
				return err
			}
		}
		return nil
	}
	subs := make([]walker, readWorkers)
	errs := make([]error, readWorkers)
	var wg sync.WaitGroup
	for k := range subs {
		sub := &subs[k]
		*sub = *w
		sub.snap, sub.scratch = &Snapshot{}, nil
		wg.Go(func() {
			for i := k; i < len(rels); i += readWorkers {
				if errs[k] = sub.readFile(rels[i], rels[i], w.path(rels[i])); errs[k] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for k := range subs {
		w.snap.Files = append(w.snap.Files, subs[k].snap.Files...)
		w.snap.Errors = append(w.snap.Errors, subs[k].snap.Errors...)
		w.snap.Warnings = append(w.snap.Warnings, subs[k].snap.Warnings...)
	}
	w.scratch = subs[0].scratch
	// A moved generation is read again whole; that outranks any other
	// error one worker met on the way.
	for _, err := range errs {
		if errors.Is(err, errMoved) {
			return errMoved
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// list returns the entries of the directory rel, sorted by name. The
// directory is opened without following a final symlink and without
// blocking, so one swapped for a link or a FIFO since its parent was listed
// is refused rather than followed or waited on. The root's identity is
// remembered for the checks after each read.
func (w *walker) list(rel string) ([]fs.DirEntry, error) {
	d, err := openDir(w.path(rel))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if rel == "" {
		if w.rootInfo, err = d.Stat(); err != nil {
			return nil, err
		}
		w.below = newBelow(d)
	}
	entries, err := d.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

// IsConfigName reports whether a file named name is one the snapshot
// reads: *.yaml, *.yml or *.json, not starting with '.'.
func IsConfigName(name string) bool { return !strings.HasPrefix(name, ".") && hasConfigExt(name) }

func hasConfigExt(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readLink reads a symlinked file, but only when it resolves inside the
// root: a hostile link must not make the router read /etc/shadow. Links to
// directories are not followed (they could loop); links to FIFOs, sockets
// and devices are refused without opening them.
func (w *walker) readLink(rel string) error {
	link := w.path(rel)
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		if !vanished(err) {
			w.fileError(rel, fmt.Errorf("resolve symlink: %w", err))
			return nil
		}
		if w.moved() {
			return errMoved
		}
		if _, lerr := os.Lstat(link); vanished(lerr) {
			return nil // the link itself was removed in place
		}
		dest, _ := os.Readlink(link)
		w.fileError(rel, fmt.Errorf("dangling symlink to %s", dest))
		return nil
	}
	inside, ok := w.inside(target)
	if !ok {
		w.fileError(rel, fmt.Errorf("%w: %s", errOutsideRoot, target))
		return nil
	}
	fi, err := os.Stat(target)
	switch {
	case err != nil && vanished(err) && w.moved():
		return errMoved
	case err != nil:
		w.fileError(rel, fmt.Errorf("resolve symlink: %w", err))
		return nil
	case fi.IsDir():
		w.snap.Warnings = append(w.snap.Warnings, FileError{Path: rel, Err: errDirLink})
		return nil
	case !fi.Mode().IsRegular():
		w.fileError(rel, fmt.Errorf("symlink to %s: %w", target, fsutil.NotRegular(fi.Mode())))
		return nil
	}
	return w.readFile(rel, inside, target)
}

// errDirLink says why the files below a symlinked directory are absent.
var errDirLink = errors.New("symlink to a directory: not followed, so the files below it are not read; link each file, or move the directory into the tree")

// dirLink passes over the symlink rel, which is not named like a config
// file, with a warning when it leads to a directory: links to directories
// are not followed (they could loop, or read one tree twice), and the
// routes below one were dropped without a word. A link to anything else
// (a README) is passed over in silence, as such files are.
func (w *walker) dirLink(rel string) {
	if fi, err := os.Stat(w.path(rel)); err == nil && fi.IsDir() {
		w.snap.Warnings = append(w.snap.Warnings, FileError{Path: rel, Err: errDirLink})
	}
}

// inside returns target (a physical path) relative to the root, slash
// separated, if it lies below the root.
func (w *walker) inside(target string) (string, bool) {
	rel, err := filepath.Rel(w.root, target)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// readAttempts bounds how often one file is read again because the path was
// replaced while it was read (an editor saving by rename does that).
const readAttempts = 3

// Test hooks, nil outside tests: called with the physical path of a file
// just before it is opened and just after it was read.
var hookBeforeOpen, hookAfterRead func(file string)

// readFile reads the regular file at the physical path file, which is the
// root-relative path inside (the snapshot path rel, or a symlink's
// target). After the read it checks that the file read is still the one
// at inside, reached from the root through directories only: a directory
// or the root swapped for a symlink during the read cannot let an outside
// file in. Where the kernel has openat2 the first attempt opens the file
// below the root with symlinks refused instead (readBelow), and only
// anything unusual is read again this careful way.
func (w *walker) readFile(rel, inside, file string) error {
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("read config dir %s: %w", w.dir, err)
	}
	// The fast path first, where there is one; whatever it finds unusual
	// is read again the careful way, which says what happened, with all
	// its attempts.
	if w.below != nil {
		if data, ok := w.readBelow(rel, inside, file); ok {
			return w.add(rel, data)
		}
	}
	for attempt := 1; ; attempt++ {
		data, read, err := w.readOnce(rel, file)
		if err != nil || read == nil {
			return err
		}
		err = w.stillAt(inside, read)
		switch {
		case err == nil:
			return w.add(rel, data)
		case w.moved():
			return errMoved
		case vanished(err):
			return nil // removed in place since it was read
		case attempt == readAttempts:
			w.fileError(rel, err)
			return nil
		}
	}
}

// readOnce opens file without blocking, requires a regular file within the
// size limit and reads it. It returns the data and the FileInfo of the file
// read; a nil FileInfo with a nil error means there is nothing to add (a
// FileError was recorded, or the file was removed in place).
func (w *walker) readOnce(rel, file string) ([]byte, os.FileInfo, error) {
	if hookBeforeOpen != nil {
		hookBeforeOpen(file)
	}
	f, fi, err := fsutil.OpenRegular(file, true)
	if err != nil {
		switch {
		case !vanished(err):
			w.fileError(rel, openError(err))
			return nil, nil, nil
		case w.moved():
			return nil, nil, errMoved
		default:
			return nil, nil, nil // deleted in place since its directory was listed
		}
	}
	defer f.Close()
	if fi.Size() > w.maxFileSize {
		w.fileError(rel, sizeError{size: fi.Size(), limit: w.maxFileSize})
		return nil, nil, nil
	}
	if err := w.checkTotal(fi.Size()); err != nil {
		return nil, nil, err
	}
	data, err := readLimited(f, w.buffer(rel, fi.Size()), w.maxFileSize+1)
	w.keep(rel, data)
	if hookAfterRead != nil {
		hookAfterRead(file)
	}
	if err != nil {
		w.fileError(rel, fmt.Errorf("read: %w", err))
		return nil, nil, nil
	}
	if int64(len(data)) > w.maxFileSize {
		w.fileError(rel, sizeError{size: max(fi.Size(), int64(len(data))), limit: w.maxFileSize})
		return nil, nil, nil
	}
	return data, fi, nil
}

// buffer returns the buffer to read rel into, sized for size bytes. A file
// seen in the last snapshot is read into the scratch buffer first: when
// its bytes are unchanged the old buffer is kept and the scratch is reused
// for the next file (keep).
func (w *walker) buffer(rel string, size int64) []byte {
	if _, seen := w.last[rel]; seen {
		return slices.Grow(w.scratch[:0], int(size)+1)
	}
	return make([]byte, 0, size+1)
}

// keep takes back the scratch buffer data was read into, if it was.
func (w *walker) keep(rel string, data []byte) {
	if _, seen := w.last[rel]; seen {
		w.scratch = data
	}
}

// readBelow is readFile's fast path (below_linux.go): it reports false,
// having recorded nothing, for anything the careful path must look at.
func (w *walker) readBelow(rel, inside, file string) ([]byte, bool) {
	if hookBeforeOpen != nil {
		hookBeforeOpen(file)
	}
	data, ok := w.below.read(inside, func(size int64) ([]byte, bool) {
		if size > w.maxFileSize || w.checkTotal(size) != nil {
			return nil, false
		}
		return w.buffer(rel, size), true
	}, w.maxFileSize+1, w.mode == ModePlain, func() {
		if hookAfterRead != nil {
			hookAfterRead(file)
		}
	})
	if ok {
		w.keep(rel, data)
	}
	return data, ok
}

// openError words a failed open: a refused FIFO or device as is, anything
// else (permissions, a symlink swapped in: ELOOP) with its context.
func openError(err error) error {
	if errors.Is(err, fsutil.ErrNotRegular) {
		return err
	}
	return fmt.Errorf("open: %w", err)
}

// stillAt checks that the file read (fi, from the open descriptor) is what
// the root-relative path inside names now, through the same root directory
// and real directories only. Checked after the read, it catches a directory
// swapped for a symlink to elsewhere and back again while the file was
// opened: the descriptor would then be another file than the one the path
// names.
func (w *walker) stillAt(inside string, read os.FileInfo) error {
	p := w.root
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !os.SameFile(fi, w.rootInfo) {
		return fmt.Errorf("%w: the directory read was replaced", errReplaced)
	}
	elems := strings.Split(inside, "/")
	for i, elem := range elems {
		p = filepath.Join(p, elem)
		if fi, err = os.Lstat(p); err != nil {
			return err
		}
		var problem string
		switch last := i == len(elems)-1; {
		case fi.Mode()&fs.ModeSymlink != 0:
			problem = "is now a symlink"
		case !last && !fi.IsDir():
			problem = "is no longer a directory"
		case last && !os.SameFile(fi, read):
			problem = "now names another file"
		default:
			continue
		}
		return fmt.Errorf("%w: %s %s", errReplaced, strings.Join(elems[:i+1], "/"), problem)
	}
	return nil
}

// add records the file read at rel, reusing the last snapshot's buffer and
// hash when the bytes are unchanged.
func (w *walker) add(rel string, data []byte) error {
	if w.total.Add(int64(len(data))) > w.maxTotalSize {
		return w.tooLarge()
	}
	prev, seen := w.last[rel]
	if seen && bytes.Equal(prev.Data, data) {
		w.snap.Files = append(w.snap.Files, model.SourceFile{Path: rel, Data: prev.Data, Hash: prev.Hash})
		return nil
	}
	if seen {
		data = bytes.Clone(data) // the scratch buffer is reused
	}
	sum := sha256.Sum256(data)
	w.snap.Files = append(w.snap.Files, model.SourceFile{Path: rel, Data: data, Hash: hex.EncodeToString(sum[:])})
	return nil
}

// readLimited appends r's contents to buf until EOF or until limit bytes
// were read. Starting from a buffer sized to the file, a file that does not
// grow is read without reallocating.
func readLimited(r io.Reader, buf []byte, limit int64) ([]byte, error) {
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := min(int64(cap(buf)), limit)
		n, err := r.Read(buf[len(buf):room])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

func (w *walker) checkTotal(more int64) error {
	if w.total.Load()+more > w.maxTotalSize {
		return w.tooLarge()
	}
	return nil
}

func (w *walker) tooLarge() error {
	return fmt.Errorf("read config dir %s: %w: files total more than %s", w.dir, ErrTooLarge, formatSize(w.maxTotalSize))
}
