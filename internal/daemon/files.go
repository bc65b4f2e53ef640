package daemon

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/render"
)

// bundleDir is a directory holding one rendered bundle on disk. It remembers
// the hash of every file it wrote, so unchanged files are not rewritten
// (no fsync storm for a one-line map change at 10k routes).
type bundleDir struct {
	path   string
	hashes map[string][32]byte
}

func newBundleDir(path string) *bundleDir {
	return &bundleDir{path: path, hashes: map[string][32]byte{}}
}

// write makes the directory hold exactly b: changed files are replaced
// atomically, files no longer in the bundle are removed.
func (d *bundleDir) write(b *render.Bundle) (changed int, err error) {
	if err := os.MkdirAll(d.path, 0o700); err != nil {
		return 0, fmt.Errorf("bundle dir: %w", err)
	}
	want := make(map[string]bool, len(b.Files))
	for _, f := range b.Files {
		if err := safeName(f.Name); err != nil {
			return changed, err
		}
		want[f.Name] = true
		sum := sha256.Sum256(f.Data)
		if old, ok := d.hashes[f.Name]; ok && old == sum {
			continue
		}
		full := filepath.Join(d.path, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			return changed, fmt.Errorf("bundle dir: %w", err)
		}
		if err := fsutil.WriteFileAtomic(full, f.Data, f.Mode); err != nil {
			return changed, err
		}
		d.hashes[f.Name] = sum
		changed++
	}
	// Remove what the bundle no longer has (a deleted route's certificate).
	err = filepath.WalkDir(d.path, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(d.path, p)
		rel = filepath.ToSlash(rel)
		if !want[rel] {
			delete(d.hashes, rel)
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("remove stale %s: %w", rel, err)
			}
			changed++
		}
		return nil
	})
	return changed, err
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
