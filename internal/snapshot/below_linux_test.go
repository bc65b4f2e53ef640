package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openBelow roots a below at dir; kernels without openat2 skip.
func openBelow(t *testing.T, dir string) *below {
	t.Helper()
	d, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b := newBelow(d)
	if b == nil {
		t.Skip("openat2 not available on this kernel: the careful path reads every file")
	}
	t.Cleanup(b.close)
	return b
}

func plainBuf(size int64) ([]byte, bool) { return make([]byte, 0, size+1), true }

// The fast path reads what is there and refuses, without blocking and
// without reading a byte of it, anything the careful path must judge: a
// symlink anywhere on the way (to an outside directory or file), a FIFO,
// a file over the limit, a file replaced after it was opened.
func TestBelowReadsOnlyPlainFilesBelowTheRoot(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, map[string]string{"x.yaml": "outside secret"})
	dir := t.TempDir()
	write(t, dir, map[string]string{"a.yaml": "a", "sub/b.yaml": "b", "big.yaml": "0123456789"})
	symlink(t, outside, filepath.Join(dir, "linked"))
	symlink(t, filepath.Join(outside, "x.yaml"), filepath.Join(dir, "file-link.yaml"))
	mkfifo(t, filepath.Join(dir, "pipe.yaml"))
	b := openBelow(t, dir)
	nop := func() {}

	for rel, want := range map[string]string{"a.yaml": "a", "sub/b.yaml": "b"} {
		if got, ok := b.read(rel, plainBuf, 1<<20, true, nop); !ok || string(got) != want {
			t.Errorf("read(%s) = %q, %v; want %q", rel, got, ok, want)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, rel := range []string{"linked/x.yaml", "file-link.yaml", "pipe.yaml", "../" + filepath.Base(outside) + "/x.yaml", "missing.yaml"} {
			if got, ok := b.read(rel, plainBuf, 1<<20, true, nop); ok {
				t.Errorf("read(%s) = %q, true; want refused", rel, got)
			}
		}
		if got, ok := b.read("big.yaml", plainBuf, 10, true, nop); ok {
			t.Errorf("read(big.yaml) with limit 10 = %q, true; want refused (10 bytes is one over the limit)", got)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the fast path blocked (on the FIFO?)")
	}

	// Replaced by rename while it was read: the path names another file
	// now, so the read does not count.
	replaced := func() {
		write(t, dir, map[string]string{"new.yaml": "new"})
		if err := os.Rename(filepath.Join(dir, "new.yaml"), filepath.Join(dir, "a.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	if got, ok := b.read("a.yaml", plainBuf, 1<<20, true, replaced); ok {
		t.Errorf("read(a.yaml) replaced during the read = %q, true; want refused", got)
	}
}

// A plain directory replaced while it is read (moved aside, another put
// in its place) is read again whole: its files were opened below the
// directory listed first, and only the check at the end of the walk sees
// that the path names another one now.
func TestReadRootReplacedDuringTheWalk(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "config")
	write(t, dir, map[string]string{"a.yaml": "old a", "b.yaml": "old b"})
	openBelow(t, dir) // skips where the fast path does not exist
	root := realpath(t, dir)
	swapped := false
	setHooks(t, nil, func(file string) {
		if file == filepath.Join(root, "a.yaml") && !swapped {
			swapped = true
			if err := os.Rename(dir, filepath.Join(parent, "aside")); err != nil {
				t.Error(err)
			}
			write(t, dir, map[string]string{"a.yaml": "new a", "b.yaml": "new b"})
		}
	})
	s, err := readPromptly(t, &Reader{}, dir, ModePlain)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := contents(t, s), "a.yaml=new a\nb.yaml=new b\n"; got != want || s.Attempts != 2 {
		t.Errorf("snapshot after %d attempts:\n%s\nwant, after 2:\n%s", s.Attempts, got, want)
	}
}
