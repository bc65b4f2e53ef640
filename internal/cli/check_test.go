package cli

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
)

// TestCheckWarnsAboutAMisspelledKind: a Route whose kind is misspelled is
// not silently dropped: check names it, and --strict fails.
func TestCheckWarnsAboutAMisspelledKind(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml": strings.Replace(goodRoute, "kind: Route", "kind: Rout", 1),
	})
	want := `routes.yaml:2:7: warning: kind: Rout "web" (route.openshift.io/v1) is not a kind haroute reads but looks like Route (route.openshift.io/v1): the object is skipped` + "\n"
	code, stdout, stderr := run(t, "check", dir)
	if code != ExitOK || stdout != want {
		t.Fatalf("check: exit %d, stdout %q, want exit %d and %q (stderr %q)", code, stdout, ExitOK, want, stderr)
	}
	if code, stdout, _ = run(t, "check", "--strict", dir); code != ExitInvalid || stdout != want {
		t.Fatalf("check --strict: exit %d, stdout %q, want exit %d and %q", code, stdout, ExitInvalid, want)
	}
}

// TestCheckWarnsAboutALinkedDirectory: the routes below a symlink to a
// directory are not read, and check says so rather than pass them over
// without a word; --strict fails.
func TestCheckWarnsAboutALinkedDirectory(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute})
	other := writeFiles(t, map[string]string{"more.yaml": goodRoute})
	if err := os.Symlink(other, filepath.Join(dir, "more")); err != nil {
		t.Fatal(err)
	}
	want := "more:1:1: warning: symlink to a directory: not followed, so the files below it are not read; link each file, or move the directory into the tree\n"
	code, stdout, stderr := run(t, "check", dir)
	if code != ExitOK || !strings.Contains(stdout, want) {
		t.Fatalf("check: exit %d, stdout %q, want exit %d and a line %q (stderr %q)", code, stdout, ExitOK, want, stderr)
	}
	if code, _, _ = run(t, "check", "--strict", dir); code != ExitInvalid {
		t.Fatalf("check --strict: exit %d, want %d", code, ExitInvalid)
	}
}

// TestCheckPrintsNotes: notes are shown but never fail check, not even
// under --strict.
func TestCheckPrintsNotes(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml":  goodRoute,
		"service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n",
	})
	code, stdout, stderr := run(t, "check", "--strict", dir)
	want := `service.yaml:1:1: note: skipped Service "web": haroute reads only Route, Endpoints, EndpointSlice and RouterConfig` + "\n"
	if code != ExitOK || !strings.Contains(stdout, want) {
		t.Fatalf("check --strict: exit %d, stdout %q, want exit %d and a line %q (stderr %q)", code, stdout, ExitOK, want, stderr)
	}
}

// TestCheckRefusesHostileRouteValues: values HAProxy would misread are
// reported at their line and field rather than admitted.
func TestCheckRefusesHostileRouteValues(t *testing.T) {
	long := "/" + strings.Repeat("a", 5000)
	dir := writeFiles(t, map[string]string{
		"routes.yaml": strings.Replace(goodRoute, "  to:\n", "  path: "+long+"\n  to:\n", 1),
	})
	code, stdout, _ := run(t, "check", dir)
	want := "routes.yaml:8:9: error: spec.path: host and path are 5017 bytes together, more than the limit of 2047"
	if code != ExitInvalid || !strings.HasPrefix(stdout, want) {
		t.Fatalf("check: exit %d, stdout %q, want exit %d and a line starting %q", code, stdout, ExitInvalid, want)
	}
}

// TestCheckWarnsAboutUnsupportedOpenShiftAnnotation: an annotation the
// OpenShift router honours and haroute does not is a warning naming it,
// so --strict fails; the route is still served.
func TestCheckWarnsAboutUnsupportedOpenShiftAnnotation(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml": strings.Replace(goodRoute, "  namespace: demo\n",
			"  namespace: demo\n  annotations:\n    haproxy.router.openshift.io/h1-adjust-case: \"true\"\n", 1),
		"endpoints.yaml": goodEndpoints,
	})
	want := `routes.yaml:7:49: warning: metadata.annotations.haproxy.router.openshift.io/h1-adjust-case: annotation is honoured by OpenShift but not by haroute`
	code, stdout, stderr := run(t, "check", dir)
	if code != ExitOK || !strings.Contains(stdout, want) {
		t.Fatalf("check: exit %d, stdout %q, want exit %d and %q (stderr %q)", code, stdout, ExitOK, want, stderr)
	}
	if code, stdout, _ = run(t, "check", "--strict", dir); code != ExitInvalid || !strings.Contains(stdout, want) {
		t.Fatalf("check --strict: exit %d, stdout %q, want exit %d and %q", code, stdout, ExitInvalid, want)
	}
}

