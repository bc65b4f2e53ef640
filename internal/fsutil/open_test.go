package fsutil

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRegular: regular files open (through a link unless noFollow);
// FIFOs, sockets, devices and directories are refused by kind, and a FIFO
// without a writer does not block the open.
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	link := filepath.Join(dir, "link")
	if err := os.Symlink("file", link); err != nil {
		t.Fatal(err)
	}
	pipeLink := filepath.Join(dir, "pipe-link")
	if err := os.Symlink("pipe", pipeLink); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		path     string
		noFollow bool
		want     string // error text; "" = opens and reads "data"
	}{
		{path: file},
		{path: file, noFollow: true},
		{path: link},
		{path: link, noFollow: true, want: "open " + link + ": too many levels of symbolic links"},
		{path: pipe, want: "not a regular file: named pipe (FIFO)"},
		{path: pipe, noFollow: true, want: "not a regular file: named pipe (FIFO)"},
		{path: pipeLink, want: "not a regular file: named pipe (FIFO)"},
		{path: sock, want: "not a regular file: socket"},
		{path: sock, noFollow: true, want: "not a regular file: socket"},
		{path: "/dev/null", want: "not a regular file: character device"},
		{path: dir, want: "not a regular file: directory"},
	} {
		done := make(chan error, 1)
		go func() {
			f, fi, err := OpenRegular(tc.path, tc.noFollow)
			if err != nil {
				done <- err
				return
			}
			defer f.Close()
			data := make([]byte, 10)
			n, _ := f.Read(data)
			if string(data[:n]) != "data" || fi.Size() != 4 {
				t.Errorf("OpenRegular(%s, %v) read %q, size %d", tc.path, tc.noFollow, data[:n], fi.Size())
			}
			done <- nil
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute): // a hang guard, not a time bound
			t.Fatalf("OpenRegular(%s, %v) blocked", tc.path, tc.noFollow)
		}
		if got := errText(err); got != tc.want {
			t.Errorf("OpenRegular(%s, %v): %q, want %q", tc.path, tc.noFollow, got, tc.want)
		}
		if strings.HasPrefix(tc.want, "not a regular") && !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenRegular(%s): %v does not wrap ErrNotRegular", tc.path, err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ReadRegular reads a regular file whole and refuses a FIFO at once.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	file, pipe := filepath.Join(dir, "file"), filepath.Join(dir, "pipe")
	if err := os.WriteFile(file, []byte(strings.Repeat("data", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadRegular(file); err != nil || string(got) != strings.Repeat("data", 5000) {
		t.Errorf("ReadRegular(file): %d bytes, %v", len(got), err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadRegular(pipe); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), pipe) {
			t.Errorf("ReadRegular(pipe): %v, want ErrNotRegular naming the path", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a time bound
		t.Fatal("ReadRegular blocked on a FIFO")
	}
}
