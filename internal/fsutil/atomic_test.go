package fsutil

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key.pem")
	if err := WriteFileAtomic(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "two" {
		t.Fatalf("content = %q, %v; want two", got, err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

func TestWriteFileAtomicMissingDir(t *testing.T) {
	err := WriteFileAtomic(filepath.Join(t.TempDir(), "nope", "f"), []byte("x"), 0o644)
	if err == nil {
		t.Fatal("want an error for a missing directory")
	}
}

// WriteAtomic writes what fill writes, however large; a failing fill
// leaves the old file and no temp file.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "haproxy.cfg")
	big := bytes.Repeat([]byte("backend x\n"), writeBuffer/5) // two buffers' worth
	for range 2 {                                             // the second round reuses a pooled buffer
		if err := WriteAtomic(path, 0o644, func(w io.Writer) error {
			for _, p := range [][]byte{[]byte("global\n"), big, []byte("end\n")} {
				if _, err := w.Write(p); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || len(got) != len(big)+11 || !bytes.HasPrefix(got, []byte("global\nbackend")) || !bytes.HasSuffix(got, []byte("x\nend\n")) {
			t.Fatalf("content: %d bytes, %v; want %d", len(got), err, len(big)+11)
		}
	}
	boom := errors.New("boom")
	err := WriteAtomic(path, 0o644, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want boom", err)
	}
	if got, _ := os.ReadFile(path); !bytes.HasPrefix(got, []byte("global\n")) {
		t.Fatalf("a failed write replaced the file: %.20q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

// A write that cannot create its temporary file fails with the same
// message each time: the file's random name in it made one fault retried
// read as a new error at every try (T42).
func TestWriteFailsAlikeEachTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "haproxy.cfg")
	err1 := WriteFileAtomic(path, []byte("x"), 0o644)
	err2 := WriteFileAtomic(path, []byte("x"), 0o644)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() || strings.Contains(err1.Error(), ".tmp-") {
		t.Fatalf("errors %v and %v: want the same, naming no temporary file", err1, err2)
	}
	if !errors.Is(err1, fs.ErrNotExist) || !strings.Contains(err1.Error(), path) {
		t.Errorf("error %v: want it to name %s and wrap ENOENT", err1, path)
	}

	// The rename fails (a directory in the way, as a state dir may
	// hold one): alike too.
	inTheWay := filepath.Join(t.TempDir(), "default.pem")
	if err := os.MkdirAll(filepath.Join(inTheWay, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err1 = WriteFileAtomic(inTheWay, []byte("x"), 0o600)
	err2 = WriteFileAtomic(inTheWay, []byte("x"), 0o600)
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() || strings.Contains(err1.Error(), ".tmp-") || !strings.Contains(err1.Error(), inTheWay) {
		t.Fatalf("rename errors %v and %v: want the same, naming %s and no temporary file", err1, err2, inTheWay)
	}
}
