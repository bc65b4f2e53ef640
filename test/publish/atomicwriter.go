package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Names kubelet's AtomicWriter uses inside the target directory.
const (
	dataLink    = "..data"
	dataTmpLink = "..data_tmp"
)

// AtomicWriter publishes generations the way kubelet projects ConfigMap and
// Secret volumes (pkg/volume/util/atomic_writer.go):
//
//	dir/..2026_11_21_15_04_05.123456789/  the generation's files
//	dir/..data -> ..2026_11_21_15_04_05.123456789
//	dir/route.yaml -> ..data/route.yaml   user-visible links
//
// A generation becomes visible with one rename(2) of ..data_tmp over ..data;
// the previous timestamped directory is deleted right after, which is what
// makes readers that do not resolve ..data once see torn or vanishing files.
type AtomicWriter struct {
	dir string
}

// NewAtomicWriter returns a writer for dir (created on first Publish).
func NewAtomicWriter(dir string) *AtomicWriter {
	return &AtomicWriter{dir: dir}
}

// Publish makes files (slash-separated relative paths, subdirectories
// allowed) the new generation, replacing the previous one entirely.
func (w *AtomicWriter) Publish(files map[string][]byte) error {
	names, err := sortedNames(files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return fmt.Errorf("publish: create %s: %w", w.dir, err)
	}

	// (1) The generation being replaced, and its user-visible names.
	dataPath := filepath.Join(w.dir, dataLink)
	oldTs, err := os.Readlink(dataPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: read %s: %w", dataPath, err)
	}
	var oldVisible []string
	if oldTs != "" {
		entries, err := os.ReadDir(filepath.Join(w.dir, oldTs))
		if err != nil {
			return fmt.Errorf("publish: list old generation: %w", err)
		}
		for _, e := range entries {
			oldVisible = append(oldVisible, e.Name())
		}
	}

	// (2) A new timestamped directory holding the whole payload.
	tsName, err := w.newTimestampDir()
	if err != nil {
		return err
	}
	if err := writeTree(filepath.Join(w.dir, tsName), files, names); err != nil {
		return err
	}

	// (3) ..data_tmp -> the new directory (relative, so the volume can be
	// mounted anywhere), then the commit: rename(..data_tmp, ..data).
	tmpPath := filepath.Join(w.dir, dataTmpLink)
	if err := os.Remove(tmpPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: remove stale %s: %w", tmpPath, err)
	}
	if err := os.Symlink(tsName, tmpPath); err != nil {
		return fmt.Errorf("publish: link %s: %w", tmpPath, err)
	}
	if err := os.Rename(tmpPath, dataPath); err != nil {
		return fmt.Errorf("publish: swap %s: %w", dataPath, err)
	}

	// (4) User-visible links for new top-level names; links for names the
	// new generation no longer has are removed.
	visible := topLevel(names)
	keep := map[string]bool{}
	for _, name := range visible {
		keep[name] = true
		p := filepath.Join(w.dir, name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, name), p); err != nil {
			return fmt.Errorf("publish: link %s: %w", p, err)
		}
	}
	for _, name := range oldVisible {
		if keep[name] {
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("publish: remove stale link %s: %w", name, err)
		}
	}

	// (5) Reclaim the old generation.
	if oldTs != "" {
		if err := os.RemoveAll(filepath.Join(w.dir, oldTs)); err != nil {
			return fmt.Errorf("publish: remove old generation %s: %w", oldTs, err)
		}
	}
	return nil
}

// newTimestampDir creates ..<UTC time with nanoseconds>, adding a counter
// suffix when two generations land in the same nanosecond tick.
func (w *AtomicWriter) newTimestampDir() (string, error) {
	base := ".." + time.Now().UTC().Format("2006_01_02_15_04_05.000000000")
	for i := 0; ; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		err := os.Mkdir(filepath.Join(w.dir, name), 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("publish: create generation directory: %w", err)
		}
	}
}
