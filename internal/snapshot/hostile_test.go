package snapshot

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// hangGuard is how long a read may take before the test calls it hung. It
// is not a performance bound: a read that blocks on a FIFO never returns,
// and the guard turns that into a failure instead of a stuck test binary.
const hangGuard = time.Minute

// readPromptly is Read that fails the test instead of hanging with it.
func readPromptly(t *testing.T, r *Reader, dir string, mode Mode) (*Snapshot, error) {
	t.Helper()
	type result struct {
		s   *Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := r.Read(context.Background(), dir, mode)
		done <- result{s, err}
	}()
	select {
	case res := <-done:
		return res.s, res.err
	case <-time.After(hangGuard):
		t.Fatalf("Read(%s, %s) blocked", dir, mode)
		return nil, nil
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}

// listenUnix leaves a unix socket file at path for the test's duration.
func listenUnix(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen on %s: %v", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { ln.Close() })
}

// setHooks installs the reader's test hooks for one test.
func setHooks(t *testing.T, beforeOpen, afterRead func(file string)) {
	t.Helper()
	hookBeforeOpen, hookAfterRead = beforeOpen, afterRead
	t.Cleanup(func() { hookBeforeOpen, hookAfterRead = nil, nil })
}

// TestReadRefusesSpecialFiles: FIFOs, sockets and links to them are refused
// by kind without blocking the read, each as a FileError naming its path,
// while the regular files next to them are read.
func TestReadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a", "sub/b.yaml": "b"})
	mkfifo(t, filepath.Join(dir, "pipe.yaml"))
	mkfifo(t, filepath.Join(dir, "sub", "fifo"))
	listenUnix(t, filepath.Join(dir, "sock.yaml"))
	listenUnix(t, filepath.Join(dir, "sub", "sock"))
	symlink(t, "sub/fifo", filepath.Join(dir, "to-fifo.yaml"))
	symlink(t, "sub/sock", filepath.Join(dir, "to-sock.json"))
	symlink(t, "/dev/null", filepath.Join(dir, "to-null.yaml"))

	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	want := "a.yaml=a\nsub/b.yaml=b\n" +
		"!pipe.yaml: not a regular file: named pipe (FIFO)\n" +
		"!sock.yaml: not a regular file: socket\n" +
		"!to-fifo.yaml: symlink to sub/fifo: not a regular file: named pipe (FIFO)\n" +
		"!to-null.yaml: symlink leads outside the config dir: /dev/null\n" +
		"!to-sock.json: symlink to sub/sock: not a regular file: socket\n"
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadRefusesDevice needs mknod, which only root may call.
func TestReadRefusesDevice(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a"})
	// 1:3 is /dev/null's device number on Linux.
	if err := syscall.Mknod(filepath.Join(dir, "null.yaml"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		testutil.Skip(t, "mknod: %v", err)
	}
	symlink(t, "null.yaml", filepath.Join(dir, "to-null.yaml"))
	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	want := "a.yaml=a\n!null.yaml: not a regular file: character device\n" +
		"!to-null.yaml: symlink to null.yaml: not a regular file: character device\n"
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadFileSwappedForFIFO: a file replaced by a FIFO (or by a symlink to
// an outside file) between the directory listing and the open is refused
// from the opened descriptor, without waiting for a writer and without
// following the link.
func TestReadFileSwappedForFIFO(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.yaml": "outside secret"})
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a", "pipe.yaml": "p", "link.yaml": "l"})
	root := realpath(t, dir)
	setHooks(t, func(file string) {
		switch file {
		case filepath.Join(root, "pipe.yaml"):
			os.Remove(file)
			mkfifo(t, file)
		case filepath.Join(root, "link.yaml"):
			os.Remove(file)
			symlink(t, filepath.Join(outside, "secret.yaml"), file)
		}
	}, nil)
	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	want := "a.yaml=a\n" +
		"!link.yaml: open: open link.yaml: too many levels of symbolic links\n" +
		"!pipe.yaml: not a regular file: named pipe (FIFO)\n"
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// swapDir replaces the directory dir with a symlink to target, keeping the
// real directory aside; the returned func puts it back.
func swapDir(t *testing.T, dir, target string) (restore func()) {
	t.Helper()
	aside := filepath.Join(filepath.Dir(dir), ".aside")
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, dir)
	return func() {
		if err := os.Remove(dir); err != nil {
			t.Error(err)
		}
		if err := os.Rename(aside, dir); err != nil {
			t.Error(err)
		}
	}
}

// TestReadDirSwappedDuringRead: a directory swapped for a symlink to an
// outside directory while a file below it is opened, and swapped back
// before the read ends, must not let the outside file in: the descriptor
// read is not the file the path names afterwards, so the file is read
// again, and the snapshot holds the inside content.
func TestReadDirSwappedDuringRead(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"x.yaml": "outside secret"})
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a", "sub/x.yaml": "inside"})
	root := realpath(t, dir)
	target := filepath.Join(root, "sub", "x.yaml")
	var restore func()
	opens := 0
	setHooks(t, func(file string) {
		if file != target {
			return
		}
		opens++
		if opens == 1 {
			restore = swapDir(t, filepath.Join(root, "sub"), outside)
		}
	}, func(file string) {
		if restore != nil {
			restore()
			restore = nil
		}
	})
	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, s), "a.yaml=a\nsub/x.yaml=inside\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
	if opens != 2 {
		t.Errorf("sub/x.yaml opened %d times, want 2 (the swapped read discarded, then read again)", opens)
	}
}

// TestReadDirSwappedAndLeft: a directory that stays a symlink to an outside
// directory after the swap is reported for the file below it, which keeps
// its last good content; the other files are read.
func TestReadDirSwappedAndLeft(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"x.yaml": "outside secret"})
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a", "sub/x.yaml": "inside", "z.yaml": "z"})
	root := realpath(t, dir)
	swapped := false
	setHooks(t, nil, func(file string) {
		if file == filepath.Join(root, "sub", "x.yaml") && !swapped {
			swapped = true
			swapDir(t, filepath.Join(root, "sub"), outside)
		}
	})
	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	want := "a.yaml=a\nz.yaml=z\n!sub/x.yaml: replaced while it was read: sub is now a symlink\n"
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
	var fe FileError
	if len(s.Errors) != 1 || !errors.As(s.Errors[0], &fe) || fe.Path != "sub/x.yaml" {
		t.Errorf("errors %v, want one FileError for sub/x.yaml", s.Errors)
	}
}

