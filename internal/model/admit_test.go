package model

import (
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Admit is admission from scratch: no memos, no last good versions. The
// tests call it on objects they build; the daemon goes through the Loader.
func Admit(objs Objects, prev *Settings) (*Desired, Diagnostics) {
	d, ds, _ := admit(objs, prev, nil, nil, nil)
	return d, ds
}

// --- helpers shared by the tests of this package's validation files ---

// testSource returns a Source at path whose listed fields each sit on
// their own line (line 10 for the first, 11 for the next, …, column 7), so
// tests can tell which field a diagnostic points at.
func testSource(path string, fields ...string) Source {
	s := Source{Pos: Position{Path: path, Line: 1, Col: 1}, Fields: map[string]Position{}}
	for i, f := range fields {
		s.Fields[f] = Position{Path: path, Line: 10 + i, Col: 7}
	}
	return s
}

// lines renders diagnostics as their `path:line:col: severity: field: msg`
// strings, sorted, for exact comparison.
func lines(ds Diagnostics) []string {
	ds = append(Diagnostics(nil), ds...)
	ds.Sort()
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

// withoutNotes drops notes, which several tests do not care about.
func withoutNotes(ds Diagnostics) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity != SeverityNote {
			out = append(out, d)
		}
	}
	return out
}

func equalLines(t *testing.T, got Diagnostics, want []string) {
	t.Helper()
	g := lines(got)
	if len(g) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("diagnostics:\n got: %s\nwant: %s", strings.Join(g, "\n      "), strings.Join(want, "\n      "))
	}
}

func ptr[T any](v T) *T { return &v }

// testPair is a generated certificate and key in PEM (test-only material,
// made fresh for every run).
type testPair struct {
	cert, key string
}

func genPair(t testing.TB, kind, keyFormat, cn string) testPair {
	t.Helper()
	var signer crypto.Signer
	var err error
	switch kind {
	case "rsa":
		signer, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ecdsa":
		signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ed25519":
		_, signer, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("unknown key kind %q", kind)
	}
	if err != nil {
		t.Fatalf("generate %s key: %v", kind, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		DNSNames:              []string{cn},
		NotBefore:             time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, signer.Public(), signer)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	var block *pem.Block
	switch keyFormat {
	case "pkcs1":
		block = &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(signer.(*rsa.PrivateKey))}
	case "ec":
		b, err := x509.MarshalECPrivateKey(signer.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "EC PRIVATE KEY", Bytes: b}
	default:
		b, err := x509.MarshalPKCS8PrivateKey(signer)
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: b}
	}
	return testPair{
		cert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		key:  string(pem.EncodeToMemory(block)),
	}
}

// testRoute returns a valid plain HTTP route ns/name for host.
func testRoute(ns, name, host string) Route {
	return Route{
		Meta:   ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
		Spec:   RouteSpec{Host: host, To: RouteTargetReference{Kind: "Service", Name: "web"}},
		Source: testSource(ns+"-"+name+".yaml", routeFields...),
	}
}

// routeFields are the fields testRoute gives positions to.
var routeFields = []string{
	"metadata.name", "metadata.namespace", "spec.host", "spec.path", "spec.to.name", "spec.to.kind",
	"spec.to.weight", "spec.tls.termination", "spec.tls.certificate", "spec.tls.key",
	"spec.tls.caCertificate", "spec.tls.destinationCACertificate", "spec.tls.insecureEdgeTerminationPolicy",
	"spec.wildcardPolicy", "spec.port.targetPort", "spec.alternateBackends[0].weight",
	"spec.alternateBackends[0].name", "spec.alternateBackends[3]",
}

// testEndpoints returns ready Endpoints for ns/svc with ips on port 8080.
func testEndpoints(ns, svc string, ips ...string) Endpoints {
	sub := EndpointSubset{Ports: []EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}}}
	for _, ip := range ips {
		sub.Addresses = append(sub.Addresses, EndpointAddress{IP: ip})
	}
	return Endpoints{
		Meta:    ObjectMeta{Name: svc, Namespace: ns},
		Subsets: []EndpointSubset{sub},
		Source:  testSource(ns + "-" + svc + "-ep.yaml"),
	}
}

func admittedKeys(d *Desired) []string {
	var out []string
	for _, r := range d.Routes {
		out = append(out, r.Key.String())
	}
	return out
}

// --- admission ---

