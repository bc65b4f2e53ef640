package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/haroute/haroute/test/publish"
)

// write creates files (slash paths) below dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func bytesOf(files map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		out[k] = []byte(v)
	}
	return out
}

func realpath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// contents renders a snapshot as "path=data" lines plus "!path: error"
// lines, so tests compare the whole result at once.
func contents(t *testing.T, s *Snapshot) string {
	t.Helper()
	var b strings.Builder
	for _, f := range s.Files {
		sum := sha256.Sum256(f.Data)
		if f.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: hash %s does not match its data", f.Path, f.Hash)
		}
		fmt.Fprintf(&b, "%s=%s\n", f.Path, f.Data)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "!%s\n", e)
	}
	for _, e := range s.Warnings {
		fmt.Fprintf(&b, "?%s\n", e)
	}
	return b.String()
}

func read(t *testing.T, r *Reader, dir string, mode Mode) *Snapshot {
	t.Helper()
	s, err := r.Read(context.Background(), dir, mode)
	if err != nil {
		t.Fatalf("Read(%s, %s): %v", dir, mode, err)
	}
	return s
}

func TestDetect(t *testing.T) {
	base := t.TempDir()
	plain := filepath.Join(base, "plain")
	write(t, plain, map[string]string{"a.yaml": "a"})
	atomic := filepath.Join(base, "atomic")
	if err := publish.NewAtomicWriter(atomic).Publish(bytesOf(map[string]string{"a.yaml": "a"})); err != nil {
		t.Fatal(err)
	}
	git := publish.NewGitSync(filepath.Join(base, "git"), "current")
	if err := git.Publish(bytesOf(map[string]string{"a.yaml": "a"})); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(base, "dangling")
	symlink(t, "nowhere", dangling)
	file := filepath.Join(base, "file")
	write(t, base, map[string]string{"file": "x"})

	for _, tc := range []struct {
		dir     string
		want    Mode
		wantErr error
	}{
		{dir: plain, want: ModePlain},
		{dir: atomic, want: ModeAtomic},
		{dir: git.Link(), want: ModeLink},
		{dir: filepath.Join(base, "missing"), wantErr: ErrNotFound},
		{dir: dangling, wantErr: ErrNotFound},
		{dir: file, wantErr: ErrNotFound},
	} {
		got, err := Detect(tc.dir)
		if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("Detect(%s) = %q, %v; want %q, %v", tc.dir, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"", "auto", ""},
		{"auto", "auto", ""},
		{"atomic", "atomic", ""},
		{"link", "link", ""},
		{"plain", "plain", ""},
		{"poll", "", `unknown watch mode "poll" (want auto, atomic, link or plain)`},
	} {
		got, err := ParseMode(tc.in)
		if string(got) != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, %s", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestReadPlainSelectsFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"a.yaml":            "a",
		"b.yml":             "b",
		"c.json":            "c",
		"UPPER.YAML":        "u",
		"notes.txt":         "skipped: extension",
		"README":            "skipped: extension",
		".hidden.yaml":      "skipped: dot name",
		".git/config.yaml":  "skipped: dot dir",
		"sub/deep/e.yaml":   "e",
		"sub/.swp/f.yaml":   "skipped: dot dir below the root",
		"sub/a.yaml":        "sub-a",
		"sub.yaml.d/g.json": "g",
	})
	s := read(t, &Reader{}, dir, ModeAuto)
	if s.Mode != ModePlain || s.Root != realpath(t, dir) {
		t.Errorf("Mode, Root = %s, %s; want plain, %s", s.Mode, s.Root, realpath(t, dir))
	}
	want := "UPPER.YAML=u\na.yaml=a\nb.yml=b\nc.json=c\nsub.yaml.d/g.json=g\nsub/a.yaml=sub-a\nsub/deep/e.yaml=e\n"
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadAtomicReadsResolvedGeneration(t *testing.T) {
	dir := t.TempDir()
	w := publish.NewAtomicWriter(dir)
	if err := w.Publish(bytesOf(map[string]string{"a.yaml": "a1", "sub/b.yaml": "b1"})); err != nil {
		t.Fatal(err)
	}
	s := read(t, &Reader{}, dir, ModeAuto)
	if s.Mode != ModeAtomic || s.Root != realpath(t, filepath.Join(dir, "..data")) {
		t.Errorf("Mode, Root = %s, %s; want atomic, %s", s.Mode, s.Root, realpath(t, filepath.Join(dir, "..data")))
	}
	// The user-visible links in dir must not add a second copy.
	if got, want := contents(t, s), "a.yaml=a1\nsub/b.yaml=b1\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}

	// Same content in a new generation: new Root, same Hash.
	if err := w.Publish(bytesOf(map[string]string{"a.yaml": "a1", "sub/b.yaml": "b1"})); err != nil {
		t.Fatal(err)
	}
	same := read(t, &Reader{}, dir, ModeAtomic)
	if same.Root == s.Root || same.Hash != s.Hash {
		t.Errorf("republished same content: Root %s -> %s, Hash %s -> %s; want new root, same hash", s.Root, same.Root, s.Hash, same.Hash)
	}
	if err := w.Publish(bytesOf(map[string]string{"a.yaml": "a2"})); err != nil {
		t.Fatal(err)
	}
	changed := read(t, &Reader{}, dir, ModeAtomic)
	if changed.Hash == s.Hash {
		t.Errorf("changed content kept hash %s", s.Hash)
	}
	if got, want := contents(t, changed), "a.yaml=a2\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// A directory published through a commit point that turns up empty (a
// ConfigMap volume unmounted, the links and ..data removed together) is
// not found, not a generation without routes; a fresh reader, and plain
// files put in the directory, read as plain.
func TestEmptiedAtomicDirIsNotFound(t *testing.T) {
	dir := t.TempDir()
	if err := publish.NewAtomicWriter(dir).Publish(bytesOf(map[string]string{"a.yaml": "a1"})); err != nil {
		t.Fatal(err)
	}
	r := &Reader{}
	if s := read(t, r, dir, ModeAuto); s.Mode != ModeAtomic {
		t.Fatalf("Mode = %s, want atomic", s.Mode)
	}
	// Torn down half way: ..data gone, its link left dangling. Read as
	// a plain directory with nothing to read, which does not make it
	// plain.
	if err := os.Remove(filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if s, err := r.Read(context.Background(), dir, ModeAuto); err != nil || len(s.Files) != 0 {
		t.Fatalf("half torn down: %v, %v; want a snapshot with no file", s, err)
	}
	// What is left of a torn-down volume: nothing, or only the hidden
	// timestamped generation.
	if err := os.Remove(filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	s, err := r.Read(context.Background(), dir, ModeAuto)
	if s != nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "commit point is gone") {
		t.Fatalf("Read of the emptied dir = %v, %v; want ErrNotFound naming the lost commit point", s, err)
	}
	if s := read(t, &Reader{}, dir, ModeAuto); s.Mode != ModePlain || len(s.Files) != 0 {
		t.Errorf("a fresh reader: Mode %s, %d files; want plain, none", s.Mode, len(s.Files))
	}
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("b1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := read(t, r, dir, ModeAuto); s.Mode != ModePlain || contents(t, s) != "b.yaml=b1\n" {
		t.Errorf("plain files put in: Mode %s, files %q; want plain, b.yaml", s.Mode, contents(t, s))
	}
}

// The same for a git-sync link replaced by an empty directory.
func TestLinkReplacedByEmptyDirIsNotFound(t *testing.T) {
	g := publish.NewGitSync(t.TempDir(), "current")
	if err := g.Publish(bytesOf(map[string]string{"r.yaml": "r1"})); err != nil {
		t.Fatal(err)
	}
	r := &Reader{}
	read(t, r, g.Link(), ModeAuto)
	if err := os.Remove(g.Link()); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(g.Link(), 0o755); err != nil {
		t.Fatal(err)
	}
	if s, err := r.Read(context.Background(), g.Link(), ModeAuto); s != nil || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read = %v, %v; want ErrNotFound", s, err)
	}
}

func TestReadLink(t *testing.T) {
	g := publish.NewGitSync(t.TempDir(), "current")
	if err := g.Publish(bytesOf(map[string]string{"r.yaml": "r1", "d/e.json": "e1"})); err != nil {
		t.Fatal(err)
	}
	s := read(t, &Reader{}, g.Link(), ModeAuto)
	if s.Mode != ModeLink || s.Root != realpath(t, g.Link()) {
		t.Errorf("Mode, Root = %s, %s; want link, %s", s.Mode, s.Root, realpath(t, g.Link()))
	}
	if got, want := contents(t, s), "d/e.json=e1\nr.yaml=r1\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadSizeLimits(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"big.yaml":   strings.Repeat("x", 9<<20),
		"small.yaml": "s",
	})
	s := read(t, &Reader{}, dir, ModePlain)
	if got, want := contents(t, s), "small.yaml=s\n!big.yaml: file is 9.0 MiB, limit 8 MiB\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
	if len(s.Errors) != 1 || !errors.Is(s.Errors[0], ErrTooLarge) {
		t.Errorf("errors %v do not wrap ErrTooLarge", s.Errors)
	}

	small := t.TempDir()
	write(t, small, map[string]string{"a.yaml": strings.Repeat("a", 1500), "b.yaml": strings.Repeat("b", 600)})
	s = read(t, &Reader{MaxFileSize: 1024}, small, ModePlain)
	if got, want := contents(t, s), "b.yaml="+strings.Repeat("b", 600)+"\n!a.yaml: file is 1.5 KiB, limit 1 KiB\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}

	_, err := (&Reader{MaxTotalSize: 2000}).Read(context.Background(), small, ModePlain)
	want := fmt.Sprintf("read config dir %s: input too large: files total more than 2000 bytes", small)
	if !errors.Is(err, ErrTooLarge) || err.Error() != want {
		t.Errorf("total limit: %v; want %s", err, want)
	}
}