// TestCheckWarnsAboutTheDescriptorBudget: before the router ever starts,
// check says when HAProxy's descriptors under LimitNOFILE (one per
// connection side, one per checked server) cannot hold maxConnections,
// and names LimitNOFILE. Lowered, it is a warning (a failure under
// --strict); no room at all, which the router refuses, an error.
func TestCheckWarnsAboutTheDescriptorBudget(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml":    goodRoute,
		"endpoints.yaml": strings.Replace(goodEndpoints, "      - ip: 10.0.0.1\n", "      - ip: 10.0.0.1\n      - ip: 10.0.0.2\n", 1),
	})
	for _, tc := range []struct {
		limit            string
		code, strictCode int
		want             []string // empty: no warning
	}{
		{"1048576", ExitOK, ExitOK, nil},
		{"5000", ExitOK, ExitInvalid, []string{"warning: maxConnections 50000 will be lowered to", "hard limit 5000", "2 checked servers", "raise LimitNOFILE to"}},
		{"300", ExitInvalid, ExitInvalid, []string{"error: the file-descriptor hard limit 300 leaves room for only 0 connections", "2 checked servers",
			"raise LimitNOFILE to at least 606 (100406 for maxConnections 50000)\n"}},
	} {
		code, stdout, stderr := run(t, "check", "--limit-nofile", tc.limit, dir)
		if code != tc.code {
			t.Fatalf("--limit-nofile %s: exit %d, want %d; stdout %q, stderr %q", tc.limit, code, tc.code, stdout, stderr)
		}
		if code, _, _ := run(t, "check", "--strict", "--limit-nofile", tc.limit, dir); code != tc.strictCode {
			t.Errorf("--strict --limit-nofile %s: exit %d, want %d", tc.limit, code, tc.strictCode)
		}
		if len(tc.want) == 0 && strings.Contains(stdout, "LimitNOFILE") {
			t.Errorf("--limit-nofile %s: unexpected warning %q", tc.limit, stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("--limit-nofile %s: stdout %q, want %q", tc.limit, stdout, w)
			}
		}
	}
}

// TestCheckAsksHAProxyAboutRouterConfig: RouterConfig values whose shape
// is valid but which HAProxy refuses (an unknown log variable or fetch, a
// cipher OpenSSL does not have) fail check at their field, each with
// HAProxy's own message; without an HAProxy, check says what it could
// not judge.
func TestCheckAsksHAProxyAboutRouterConfig(t *testing.T) {
	bin := testutil.HAProxy(t)
	rc := func(spec string) string {
		return "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n" + spec
	}
	// A page Go's parser reads and HAProxy refuses: a space in a header name.
	pages := t.TempDir()
	if err := os.WriteFile(filepath.Join(pages, "error-page-503.http"), []byte("HTTP/1.1 503 X\r\nBad Header: x\r\nContent-Length: 0\r\n\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, spec string
		want       []string // error lines of stdout, each a prefix
	}{
		{"error page", "  httpErrorCodePages: " + pages + "\n",
			[]string{"router.yaml:6:23: error: spec.httpErrorCodePages: HAProxy refuses the configuration this value makes: [ALERT]"}},
		{"log variable", "  logging:\n    access:\n      destination:\n        type: Container\n      httpLogFormat: \"%foo %ci\"\n",
			[]string{"router.yaml:10:22: error: spec.logging.access.httpLogFormat: HAProxy refuses the configuration this value makes: [ALERT]"}},
		{"unique id fetch and cipher", "  httpHeaders:\n    uniqueId:\n      name: X-Id\n      format: \"%[nosuch]\"\n" +
			"  tlsSecurityProfile:\n    type: Custom\n    custom:\n      minTLSVersion: VersionTLS12\n      ciphers: [FOO]\n",
			[]string{
				"router.yaml:9:15: error: spec.httpHeaders.uniqueId.format: HAProxy refuses the configuration this value makes: [ALERT]",
				"router.yaml:10:3: error: spec.tlsSecurityProfile: HAProxy refuses the configuration this value makes: [ALERT]",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "router.yaml": rc(tt.spec)})
			code, stdout, stderr := run(t, "check", "--haproxy", bin, dir)
			var lines []string
			for line := range strings.Lines(stdout) {
				if strings.Contains(line, ": error: ") {
					lines = append(lines, line)
				}
			}
			if code != ExitInvalid || len(lines) != len(tt.want) {
				t.Fatalf("check: exit %d, stdout %q, want exit %d and %d errors (stderr %q)", code, stdout, ExitInvalid, len(tt.want), stderr)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
				}
			}
		})
	}

	// A host without HAProxy (found by no name: --haproxy names one that
	// must be there) gets a note that only the shape was checked.
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "router.yaml": rc(tests[0].spec)})
	res, err := loadDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-haproxy")
	ds, err := judgeRouterConfig(context.Background(), missing, usableHAProxy(context.Background(), missing), res)
	if err != nil || len(ds) != 1 || !strings.Contains(ds[0].String(), "note: log formats, cipher lists and subject patterns were checked for shape only") {
		t.Fatalf("without haproxy: %v, %v; want a note", ds, err)
	}
}