func TestAdmitConflicts(t *testing.T) {
	older := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	newer := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	route := func(ns, name, host, path string, created time.Time, term Termination) Route {
		r := testRoute(ns, name, host)
		r.Spec.Path = path
		r.Meta.CreationTimestamp = created
		if term != "" {
			r.Spec.TLS = &TLSConfig{Termination: term}
		}
		return r
	}
	tests := []struct {
		name     string
		routes   []Route
		admitted []string
		want     []string // error diagnostics
	}{
		{
			name: "older route wins the same host and path",
			routes: []Route{
				route("b", "new", "a.example.com", "/x", newer, ""),
				route("a", "old", "a.example.com", "/x", older, ""),
			},
			admitted: []string{"a/old"},
			want:     []string{`b-new.yaml:12:7: error: spec.host: host "a.example.com" path "/x" is already claimed by route a/old, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`},
		},
		{
			name: "same age: namespace/name order decides",
			routes: []Route{
				route("ns", "zeta", "a.example.com", "", older, ""),
				route("ns", "alpha", "a.example.com", "", older, ""),
			},
			admitted: []string{"ns/alpha"},
			want:     []string{`ns-zeta.yaml:12:7: error: spec.host: host "a.example.com" is already claimed by route ns/alpha, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`},
		},
		{
			name: "a route without a timestamp loses to one with",
			routes: []Route{
				route("ns", "a", "a.example.com", "", time.Time{}, ""),
				route("ns", "b", "a.example.com", "", newer, ""),
			},
			admitted: []string{"ns/b"},
			want:     []string{`ns-a.yaml:12:7: error: spec.host: host "a.example.com" is already claimed by route ns/b, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`},
		},
		{
			// "/" and "//" render the map key of no path: one key, so
			// one route, the oldest, whatever the namespace order.
			name: "a path of slashes claims what no path claims",
			routes: []Route{
				route("a", "new", "a.example.com", "", newer, ""),
				route("b", "older", "a.example.com", "//", older, ""),
				route("b", "oldest", "a.example.com", "/", older.Add(-time.Hour), ""),
			},
			admitted: []string{"b/oldest"},
			want: []string{
				`a-new.yaml:12:7: error: spec.host: host "a.example.com" is already claimed by route b/oldest, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`,
				`b-older.yaml:12:7: error: spec.host: host "a.example.com" is already claimed by route b/oldest, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`,
			},
		},
		{
			name: "different paths on one host coexist",
			routes: []Route{
				route("ns", "a", "a.example.com", "/a", older, ""),
				route("ns", "b", "a.example.com", "/b", older, TerminationEdge),
				route("ns", "c", "a.example.com", "", older, TerminationReencrypt),
			},
			admitted: []string{"ns/a", "ns/b", "ns/c"},
		},
		{
			name: "passthrough and edge cannot share a host",
			routes: []Route{
				route("ns", "edge", "a.example.com", "/api", older, TerminationEdge),
				route("ns", "pass", "a.example.com", "", newer, TerminationPassthrough),
			},
			admitted: []string{"ns/edge"},
			want:     []string{`ns-pass.yaml:12:7: error: spec.host: host "a.example.com" is already served by TLS-terminating route ns/edge, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order): passthrough and TLS-terminating routes cannot share a host, the SNI sends it one way (a plain HTTP route can)`},
		},
		{
			name: "a plain HTTP path route shares a passthrough route's host, as on OpenShift",
			routes: []Route{
				route("ns", "pass", "a.example.com", "", older, TerminationPassthrough),
				route("ns", "acme", "a.example.com", "/.well-known/acme-challenge", newer, ""),
			},
			admitted: []string{"ns/acme", "ns/pass"},
		},
		{
			name: "a passthrough route joins a host a plain HTTP route holds",
			routes: []Route{
				route("ns", "acme", "a.example.com", "/.well-known/acme-challenge", older, ""),
				route("ns", "pass", "a.example.com", "", newer, TerminationPassthrough),
			},
			admitted: []string{"ns/acme", "ns/pass"},
		},
		{
			name: "behind a plain HTTP route, passthrough and edge still cannot share the host",
			routes: []Route{
				route("ns", "acme", "a.example.com", "/.well-known/acme-challenge", older, ""),
				route("ns", "pass", "a.example.com", "", older.Add(time.Hour), TerminationPassthrough),
				route("ns", "edge", "a.example.com", "/api", newer, TerminationEdge),
			},
			admitted: []string{"ns/acme", "ns/pass"},
			want:     []string{`ns-edge.yaml:12:7: error: spec.host: host "a.example.com" is already served by passthrough route ns/pass, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order): passthrough and TLS-terminating routes cannot share a host, the SNI sends it one way (a plain HTTP route can)`},
		},
		{
			name: "an older passthrough keeps its host",
			routes: []Route{
				route("ns", "edge", "a.example.com", "/api", newer, TerminationEdge),
				route("ns", "pass", "a.example.com", "", older, TerminationPassthrough),
			},
			admitted: []string{"ns/pass"},
			want:     []string{`ns-edge.yaml:12:7: error: spec.host: host "a.example.com" is already served by passthrough route ns/pass, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order): passthrough and TLS-terminating routes cannot share a host, the SNI sends it one way (a plain HTTP route can)`},
		},
		{
			name: "a rejected route claims nothing",
			routes: func() []Route {
				bad := route("ns", "a-bad", "a.example.com", "", older, "")
				bad.Spec.To.Weight = ptr[int32](999)
				return []Route{bad, route("ns", "b", "a.example.com", "", newer, "")}
			}(),
			admitted: []string{"ns/b"},
			want:     []string{`ns-a-bad.yaml:16:7: error: spec.to.weight: weight 999 is out of range 0-256`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := Objects{Routes: refs(tt.routes...), Endpoints: eprefs(
				testEndpoints("a", "web", "10.0.0.1"), testEndpoints("b", "web", "10.0.0.1"), testEndpoints("ns", "web", "10.0.0.1"),
			)}
			d, ds := Admit(objs, nil)
			if got := admittedKeys(d); !reflect.DeepEqual(got, tt.admitted) {
				t.Errorf("admitted = %v, want %v", got, tt.admitted)
			}
			var errs Diagnostics
			for _, x := range ds {
				if x.Severity == SeverityError {
					errs = append(errs, x)
				}
			}
			equalLines(t, errs, tt.want)
			if len(d.Statuses) != len(tt.routes) {
				t.Errorf("%d statuses for %d routes", len(d.Statuses), len(tt.routes))
			}
		})
	}
}

// TestNamespaceOwnership: with routeAdmission.namespaceOwnership Strict
// (the default), a host belongs to the namespace of its oldest route and a
// wildcard domain cannot be shared across namespaces; InterNamespaceAllowed
// lets namespaces share a host on different paths (openshift/router
// host_admitter.go and unique_host.go).
func TestNamespaceOwnership(t *testing.T) {
	older := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	newer := older.Add(time.Hour)
	route := func(ns, name, host, path string, created time.Time, wildcard bool) Route {
		r := testRoute(ns, name, host)
		r.Spec.Path = path
		r.Meta.CreationTimestamp = created
		if wildcard {
			r.Spec.WildcardPolicy = WildcardPolicySubdomain
		}
		return r
	}
	tests := []struct {
		name      string
		ownership string
		routes    []Route
		admitted  []string
		want      []string
	}{
		{
			name: "strict: another namespace cannot take another path of an owned host",
			routes: []Route{
				route("a", "shop", "shop.example.com", "/", older, false),
				route("b", "steal", "shop.example.com", "/admin", newer, false),
			},
			admitted: []string{"a/shop"},
			want:     []string{`b-steal.yaml:12:7: error: spec.host: host "shop.example.com" is owned by namespace "a" (route a/shop holds it: a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order); with routeAdmission.namespaceOwnership Strict, routes of other namespaces cannot claim any path on it`},
		},
		{
			name: "strict: the same namespace shares its host",
			routes: []Route{
				route("a", "shop", "shop.example.com", "/", older, false),
				route("a", "admin", "shop.example.com", "/admin", newer, false),
			},
			admitted: []string{"a/admin", "a/shop"},
		},
		{
			name:      "InterNamespaceAllowed: namespaces share a host on different paths",
			ownership: NamespaceOwnershipInterAllowed,
			routes: []Route{
				route("a", "shop", "shop.example.com", "/", older, false),
				route("b", "admin", "shop.example.com", "/admin", newer, false),
			},
			admitted: []string{"a/shop", "b/admin"},
		},
		{
			name:      "InterNamespaceAllowed: the same path still conflicts",
			ownership: NamespaceOwnershipInterAllowed,
			routes: []Route{
				route("a", "shop", "shop.example.com", "/x", older, false),
				route("b", "shop", "shop.example.com", "/x", newer, false),
			},
			admitted: []string{"a/shop"},
			want:     []string{`b-shop.yaml:12:7: error: spec.host: host "shop.example.com" path "/x" is already claimed by route a/shop, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`},
		},
		{
			name: "strict: an older wildcard holds its domain against other namespaces",
			routes: []Route{
				route("a", "wild", "www.apps.example.com", "", older, true),
				route("b", "one", "one.apps.example.com", "", newer, false),
				route("a", "two", "two.apps.example.com", "", newer, false),
			},
			admitted: []string{"a/two", "a/wild"},
			want:     []string{`b-one.yaml:12:7: error: spec.host: wildcard route a/wild of namespace "a" holds *.apps.example.com (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order); with routeAdmission.namespaceOwnership Strict, routes of other namespaces cannot claim hosts under it`},
		},
		{
			name: "strict: an older host of another namespace blocks a wildcard over it",
			routes: []Route{
				route("b", "one", "one.apps.example.com", "", older, false),
				route("a", "wild", "www.apps.example.com", "", newer, true),
			},
			admitted: []string{"b/one"},
			want:     []string{`a-wild.yaml:12:7: error: spec.host: route b/one of namespace "b" serves host "one.apps.example.com" under *.apps.example.com (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order); with routeAdmission.namespaceOwnership Strict, a wildcard route cannot cover hosts of other namespaces`},
		},
		{
			name:      "InterNamespaceAllowed: wildcard and hosts of other namespaces coexist",
			ownership: NamespaceOwnershipInterAllowed,
			routes: []Route{
				route("b", "one", "one.apps.example.com", "", older, false),
				route("a", "wild", "www.apps.example.com", "", newer, true),
			},
			admitted: []string{"a/wild", "b/one"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := RouterConfig{Spec: RouterConfigSpec{AllowWildcardRoutes: true,
				RouteAdmission: RouteAdmissionPolicy{NamespaceOwnership: tt.ownership}}, Source: testSource("rc.yaml")}
			objs := Objects{Routes: refs(tt.routes...), RouterConfigs: []RouterConfig{rc}, Endpoints: eprefs(
				testEndpoints("a", "web", "10.0.0.1"), testEndpoints("b", "web", "10.0.0.2"),
			)}
			d, ds := Admit(objs, nil)
			if got := admittedKeys(d); !reflect.DeepEqual(got, tt.admitted) {
				t.Errorf("admitted = %v, want %v", got, tt.admitted)
			}
			equalLines(t, withoutNotes(ds), tt.want)
		})
	}
}

