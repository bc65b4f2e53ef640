package publish

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Plain rewrites files in place with os.WriteFile, one after the other:
// no temp files, no rename, no commit point. A reader can see a mix of two
// generations or a half-written file; that is the layout haroute can only
// debounce, and what tests use Plain to show.
type Plain struct {
	dir     string
	written map[string]bool
}

// NewPlain returns a publisher for dir (created on first Publish).
func NewPlain(dir string) *Plain {
	return &Plain{dir: dir, written: map[string]bool{}}
}

// Publish writes files into dir, then removes files this publisher wrote
// before that the new generation no longer has (like rsync --delete for
// its own files; anything else in dir is left alone).
func (p *Plain) Publish(files map[string][]byte) error {
	names, err := sortedNames(files)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("publish: create %s: %w", p.dir, err)
	}
	if err := writeTree(p.dir, files, names); err != nil {
		return err
	}
	for name := range p.written {
		if _, ok := files[name]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(p.dir, filepath.FromSlash(name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("publish: remove %s: %w", name, err)
		}
		delete(p.written, name)
	}
	for _, name := range names {
		p.written[name] = true
	}
	return nil
}
