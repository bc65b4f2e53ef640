// Package fsutil writes files the way a reader racing the writer expects:
// whole or not at all (temp file, fsync, rename, fsync of the directory),
// and opens files to read without ever blocking on a FIFO or a device.
package fsutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// WriteFileAtomic replaces path with data. A reader sees either the old
// content or the new, never a partial file; after a crash the file holds one
// of the two. The mode is applied before the rename, so a private key is
// never readable by others, even for an instant.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	err := replace(path, mode, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WriteAtomic is WriteFileAtomic for content that fill writes in pieces.
// The pieces go through a buffer, so many small writes cost few system
// calls.
func WriteAtomic(path string, mode os.FileMode, fill func(io.Writer) error) error {
	if err := ReplaceFile(path, mode, fill); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// ReplaceFile is WriteAtomic without the directory sync, for a caller that
// replaces many files of a directory and then calls SyncDir once: a
// directory fsync per file made writing a bundle with thousands of
// certificates take twice as long. Readers see whole files either way;
// only the new name's durability waits for the SyncDir.
func ReplaceFile(path string, mode os.FileMode, fill func(io.Writer) error) error {
	return replace(path, mode, func(f *os.File) error {
		bw := writers.Get().(*bufio.Writer)
		bw.Reset(f)
		defer func() {
			bw.Reset(nil) // drop f
			writers.Put(bw)
		}()
		if err := fill(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// writers recycles the buffers of WriteAtomic: writing a bundle of
// thousands of small files must not allocate one each.
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, writeBuffer) }}

// replace writes path's new content to a temporary file beside it, syncs
// it and renames it over path.
func replace(path string, mode os.FileMode, fill func(*os.File) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create a temporary file beside it: %w", path, WithoutPaths(err))
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: chmod: %w", path, WithoutPaths(err))
	}
	if err = fill(tmp); err != nil {
		return fmt.Errorf("write %s: %w", path, WithoutPaths(err))
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: fsync: %w", path, WithoutPaths(err))
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, WithoutPaths(err))
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: rename the temporary file over it: %w", path, WithoutPaths(err))
	}
	return nil
}

// WithoutPaths is err without the paths an *fs.PathError or *os.LinkError
// adds, for an error on a temporary file: its random name made one fault,
// retried, read as a new error each time (T42, T49). The caller names the
// file being written.
func WithoutPaths(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// writeBuffer is small enough to stay in the CPU cache while large
// content is copied through it, large enough to need few write calls.
const writeBuffer = 256 << 10

// SyncDir makes the renames and removals done in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