// TestReadAtomicDataOutside: ..data must lead to a directory directly in
// the config dir; anywhere else fails the whole read (ErrOutside), so the
// daemon keeps serving the last good generation and reads nothing from
// there.
func TestReadAtomicDataOutside(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"gen/secret.yaml": "outside secret"})
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"absolute", func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, "gen"), filepath.Join(dir, DataLink))
		}},
		{"relative", func(t *testing.T, dir string) {
			rel, err := filepath.Rel(dir, filepath.Join(outside, "gen"))
			if err != nil {
				t.Fatal(err)
			}
			symlink(t, rel, filepath.Join(dir, DataLink))
		}},
		{"through a child link", func(t *testing.T, dir string) {
			symlink(t, filepath.Join(outside, "gen"), filepath.Join(dir, "..2026_01_01"))
			symlink(t, "..2026_01_01", filepath.Join(dir, DataLink))
		}},
		{"the dir itself", func(t *testing.T, dir string) {
			write(t, dir, map[string]string{"a.yaml": "a"})
			symlink(t, ".", filepath.Join(dir, DataLink))
		}},
		{"a grandchild", func(t *testing.T, dir string) {
			write(t, dir, map[string]string{"..2026_01_01/deeper/a.yaml": "a"})
			symlink(t, "..2026_01_01/deeper", filepath.Join(dir, DataLink))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			for _, mode := range []Mode{ModeAuto, ModeAtomic} {
				s, err := readPromptly(t, &Reader{}, dir, mode)
				if s != nil || !errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), filepath.Join(dir, DataLink)) {
					t.Errorf("Read(%s) = %v, %v; want ErrOutside naming ..data", mode, s, err)
				}
			}
		})
	}
}