func TestReadSymlinks(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.yaml": "do not read"})
	dir := t.TempDir()
	write(t, dir, map[string]string{"sub/real.yaml": "real"})
	symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "evil.yaml"))
	symlink(t, "../"+filepath.Base(outside)+"/secret.yaml", filepath.Join(dir, "evil2.yaml"))
	symlink(t, "sub/real.yaml", filepath.Join(dir, "ok.yaml"))
	symlink(t, "missing.yaml", filepath.Join(dir, "dangling.yaml"))
	symlink(t, "sub", filepath.Join(dir, "dirlink"))      // directory: not followed
	symlink(t, "sub", filepath.Join(dir, "dirlink.yaml")) // directory: not followed
	symlink(t, ".", filepath.Join(dir, "sub", "loop"))    // would loop if followed

	s := read(t, &Reader{}, dir, ModePlain)
	secret := realpath(t, filepath.Join(outside, "secret.yaml"))
	want := "ok.yaml=real\nsub/real.yaml=real\n" +
		"!dangling.yaml: dangling symlink to missing.yaml\n" +
		"!evil.yaml: symlink leads outside the config dir: " + secret + "\n" +
		"!evil2.yaml: symlink leads outside the config dir: " + secret + "\n" +
		"?dirlink: " + errDirLink.Error() + "\n" +
		"?dirlink.yaml: " + errDirLink.Error() + "\n" +
		"?sub/loop: " + errDirLink.Error() + "\n"
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadSpecialFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s := read(t, &Reader{}, dir, ModePlain)
	if got, want := contents(t, s), "!pipe.yaml: not a regular file: named pipe (FIFO)\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadPermissionDenied(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a", "locked.yaml": "l"})
	if err := os.Chmod(filepath.Join(dir, "locked.yaml"), 0); err != nil {
		t.Fatal(err)
	}
	s := read(t, &Reader{}, dir, ModePlain)
	if got, want := contents(t, s), "a.yaml=a\n!locked.yaml: open: open locked.yaml: permission denied\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
	if err := os.Chmod(dir, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if _, err := (&Reader{}).Read(context.Background(), dir, ModePlain); !errors.Is(err, ErrPermission) {
		t.Errorf("unreadable root: %v, want ErrPermission", err)
	}
}

