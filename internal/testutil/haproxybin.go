// Package testutil holds helpers shared by tests that drive real processes.
package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// HAProxy returns the path of the haproxy binary. A test that needs it skips
// when it is absent locally, but fails under CI=true: CI must never pass by
// skipping.
//
// HAROUTE_HAPROXY names another binary (`make test-haproxy3` sets it to
// Debian 13's HAProxy 3.0); one it names must exist, or the test fails
// rather than testing the wrong HAProxy.
func HAProxy(t testing.TB) string {
	t.Helper()
	path := os.Getenv("HAROUTE_HAPROXY")
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("HAROUTE_HAPROXY: %v", err)
		}
	}
	if path == "" {
		var err error
		path, err = exec.LookPath("haproxy")
		if err != nil {
			for _, p := range []string{"/usr/sbin/haproxy", "/usr/local/sbin/haproxy"} {
				if _, statErr := os.Stat(p); statErr == nil {
					return p
				}
			}
			if os.Getenv("CI") == "true" {
				t.Fatalf("haproxy not found and CI=true: tests must not pass by skipping: %v", err)
			}
			t.Skipf("haproxy not found: %v", err)
		}
	}
	return path
}

// Skip skips a test whose precondition the machine lacks (IPv6 loopback,
// root for mknod), but fails it under CI=true: CI must never pass by
// skipping what it should have tested.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true, cannot skip: "+format, args...)
	}
	t.Skipf(format, args...)
}
