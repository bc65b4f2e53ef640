package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// Tests of the whole pipeline on hostile input: Route documents go through
// the real loader (decoding, validation, admission), whatever it admits is
// rendered, and the bundle is checked by the real `haproxy -c`. "What
// check admits, HAProxy loads" (DESIGN §7) is what they assert.

// routeDoc is one Route as a JSON document: JSON escapes every byte a
// hostile value may hold, so any string reaches the loader as written.
type routeDoc map[string]any

// pipelineNamespaces hold the endpoints routes point at.
var pipelineNamespaces = []string{"ns-a", "ns-b"}

// newRouteDoc returns an edge route using every feature render writes
// (own certificate, redirect, cookie, HSTS, rewrite, allowlist, rate
// limits...), so that a hostile value in any field meets the code that
// writes it. Host and name are unique per i.
func newRouteDoc(i int, tc testCerts) routeDoc {
	return routeDoc{
		"apiVersion": "route.openshift.io/v1",
		"kind":       "Route",
		"metadata": map[string]any{
			"name":      fmt.Sprintf("r%d", i),
			"namespace": pipelineNamespaces[i%len(pipelineNamespaces)],
			"annotations": map[string]any{
				model.AnnotationHealthCheckInterval:     "3s",
				model.AnnotationBalance:                 "roundrobin",
				model.AnnotationTimeout:                 "20s",
				model.AnnotationTimeoutTunnel:           "2h",
				model.AnnotationIPAllowlist:             "127.0.0.0/8 ::1",
				model.AnnotationHSTSHeader:              "max-age=60;includeSubDomains",
				model.AnnotationCookieName:              "sess",
				model.AnnotationCookieSameSite:          "Lax",
				model.AnnotationRateLimit:               "true",
				model.AnnotationRateLimitConcurrentTCP:  "100",
				model.AnnotationRateLimitRateTCP:        "100",
				model.AnnotationRateLimitRateHTTP:       "100",
				model.AnnotationPodConcurrentConnection: "10",
				model.AnnotationRewriteTarget:           "/v2",
				model.AnnotationSetForwardedHeaders:     "replace",
			},
		},
		"spec": map[string]any{
			"host": fmt.Sprintf("h%d.example.com", i),
			"path": "/api",
			"to":   map[string]any{"kind": "Service", "name": "web", "weight": 100},
			"alternateBackends": []any{
				map[string]any{"kind": "Service", "name": "alt", "weight": 50},
			},
			"port": map[string]any{"targetPort": "http"},
			"tls": map[string]any{
				"termination":                   "edge",
				"insecureEdgeTerminationPolicy": "Redirect",
				"certificate":                   tc.Cert,
				"key":                           tc.Key,
			},
		},
	}
}

// routeField is one field of a Route document a test can set to any string.
type routeField struct {
	name string // the field path validation reports
	set  func(d routeDoc, v string)
}

func metaField(name string) routeField {
	return routeField{"metadata." + name, func(d routeDoc, v string) { d["metadata"].(map[string]any)[name] = v }}
}

