package certgen

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("no CERTIFICATE block in %q", certPEM)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return c
}

func TestSelfSigned(t *testing.T) {
	certPEM, keyPEM, err := SelfSigned(t0, []string{"www.example.test", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatalf("certificate and key do not match: %v", err)
	}
	c := parseCert(t, certPEM)
	if got, want := c.Subject.CommonName, "www.example.test"; got != want {
		t.Errorf("common name = %q, want %q", got, want)
	}
	if got, want := c.DNSNames, []string{"www.example.test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("DNS names = %q, want %q", got, want)
	}
	if len(c.IPAddresses) != 1 || c.IPAddresses[0].String() != "127.0.0.1" {
		t.Errorf("IP addresses = %v, want [127.0.0.1]", c.IPAddresses)
	}
	if got, want := c.NotBefore, t0.Add(-time.Hour); !got.Equal(want) {
		t.Errorf("NotBefore = %s, want %s", got, want)
	}
	if got, want := c.NotAfter, t0.Add(365*24*time.Hour); !got.Equal(want) {
		t.Errorf("NotAfter = %s, want %s", got, want)
	}
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key = %T, want ECDSA P-256", c.PublicKey)
	}
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
}

func TestSelfSignedDefaultName(t *testing.T) {
	certPEM, _, err := SelfSigned(t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := parseCert(t, certPEM)
	if c.Subject.CommonName != DefaultCommonName || len(c.DNSNames) != 0 {
		t.Errorf("subject %q, DNS names %q; want %q and none", c.Subject.CommonName, c.DNSNames, DefaultCommonName)
	}
}

func TestEnsureDefaultCreatesOnceThenReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	now := func() time.Time { return t0 }
	first, err := EnsureDefault(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DefaultFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	onDisk, _ := os.ReadFile(path)
	if !bytes.Equal(onDisk, first) {
		t.Error("returned PEM differs from the file")
	}
	if _, err := tls.X509KeyPair(first, first); err != nil {
		t.Errorf("default.pem is not a certificate with its key: %v", err)
	}
	later := func() time.Time { return t0.Add(200 * 24 * time.Hour) }
	second, err := EnsureDefault(dir, later)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Error("second call generated a new certificate instead of reusing the first")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want only %s (no temp files left)", len(entries), DefaultFile)
	}
}

func TestEnsureDefaultReplacesUnusable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content func(t *testing.T) []byte
		now     time.Time
	}{
		{"expired", func(t *testing.T) []byte {
			c, k, err := SelfSigned(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			return append(c, k...)
		}, t0.Add(366 * 24 * time.Hour)},
		{"expiring within the renewal window", func(t *testing.T) []byte {
			c, k, err := SelfSigned(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			return append(c, k...)
		}, t0.Add(Validity - RenewWithin + time.Minute)},
		{"garbage", func(*testing.T) []byte { return []byte("not a pem\n") }, t0},
		{"certificate without key", func(t *testing.T) []byte {
			c, _, err := SelfSigned(t0, nil)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			old := tc.content(t)
			if err := os.WriteFile(filepath.Join(dir, DefaultFile), old, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := EnsureDefault(dir, func() time.Time { return tc.now })
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(got, old) {
				t.Fatal("unusable default certificate was reused")
			}
			pair, err := tls.X509KeyPair(got, got)
			if err != nil {
				t.Fatalf("replacement is not a certificate with its key: %v", err)
			}
			leaf, _ := x509.ParseCertificate(pair.Certificate[0])
			if ExpiresSoon(leaf.NotAfter, tc.now) || tc.now.Before(leaf.NotBefore) {
				t.Errorf("replacement valid %s–%s, not at %s", leaf.NotBefore, leaf.NotAfter, tc.now)
			}
		})
	}
}

// A clock behind (a host without a real-time clock boots in 1970 until
// NTP sets it) keeps the default certificate: one made then was expired
// for every client once the clock was right, and clients that pinned the
// old one broke at each boot.
func TestEnsureDefaultKeepsItWhenTheClockIsBehind(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureDefault(dir, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureDefault(dir, func() time.Time { return time.Unix(0, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Fatal("the default certificate was replaced because the clock read 1970")
	}
}

// A FIFO in its place is made anew, not read: the read waited for a
// writer, and the daemon's start with it.
func TestEnsureDefaultReplacesAFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DefaultFile)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := EnsureDefault(dir, func() time.Time { return t0 })
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute): // a hang guard, not a time bound
		t.Fatal("EnsureDefault blocked on a FIFO")
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("default certificate after EnsureDefault: %v, %v", fi, err)
	}
}

// A directory in its place is set aside and the certificate made: it
// was reported, and with no saved state to serve, HAProxy never started.
func TestEnsureDefaultSetsADirectoryAside(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, DefaultFile, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, err := EnsureDefault(dir, func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(got, got); err != nil {
		t.Fatalf("not a certificate with its key: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, DefaultFile)); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("default certificate: %v, %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultFile+".unusable", "inside")); err != nil {
		t.Errorf("the directory was not kept aside: %v", err)
	}
}