// With a RouterConfig in error, routes are judged with the default
// settings, and check says so: a wildcard route was reported "not
// allowed" with no hint that the broken RouterConfig allowing it was why.
func TestCheckSaysRoutesWereJudgedWithDefaultsWhenTheRouterConfigIsBroken(t *testing.T) {
	rc := "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: r\nspec:\n  tuningOptions:\n    maxConnections: -5\n"
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "rc.yaml": rc})
	code, stdout, _ := run(t, "check", dir)
	if code != ExitInvalid || !strings.Contains(stdout, "routes were judged with the default settings") {
		t.Fatalf("check: exit %d, stdout %q; want exit %d and the note", code, stdout, ExitInvalid)
	}
	dir = writeFiles(t, map[string]string{"routes.yaml": goodRoute})
	if _, stdout, _ = run(t, "check", dir); strings.Contains(stdout, "judged with the default") {
		t.Fatalf("the note without a RouterConfig: %q", stdout)
	}
}

// An empty directory is what `haroute run` would not start HAProxy on:
// check says so, a warning (a failure under --strict), where it said
// "valid".
func TestCheckEmptyDirectoryWarns(t *testing.T) {
	dir := t.TempDir()
	code, stdout, _ := run(t, "check", dir)
	if code != ExitOK || !strings.Contains(stdout, "warning: no file to read: haroute run would not start HAProxy") {
		t.Fatalf("check on an empty dir: exit %d, stdout %q; want 0 and the warning", code, stdout)
	}
	if code, _, _ := run(t, "check", "--strict", dir); code != ExitInvalid {
		t.Fatalf("check --strict on an empty dir: exit %d, want %d", code, ExitInvalid)
	}
}

// TestCheckAsksHAProxyAboutTheRoutes: check loads the whole configuration
// the routes make into HAProxy, as the router does before a reload, and
// pins a refusal on the routes responsible. Here a wrapper's `haproxy -c`
// refuses any configuration that routes refused.example.test, standing in
// for material OpenSSL reads otherwise than Go.
func TestCheckAsksHAProxyAboutTheRoutes(t *testing.T) {
	wrapper := filepath.Join(t.TempDir(), "haproxy")
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = -c ] && grep -rqF refused.example.test \"$(dirname \"$3\")/maps\"; then echo '[ALERT] refused by the test' >&2; exit 1; fi\nexec %s \"$@\"\n", testutil.HAProxy(t))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	refused := strings.NewReplacer("name: web\n  namespace", "name: bad\n  namespace", "web.example.test", "refused.example.test").Replace(goodRoute)
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "bad.yaml": refused})
	code, stdout, stderr := run(t, "check", "--haproxy", wrapper, dir)
	want := "bad.yaml:4:9: error: metadata.name: HAProxy refused this route: [ALERT] refused by the test"
	var errs []string
	for line := range strings.Lines(stdout) {
		if strings.Contains(line, ": error: ") {
			errs = append(errs, strings.TrimSpace(line))
		}
	}
	if code != ExitInvalid || len(errs) != 1 || errs[0] != want || !strings.Contains(stderr, "1 routes admitted, 1 rejected") {
		t.Fatalf("check: exit %d, stdout %q, stderr %q; want exit %d, %q", code, stdout, stderr, ExitInvalid, want)
	}
	if code, stdout, _ := run(t, "check", "--haproxy", wrapper, writeFiles(t, map[string]string{"routes.yaml": goodRoute})); code != ExitOK {
		t.Fatalf("check of the good route alone: exit %d, %q", code, stdout)
	}
}