func TestAdmitWildcardConflictsOnDomain(t *testing.T) {
	a := testRoute("ns", "a", "www.example.com")
	a.Spec.WildcardPolicy = WildcardPolicySubdomain
	b := testRoute("ns", "b", "api.example.com")
	b.Spec.WildcardPolicy = WildcardPolicySubdomain
	b.Meta.CreationTimestamp = a.Meta.CreationTimestamp.Add(time.Hour)
	exact := testRoute("ns", "c", "api.example.com") // an exact host beside a wildcard is fine
	objs := Objects{
		Routes:        refs(a, b, exact),
		RouterConfigs: []RouterConfig{{Spec: RouterConfigSpec{AllowWildcardRoutes: true}, Source: testSource("rc.yaml")}},
		Endpoints:     eprefs(testEndpoints("ns", "web", "10.0.0.1")),
	}
	d, ds := Admit(objs, nil)
	if got, want := admittedKeys(d), []string{"ns/a", "ns/c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("admitted = %v, want %v", got, want)
	}
	equalLines(t, withoutNotes(ds), []string{
		`ns-b.yaml:12:7: error: spec.host: host "*.example.com" is already claimed by route ns/a, which wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order)`,
	})
	if !d.Routes[0].Wildcard || d.Routes[1].Wildcard {
		t.Errorf("wildcard flags = %v, %v; want true, false", d.Routes[0].Wildcard, d.Routes[1].Wildcard)
	}
}

func TestAdmitStatuses(t *testing.T) {
	ok := testRoute("ns", "ok", "ok.example.com")
	warn := testRoute("ns", "warn", "warn.example.com")
	warn.Meta.Annotations = map[string]string{AnnotationBalance: "fastest"}
	warn.Source.Fields[annotationField(AnnotationBalance)] = Position{Path: "ns-warn.yaml", Line: 5, Col: 40}
	bad := testRoute("ns", "bad", "bad.example.com:8080")
	// A service without endpoints: admitted, and its status says why it
	// answers 503 (haroute status showed a bare "admitted").
	empty := testRoute("ns", "empty", "empty.example.com")
	empty.Spec.To.Name = "none"
	objs := Objects{Routes: refs(warn, bad, ok, empty), Endpoints: eprefs(testEndpoints("ns", "web", "10.0.0.1"))}
	d, ds := Admit(objs, nil)

	want := []*RouteStatus{
		{Key: RouteKey{"ns", "bad"}, Host: "bad.example.com:8080", State: RouteRejected,
			Reasons: []string{bad.Source.At("spec.host").String() + ": spec.host: host must not include a port"}, Source: bad.Source.Pos},
		{Key: RouteKey{"ns", "empty"}, Host: "empty.example.com", State: RouteAdmitted,
			Notes: []string{`spec.to.name: no Endpoints or EndpointSlice found for service "none"; the route answers 503 until one appears`}, Source: empty.Source.Pos},
		{Key: RouteKey{"ns", "ok"}, Host: "ok.example.com", State: RouteAdmitted, Source: ok.Source.Pos},
		{Key: RouteKey{"ns", "warn"}, Host: "warn.example.com", State: RouteAdmittedWithWarnings,
			Warnings: []string{`metadata.annotations.haproxy.router.openshift.io/balance: balance "fastest" is not one of roundrobin, leastconn, source, random; annotation ignored`},
			Source:   warn.Source.Pos},
	}
	if !reflect.DeepEqual(d.Statuses, want) {
		t.Errorf("statuses:\n got %+v\nwant %+v", d.Statuses, want)
	}
	if got, want := admittedKeys(d), []string{"ns/empty", "ns/ok", "ns/warn"}; !reflect.DeepEqual(got, want) {
		t.Errorf("admitted = %v, want %v", got, want)
	}
	equalLines(t, ds, []string{
		`ns-bad.yaml:12:7: error: spec.host: host must not include a port`,
		`ns-empty.yaml:14:7: note: spec.to.name: no Endpoints or EndpointSlice found for service "none"; the route answers 503 until one appears`,
		`ns-warn.yaml:5:40: warning: metadata.annotations.haproxy.router.openshift.io/balance: balance "fastest" is not one of roundrobin, leastconn, source, random; annotation ignored`,
	})
}

func TestAdmitDuplicateRouteDefinitions(t *testing.T) {
	first := testRoute("ns", "r", "a.example.com")
	first.Source = testSource("a.yaml", "metadata.name")
	second := testRoute("ns", "r", "b.example.com")
	second.Source = testSource("b.yaml", "metadata.name")
	d, ds := Admit(Objects{Routes: refs(second, first), Endpoints: eprefs(testEndpoints("ns", "web", "10.0.0.1"))}, nil)
	equalLines(t, ds, []string{`b.yaml:10:7: error: metadata.name: route ns/r is already defined at a.yaml:10:7; this definition is ignored`})
	if len(d.Routes) != 1 || d.Routes[0].Host != "a.example.com" {
		t.Errorf("routes = %+v, want the first definition only", d.Routes)
	}
}

