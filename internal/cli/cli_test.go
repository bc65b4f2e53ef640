package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const goodRoute = `apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: web
  namespace: demo
spec:
  host: web.example.test
  to:
    kind: Service
    name: web
`

const goodEndpoints = `apiVersion: v1
kind: Endpoints
metadata:
  name: web
  namespace: demo
subsets:
  - addresses:
      - ip: 10.0.0.1
    ports:
      - port: 8080
`

func TestCheckExamplesAreValid(t *testing.T) {
	code, stdout, stderr := run(t, "check", "../../examples/config")
	if code != ExitOK {
		t.Fatalf("check examples/config: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "valid (") {
		t.Fatalf("stderr = %q, want a 'valid' summary", stderr)
	}
}

func TestCheckReportsPositions(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml": strings.Replace(goodRoute, "host: web.example.test", "host: web.example.test:8080", 1),
	})
	code, stdout, _ := run(t, "check", dir)
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d", code, ExitInvalid)
	}
	want := "routes.yaml:7:9: error: spec.host: host must not include a port\n"
	if stdout != want {
		t.Fatalf("stdout = %q, want %q", stdout, want)
	}
}

func TestCheckStrictTurnsWarningsIntoErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml": strings.Replace(goodRoute, "  to:\n", "  colour: blue\n  to:\n", 1),
	})
	if code, out, errOut := run(t, "check", dir); code != ExitOK {
		t.Fatalf("a stray field fails plain check: exit %d\n%s%s", code, out, errOut)
	}
	code, stdout, _ := run(t, "check", "--strict", dir)
	if code != ExitInvalid || !strings.Contains(stdout, "routes.yaml:8:3: warning: spec.colour") {
		t.Fatalf("check --strict: exit %d, stdout %q", code, stdout)
	}
}

func TestRenderWritesABundleInsideOut(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := run(t, "render", dir, "--out", out)
	if code != ExitOK {
		t.Fatalf("render: exit %d\n%s%s", code, stdout, stderr)
	}
	cfg, err := os.ReadFile(filepath.Join(out, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "backend be_http:demo:web") || !strings.Contains(string(cfg), out+"/") {
		t.Fatalf("haproxy.cfg lacks the route backend or paths inside %s", out)
	}
	if strings.Contains(string(cfg), "/var/lib/haroute") {
		t.Fatal("haproxy.cfg references files outside the output directory")
	}
}

func TestPlanNamesRuntimeAndReloadChanges(t *testing.T) {
	from := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	to := writeFiles(t, map[string]string{
		"routes.yaml":    goodRoute + "---\n" + strings.ReplaceAll(goodRoute, "web", "shop"),
		"endpoints.yaml": strings.Replace(goodEndpoints, "      - ip: 10.0.0.1\n", "      - ip: 10.0.0.1\n      - ip: 10.0.0.2\n", 1),
	})
	code, stdout, stderr := run(t, "plan", "--from", from, "--to", to)
	if code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"runtime  endpoint added", "ep_10.0.0.2_8080", "reload   route added", "demo/shop", "plan: reload (1 reason: route added: demo/shop)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestUsageAndVersion(t *testing.T) {
	if code, _, stderr := run(t); code != ExitUsage || !strings.Contains(stderr, "Usage:") {
		t.Fatalf("no args: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := run(t, "frobnicate"); code != ExitUsage || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := run(t, "version"); code != ExitOK || !strings.HasPrefix(stdout, "haroute ") {
		t.Fatalf("version: exit %d, stdout %q", code, stdout)
	}
	if code, _, _ := run(t, "check"); code != ExitUsage {
		t.Fatalf("check without DIR: exit %d, want usage", code)
	}
	if code, _, stderr := run(t, "run", "--config-dir", "x", "--watch-mode", "sideways"); code != ExitUsage || !strings.Contains(stderr, "sideways") {
		t.Fatalf("bad watch mode: exit %d, stderr %q", code, stderr)
	}
	// Refused before the service manager is asked (no root needed).
	if code, _, stderr := run(t, "service", "install", "--config-dir", "/x", "junk"); code != ExitUsage || !strings.Contains(stderr, `unexpected arguments ["junk"]`) {
		t.Fatalf("service install with a stray argument: exit %d, stderr %q", code, stderr)
	}
}

func TestStatusWhenNotRunning(t *testing.T) {
	code, _, stderr := run(t, "status", "--address", "127.0.0.1:1")
	if code != ExitInvalid || !strings.Contains(stderr, "not running at 127.0.0.1:1") {
		t.Fatalf("status: exit %d, stderr %q", code, stderr)
	}
}

// A bundle that cannot be written is a failure, not "wrote N files".
func TestRenderReportsWriteErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	out := t.TempDir()
	// certs/ must be a directory; a file in its place makes the write fail.
	if err := os.WriteFile(filepath.Join(out, "certs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "render", dir, "--out", out)
	if code != ExitInvalid || !strings.Contains(stderr, "certs") || strings.Contains(stdout, "wrote") {
		t.Fatalf("render into a broken dir: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// `haroute service --help` (and `service status --help`) print the
// service usage and succeed, rather than "unknown action".
func TestServiceHelp(t *testing.T) {
	for _, args := range [][]string{{"service", "--help"}, {"service", "-h"}, {"service", "help"}, {"service", "status", "--help"}} {
		code, stdout, stderr := run(t, args...)
		if code != ExitOK || !strings.HasPrefix(stdout, "usage: haroute service install|uninstall|start|stop|status") || stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := run(t, "service"); code != ExitUsage || !strings.Contains(stderr, "  status     say whether") {
		t.Errorf("service without an action: exit %d, stderr %q", code, stderr)
	}
}
