package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"

	"github.com/haroute/haroute/internal/model"
)

// Sentinels the daemon branches on. Errors returned by Read wrap one of them
// when the whole snapshot is unusable, so the last good state keeps serving.
var (
	// ErrNotFound: the config dir is missing, is not a directory, or is
	// reached through a dangling link.
	ErrNotFound = errors.New("config dir not found")
	// ErrPermission: the config dir itself cannot be read.
	ErrPermission = errors.New("config dir not readable")
	// ErrUnstable: a new generation was published during every attempt.
	ErrUnstable = errors.New("config dir kept changing while it was read")
	// ErrTooLarge: a file, or all files together, exceed the size limits.
	// Per-file excess is reported as a FileError wrapping it; total excess
	// fails the snapshot.
	ErrTooLarge = errors.New("input too large")
	// ErrOutside: ..data leads somewhere other than a directory directly
	// inside the config dir, so nothing behind it is trusted.
	ErrOutside = errors.New("link leads outside the config dir")

	errNotDir      = errors.New("not a directory")
	errOutsideRoot = errors.New("symlink leads outside the config dir")
	// errReplaced: the path of a file no longer led to the file read by the
	// time the read ended, even after a few attempts.
	errReplaced = errors.New("replaced while it was read")
)

// Snapshot is one consistent generation of the config directory.
type Snapshot struct {
	// Root is the resolved directory the files were actually read from (the
	// timestamped directory behind ..data, the link's target, or the plain
	// directory itself).
	Root string
	// Mode is the layout the snapshot was read with (never ModeAuto).
	Mode Mode
	// Files holds every readable *.yaml, *.yml and *.json file below Root,
	// sorted by Path (relative to Root, slash-separated). A file's Data
	// may be shared with snapshots the same Reader returned earlier, so it
	// must not be modified.
	Files []model.SourceFile
	// Errors lists files that exist but could not be read (permissions,
	// size limit, a symlink leaving the root, …), sorted by Path. Their
	// paths are absent from Files; the daemon keeps the objects those paths
	// held in the last good snapshot rather than dropping their routes. A
	// Path may name a directory that could not be listed, in which case
	// everything below it is unknown.
	Errors []FileError
	// Warnings lists paths passed over that may hold what the operator
	// meant to be read (a symlink to a directory, which is not followed),
	// sorted by Path. They change nothing that is served.
	Warnings []FileError
	// Hash covers every path with its content hash and every error and
	// warning, so two
	// snapshots with equal Hash need no further work.
	Hash string
	// Attempts is how many reads it took (1 unless a new generation was
	// published during the read); worth logging and counting.
	Attempts int
}

// FileError is a problem with one path of a snapshot. Its message reads
// `path: problem`, e.g. `big.yaml: file is 9.0 MiB, limit 8 MiB`.
type FileError struct {
	Path string
	Err  error
}

func (e FileError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e FileError) Unwrap() error { return e.Err }

// sortAndHash orders files and errors by path and computes the snapshot
// hash. The hash leaves out Root and Mode on purpose: a new generation with
// the same content must compare equal, so the daemon skips it.
func (s *Snapshot) sortAndHash() {
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	sort.Slice(s.Errors, func(i, j int) bool { return s.Errors[i].Path < s.Errors[j].Path })
	sort.Slice(s.Warnings, func(i, j int) bool { return s.Warnings[i].Path < s.Warnings[j].Path })
	s.hash()
}

// WithFiles returns a copy of s that holds files, in path order, instead
// of its own, with its Hash computed afresh: what is served when some
// files of the directory stand in for what was read (a file that may be
// cut off mid-write, held by the daemon). The copy's hash must not be
// the read's: status shows it as the content HAProxy runs.
func (s *Snapshot) WithFiles(files []model.SourceFile) *Snapshot {
	c := *s
	c.Files = files
	c.hash()
	return &c
}

// hash computes Hash from the sorted files, errors and warnings.
func (s *Snapshot) hash() {
	h := sha256.New()
	for _, f := range s.Files {
		// NUL cannot occur in a path, so the encoding is unambiguous.
		fmt.Fprintf(h, "file\x00%s\x00%s\n", f.Path, f.Hash)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(h, "error\x00%s\x00%s\n", e.Path, e.Err)
	}
	for _, e := range s.Warnings {
		fmt.Fprintf(h, "warning\x00%s\x00%s\n", e.Path, e.Err)
	}
	s.Hash = hex.EncodeToString(h.Sum(nil))
}

// sizeError reports a file over the per-file limit; it matches ErrTooLarge.
type sizeError struct {
	size, limit int64
}

func (e sizeError) Error() string {
	return fmt.Sprintf("file is %s, limit %s", formatSizeApprox(e.size), formatSize(e.limit))
}

func (e sizeError) Is(target error) bool { return target == ErrTooLarge }

var sizeUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// formatSize prints a limit exactly: whole units when it is a multiple of
// one ("8 MiB"), else bytes, so a limit is never rounded in a message.
func formatSize(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// formatSizeApprox prints a measured size with one decimal ("9.0 MiB").
func formatSizeApprox(n int64) string {
	for _, u := range sizeUnits {
		if n >= u.size {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
