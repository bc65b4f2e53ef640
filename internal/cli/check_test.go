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
