package daemon

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/render"
)

// bundleDir is a directory holding one rendered bundle on disk. It remembers
// every file it wrote (the slices of the previous bundle, which the daemon
// keeps anyway), so unchanged files are not rewritten: no fsync storm for a
// one-line map change at 10k routes, and a compare of the parts that
// changed instead of hashing megabytes on every change.
//
// A write has two halves, which the runtime path runs apart (see
// Daemon.stageLive): stage makes a temporary file beside each changed
// file's name and reserves its size (fallocate), which is where a full
// disk or a permission error shows; commit writes the content, syncs the
// files, renames them into place, removes what the bundle no longer has
// and syncs the directories. Writing the content at the commit keeps the
// copy of a 2.8 MB haproxy.cfg (2 ms at 10k routes) off the path of a
// change; where the file system cannot reserve space, stage writes the
// content itself, as before. Until the commit, the directory holds the
// previous bundle, whole.
type bundleDir struct {
	path    string
	written map[string]render.File
	scanned bool // the directory was listed once for leftovers
	staged  *stagedBundle
	// recheck makes every write look for drift first (forgetDrift): for
	// the candidate, which `haproxy -c` reads right after each write.
	// The live directory is checked when HAProxy loads it instead, off
	// the path of a runtime change.
	recheck bool
}

// stagedBundle is a bundle whose changed files are written to temporary
// files, not yet synced nor renamed.
type stagedBundle struct {
	b     *render.Bundle
	temps map[string]*stagedFile // by bundle file name
	since time.Time              // when the directory first fell behind
}

// stagedFile is the temporary file of one changed file. While its space
// is reserved but its content not yet written, it is open, with the
// content to write.
type stagedFile struct {
	tmp     string
	open    *os.File
	content *render.File
}

func newBundleDir(path string) *bundleDir {
	return &bundleDir{path: path, written: map[string]render.File{}}
}

// forgetDrift forgets every file written that is no longer on disk as it
// was written (deleted, or truncated, behind haroute's back), so the next
// write puts it back. HAProxy reads these files only when it starts or
// reloads, so that is when this runs: a map deleted from the live
// directory made every reload fail, and a restarted HAProxy refuse to
// start, until haroute itself was restarted. It reports whether anything
// was forgotten.
func (d *bundleDir) forgetDrift() bool {
	drift := false
	for name, f := range d.written {
		fi, err := os.Lstat(filepath.Join(d.path, filepath.FromSlash(name)))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(f.Size()) {
			delete(d.written, name)
			drift = true
		}
	}
	return drift
}

// sameOnDisk reports whether path is a regular file holding f's content
// with f's mode.
func sameOnDisk(path string, f *render.File) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(f.Size()) || fi.Mode().Perm() != f.Mode.Perm() {
		return false
	}
	data, err := fsutil.ReadRegular(path)
	return err == nil && bytes.Equal(data, f.Bytes())
}

// write makes the directory hold exactly b: changed files are replaced
// atomically, files no longer in the bundle are removed, and every
// directory touched is synced once at the end.
func (d *bundleDir) write(b *render.Bundle) (changed int, err error) {
	if d.recheck {
		d.forgetDrift()
	}
	if err := d.stage(b); err != nil {
		return 0, err
	}
	return d.commit()
}

// stage writes the files of b that differ from what the directory holds
// to temporary files beside them. A staged bundle not yet committed is
// replaced by b, which is newer; if staging b fails, the earlier one stays
// staged, so a commit still brings the directory to it.
func (d *bundleDir) stage(b *render.Bundle) (err error) {
	if err := ensureDir(d.path); err != nil {
		return fmt.Errorf("bundle dir: %w", err)
	}
	next := &stagedBundle{b: b, temps: map[string]*stagedFile{}, since: time.Now()}
	defer func() {
		if err != nil {
			next.discard()
		}
	}()
	for i := range b.Files {
		f := &b.Files[i]
		if err := safeName(f.Name); err != nil {
			return err
		}
		if old, ok := d.written[f.Name]; ok && old.Equal(f) {
			continue
		}
		full := filepath.Join(d.path, filepath.FromSlash(f.Name))
		if _, ok := d.written[f.Name]; !ok && sameOnDisk(full, f) {
			// Left by the last run: a restart on a full disk still
			// starts, and writes (and syncs) nothing it need not.
			d.written[f.Name] = *f
			continue
		}
		if err := ensureDir(filepath.Dir(full)); err != nil {
			return fmt.Errorf("bundle dir: %w", err)
		}
		sf, err := stageFile(full, f)
		if err != nil {
			return err
		}
		next.temps[f.Name] = sf
	}
	if d.staged != nil {
		next.since = d.staged.since
		d.staged.discard()
	}
	d.staged = next
	return nil
}

// ensureDir makes path a directory. Something else in its place (a file
// left by a fault or a stray hand, a dangling link) would stop every later
// write, and a restart of HAProxy from the files; the path is haroute's
// own, so the entry is removed and the directory made.
func ensureDir(path string) error {
	err := os.MkdirAll(path, 0o700)
	if err == nil {
		return nil
	}
	if fi, lerr := os.Lstat(path); lerr != nil || fi.IsDir() {
		return err
	}
	if rerr := os.Remove(path); rerr != nil {
		return err
	}
	return os.MkdirAll(path, 0o700)
}

// discard removes the temporary files of s.
func (s *stagedBundle) discard() {
	for _, sf := range s.temps {
		if sf.open != nil {
			sf.open.Close()
		}
		os.Remove(sf.tmp)
	}
}