func TestAdmitDoesNotModifyInput(t *testing.T) {
	r := testRoute("", "r", "a.example.com")
	objs := Objects{Routes: refs(r)}
	d, _ := Admit(objs, nil)
	if objs.Routes[0].Meta.Namespace != "" {
		t.Errorf("input namespace changed to %q", objs.Routes[0].Meta.Namespace)
	}
	if got := d.Routes[0].Key.Namespace; got != "default" {
		t.Errorf("namespace = %q, want default", got)
	}
}

func TestAdmitRouteSelection(t *testing.T) {
	sel := testRoute("team-a", "shard-a", "a.example.com")
	sel.Meta.Labels = map[string]string{"shard": "a"}
	other := testRoute("team-a", "shard-b", "a.example.com") // would conflict if selected
	other.Meta.Labels = map[string]string{"shard": "b"}
	otherNS := testRoute("team-b", "elsewhere", "b.example.com")
	otherNS.Meta.Labels = map[string]string{"shard": "a"}
	rc := RouterConfig{Spec: RouterConfigSpec{
		RouteSelector: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "shard", Operator: "In", Values: []string{"a"}}}},
		Namespaces:    []string{"team-a"},
	}, Source: testSource("rc.yaml")}
	d, ds := Admit(Objects{Routes: refs(sel, other, otherNS), RouterConfigs: []RouterConfig{rc},
		Endpoints: eprefs(testEndpoints("team-a", "web", "10.0.0.1"))}, nil)
	if got, want := admittedKeys(d), []string{"team-a/shard-a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("admitted = %v, want %v", got, want)
	}
	if len(d.Statuses) != 1 {
		t.Errorf("statuses = %+v, want only the selected route", d.Statuses)
	}
	equalLines(t, ds, []string{
		`team-a-shard-b.yaml:1:1: note: route not served by this router: its labels do not match the RouterConfig's spec.routeSelector`,
		`team-b-elsewhere.yaml:1:1: note: route not served by this router: namespace "team-b" is not in the RouterConfig's spec.namespaces`,
	})
}

// --- endpoints ---

