package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/testutil"
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
	// web goes from one endpoint to two: its servers gain `check`, which
	// no existing server can gain at runtime, so it trades its unchecked
	// server for checked twins (ck_), at runtime.
	for _, want := range []string{"runtime  endpoint added    demo/web  ck_10.0.0.1_8080", "runtime  endpoint added    demo/web  ck_10.0.0.2_8080",
		"runtime  endpoint removed  demo/web  ep_10.0.0.1_8080", "reload   route added       demo/shop",
		"plan: reload (1 reason: route added: demo/shop)"} {
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
	if code, _, stderr := run(t, "run", "--config-dir", "x", "--state-dir", "/var/lib/a,b"); code != ExitUsage || !strings.Contains(stderr, `--state-dir "/var/lib/a,b" contains ','`) {
		t.Errorf("state dir haproxy.cfg cannot name: %d %q", code, stderr)
	}
	if code, _, stderr := run(t, "run", "--config-dir", "x", "--watch-mode", "sideways"); code != ExitUsage || !strings.Contains(stderr, "sideways") {
		t.Fatalf("bad watch mode: exit %d, stderr %q", code, stderr)
	}
	for _, share := range []string{"2", "0", "-0.5"} {
		if code, _, stderr := run(t, "run", "--config-dir", "x", "--deletion-share", share); code != ExitUsage || !strings.Contains(stderr, "--deletion-share "+share+": ") {
			t.Fatalf("--deletion-share %s: exit %d, stderr %q", share, code, stderr)
		}
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
	// The exit code says what the output says, as systemctl's does: "not
	// installed" exited 0, which a script reads as running.
	code, stdout, stderr := run(t, "service", "status")
	want, ok := map[string]int{
		"haroute service: running\n":       ExitOK,
		"haroute service: stopped\n":       ExitServiceStopped,
		"haroute service: not installed\n": ExitServiceNotInstalled,
	}[stdout]
	if !ok || code != want {
		t.Errorf("service status: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// render agrees with check: input with errors exits 1 and writes nothing,
// unless --allow-errors, which renders the admitted routes and exits 0.
func TestRenderFailsOnErrorsUnlessAllowed(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml": goodRoute + "---\n" + strings.Replace(strings.ReplaceAll(goodRoute, "web", "bad"),
			"host: bad.example.test", "host: bad.example.test:8080", 1),
		"endpoints.yaml": goodEndpoints,
	})
	out := filepath.Join(t.TempDir(), "bundle")
	code, stdout, stderr := run(t, "render", dir, "--out", out)
	if code != ExitInvalid || stdout != "" || !strings.Contains(stderr, "routes.yaml:18:9: error: spec.host: host must not include a port") ||
		!strings.Contains(stderr, "invalid, nothing rendered") {
		t.Fatalf("render with errors: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("render with errors wrote %s: %v", out, err)
	}
	code, stdout, stderr = run(t, "render", dir, "--out", out, "--allow-errors")
	if code != ExitOK || !strings.Contains(stderr, "spec.host: host must not include a port") {
		t.Fatalf("render --allow-errors: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	cfg, err := os.ReadFile(filepath.Join(out, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "backend be_http:demo:web") || strings.Contains(string(cfg), "demo:bad") {
		t.Errorf("render --allow-errors: haproxy.cfg should hold web and not bad")
	}
}

// A value only HAProxy can judge fails render as it fails check: render
// wrote a configuration HAProxy refuses, and exited 0.
func TestRenderFailsOnWhatHAProxyRefuses(t *testing.T) {
	bin := testutil.HAProxy(t)
	dir := writeFiles(t, map[string]string{
		"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints,
		"router.yaml": "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n" +
			"  logging:\n    access:\n      destination:\n        type: Container\n      httpLogFormat: \"%[nosuchfetch]\"\n",
	})
	out := filepath.Join(t.TempDir(), "bundle")
	code, _, stderr := run(t, "render", dir, "--out", out, "--haproxy", bin)
	if code != ExitInvalid || !strings.Contains(stderr, "spec.logging.access.httpLogFormat: HAProxy refuses the configuration this value makes") ||
		!strings.Contains(stderr, "invalid, nothing rendered") {
		t.Fatalf("render of a log format HAProxy refuses: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("render wrote %s: %v", out, err)
	}
}

// What render says it wrote is what it wrote: the bundle's files, and,
// when it generates the default certificate, that file and where.
func TestRenderCountsWhatItWrites(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	out := t.TempDir()
	code, stdout, stderr := run(t, "render", dir, "--out", out)
	if code != ExitOK {
		t.Fatalf("render: exit %d\n%s%s", code, stdout, stderr)
	}
	var bundle, generated []string
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, path)
		if strings.HasPrefix(rel, ".state"+string(filepath.Separator)) {
			generated = append(generated, path)
		} else {
			bundle = append(bundle, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("wrote %d files to %s\nand the generated self-signed default certificate with its private key to %s (mode 0600), which later renders into %s reuse\n",
		len(bundle), out, filepath.Join(out, ".state", "default.pem"), out)
	if stdout != want || len(generated) != 1 || generated[0] != filepath.Join(out, ".state", "default.pem") {
		t.Fatalf("render said %q, wrote %q and %q", stdout, bundle, generated)
	}
	if fi, err := os.Stat(generated[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated key file: %v, %v", fi, err)
	}
}

// render fits maxconn to the descriptor limit as the router does:
// HAProxy refuses to start on a config whose maxconn the limit cannot
// hold, so a bundle rendered for a host must carry the fitted one.
func TestRenderFitsMaxConnToTheLimit(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	maxconn := func(out string) string {
		t.Helper()
		cfg, err := os.ReadFile(filepath.Join(out, "haproxy.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(cfg)) {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "maxconn" {
				return f[1]
			}
		}
		t.Fatalf("no global maxconn in\n%s", cfg)
		return ""
	}
	out := t.TempDir()
	if code, stdout, stderr := run(t, "render", dir, "--out", out); code != ExitOK || stderr != "" {
		t.Fatalf("render: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := maxconn(out); got != "50000" {
		t.Fatalf("maxconn %s under the unit's limit, want the configured 50000", got)
	}
	out = t.TempDir()
	code, stdout, stderr := run(t, "render", dir, "--out", out, "--limit-nofile", "4096")
	if code != ExitOK || !strings.Contains(stderr, "maxConnections 50000 lowered to") {
		t.Fatalf("render --limit-nofile 4096: exit %d\n%s%s", code, stdout, stderr)
	}
	if got, err := strconv.Atoi(maxconn(out)); err != nil || got < 1500 || got > 2048 {
		t.Fatalf("maxconn %d (%v) under 4096 descriptors, want what fits them (about 1900)", got, err)
	}
	code, _, stderr = run(t, "render", dir, "--out", t.TempDir(), "--limit-nofile", "300")
	if code != ExitInvalid || !strings.Contains(stderr, "raise LimitNOFILE") {
		t.Fatalf("render --limit-nofile 300: exit %d, stderr %q; want the budget error", code, stderr)
	}
}

// Arguments a command does not take are usage errors, not ignored:
// `haroute status 127.0.0.1:9191` asked the default address and said the
// daemon was not running there. A file given to check is named as such.
func TestStrayArgumentsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"status", "127.0.0.1:1"}, {"version", "extra"}} {
		if code, _, stderr := run(t, args...); code != ExitUsage || !strings.Contains(stderr, "usage: haroute "+args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and the usage", args, code, stderr, ExitUsage)
		}
	}
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute})
	file := filepath.Join(dir, "routes.yaml")
	if code, _, stderr := run(t, "check", file); code != ExitInvalid || !strings.Contains(stderr, file+" is a file: give the directory") {
		t.Errorf("check FILE: exit %d, stderr %q; want exit %d naming the file", code, stderr, ExitInvalid)
	}
}
