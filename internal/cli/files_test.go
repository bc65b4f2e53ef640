package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runPromptly is run that fails the test instead of hanging with it: the
// guard is not a time bound, a command blocked on a FIFO never returns.
func runPromptly(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := run(t, args...)
		done <- result{code, stdout, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(time.Minute):
		t.Fatalf("haroute %s blocked", strings.Join(args, " "))
		return 0, "", ""
	}
}

// TestCheckDoesNotHangOnFIFO: a FIFO in the tree, or a link to one, is
// reported by path and check returns, judging the rest of the tree.
func TestCheckDoesNotHangOnFIFO(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "to-fifo.yaml")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runPromptly(t, "check", dir)
	want := "pipe.yaml:1:1: error: not a regular file: named pipe (FIFO)\n" +
		"to-fifo.yaml:1:1: error: symlink to fifo: not a regular file: named pipe (FIFO)\n"
	if code != ExitInvalid || stdout != want || !strings.Contains(stderr, "invalid (1 routes admitted, 0 rejected)") {
		t.Fatalf("check: exit %d\nstdout %q\nwant   %q\nstderr %q", code, stdout, want, stderr)
	}
}

// TestRenderDoesNotHangOnFIFOCertificate: a RouterConfig whose
// defaultCertificate names a FIFO fails render at once, naming the field
// and the file.
func TestRenderDoesNotHangOnFIFOCertificate(t *testing.T) {
	pipe := filepath.Join(t.TempDir(), "cert.pem")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{
		"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints,
		"router.yaml": "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  defaultCertificate: " + pipe + "\n",
	})
	code, stdout, stderr := runPromptly(t, "render", dir, "--out", t.TempDir())
	msg := "spec.defaultCertificate: " + pipe + ": not a regular file: named pipe (FIFO)\n"
	want := "router.yaml:6:23: error: " + msg + dir + ": invalid, nothing rendered (--allow-errors renders what is admitted)\n"
	if code != ExitInvalid || stdout != "" || stderr != want {
		t.Fatalf("render: exit %d\nstdout %q\nstderr %q\nwant   %q", code, stdout, stderr, want)
	}
	// Asked to render anyway, it still cannot read the file, and says so.
	code, stdout, stderr = runPromptly(t, "render", dir, "--out", t.TempDir(), "--allow-errors")
	want = "router.yaml:6:23: error: " + msg + "haroute render: " + msg
	if code != ExitInvalid || stdout != "" || stderr != want {
		t.Fatalf("render --allow-errors: exit %d\nstdout %q\nstderr %q\nwant   %q", code, stdout, stderr, want)
	}
}

// TestCheckJudgesRouterConfigFiles: files the RouterConfig names are read
// as the daemon reads them, and a bad one is an error at the field.
func TestCheckJudgesRouterConfigFiles(t *testing.T) {
	tmp := t.TempDir()
	notPEM := filepath.Join(tmp, "shadow")
	if err := os.WriteFile(notPEM, []byte("root:*:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ path, want string }{
		"not PEM":   {notPEM, "contains no PEM"},
		"missing":   {filepath.Join(tmp, "missing.pem"), "no such file or directory"},
		"directory": {tmp, "not a regular file: directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{
				"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints,
				"router.yaml": "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  defaultCertificate: " + tc.path + "\n",
			})
			code, stdout, _ := runPromptly(t, "check", dir)
			if code != ExitInvalid || !strings.Contains(stdout, "router.yaml:6:23: error: spec.defaultCertificate: ") || !strings.Contains(stdout, tc.want) {
				t.Fatalf("check: exit %d, stdout %q; want an error at router.yaml:6:23 saying %q", code, stdout, tc.want)
			}
		})
	}
}
