package certgen

import (
	"bytes"
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
	// Inline PEM (validated by model already) and valid files are used as given.
	caPEM, keyPEM, err := SelfSigned(now(), []string{"ca.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = Resolve(model.Settings{DefaultCertificate: "INLINE", DefaultDestinationCAFile: caFile}, dir, now)
	if err != nil || string(m.DefaultCertificate) != "INLINE" || !bytes.Equal(m.DefaultDestinationCA, caPEM) {
		t.Fatalf("inline and file: %v, %q, %q", err, m.DefaultCertificate, m.DefaultDestinationCA)
	}
	// A missing file is an error naming it.
	_, err = Resolve(model.Settings{DefaultCertificateFile: filepath.Join(dir, "nope.pem")}, dir, now)
	if err == nil || !strings.Contains(err.Error(), "nope.pem") {
		t.Fatalf("missing file: error = %v", err)
	}
	// An oversized file is refused, naming the limit; one at the limit is
	// read (a valid bundle padded with blank lines, which PEM allows).
	bundle := append(append([]byte(nil), caPEM...), keyPEM...)
	big := filepath.Join(dir, "big.pem")
	if err := os.WriteFile(big, append(bundle, bytes.Repeat([]byte("\n"), model.MaxFileSize+1-len(bundle))...), 0o644); err != nil {
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

// TestResolveJudgesFiles: PEM read from a file path is judged as inline PEM
// is, and the error names the RouterConfig field and the file, so a file
// HAProxy would refuse never reaches it.
func TestResolveJudgesFiles(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	dir := t.TempDir()
	certPEM, keyPEM, err := SelfSigned(now(), []string{"default.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.pem", string(certPEM)+string(keyPEM))
	notPEM := write("shadow", "root:*:19000:0:99999:7:::\n")
	noKey := write("nokey.pem", string(certPEM))
	damaged := write("damaged.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"+string(certPEM)+string(keyPEM))
	headers := write("headers.pem", strings.Replace(string(certPEM), "-----\n", "-----\nFoo: bar\n\n", 1)+string(keyPEM))

	if m, err := Resolve(model.Settings{DefaultCertificateFile: good, DefaultDestinationCAFile: write("ca.pem", string(certPEM))}, dir, now); err != nil ||
		!bytes.Equal(m.DefaultCertificate, append(certPEM, keyPEM...)) || !bytes.Equal(m.DefaultDestinationCA, certPEM) {
		t.Fatalf("valid files: %v", err)
	}
	for _, tt := range []struct {
		name string
		s    model.Settings
		want string
	}{
		{"not PEM", model.Settings{DefaultCertificateFile: notPEM},
			"spec.defaultCertificate: " + notPEM + " contains no PEM CERTIFICATE block"},
		{"no key", model.Settings{DefaultCertificateFile: noKey},
			"spec.defaultCertificate: " + noKey + " contains no private key: it needs the certificate chain and its key"},
		{"damaged block before a good one", model.Settings{DefaultCertificateFile: damaged},
			"spec.defaultCertificate: " + damaged + " is not valid PEM: block 1 does not decode (damaged base64 or missing END line)"},
		{"PEM header in a certificate", model.Settings{DefaultCertificateFile: headers},
			"spec.defaultCertificate: " + headers + " block 1 has PEM headers (Foo): OpenSSL refuses them outside encrypted keys"},
		{"CA file with a key", model.Settings{DefaultDestinationCAFile: good},
			"spec.defaultDestinationCA: " + good + " block 2 is a private key; certificates only here"},
		{"CA file not PEM", model.Settings{DefaultDestinationCAFile: notPEM},
			"spec.defaultDestinationCA: " + notPEM + " contains no PEM CERTIFICATE block"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(tt.s, dir, now)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v\nwant    %s", err, tt.want)
			}
		})
	}
}

// TestResolveClientCA: the client CA a clientTLS policy names is read
// from its file, or taken inline; a file that is no CA bundle is an
// error at spec.clientTLS.clientCA, for `haroute check` too.
func TestResolveClientCA(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	dir := t.TempDir()
	caPEM, _, err := SelfSigned(now(), []string{"clients.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	good, bad := filepath.Join(dir, "client-ca.pem"), filepath.Join(dir, "bad.pem")
	if err := os.WriteFile(good, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Resolve(model.Settings{ClientTLS: &model.ClientTLSPolicy{Verify: "required", CAFile: good}}, dir, now)
	if err != nil || !bytes.Equal(m.ClientCA, caPEM) {
		t.Fatalf("file: %v, %q", err, m.ClientCA)
	}
	m, err = Resolve(model.Settings{ClientTLS: &model.ClientTLSPolicy{Verify: "required", CA: "INLINE"}}, dir, now)
	if err != nil || string(m.ClientCA) != "INLINE" {
		t.Fatalf("inline: %v, %q", err, m.ClientCA)
	}
	if m, err = Resolve(model.Settings{}, dir, now); err != nil || m.ClientCA != nil {
		t.Fatalf("no clientTLS: %v, %q", err, m.ClientCA)
	}
	s := model.Settings{ClientTLS: &model.ClientTLSPolicy{Verify: "required", CAFile: bad}}
	if _, err := Resolve(s, dir, now); err == nil || !strings.Contains(err.Error(), FieldClientCA+": "+bad) {
		t.Errorf("bad file: error = %v, want it at %s naming the file", err, FieldClientCA)
	}
	if ps := CheckFiles(s); len(ps) != 1 || ps[0].Field != FieldClientCA {
		t.Errorf("CheckFiles = %+v, want one problem at %s", ps, FieldClientCA)
	}
}

// TestResolveErrorPages: the pages in the directory are read and judged
// as HAProxy would load them; one may be missing, not both; a bad one is
// an error at spec.httpErrorCodePages naming the file.
func TestResolveErrorPages(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	state, dir := t.TempDir(), t.TempDir()
	s := model.DefaultSettings()
	s.ErrorPagesDir = dir
	page503 := []byte("HTTP/1.0 503 Service Unavailable\r\nContent-Length: 5\r\n\r\nsorry")
	if err := os.WriteFile(filepath.Join(dir, "error-page-503.http"), page503, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Resolve(s, state, now)
	if err != nil || len(m.ErrorPages) != 1 || !bytes.Equal(m.ErrorPages[503], page503) {
		t.Fatalf("one page: %v, %v", err, m.ErrorPages)
	}
	bad := filepath.Join(dir, "error-page-404.http")
	if err := os.WriteFile(bad, []byte("HTTP/1.0 200 OK\r\n\r\nfine"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := FieldErrorPages + ": " + bad + " has status 200; the page for 404 must answer 404"
	if _, err := Resolve(s, state, now); err == nil || err.Error() != want {
		t.Errorf("bad page: error = %v, want %s", err, want)
	}
	if ps := CheckFiles(s); len(ps) != 1 || ps[0].Field != FieldErrorPages {
		t.Errorf("CheckFiles = %+v, want one problem at %s", ps, FieldErrorPages)
	}
	s.ErrorPagesDir = t.TempDir()
	if _, err := Resolve(s, state, now); err == nil || !strings.Contains(err.Error(), "holds neither error-page-503.http nor error-page-404.http") {
		t.Errorf("empty directory: error = %v", err)
	}
}

// ResolveOver keeps, of the last material, only what cannot be read now:
// a broken default certificate file serves its last content beside a
// client CA the settings newly name, with the error.
func TestResolveOverKeepsWhatBroke(t *testing.T) {
	now := func() time.Time { return time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) }
	dir := t.TempDir()
	broken := filepath.Join(dir, "default.pem")
	if err := os.WriteFile(broken, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	last := &Material{DefaultCertificate: []byte("LAST"), ClientCA: []byte("LAST CA")}
	s := model.Settings{DefaultCertificateFile: broken, ClientTLS: &model.ClientTLSPolicy{Verify: "required", CA: "NEW CA"}}
	m, err := ResolveOver(s, dir, now, last)
	if err == nil || !strings.Contains(err.Error(), FieldDefaultCertificate) {
		t.Errorf("error = %v, want the broken default certificate's", err)
	}
	if string(m.DefaultCertificate) != "LAST" || string(m.ClientCA) != "NEW CA" {
		t.Errorf("material = cert %q, client CA %q; want the last certificate and the new CA", m.DefaultCertificate, m.ClientCA)
	}
	if _, err := ResolveOver(s, dir, now, nil); err == nil {
		t.Error("without a last material, a broken file is an error")
	}
}