func TestReadRootErrors(t *testing.T) {
	base := t.TempDir()
	write(t, base, map[string]string{"plain/a.yaml": "a"})
	symlink(t, "nowhere", filepath.Join(base, "dangling"))
	for _, tc := range []struct {
		dir  string
		mode Mode
	}{
		{filepath.Join(base, "missing"), ModeAuto},
		{filepath.Join(base, "missing"), ModePlain},
		{filepath.Join(base, "dangling"), ModeAuto},
		{filepath.Join(base, "dangling"), ModeLink},
		{filepath.Join(base, "plain"), ModeAtomic}, // no ..data
	} {
		s, err := (&Reader{}).Read(context.Background(), tc.dir, tc.mode)
		if s != nil || !errors.Is(err, ErrNotFound) {
			t.Errorf("Read(%s, %s) = %v, %v; want ErrNotFound", tc.dir, tc.mode, s, err)
		}
	}
}

func TestReadCanceled(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&Reader{}).Read(ctx, dir, ModePlain); !errors.Is(err, context.Canceled) {
		t.Errorf("Read with canceled context: %v, want context.Canceled", err)
	}
}

func TestSizeFormatting(t *testing.T) {
	for _, tc := range []struct {
		n             int64
		limit, approx string
	}{
		{100, "100 bytes", "100 bytes"},
		{1024, "1 KiB", "1.0 KiB"},
		{1536, "1536 bytes", "1.5 KiB"},
		{8 << 20, "8 MiB", "8.0 MiB"},
		{256 << 20, "256 MiB", "256.0 MiB"},
		{3 << 30, "3 GiB", "3.0 GiB"},
	} {
		if got := formatSize(tc.n); got != tc.limit {
			t.Errorf("formatSize(%d) = %q, want %q", tc.n, got, tc.limit)
		}
		if got := formatSizeApprox(tc.n); got != tc.approx {
			t.Errorf("formatSizeApprox(%d) = %q, want %q", tc.n, got, tc.approx)
		}
	}
}