func TestAdmitEndpointResolution(t *testing.T) {
	ready, notReady := true, false
	tests := []struct {
		name    string
		port    *RoutePort
		eps     []Endpoints
		slices  []EndpointSlice
		servers []string // name address:port weight
		diags   []string
	}{
		{
			name: "endpoints and slices unite, dedup and sort by IP then port",
			eps: []Endpoints{{
				Meta: ObjectMeta{Name: "web", Namespace: "ns"},
				Subsets: []EndpointSubset{{
					Addresses:         []EndpointAddress{{IP: "10.0.0.10"}, {IP: "10.0.0.2"}},
					NotReadyAddresses: []EndpointAddress{{IP: "10.0.0.99"}},
					Ports:             []EndpointPort{{Name: "http", Port: 8080}},
				}},
			}},
			slices: []EndpointSlice{{
				Meta: ObjectMeta{Name: "web-abc", Namespace: "ns", Labels: map[string]string{ServiceNameLabel: "web"}},
				Endpoints: []SliceEndpoint{
					{Addresses: []string{"10.0.0.2"}},                   // duplicate of the Endpoints one
					{Addresses: []string{"fd00::1"}, Ready: &ready},     // IPv6 sorts after IPv4
					{Addresses: []string{"10.0.0.3"}, Ready: &notReady}, // not ready
				},
				Ports: []EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}},
			}},
			servers: []string{"ck_10.0.0.2_8080 10.0.0.2:8080 1", "ck_10.0.0.10_8080 10.0.0.10:8080 1", "ck_fd00--1_8080 fd00::1:8080 1"},
		},
		{
			name: "targetPort by name",
			port: &RoutePort{TargetPort: IntOrString{IsString: true, Str: "admin"}},
			eps: []Endpoints{{Meta: ObjectMeta{Name: "web", Namespace: "ns"}, Subsets: []EndpointSubset{{
				Addresses: []EndpointAddress{{IP: "10.0.0.1"}},
				Ports:     []EndpointPort{{Name: "dns", Port: 53, Protocol: "UDP"}, {Name: "http", Port: 8080}, {Name: "admin", Port: 9000}},
			}}}},
			servers: []string{"ep_10.0.0.1_9000 10.0.0.1:9000 1"},
		},
		{
			name: "targetPort by number",
			port: &RoutePort{TargetPort: IntOrString{Int: 9000}},
			eps: []Endpoints{{Meta: ObjectMeta{Name: "web", Namespace: "ns"}, Subsets: []EndpointSubset{{
				Addresses: []EndpointAddress{{IP: "10.0.0.1"}},
				Ports:     []EndpointPort{{Name: "http", Port: 8080}, {Name: "admin", Port: 9000}},
			}}}},
			servers: []string{"ep_10.0.0.1_9000 10.0.0.1:9000 1"},
		},
		{
			// As the OpenShift router: no targetPort serves every port.
			name: "no spec.port takes every TCP port",
			eps: []Endpoints{{Meta: ObjectMeta{Name: "web", Namespace: "ns"}, Subsets: []EndpointSubset{{
				Addresses: []EndpointAddress{{IP: "10.0.0.1"}},
				Ports:     []EndpointPort{{Name: "dns", Port: 53, Protocol: "UDP"}, {Name: "http", Port: 8080}, {Name: "admin", Port: 9000}},
			}}}},
			servers: []string{"ck_10.0.0.1_8080 10.0.0.1:8080 1", "ck_10.0.0.1_9000 10.0.0.1:9000 1"},
		},
		{
			name: "no port matches",
			port: &RoutePort{TargetPort: IntOrString{IsString: true, Str: "grpc"}},
			eps: []Endpoints{{Meta: ObjectMeta{Name: "web", Namespace: "ns"}, Subsets: []EndpointSubset{{
				Addresses: []EndpointAddress{{IP: "10.0.0.1"}},
				Ports:     []EndpointPort{{Name: "http", Port: 8080}},
			}}}},
			diags: []string{`ns-r.yaml:14:7: warning: spec.to.name: service "web" has no port matching targetPort "grpc"`},
		},
		{
			name:  "no endpoints object",
			diags: []string{`ns-r.yaml:14:7: note: spec.to.name: no Endpoints or EndpointSlice found for service "web"; the route answers 503 until one appears`},
		},
		{
			name:  "endpoints without ready addresses",
			eps:   []Endpoints{{Meta: ObjectMeta{Name: "web", Namespace: "ns"}}},
			diags: []string{`ns-r.yaml:14:7: note: spec.to.name: service "web" has no ready endpoints; the route answers 503`},
		},
		{
			name: "bad addresses and ports are reported on their object and skipped",
			eps: []Endpoints{{
				Meta: ObjectMeta{Name: "web", Namespace: "ns"},
				Subsets: []EndpointSubset{{
					Addresses: []EndpointAddress{{IP: "db.internal"}, {IP: "10.0.0.300"}, {IP: "fe80::1%eth0"}, {IP: "10.0.0.1"}},
					Ports:     []EndpointPort{{Name: "bad", Port: 70000}, {Name: "http", Port: 8080}},
				}},
				Source: testSource("ep.yaml", "subsets[0].addresses[0].ip", "subsets[0].addresses[1].ip", "subsets[0].addresses[2].ip", "subsets[0].ports[0].port"),
			}},
			servers: []string{"ep_10.0.0.1_8080 10.0.0.1:8080 1"},
			diags: []string{
				`ep.yaml:10:7: warning: subsets[0].addresses[0].ip: address "db.internal" is a hostname; only IP addresses are supported, skipped`,
				`ep.yaml:11:7: error: subsets[0].addresses[1].ip: address "10.0.0.300" is not an IP address`,
				`ep.yaml:12:7: error: subsets[0].addresses[2].ip: address "fe80::1%eth0" has a zone; only plain IP addresses are supported`,
				`ep.yaml:13:7: error: subsets[0].ports[0].port: port 70000 is out of range 1-65535`,
			},
		},
		{
			// The API server refuses a name twice; the first port keeps
			// it, as a route's targetPort would have found it.
			name: "a port name given twice is reported, the first port serves",
			port: &RoutePort{TargetPort: IntOrString{IsString: true, Str: "http"}},
			eps: []Endpoints{{
				Meta: ObjectMeta{Name: "web", Namespace: "ns"},
				Subsets: []EndpointSubset{{
					Addresses: []EndpointAddress{{IP: "10.0.0.1"}},
					Ports:     []EndpointPort{{Name: "http", Port: 8080}, {Name: "http", Port: 9090}},
				}},
				Source: testSource("ep.yaml", "subsets[0].ports[1].name"),
			}},
			servers: []string{"ep_10.0.0.1_8080 10.0.0.1:8080 1"},
			diags: []string{
				`ep.yaml:10:7: warning: subsets[0].ports[1].name: port name "http" is already used by subsets[0].ports[0]; this port is left out (the API server refuses port names that repeat)`,
			},
		},
		{
			// HAProxy would send requests for 0.0.0.0 or :: to where
			// the client connected: the router itself.
			name: "addresses no server can have, and a missing ip, are reported and skipped",
			eps: []Endpoints{{
				Meta: ObjectMeta{Name: "web", Namespace: "ns"},
				Subsets: []EndpointSubset{{
					Addresses: []EndpointAddress{{IP: "0.0.0.0"}, {IP: "::"}, {IP: "224.0.0.1"}, {IP: "255.255.255.255"}, {IP: "fe80::1"}, {},
						{IP: "10.0.0.1"}, {IP: "169.254.20.10"}},
					Ports: []EndpointPort{{Name: "http", Port: 8080}},
				}},
				Source: testSource("ep.yaml", "subsets[0].addresses[0].ip", "subsets[0].addresses[1].ip", "subsets[0].addresses[2].ip",
					"subsets[0].addresses[3].ip", "subsets[0].addresses[4].ip", "subsets[0].addresses[5].hostname"),
			}},
			// IPv4 link-local is routed by the host (a node-local cache
			// listens there); IPv6 link-local needs a zone (T33).
			servers: []string{"ck_10.0.0.1_8080 10.0.0.1:8080 1", "ck_169.254.20.10_8080 169.254.20.10:8080 1"},
			diags: []string{
				`ep.yaml:10:7: error: subsets[0].addresses[0].ip: address "0.0.0.0" is unspecified, multicast, broadcast or IPv6 link-local: not an address a server can be reached at`,
				`ep.yaml:11:7: error: subsets[0].addresses[1].ip: address "::" is unspecified, multicast, broadcast or IPv6 link-local: not an address a server can be reached at`,
				`ep.yaml:12:7: error: subsets[0].addresses[2].ip: address "224.0.0.1" is unspecified, multicast, broadcast or IPv6 link-local: not an address a server can be reached at`,
				`ep.yaml:13:7: error: subsets[0].addresses[3].ip: address "255.255.255.255" is unspecified, multicast, broadcast or IPv6 link-local: not an address a server can be reached at`,
				`ep.yaml:14:7: error: subsets[0].addresses[4].ip: address "fe80::1" is unspecified, multicast, broadcast or IPv6 link-local: not an address a server can be reached at`,
				`ep.yaml:15:7: error: subsets[0].addresses[5].ip: ip is required: an address without one cannot be a server`,
			},
		},
		{
			// As the API server: an address of the other family, or
			// another address type, is refused; FQDN slices name hosts.
			name: "slice address types",
			slices: []EndpointSlice{
				{Meta: ObjectMeta{Name: "v4", Namespace: "ns", Labels: map[string]string{ServiceNameLabel: "web"}}, AddressType: "IPv4",
					Endpoints: []SliceEndpoint{{Addresses: []string{"10.0.0.1", "fd00::1"}}}, Ports: []EndpointPort{{Port: 8080}},
					Source: testSource("v4.yaml", "endpoints[0].addresses[1]")},
				{Meta: ObjectMeta{Name: "v6", Namespace: "ns", Labels: map[string]string{ServiceNameLabel: "web"}}, AddressType: "IPv6",
					Endpoints: []SliceEndpoint{{Addresses: []string{"10.0.0.2", "fd00::2"}}}, Ports: []EndpointPort{{Port: 8080}},
					Source: testSource("v6.yaml", "endpoints[0].addresses[0]")},
				{Meta: ObjectMeta{Name: "fqdn", Namespace: "ns", Labels: map[string]string{ServiceNameLabel: "web"}}, AddressType: "FQDN",
					Endpoints: []SliceEndpoint{{Addresses: []string{"10.0.0.3"}}}, Ports: []EndpointPort{{Port: 8080}},
					Source: testSource("fqdn.yaml", "addressType")},
				{Meta: ObjectMeta{Name: "foo", Namespace: "ns", Labels: map[string]string{ServiceNameLabel: "web"}}, AddressType: "Foo",
					Endpoints: []SliceEndpoint{{Addresses: []string{"10.0.0.4"}}}, Ports: []EndpointPort{{Port: 8080}},
					Source: testSource("foo.yaml", "addressType")},
			},
			servers: []string{"ck_10.0.0.1_8080 10.0.0.1:8080 1", "ck_fd00--2_8080 fd00::2:8080 1"},
			diags: []string{
				`foo.yaml:10:7: error: addressType: addressType "Foo" is not IPv4, IPv6 or FQDN`,
				`fqdn.yaml:10:7: warning: addressType: FQDN endpoint slices name hosts, and haroute's servers are IP addresses; ignored`,
				`v4.yaml:10:7: error: endpoints[0].addresses[1]: address fd00::1 is not of the slice's addressType IPv4`,
				`v6.yaml:10:7: error: endpoints[0].addresses[0]: address 10.0.0.2 is not of the slice's addressType IPv6`,
			},
		},
		{
			// The API server refuses these names; a route naming the
			// service found nothing, with only a note at the route.
			name: "endpoints names no service can have",
			eps: []Endpoints{
				{Meta: ObjectMeta{Name: "web", Namespace: "ns "}, Source: testSource("ns.yaml", "metadata.namespace"),
					Subsets: []EndpointSubset{{Addresses: []EndpointAddress{{IP: "10.0.0.1"}}, Ports: []EndpointPort{{Port: 8080}}}}},
				{Meta: ObjectMeta{Name: "we b", Namespace: "ns"}, Source: testSource("name.yaml", "metadata.name"),
					Subsets: []EndpointSubset{{Addresses: []EndpointAddress{{IP: "10.0.0.2"}}, Ports: []EndpointPort{{Port: 8080}}}}},
			},
			slices: []EndpointSlice{{Meta: ObjectMeta{Name: "web-x1", Namespace: "ns", Labels: map[string]string{ServiceNameLabel: "Web"}},
				Endpoints: []SliceEndpoint{{Addresses: []string{"10.0.0.3"}}}, Ports: []EndpointPort{{Port: 8080}},
				Source: testSource("sl.yaml", "metadata.labels")}},
			diags: []string{
				`name.yaml:10:7: error: metadata.name: service name "we b" is not a valid DNS-1123 label (lowercase letters, digits and '-', at most 63, starting and ending alphanumeric)`,
				`ns-r.yaml:14:7: note: spec.to.name: no Endpoints or EndpointSlice found for service "web"; the route answers 503 until one appears`,
				`ns.yaml:10:7: error: metadata.namespace: namespace "ns " is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)`,
				`sl.yaml:10:7: error: metadata.labels: service name "Web" is not a valid DNS-1123 label (lowercase letters, digits and '-', at most 63, starting and ending alphanumeric)`,
			},
		},
		{
			name: "slice without service label",
			slices: []EndpointSlice{{
				Meta: ObjectMeta{Name: "orphan", Namespace: "ns"}, Source: testSource("sl.yaml", "metadata.labels"),
			}},
			diags: []string{
				`ns-r.yaml:14:7: note: spec.to.name: no Endpoints or EndpointSlice found for service "web"; the route answers 503 until one appears`,
				`sl.yaml:10:7: warning: metadata.labels: EndpointSlice has no kubernetes.io/service-name label, so it belongs to no service; ignored`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRoute("ns", "r", "a.example.com")
			r.Spec.Port = tt.port
			for i := range tt.eps {
				if tt.eps[i].Source.Pos.Path == "" {
					tt.eps[i].Source = testSource("ep.yaml")
				}
			}
			d, ds := Admit(Objects{Routes: refs(r), Endpoints: eprefs(tt.eps...), EndpointSlices: tt.slices}, nil)
			equalLines(t, ds, tt.diags)
			if len(d.Routes) != 1 {
				t.Fatalf("route not admitted: %v", ds)
			}
			var got []string
			for _, s := range d.Routes[0].Servers() {
				got = append(got, fmt.Sprintf("%s %s:%d %d", s.Name, s.Address, s.Port, s.Weight))
			}
			// fd00::1:8080 reads oddly but is what the fields hold.
			if !reflect.DeepEqual(got, tt.servers) {
				t.Errorf("servers = %q, want %q", got, tt.servers)
			}
		})
	}
}

