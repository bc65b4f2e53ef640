package certgen

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
)

func TestResolve(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	dir := t.TempDir()

	// Nothing configured: the generated default, the system CA store.
	m, err := Resolve(model.Settings{}, dir, now)
	if err != nil || !strings.Contains(string(m.DefaultCertificate), "PRIVATE KEY") || m.DefaultDestinationCA != nil {
		t.Fatalf("defaults: %v, cert %d bytes, ca %q", err, len(m.DefaultCertificate), m.DefaultDestinationCA)
	}
	// Inline PEM and files are used as given.
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, []byte("CA"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = Resolve(model.Settings{DefaultCertificate: "INLINE", DefaultDestinationCAFile: caFile}, dir, now)
	if err != nil || string(m.DefaultCertificate) != "INLINE" || string(m.DefaultDestinationCA) != "CA" {
		t.Fatalf("inline and file: %v, %q, %q", err, m.DefaultCertificate, m.DefaultDestinationCA)
	}
	// A missing file is an error naming it.
	_, err = Resolve(model.Settings{DefaultCertificateFile: filepath.Join(dir, "nope.pem")}, dir, now)
	if err == nil || !strings.Contains(err.Error(), "nope.pem") {
		t.Fatalf("missing file: error = %v", err)
	}
	// An oversized file is refused, naming the limit; one at the limit is read.
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, make([]byte, model.MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(model.Settings{DefaultCertificateFile: big}, dir, now)
	if err == nil || !strings.Contains(err.Error(), "big.pem: more than 8388608 bytes") {
		t.Fatalf("oversized file: error = %v", err)
	}
	if err := os.Truncate(big, model.MaxFileSize); err != nil {
		t.Fatal(err)
	}
	if m, err = Resolve(model.Settings{DefaultCertificateFile: big}, dir, now); err != nil || len(m.DefaultCertificate) != model.MaxFileSize {
		t.Fatalf("file at the limit: %v, %d bytes", err, len(m.DefaultCertificate))
	}
}

// TestResolveRefusesSpecialFiles: a RouterConfig naming a FIFO, a directory
// or a device is refused at once, naming the field and the file; a FIFO
// must not hold the sync until a writer comes. A link to a FIFO counts as a
// FIFO.
func TestResolveRefusesSpecialFiles(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	dir := t.TempDir()
	pipe := filepath.Join(dir, "pipe.pem")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pem")
	if err := os.Symlink(pipe, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		settings model.Settings
		want     string
	}{
		{"fifo certificate", model.Settings{DefaultCertificateFile: pipe},
			"spec.defaultCertificate: " + pipe + ": not a regular file: named pipe (FIFO)"},
		{"link to fifo CA", model.Settings{DefaultCertificate: "INLINE", DefaultDestinationCAFile: link},
			"spec.defaultDestinationCA: " + link + ": not a regular file: named pipe (FIFO)"},
		{"directory certificate", model.Settings{DefaultCertificateFile: dir},
			"spec.defaultCertificate: " + dir + ": not a regular file: directory"},
		{"device CA", model.Settings{DefaultCertificate: "INLINE", DefaultDestinationCAFile: "/dev/null"},
			"spec.defaultDestinationCA: /dev/null: not a regular file: character device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Resolve(tc.settings, dir, now)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || err.Error() != tc.want {
					t.Errorf("error = %v, want %s", err, tc.want)
				}
			case <-time.After(time.Minute): // a hang guard, not a time bound
				t.Fatal("Resolve blocked")
			}
		})
	}
}
