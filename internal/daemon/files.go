package daemon

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/render"
)

// bundleDir is a directory holding one rendered bundle on disk. It remembers
// every file it wrote (the slices of the previous bundle, which the daemon
// keeps anyway), so unchanged files are not rewritten: no fsync storm for a
// one-line map change at 10k routes, and a compare of the parts that
// changed instead of hashing megabytes on every change.
type bundleDir struct {
	path    string
	written map[string]render.File
	scanned bool // the directory was listed once for leftovers
	// behind is a bundle the directory must hold but does not yet: one
	// applied at runtime, whose write was put after the runtime commands
	// (see Daemon.deferLive). Any later write supersedes it.
	behind *render.Bundle
}

func newBundleDir(path string) *bundleDir {
	return &bundleDir{path: path, written: map[string]render.File{}}
}

// write makes the directory hold exactly b: changed files are replaced
// atomically, files no longer in the bundle are removed, and every
// directory touched is synced once at the end.
func (d *bundleDir) write(b *render.Bundle) (changed int, err error) {
	// Whatever was behind is older than b: once b is on disk it is moot.
	// If this write fails, behind stays: b was not accepted, and a flush
	// puts the accepted state back over what b half wrote.
	defer func() {
		if err == nil {
			d.behind = nil
		}
	}()
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return 0, fmt.Errorf("bundle dir: %w", err)
	}
	touched := map[string]bool{}
	defer func() {
		for dir := range touched {
			if serr := fsutil.SyncDir(dir); serr != nil && err == nil {
				err = serr
			}
		}
	}()
	want := make(map[string]bool, len(b.Files))
	for i := range b.Files {
		f := &b.Files[i]
		if err := safeName(f.Name); err != nil {
			return changed, err
		}
		want[f.Name] = true
		if old, ok := d.written[f.Name]; ok && old.Equal(f) {
			continue
		}
		full := filepath.Join(d.path, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return changed, fmt.Errorf("bundle dir: %w", err)
		}
		if err := fsutil.ReplaceFile(full, f.Mode, func(w io.Writer) error {
			_, err := f.WriteTo(w)
			return err
		}); err != nil {
			return changed, err
		}
		touched[filepath.Dir(full)] = true
		d.written[f.Name] = *f
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
			if rel = filepath.ToSlash(rel); !want[rel] {
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
		if want[name] {
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

// writeLater records that the directory must come to hold b; flush writes
// it. A later write or writeLater replaces it.
func (d *bundleDir) writeLater(b *render.Bundle) { d.behind = b }

// flush writes the bundle recorded by writeLater, if any, and reports
// whether one was written.
func (d *bundleDir) flush() (bool, error) {
	if d.behind == nil {
		return false, nil
	}
	_, err := d.write(d.behind)
	return err == nil, err
}

// current reports whether the directory holds everything it was given.
func (d *bundleDir) current() bool { return d.behind == nil }