func TestServerWeights(t *testing.T) {
	tests := []struct {
		name    string
		to      *int32
		alt     []*int32
		counts  []int // endpoints per service
		weights []int // server weight per service
	}{
		// One active service: its servers weigh 1 (OpenShift's
		// calculateServiceWeights), whatever the other services.
		{"single service, one endpoint", nil, nil, []int{1}, []int{1}},
		{"single service, three endpoints", nil, nil, []int{3}, []int{1}},
		{"weight 0 gets no traffic", ptr[int32](100), []*int32{ptr[int32](0)}, []int{1, 2}, []int{1, 0}},
		// Shares per endpoint, the largest scaled to 256, truncated.
		{"75/25 split, equal endpoints", ptr[int32](75), []*int32{ptr[int32](25)}, []int{2, 2}, []int{256, 85}},
		{"the router's own example: 20 over 2, 10 over 4", ptr[int32](20), []*int32{ptr[int32](10)}, []int{2, 4}, []int{256, 64}},
		{"the largest share is the service with many endpoints", ptr[int32](256), []*int32{ptr[int32](1)}, []int{3, 1}, []int{256, 3}},
		{"30/60/0 over 3/1/1", ptr[int32](30), []*int32{ptr[int32](60), ptr[int32](0)}, []int{3, 1, 1}, []int{42, 256, 0}},
		{"many endpoints never drop below 1", ptr[int32](1), []*int32{ptr[int32](256)}, []int{10, 1}, []int{1, 256}},
		{"all zero", ptr[int32](0), nil, []int{2}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRoute("ns", "r", "a.example.com")
			r.Spec.To = RouteTargetReference{Name: "svc0", Weight: tt.to}
			for i, w := range tt.alt {
				r.Spec.AlternateBackends = append(r.Spec.AlternateBackends, RouteTargetReference{Name: fmt.Sprintf("svc%d", i+1), Weight: w})
			}
			var eps []Endpoints
			for i, n := range tt.counts {
				var ips []string
				for j := 0; j < n; j++ {
					ips = append(ips, fmt.Sprintf("10.%d.0.%d", i, j+1))
				}
				eps = append(eps, testEndpoints("ns", fmt.Sprintf("svc%d", i), ips...))
			}
			d, ds := Admit(Objects{Routes: refs(r), Endpoints: eprefs(eps...)}, nil)
			if len(d.Routes) != 1 {
				t.Fatalf("not admitted: %v", ds)
			}
			for i, svc := range d.Routes[0].Services {
				if len(svc.Servers) != tt.counts[i] {
					t.Fatalf("service %s has %d servers, want %d", svc.Name, len(svc.Servers), tt.counts[i])
				}
				for _, s := range svc.Servers {
					if s.Weight != tt.weights[i] {
						t.Errorf("service %s server %s weight %d, want %d", svc.Name, s.Name, s.Weight, tt.weights[i])
					}
				}
			}
		})
	}
}