// TestReadAtomicHostileEntries: in an AtomicWriter dir only the generation
// behind ..data is read. A visible entry that is a FIFO or a link to an
// outside file is never opened; inside the generation, a FIFO or a link
// out of it is a FileError. The legitimate layout (visible links into
// ..data, ..data to a ..2026_… sibling) reads as usual.
func TestReadAtomicHostileEntries(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"secret.yaml": "outside secret"})
	dir := t.TempDir()
	if err := publish.NewAtomicWriter(dir).Publish(bytesOf(map[string]string{"a.yaml": "a", "sub/b.yaml": "b"})); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(dir, "visible-pipe.yaml"))
	symlink(t, "/etc/passwd", filepath.Join(dir, "visible-passwd.yaml"))
	gen := realpath(t, filepath.Join(dir, DataLink))
	mkfifo(t, filepath.Join(gen, "pipe.yaml"))
	symlink(t, filepath.Join(outside, "secret.yaml"), filepath.Join(gen, "evil.yaml"))
	// Out of the generation, though still inside the config dir.
	symlink(t, "../visible-passwd.yaml", filepath.Join(gen, "up.yaml"))

	s, err := readPromptly(t, &Reader{}, dir, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := "a.yaml=a\nsub/b.yaml=b\n" +
		"!evil.yaml: symlink leads outside the config dir: " + realpath(t, filepath.Join(outside, "secret.yaml")) + "\n" +
		"!pipe.yaml: not a regular file: named pipe (FIFO)\n" +
		"!up.yaml: symlink leads outside the config dir: " + realpath(t, "/etc/passwd") + "\n"
	if s.Mode != ModeAtomic {
		t.Errorf("mode %s, want atomic", s.Mode)
	}
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadLinkHostileEntries: in link mode the link's target is the root,
// wherever it lives (git-sync keeps worktrees in a sibling .worktrees dir);
// a file linking out of that worktree, even into the git-sync root, is
// refused.
func TestReadLinkHostileEntries(t *testing.T) {
	base := t.TempDir()
	write(t, base, map[string]string{"beside.yaml": "beside the worktrees"})
	g := publish.NewGitSync(base, "current")
	if err := g.Publish(bytesOf(map[string]string{"r.yaml": "r", "d/e.json": "e"})); err != nil {
		t.Fatal(err)
	}
	worktree := realpath(t, g.Link())
	symlink(t, "/etc/passwd", filepath.Join(worktree, "passwd.yaml"))
	symlink(t, "../../beside.yaml", filepath.Join(worktree, "beside.yaml"))
	symlink(t, "d/e.json", filepath.Join(worktree, "alias.json"))
	mkfifo(t, filepath.Join(worktree, "d", "pipe.yml"))
	// Links to directories are not followed, and say so: their routes
	// were dropped without a word. A link to a file not named like a
	// config file is passed over as such files are.
	symlink(t, "d", filepath.Join(worktree, "shared"))
	symlink(t, "d", filepath.Join(worktree, "linked.yaml"))
	symlink(t, base, filepath.Join(worktree, "outside"))
	symlink(t, "r.yaml", filepath.Join(worktree, "README"))

	s, err := readPromptly(t, &Reader{}, g.Link(), ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := "alias.json=e\nd/e.json=e\nr.yaml=r\n" +
		"!beside.yaml: symlink leads outside the config dir: " + filepath.Join(realpath(t, base), "beside.yaml") + "\n" +
		"!d/pipe.yml: not a regular file: named pipe (FIFO)\n" +
		"!passwd.yaml: symlink leads outside the config dir: " + realpath(t, "/etc/passwd") + "\n" +
		"?linked.yaml: " + errDirLink.Error() + "\n" +
		"?outside: " + errDirLink.Error() + "\n" +
		"?shared: " + errDirLink.Error() + "\n"
	if s.Mode != ModeLink || s.Root != worktree {
		t.Errorf("mode, root = %s, %s; want link, %s", s.Mode, s.Root, worktree)
	}
	if got := contents(t, s); got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// TestReadAtomicThroughLinkedDir: a ConfigMap mount reached through a
// symlink is still a legitimate layout; ..data is judged against the
// physical config dir.
func TestReadAtomicThroughLinkedDir(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := publish.NewAtomicWriter(real).Publish(bytesOf(map[string]string{"a.yaml": "a"})); err != nil {
		t.Fatal(err)
	}
	mount := filepath.Join(base, "mount")
	symlink(t, "real", mount)
	s, err := readPromptly(t, &Reader{}, mount, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, s), "a.yaml=a\n"; s.Mode != ModeAtomic || got != want {
		t.Errorf("mode %s, snapshot:\n%s\nwant atomic:\n%s", s.Mode, got, want)
	}
}

// A file that cannot be read reads alike in every generation: its error
// names it below the root, not under the generation's own directory.
// With the directory's name in it, each kubelet or git-sync publish made
// a new snapshot hash, and the daemon counted the same standing error
// resolved and new again at every publish (T48).
func TestFileErrorsReadAlikeInEveryGeneration(t *testing.T) {
	dir := t.TempDir()
	generation := func(name string) {
		gen := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(gen, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gen, "a.yaml"), []byte("a"), 0o644); err != nil {
			t.Fatal(err)
		}
		mkfifo(t, filepath.Join(gen, "sub", "fifo"))
		symlink(t, "sub/fifo", filepath.Join(gen, "p.yaml"))
		mkfifo(t, filepath.Join(gen, "pipe"))
		symlink(t, "pipe", filepath.Join(gen, "q.yaml"))
		symlink(t, name, filepath.Join(dir, "..data_tmp"))
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	var r Reader
	generation("..2026_11_29_12_00_00.000000001")
	first, err := readPromptly(t, &r, dir, ModeAtomic)
	if err != nil {
		t.Fatal(err)
	}
	generation("..2026_11_29_12_00_01.000000002")
	if err := os.RemoveAll(filepath.Join(dir, "..2026_11_29_12_00_00.000000001")); err != nil {
		t.Fatal(err)
	}
	second, err := readPromptly(t, &r, dir, ModeAtomic)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, second), "a.yaml=a\n"+
		"!p.yaml: symlink to sub/fifo: not a regular file: named pipe (FIFO)\n"+
		"!q.yaml: symlink to pipe: not a regular file: named pipe (FIFO)\n"; got != want {
		t.Errorf("second generation:\n%s\nwant:\n%s", got, want)
	}
	if first.Hash != second.Hash || contents(t, first) != contents(t, second) {
		t.Errorf("the same content read differently in two generations:\n%s\n%s", contents(t, first), contents(t, second))
	}
}

// A path outside the root that holds the root's own path (a mirror of
// the tree elsewhere) is named whole: only paths that begin with the
// root are cut to it (T49: "…/mirror/…/cfg/x.yaml" read "…/mirrorx.yaml").
func TestFileErrorsNameOutsidePathsWhole(t *testing.T) {
	base := realpath(t, t.TempDir())
	dir := filepath.Join(base, "cfg")
	outside := filepath.Join(base, "mirror") + dir
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(outside, "x.yaml")
	if err := os.WriteFile(target, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, filepath.Join(dir, "x.yaml"))
	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, s), "!x.yaml: symlink leads outside the config dir: "+target+"\n"; got != want {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}
