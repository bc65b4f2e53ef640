package cli

import (
	"strings"
	"testing"
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
// connection side, one per checked server) cannot hold maxConnections —
// lowered, or no room at all — and names LimitNOFILE. Exit stays 0.
func TestCheckWarnsAboutTheDescriptorBudget(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"routes.yaml":    goodRoute,
		"endpoints.yaml": strings.Replace(goodEndpoints, "      - ip: 10.0.0.1\n", "      - ip: 10.0.0.1\n      - ip: 10.0.0.2\n", 1),
	})
	for _, tc := range []struct {
		limit string
		want  []string // empty: no warning
	}{
		{"1048576", nil},
		{"5000", []string{"warning: maxConnections 50000 will be lowered to", "hard limit 5000", "2 checked servers", "raise LimitNOFILE to"}},
		{"300", []string{"warning: the file-descriptor hard limit 300 leaves room for only 0 connections", "2 checked servers", "raise LimitNOFILE to at least"}},
	} {
		code, stdout, stderr := run(t, "check", "--limit-nofile", tc.limit, dir)
		if code != ExitOK {
			t.Fatalf("--limit-nofile %s: exit %d, stdout %q, stderr %q", tc.limit, code, stdout, stderr)
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