func TestAdmitSharedEndpointUsedOnce(t *testing.T) {
	r := testRoute("ns", "r", "a.example.com")
	r.Spec.AlternateBackends = []RouteTargetReference{{Name: "other"}}
	d, ds := Admit(Objects{Routes: refs(r), Endpoints: eprefs(
		testEndpoints("ns", "web", "10.0.0.1"), testEndpoints("ns", "other", "10.0.0.1", "10.0.0.2"),
	)}, nil)
	equalLines(t, ds, []string{
		`ns-r.yaml:26:7: warning: spec.alternateBackends[0].name: endpoint 10.0.0.1:8080 of service "other" is also an endpoint of service "web"; it is used once, for "web"`,
	})
	servers := d.Routes[0].Servers()
	if len(servers) != 2 || servers[0].Name != "ck_10.0.0.1_8080" || servers[1].Name != "ck_10.0.0.2_8080" {
		t.Errorf("servers = %+v", servers)
	}
}

func TestAdmitHealthCheckPrecedence(t *testing.T) {
	withAnn := testRoute("ns", "ann", "a.example.com")
	withAnn.Meta.Annotations = map[string]string{AnnotationHealthCheckInterval: "2500ms"}
	plain := testRoute("ns", "plain", "b.example.com")
	eps := []Endpoints{testEndpoints("ns", "web", "10.0.0.1", "10.0.0.2")}

	d, _ := Admit(Objects{Routes: refs(withAnn, plain), Endpoints: eprefs(eps...)}, nil)
	if got := []time.Duration{d.Routes[0].Backend.HealthCheckInterval, d.Routes[1].Backend.HealthCheckInterval}; !reflect.DeepEqual(got, []time.Duration{2500 * time.Millisecond, 5 * time.Second}) {
		t.Errorf("without RouterConfig: intervals = %v", got)
	}
	rc := RouterConfig{Spec: RouterConfigSpec{TuningOptions: TuningOptions{HealthCheckInterval: "10s"}}, Source: testSource("rc.yaml")}
	d, _ = Admit(Objects{Routes: refs(withAnn, plain), Endpoints: eprefs(eps...), RouterConfigs: []RouterConfig{rc}}, nil)
	if got := []time.Duration{d.Routes[0].Backend.HealthCheckInterval, d.Routes[1].Backend.HealthCheckInterval}; !reflect.DeepEqual(got, []time.Duration{2500 * time.Millisecond, 10 * time.Second}) {
		t.Errorf("with RouterConfig: intervals = %v", got)
	}
	if !d.Routes[0].HealthChecked() {
		t.Errorf("two endpoints should be health checked")
	}
}

func TestAdmitInvalidRouterConfigKeepsPrev(t *testing.T) {
	prev := DefaultSettings()
	prev.HTTPPort = 8080
	prev.AllowWildcardRoutes = true
	rc := RouterConfig{Spec: RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTP: ptr(0)}}}, Source: testSource("rc.yaml", "spec.bindOptions.ports.http")}
	wild := testRoute("ns", "w", "www.example.com")
	wild.Spec.WildcardPolicy = WildcardPolicySubdomain

	d, ds := Admit(Objects{Routes: refs(wild), RouterConfigs: []RouterConfig{rc}, Endpoints: eprefs(testEndpoints("ns", "web", "10.0.0.1"))}, &prev)
	if !reflect.DeepEqual(d.Router, prev) {
		t.Errorf("settings = %+v, want prev %+v", d.Router, prev)
	}
	if len(d.Routes) != 1 {
		t.Errorf("wildcard route judged against prev should be admitted; diags %v", ds)
	}
	equalLines(t, ds, []string{
		`rc.yaml:1:1: note: RouterConfig has errors; the previous settings stay in force`,
		`rc.yaml:10:7: error: spec.bindOptions.ports.http: port 0 is not allowed: omit the field for the default 80`,
	})

	d, _ = Admit(Objects{RouterConfigs: []RouterConfig{rc}}, nil)
	if !reflect.DeepEqual(d.Router, DefaultSettings()) {
		t.Errorf("settings without prev = %+v, want defaults", d.Router)
	}
}

func TestAdmitEmpty(t *testing.T) {
	d, ds := Admit(Objects{}, nil)
	if len(ds) != 0 || len(d.Routes) != 0 || len(d.Statuses) != 0 || !reflect.DeepEqual(d.Router, DefaultSettings()) {
		t.Errorf("Admit(empty) = %+v, %v", d, ds)
	}
	if d.Routes == nil || d.Statuses == nil {
		t.Errorf("empty lists should be non-nil so they encode as []")
	}
}

func TestAdmitIsDeterministic(t *testing.T) {
	var objs Objects
	for i := 0; i < 50; i++ {
		r := testRoute("ns", fmt.Sprintf("r%02d", i), fmt.Sprintf("h%d.example.com", i%7))
		r.Spec.Path = fmt.Sprintf("/p%d", i%3)
		objs.Routes = append(objs.Routes, &r)
	}
	objs.Endpoints = eprefs(testEndpoints("ns", "web", "10.0.0.3", "10.0.0.1", "10.0.0.2"))
	d1, ds1 := Admit(objs, nil)
	// Reverse the input: the outcome must not depend on input order.
	rev := objs
	rev.Routes = make([]*Route, len(objs.Routes))
	for i, r := range objs.Routes {
		rev.Routes[len(objs.Routes)-1-i] = r
	}
	d2, ds2 := Admit(rev, nil)
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(lines(ds1), lines(ds2)) {
		t.Errorf("Admit depends on input order")
	}
	if len(d1.Routes) != 21 {
		t.Errorf("admitted %d routes, want 21 (7 hosts x 3 paths)", len(d1.Routes))
	}
}

// BenchmarkAdmit10k admits 10k routes, each with its own service and an
// Endpoints object of three addresses.
func BenchmarkAdmit10k(b *testing.B) {
	const n = 10000
	objs := Objects{Routes: make([]*Route, 0, n), Endpoints: make([]*Endpoints, 0, n)}
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("ns%d", i%50)
		svc := fmt.Sprintf("svc-%d", i)
		r := Route{
			Meta: ObjectMeta{Name: fmt.Sprintf("route-%d", i), Namespace: ns, CreationTimestamp: time.Unix(int64(i), 0),
				Annotations: map[string]string{AnnotationTimeout: "30s"}},
			Spec:   RouteSpec{Host: fmt.Sprintf("host-%d.apps.example.com", i), Path: "/", To: RouteTargetReference{Kind: "Service", Name: svc}},
			Source: Source{Pos: Position{Path: fmt.Sprintf("routes/%d.yaml", i), Line: 1, Col: 1}},
		}
		if i%2 == 0 {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, InsecureEdgeTerminationPolicy: InsecurePolicyRedirect}
		}
		objs.Routes = append(objs.Routes, &r)
		ep := testEndpoints(ns, svc, fmt.Sprintf("10.%d.%d.1", i/256%256, i%256), fmt.Sprintf("10.%d.%d.2", i/256%256, i%256), fmt.Sprintf("10.%d.%d.3", i/256%256, i%256))
		objs.Endpoints = append(objs.Endpoints, &ep)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d, ds := Admit(objs, nil)
		if len(d.Routes) != n || ds.HasErrors(false) {
			b.Fatalf("admitted %d routes, diagnostics %v", len(d.Routes), ds[:min(3, len(ds))])
		}
	}
}