func specField(path ...string) routeField {
	return routeField{"spec." + strings.Join(path, "."), func(d routeDoc, v string) {
		m := d["spec"].(map[string]any)
		for _, p := range path[:len(path)-1] {
			if m[p] == nil {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		m[path[len(path)-1]] = v
	}}
}

func annotationField(key string) routeField {
	return routeField{"metadata.annotations." + key, func(d routeDoc, v string) {
		d["metadata"].(map[string]any)["annotations"].(map[string]any)[key] = v
	}}
}

// routeFields is every string a Route carries into rendering.
var routeFields = []routeField{
	metaField("name"),
	metaField("namespace"),
	specField("host"),
	specField("subdomain"),
	specField("path"),
	specField("to", "name"),
	specField("port", "targetPort"),
	specField("tls", "termination"),
	specField("tls", "insecureEdgeTerminationPolicy"),
	specField("tls", "certificate"),
	specField("tls", "destinationCACertificate"),
	specField("wildcardPolicy"),
	{"spec.alternateBackends[0].name", func(d routeDoc, v string) {
		d["spec"].(map[string]any)["alternateBackends"].([]any)[0].(map[string]any)["name"] = v
	}},
	annotationField(model.AnnotationHealthCheckInterval),
	annotationField(model.AnnotationBalance),
	annotationField(model.AnnotationTimeout),
	annotationField(model.AnnotationTimeoutTunnel),
	annotationField(model.AnnotationIPAllowlist),
	annotationField(model.AnnotationIPWhitelist),
	annotationField(model.AnnotationHSTSHeader),
	annotationField(model.AnnotationDisableCookies),
	annotationField(model.AnnotationCookieName),
	annotationField(model.AnnotationCookieSameSite),
	annotationField(model.AnnotationRateLimit),
	annotationField(model.AnnotationRateLimitConcurrentTCP),
	annotationField(model.AnnotationRateLimitRateTCP),
	annotationField(model.AnnotationRateLimitRateHTTP),
	annotationField(model.AnnotationPodConcurrentConnection),
	annotationField(model.AnnotationRewriteTarget),
	annotationField(model.AnnotationSetForwardedHeaders),
	annotationField("haproxy.router.openshift.io/unknown"),
}

func findRouteField(t testing.TB, name string) routeField {
	t.Helper()
	for _, f := range routeFields {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no route field %s", name)
	return routeField{}
}

// pipelineFiles returns the RouterConfig and endpoints the routes use, and
// each route doc as a file of its own, route-<i>.json, so a diagnostic's
// path names its route.
func pipelineFiles(t testing.TB, docs []routeDoc) []model.SourceFile {
	t.Helper()
	files := []model.SourceFile{{Path: "router.yaml", Data: []byte(
		"apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  allowWildcardRoutes: true\n  domain: apps.example.com\n")}}
	var eps strings.Builder
	for _, ns := range pipelineNamespaces {
		for _, svc := range []struct{ name, ip1, ip2 string }{{"web", "127.0.0.1", "::1"}, {"alt", "127.0.0.2", "127.0.0.3"}} {
			fmt.Fprintf(&eps, "---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: %s\nsubsets:\n"+
				"- addresses:\n  - ip: %s\n  - ip: %s\n  ports:\n  - name: http\n    port: 8080\n", svc.name, ns, svc.ip1, svc.ip2)
		}
	}
	files = append(files, model.SourceFile{Path: "endpoints.yaml", Data: []byte(eps.String())})
	for i, d := range docs {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			t.Fatal(err)
		}
		files = append(files, model.SourceFile{Path: fmt.Sprintf("route-%d.json", i), Data: b.Bytes()})
	}
	return files
}

// pipeline loads docs, renders what is admitted and has the real haproxy
// check the bundle. Render must not fail on anything the model admitted,
// no map line may exceed the limit, and haproxy -c must accept the config
// without a warning.
func pipeline(t *testing.T, tc testCerts, docs []routeDoc) model.Result {
	t.Helper()
	res := model.NewLoader().Load(pipelineFiles(t, docs))
	if res.Desired == nil {
		t.Fatalf("loader returned no desired state: %v", res.Diagnostics)
	}
	in := Input{Desired: res.Desired, Dir: goldenDir, RunDir: goldenRunDir, DefaultCertificate: []byte(tc.Default)}
	b, err := Render(in)
	if err != nil {
		t.Fatalf("the model admitted what render refuses: %v", err)
	}
	checkMapLines(t, b)
	haproxyCheck(t, in)
	return res
}

// checkMapLines fails t for a map line HAProxy would not read back whole.
func checkMapLines(t testing.TB, b *Bundle) {
	t.Helper()
	for _, m := range b.Maps {
		for _, line := range bytes.Split(b.File(m.Name).Bytes(), []byte("\n")) {
			if len(line)+1 > maxMapLine {
				t.Errorf("%s has a line of %d bytes, more than %d", m.Name, len(line)+1, maxMapLine)
			}
			if key, _, _ := bytes.Cut(line, []byte(" ")); len(key) > model.MaxMapKeyLength {
				t.Errorf("%s has a key of %d bytes, more than %d", m.Name, len(key), model.MaxMapKeyLength)
			}
		}
	}
}

// TestHostileValues renders routes carrying each hostile value through
// the real loader and haproxy -c, and pins what validation does with each:
// used (quoted or escaped as HAProxy parses it), ignored with a warning
// (annotations), or the route rejected with an error at the field.
func TestHostileValues(t *testing.T) {
	tc := loadTestCerts(t)
	const (
		used     = "used"
		ignored  = "ignored"  // a warning at the field; the route is admitted
		rejected = "rejected" // an error at the field; the route is rejected
	)
	long := strings.Repeat("a", 20000)
	cases := []struct {
		field, value, want string
	}{
		{"spec.path", `/it's`, used},
		{"spec.path", `/say"hi"`, used},
		{"spec.path", `/back\slash`, used},
		{"spec.path", `/p%20q/$HOME;x=1&y@z`, used},
		{"spec.path", `/{a}|^[b]`, used},
		{"spec.path", "/a#b", rejected},
		{"spec.path", "/a b", rejected},
		{"spec.path", "/a\tb", rejected},
		{"spec.path", "/a\nglobal", rejected},
		{"spec.path", "/a\x00b", rejected},
		{"spec.path", "/é", rejected},
		{"spec.path", "/" + long, rejected},
		{"spec.host", "a'b.example.com", rejected},
		{"spec.host", "a b.example.com", rejected},
		{"spec.host", long + ".example.com", rejected},
		{"metadata.name", "r'x", rejected},
		// The longest names make the longest backend, server and file names.
		{"metadata.name", strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61), used},
		{"metadata.namespace", strings.Repeat("n", 63), used},
		{"spec.host", strings.Repeat(strings.Repeat("h", 63)+".", 3) + "example.com", used},
		{"metadata.namespace", "ns a", rejected},
		{"spec.to.name", "web\"", ignored}, // admitted as OpenShift admits it: no Service has the name, so it never has servers
		// Never rendered: a name no port has is a warning, as OpenShift
		// admits any non-empty name.
		{"spec.port.targetPort", "h#ttp", ignored},
		// OpenShift's cookieNamePattern: [a-zA-Z0-9_-]+.
		{"metadata.annotations." + model.AnnotationCookieName, "Sticky_ID-2", used},
		{"metadata.annotations." + model.AnnotationCookieName, "it's#a$cookie", ignored},
		{"metadata.annotations." + model.AnnotationCookieName, `a"b`, ignored},
		{"metadata.annotations." + model.AnnotationCookieName, `a\b`, ignored},
		{"metadata.annotations." + model.AnnotationCookieName, "a b", ignored},
		{"metadata.annotations." + model.AnnotationRewriteTarget, "/x%27y/$z;w", used},
		{"metadata.annotations." + model.AnnotationRewriteTarget, "/x'y", ignored},
		{"metadata.annotations." + model.AnnotationRewriteTarget, `/x"y`, ignored},
		{"metadata.annotations." + model.AnnotationRewriteTarget, `/x\1`, ignored},
		{"metadata.annotations." + model.AnnotationRewriteTarget, "/x#y", ignored},
		{"metadata.annotations." + model.AnnotationRewriteTarget, "/x%[src]", ignored},
		{"metadata.annotations." + model.AnnotationRewriteTarget, "/" + long, ignored},
		{"metadata.annotations." + model.AnnotationHSTSHeader, "max-age=1'", ignored},
		{"metadata.annotations." + model.AnnotationHSTSHeader, "max-age=1;%[src]", ignored},
		// An entry it cannot read is left out, with a warning (as
		// OpenShift leaves it out); a list with none left is refused.
		{"metadata.annotations." + model.AnnotationIPAllowlist, "10.0.0.1 #", ignored},
		{"metadata.annotations." + model.AnnotationIPAllowlist, "# %[src]", rejected},
		{"metadata.annotations." + model.AnnotationIPAllowlist, "fe80::1%eth0", rejected},
		{"metadata.annotations." + model.AnnotationBalance, "roundrobin\nglobal", ignored},
		{"metadata.annotations." + model.AnnotationTimeout, "10s #", ignored},
		{"metadata.annotations." + model.AnnotationHealthCheckInterval, "1s'", ignored},
		{"metadata.annotations." + model.AnnotationCookieSameSite, "Lax'", ignored},
		{"metadata.annotations." + model.AnnotationSetForwardedHeaders, "never #", ignored},
		{"metadata.annotations." + model.AnnotationPodConcurrentConnection, "1 #", ignored},
		{"metadata.annotations." + model.AnnotationPodConcurrentConnection, "2147483648", ignored}, // HAProxy would wrap it
		{"metadata.annotations." + model.AnnotationPodConcurrentConnection, "2147483647", used},
		{"metadata.annotations." + model.AnnotationRateLimitRateHTTP, "5'", ignored},
		{"metadata.annotations." + model.AnnotationTimeout, "30d", ignored},       // capped at HAProxy's maximum, with a warning
		{"metadata.annotations." + model.AnnotationTimeoutTunnel, "30d", ignored}, // the same
	}
	docs := make([]routeDoc, len(cases))
	for i, c := range cases {
		docs[i] = newRouteDoc(i, tc)
		findRouteField(t, c.field).set(docs[i], c.value)
	}
	res := pipeline(t, tc, docs)

	for i, c := range cases {
		file := fmt.Sprintf("route-%d.json", i)
		var sev []model.Severity
		for _, d := range res.Diagnostics {
			if d.Pos.Path == file && d.Field == c.field && d.Pos.Line > 1 && d.Severity != model.SeverityNote {
				sev = append(sev, d.Severity)
			}
		}
		meta := docs[i]["metadata"].(map[string]any)
		admitted := false
		for _, r := range res.Desired.Routes {
			admitted = admitted || r.Key.Name == meta["name"] && r.Key.Namespace == meta["namespace"]
		}
		var got string
		switch {
		case len(sev) == 0 && admitted:
			got = used
		case len(sev) == 1 && sev[0] == model.SeverityWarning && admitted:
			got = ignored
		case len(sev) == 1 && sev[0] == model.SeverityError && !admitted:
			got = rejected
		default:
			got = fmt.Sprintf("admitted=%v with %d diagnostics at the field", admitted, len(sev))
		}
		if got != c.want {
			t.Errorf("%s = %.60q: %s, want %s (%s)", c.field, c.value, got, c.want, diagsOf(res.Diagnostics, file))
		}
	}
}

func diagsOf(ds model.Diagnostics, path string) string {
	var out []string
	for _, d := range ds {
		if d.Pos.Path == path {
			s := d.String()
			if len(s) > 200 {
				s = s[:200] + "…"
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}