// A commit point that still stands but names an empty directory (a
// worktree emptied under its link, a generation emptied under ..data, a
// link made to an empty directory) is not found either: read as a
// generation without routes, it deleted every route (an audit).
func TestCommitPointNamingAnEmptyDirIsNotFound(t *testing.T) {
	t.Run("link", func(t *testing.T) {
		g := publish.NewGitSync(t.TempDir(), "current")
		if err := g.Publish(bytesOf(map[string]string{"r.yaml": "r1"})); err != nil {
			t.Fatal(err)
		}
		r := &Reader{}
		read(t, r, g.Link(), ModeAuto)
		target, err := filepath.EvalSymlinks(g.Link())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(target, "r.yaml")); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []Mode{ModeAuto, ModeLink} {
			if s, err := r.Read(context.Background(), g.Link(), mode); s != nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "names an empty directory") {
				t.Errorf("Read(%s) = %v, %v; want ErrNotFound naming the empty directory", mode, s, err)
			}
		}
	})
	t.Run("..data", func(t *testing.T) {
		dir := t.TempDir()
		if err := publish.NewAtomicWriter(dir).Publish(bytesOf(map[string]string{"a.yaml": "a1"})); err != nil {
			t.Fatal(err)
		}
		r := &Reader{}
		read(t, r, dir, ModeAuto)
		target, err := filepath.EvalSymlinks(filepath.Join(dir, DataLink))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(target, "a.yaml")); err != nil {
			t.Fatal(err)
		}
		if s, err := r.Read(context.Background(), dir, ModeAuto); s != nil || !errors.Is(err, ErrNotFound) {
			t.Errorf("Read = %v, %v; want ErrNotFound", s, err)
		}
	})
}