// TestAdmitWildcardPassthroughDoesNotShadow: the SNI frontend tries the
// wildcard passthrough domains before handing TLS to termination, so a
// wildcard passthrough route and an edge or reencrypt route for a host
// under its domain cannot both be admitted: the older wins, either way.
// Hosts of other domains, plain HTTP routes and exact passthrough routes
// are not in the way.
func TestAdmitWildcardPassthroughDoesNotShadow(t *testing.T) {
	older := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	route := func(name, host string, created time.Time, term Termination, wildcard bool) *Route {
		r := testRoute("ns", name, host)
		r.Meta.CreationTimestamp = created
		if term != "" {
			r.Spec.TLS = &TLSConfig{Termination: term}
		}
		if wildcard {
			r.Spec.WildcardPolicy = WildcardPolicySubdomain
		}
		return &r
	}
	tests := []struct {
		name     string
		routes   []*Route
		admitted []string
		want     []string
	}{
		{"an older edge route keeps its host", []*Route{
			route("edge", "x.example.com", older, TerminationEdge, false),
			route("wild", "w.example.com", older.Add(time.Hour), TerminationPassthrough, true),
			route("plain", "p.example.com", older, "", false),
			route("other", "x.example.org", older, TerminationReencrypt, false),
		}, []string{"ns/edge", "ns/other", "ns/plain"}, []string{
			`ns-wild.yaml:12:7: error: spec.host: *.example.com covers host "x.example.com" of route ns/edge, which terminates TLS and wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order): the SNI would send that host's TLS connections to this passthrough route`,
		}},
		{"an older wildcard passthrough keeps its domain", []*Route{
			route("reenc", "x.example.com", older.Add(time.Hour), TerminationReencrypt, false),
			route("wild", "w.example.com", older, TerminationPassthrough, true),
			route("exact", "y.example.com", older.Add(time.Hour), TerminationPassthrough, false),
		}, []string{"ns/exact", "ns/wild"}, []string{
			`ns-reenc.yaml:12:7: error: spec.host: host "x.example.com" is under *.example.com, which passthrough wildcard route ns/wild holds and wins (a route that serves a claim keeps it, else the older creationTimestamp wins, then namespace/name order): the SNI would send its TLS connections to that route`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := Objects{
				Routes:        tt.routes,
				RouterConfigs: []RouterConfig{{Spec: RouterConfigSpec{AllowWildcardRoutes: true}, Source: testSource("rc.yaml")}},
				Endpoints:     eprefs(testEndpoints("ns", "web", "10.0.0.1")),
			}
			d, ds := Admit(objs, nil)
			if got := admittedKeys(d); !reflect.DeepEqual(got, tt.admitted) {
				t.Errorf("admitted = %v, want %v", got, tt.admitted)
			}
			equalLines(t, withoutNotes(ds), tt.want)
		})
	}
}

// A service of weight 0 gets no traffic, so it neither takes an endpoint
// it shares with a weighted service (which the OpenShift router would
// serve under the weighted one) nor, on a passthrough route, keeps
// servers at all (the router's be_tcp leaves it out).
func TestWeightZeroServiceYieldsItsEndpoints(t *testing.T) {
	for _, term := range []Termination{TerminationNone, TerminationPassthrough} {
		t.Run(cmp.Or(string(term), "http"), func(t *testing.T) {
			r := testRoute("ns", "r", "a.example.com")
			if term != TerminationNone {
				r.Spec.TLS = &TLSConfig{Termination: term}
			}
			r.Spec.To = RouteTargetReference{Name: "idle", Weight: ptr[int32](0)}
			r.Spec.AlternateBackends = []RouteTargetReference{{Name: "live", Weight: ptr[int32](10)}}
			d, ds := Admit(Objects{Routes: refs(r), Endpoints: eprefs(
				testEndpoints("ns", "idle", "10.0.0.1", "10.0.0.2"), testEndpoints("ns", "live", "10.0.0.1"),
			)}, nil)
			if len(d.Routes) != 1 {
				t.Fatalf("not admitted: %v", ds)
			}
			var got []string
			for _, svc := range d.Routes[0].Services {
				for _, s := range svc.Servers {
					got = append(got, fmt.Sprintf("%s %s %d", svc.Name, s.Address, s.Weight))
				}
			}
			want := []string{"idle 10.0.0.2 0", "live 10.0.0.1 1"}
			if term == TerminationPassthrough {
				want = []string{"live 10.0.0.1 1"}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("servers = %q, want %q", got, want)
			}
		})
	}
}

// A service of a route without endpoints leaves its share to the route's
// other services, as on OpenShift: its note says so, and says 503 only
// when no service with a weight has servers. It said 503 while another
// service served the route.
func TestEmptyServiceNoteSaysWhoServes(t *testing.T) {
	route := func(otherWeight int) SourceFile {
		return SourceFile{Path: "r.yaml", Data: fmt.Appendf(nil, `apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: r, namespace: ns}
spec:
  host: r.example.test
  to: {kind: Service, name: gone, weight: 100}
  alternateBackends:
  - {kind: Service, name: web, weight: %d}
`, otherWeight)}
	}
	eps := SourceFile{Path: "eps.yaml", Data: []byte(`apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: ns}
subsets:
- addresses: [{ip: 10.0.0.1}]
  ports: [{port: 8080}]
`)}
	for _, c := range []struct {
		weight int
		want   string
	}{
		{50, `r.yaml:6:29: note: spec.to.name: no Endpoints or EndpointSlice found for service "gone"; the route is served by its other services until one appears`},
		{0, `r.yaml:6:29: note: spec.to.name: no Endpoints or EndpointSlice found for service "gone"; the route answers 503 until one appears`},
	} {
		res := NewLoader().Load([]SourceFile{route(c.weight), eps})
		if got := diagStrings(res.Diagnostics); !slices.Contains(got, c.want) {
			t.Errorf("web at weight %d: diagnostics %q, want %q", c.weight, got, c.want)
		}
	}
}