// An HAProxy named with --haproxy that is not there is a usage error: the
// check it asks for would not run, and a CI job with a wrong path passed.
func TestCheckRefusesAMissingNamedHAProxy(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints})
	missing := filepath.Join(t.TempDir(), "haproxy")
	code, _, stderr := run(t, "check", "--haproxy", missing, dir)
	if code != ExitUsage || !strings.Contains(stderr, "--haproxy") || !strings.Contains(stderr, missing) {
		t.Fatalf("check --haproxy %s: exit %d, stderr %q; want exit %d naming the flag and the path", missing, code, stderr, ExitUsage)
	}
}

// A named binary that is not a working HAProxy is refused as a missing one
// is: one that exits 0 passed every configuration, and one that fails
// (its libraries missing) had its failure pinned on the RouterConfig.
// Found on PATH, it is as if HAProxy were absent: a note, and the shape
// checks.
func TestCheckRefusesABinaryThatIsNotHAProxy(t *testing.T) {
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute, "endpoints.yaml": goodEndpoints,
		"router.yaml": "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec: {}\n"})
	for _, bin := range []string{"/bin/true", "/bin/false"} {
		code, stdout, stderr := run(t, "check", "--haproxy", bin, dir)
		if code != ExitUsage || !strings.Contains(stderr, "--haproxy: not an HAProxy that runs") || strings.Contains(stdout+stderr, "router.yaml") {
			t.Errorf("check --haproxy %s: exit %d, stdout %q, stderr %q; want exit %d saying it is not HAProxy, blaming no file", bin, code, stdout, stderr, ExitUsage)
		}
	}
	path := t.TempDir()
	if err := os.Symlink("/bin/false", filepath.Join(path, "haproxy")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", path)
	code, stdout, stderr := run(t, "check", dir)
	if code != ExitOK || !strings.Contains(stdout, "not an HAProxy that runs") || strings.Contains(stdout, "error") {
		t.Errorf("check with a broken haproxy on PATH: exit %d, stdout %q, stderr %q; want exit 0 with a note", code, stdout, stderr)
	}
}

// TestCheckTellsOfExpiredCertificates: a route whose certificate has
// expired is admitted (served, as OpenShift serves it), and check warns
// of it at its line; one that expires within a week gets a note (T42).
func TestCheckTellsOfExpiredCertificates(t *testing.T) {
	notAfter := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	cert, key, _ := testutil.SelfSignedCert(t, "web.example.test", big.NewInt(7), notAfter)
	indent := func(b []byte) string {
		return "      " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n      ")
	}
	dir := writeFiles(t, map[string]string{"routes.yaml": goodRoute + "  tls:\n    termination: edge\n    certificate: |\n" +
		indent(cert) + "\n    key: |\n" + indent(key) + "\n"})
	res, err := loadDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now  time.Time
		want string
	}{
		{notAfter.Add(-30 * 24 * time.Hour), ""},
		{notAfter.Add(-48 * time.Hour), "routes.yaml:13:18: note: spec.tls.certificate: the certificate expires on " + notAfter.UTC().Format(time.RFC3339) + ", in 48h0m0s"},
		{notAfter.Add(time.Hour), "routes.yaml:13:18: warning: spec.tls.certificate: the certificate expired on " + notAfter.UTC().Format(time.RFC3339) + ": it is served all the same, as OpenShift does, and clients that verify it refuse the route"},
	} {
		var got []string
		for _, d := range expiryDiagnostics(res, tc.now) {
			got = append(got, d.String())
		}
		if want := []string{tc.want}; tc.want == "" && len(got) != 0 || tc.want != "" && !slices.Equal(got, want) {
			t.Errorf("at %v: %q, want %q", tc.now, got, tc.want)
		}
	}
	if code, _, stderr := run(t, "check", dir); code != ExitOK {
		t.Fatalf("check of a route with a valid certificate: exit %d (%s)", code, stderr)
	}
}