// pending reports whether a staged bundle waits for its commit.
func (d *bundleDir) pending() bool { return d.staged != nil }

// behindFor is how long the directory has been behind what was staged.
func (d *bundleDir) behindFor(now time.Time) time.Duration {
	if d.staged == nil {
		return 0
	}
	return now.Sub(d.staged.since)
}

// commit puts the staged bundle in place: each temporary file written
// (where stage only reserved it), synced and renamed over its name, then
// what the bundle no longer has removed, then every directory touched
// synced. A commit that fails part way leaves the rest staged for the
// next one.
func (d *bundleDir) commit() (changed int, err error) {
	s := d.staged
	if s == nil {
		return 0, nil
	}
	touched := map[string]bool{}
	defer func() {
		for dir := range touched {
			if serr := fsutil.SyncDir(dir); serr != nil && err == nil {
				err = serr
			}
		}
		if err == nil {
			d.staged = nil
		}
	}()
	want := make(map[string]*render.File, len(s.b.Files))
	for i := range s.b.Files {
		want[s.b.Files[i].Name] = &s.b.Files[i]
	}
	names := make([]string, 0, len(s.temps))
	for name := range s.temps {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		full := filepath.Join(d.path, filepath.FromSlash(name))
		if err := commitFile(s.temps[name], full); err != nil {
			return changed, err
		}
		delete(s.temps, name)
		touched[filepath.Dir(full)] = true
		d.written[name] = *want[name]
		changed++
	}
	// Remove what the bundle no longer has (a deleted route's certificate).
	// The first write walks the directory, which may hold files from an
	// earlier run; after that, what was written is known.
	if !d.scanned {
		err = filepath.WalkDir(d.path, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(d.path, p)
			if rel = filepath.ToSlash(rel); want[rel] == nil {
				d.written[rel] = render.File{Name: rel} // no content: never equal to a wanted file
			}
			return nil
		})
		if err != nil {
			return changed, fmt.Errorf("scan bundle dir: %w", err)
		}
		d.scanned = true
	}
	for name := range d.written {
		if want[name] != nil {
			continue
		}
		full := filepath.Join(d.path, filepath.FromSlash(name))
		if err := os.Remove(full); err != nil && !os.IsNotExist(err) {
			return changed, fmt.Errorf("remove stale %s: %w", name, err)
		}
		touched[filepath.Dir(full)] = true
		delete(d.written, name)
		changed++
	}
	return changed, nil
}

// safeName refuses bundle names that could leave the bundle directory.
// Render derives names from validated resources; this is the last guard.
func safeName(name string) error {
	if name == "" || filepath.IsAbs(name) || strings.Contains(name, "\\") {
		return fmt.Errorf("bundle file name %q is not a relative path", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("bundle file name %q escapes the bundle directory", name)
		}
	}
	return nil
}

// stageFile makes a temporary file beside path for f's content and
// reserves its size, or, where space cannot be reserved, writes the
// content; commitFile completes it and puts it in place. Together they
// are fsutil.ReplaceFile cut in two: the mode is set before any content
// is written (a private key is never readable by others), and the content
// is synced before the rename, so after a crash path holds the old
// content or the new, whole.
func stageFile(path string, f *render.File) (sf *stagedFile, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("write %s: create a temporary file beside it: %w", path, fsutil.WithoutPaths(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(f.Mode); err != nil {
		return nil, fmt.Errorf("write %s: chmod: %w", path, fsutil.WithoutPaths(err))
	}
	reserved, err := reserve(tmp, int64(f.Size()))
	if err != nil {
		return nil, fmt.Errorf("write %s: reserve space: %w", path, fsutil.WithoutPaths(err))
	}
	if reserved {
		return &stagedFile{tmp: tmp.Name(), open: tmp, content: f}, nil
	}
	if err = fill(tmp, f); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, fsutil.WithoutPaths(err))
	}
	if err = tmp.Close(); err != nil {
		return nil, fmt.Errorf("write %s: close: %w", path, fsutil.WithoutPaths(err))
	}
	return &stagedFile{tmp: tmp.Name()}, nil
}

// fill writes f's content to tmp, from its start.
func fill(tmp *os.File, f *render.File) error {
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	bw := stageWriters.Get().(*bufio.Writer)
	bw.Reset(tmp)
	_, err := f.WriteTo(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil) // drop tmp
	stageWriters.Put(bw)
	return err
}

// stageWriters recycles stageFile's buffers: a bundle of thousands of
// small files must not allocate one each.
var stageWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 256<<10) }}

// commitFile writes the content of the staged file sf if it is still
// due, syncs it and renames it over path. The caller syncs path's
// directory. A failure leaves sf staged, to be completed again.
func commitFile(sf *stagedFile, path string) error {
	f := sf.open
	if f == nil {
		var err error
		if f, err = os.Open(sf.tmp); err != nil {
			return fmt.Errorf("write %s: reopen the staged file: %w", path, fsutil.WithoutPaths(err))
		}
	} else if err := fill(f, sf.content); err != nil {
		return fmt.Errorf("write %s: %w", path, fsutil.WithoutPaths(err))
	}
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	sf.open = nil
	if err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, fsutil.WithoutPaths(err))
	}
	if err := os.Rename(sf.tmp, path); err != nil {
		return fmt.Errorf("write %s: rename the temporary file over it: %w", path, fsutil.WithoutPaths(err))
	}
	return nil
}
