package model

import (
	"reflect"
	"testing"
	"time"
)

func TestServerNameFor(t *testing.T) {
	tests := []struct {
		ip   string
		port int
		want ServerName
	}{
		{"10.0.0.1", 8080, "ep_10.0.0.1_8080"},
		{"fd00::1", 443, "ep_fd00--1_443"},
		{"2001:db8::a:1", 1, "ep_2001-db8--a-1_1"},
		{"::", 65535, "ep_--_65535"},
		{"10.0.0.1", 0, "ep_10.0.0.1_0"},
		{"10.0.0.1", -1, "ep_10.0.0.1_-1"},
	}
	for _, tt := range tests {
		if got := ServerNameFor(tt.ip, tt.port); got != tt.want {
			t.Errorf("ServerNameFor(%q, %d) = %q, want %q", tt.ip, tt.port, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { ServerNameFor("10.0.0.1", 8080) }); n != 1 {
		t.Errorf("ServerNameFor allocates %v times, want 1", n)
	}
}

// Source answers from the positions the decoder recorded (a later record
// of the same field wins, as a map write would) and from Fields, which
// tests and older callers fill in.
func TestSourceLookup(t *testing.T) {
	names := &fieldNames{list: []string{"spec.host", "spec.to"}}
	src := Source{Pos: Position{Path: "f.yaml", Line: 1, Col: 1}, names: names, fields: []fieldPos{
		{name: 0, line: 3, col: 9},
		{name: 1, line: 4, col: 3},
		{name: 0, line: 7, col: 9},
	}}
	tests := []struct {
		field string
		want  string
		ok    bool
	}{
		{"spec.host", "f.yaml:7:9", true},
		{"spec.to", "f.yaml:4:3", true},
		{"spec.path", "f.yaml:1:1", false},
	}
	for _, tt := range tests {
		p, ok := src.Lookup(tt.field)
		if ok != tt.ok || src.At(tt.field).String() != tt.want {
			t.Errorf("Lookup(%q) = %v, %v; At = %s; want %s, %v", tt.field, p, ok, src.At(tt.field), tt.want, tt.ok)
		}
	}
	src.Fields = map[string]Position{"spec.path": {Path: "g.yaml", Line: 2, Col: 2}}
	if got := src.At("spec.path").String(); got != "g.yaml:2:2" {
		t.Errorf("At(spec.path) with Fields = %s, want g.yaml:2:2", got)
	}
}

// Objects with many fields keep their positions in a map, so that many
// diagnostics on one object do not each scan all of them.
func TestSourceOfBigObjectIsIndexed(t *testing.T) {
	var b []byte
	b = append(b, "apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: e\nsubsets:\n- addresses:\n"...)
	for range indexedFields {
		b = append(b, "  - ip: 10.0.0.1\n"...)
	}
	b = append(b, "  - ip: nope\n"...)
	r := decodeFile("e.yaml", b, DefaultLimits())
	if len(r.objs.Endpoints) != 1 {
		t.Fatalf("decoded %d Endpoints, diagnostics %q", len(r.objs.Endpoints), diagStrings(r.diags))
	}
	src := r.objs.Endpoints[0].Source
	if src.Fields == nil || src.fields != nil {
		t.Errorf("%d recorded fields kept compact, want a map", len(src.Fields)+len(src.fields))
	}
	field := "subsets[0].addresses[64].ip"
	if got, want := src.At(field).String(), "e.yaml:71:9"; got != want {
		t.Errorf("At(%s) = %s, want %s", field, got, want)
	}
}

// RouteStatus.Same must compare every field, or admission could hand out
// the last statuses when one changed: adding a field fails here until
// Same (and this count) learn about it.
func TestRouteStatusSameCoversEveryField(t *testing.T) {
	if got := reflect.TypeFor[RouteStatus]().NumField(); got != 8 {
		t.Errorf("RouteStatus has %d fields, Same knows 8", got)
	}
	base := func() RouteStatus {
		return RouteStatus{Key: RouteKey{Namespace: "ns", Name: "r"}, Host: "h", Path: "/p", State: RouteAdmittedWithWarnings,
			Reasons: []string{"r"}, Warnings: []string{"w"}, Notes: []string{"n"}, Source: Position{Path: "f.yaml", Line: 1, Col: 1}}
	}
	for i, change := range []func(*RouteStatus){
		func(s *RouteStatus) { s.Key.Name = "x" },
		func(s *RouteStatus) { s.Host = "x" },
		func(s *RouteStatus) { s.Path = "/x" },
		func(s *RouteStatus) { s.State = RouteRejected },
		func(s *RouteStatus) { s.Reasons = append(s.Reasons, "x") },
		func(s *RouteStatus) { s.Warnings = nil },
		func(s *RouteStatus) { s.Notes = nil },
		func(s *RouteStatus) { s.Source.Line = 2 },
	} {
		a, b := base(), base()
		if !a.Same(&b) {
			t.Fatal("equal statuses are not the same")
		}
		change(&b)
		if a.Same(&b) {
			t.Errorf("change %d not noticed", i)
		}
	}
}

// SameOutput must compare every field that reaches the config, or a cached
// render or a plan could miss a change: adding a field to these types
// fails here until SameOutput (and this count) learn about it.
func TestSameOutputCoversEveryField(t *testing.T) {
	for _, c := range []struct {
		typ    reflect.Type
		fields int
	}{
		{reflect.TypeFor[AdmittedRoute](), 11},
		{reflect.TypeFor[BackendSettings](), 15},
		{reflect.TypeFor[ServiceBackend](), 3},
		{reflect.TypeFor[Server](), 5},
		{reflect.TypeFor[RouteTLS](), 5},
		{reflect.TypeFor[RateLimit](), 3},
		{reflect.TypeFor[RouteKey](), 2},
	} {
		if got := c.typ.NumField(); got != c.fields {
			t.Errorf("%s has %d fields, SameOutput knows %d", c.typ, got, c.fields)
		}
	}
	base := func() AdmittedRoute {
		return AdmittedRoute{
			Key: RouteKey{Namespace: "ns", Name: "r"}, Host: "h.example.com", Path: "/p",
			Backend: BackendSettings{Balance: BalanceLeastConn, IPAllowlist: "10.0.0.0/8",
				RateLimit: RateLimit{RateHTTP: 1}, RewriteTarget: "/x"},
			Services: []ServiceBackend{{Name: "s", Weight: 100, Servers: []Server{
				{Name: "ep_10.0.0.1_80", Address: "10.0.0.1", Port: 80, Weight: 1},
				{Name: "ep_10.0.0.2_80", Address: "10.0.0.2", Port: 80, Weight: 1},
			}}},
		}
	}
	changes := map[string]func(r *AdmittedRoute){
		"key":        func(r *AdmittedRoute) { r.Key.Name = "s" },
		"slot":       func(r *AdmittedRoute) { r.Slot = "be_pool:http:1" },
		"host":       func(r *AdmittedRoute) { r.Host = "i.example.com" },
		"path":       func(r *AdmittedRoute) { r.Path = "/q" },
		"wildcard":   func(r *AdmittedRoute) { r.Wildcard = true },
		"tls":        func(r *AdmittedRoute) { r.Termination = TerminationEdge },
		"insecure":   func(r *AdmittedRoute) { r.InsecurePolicy = InsecurePolicyAllow },
		"cert":       func(r *AdmittedRoute) { r.TLS.Key = "k" },
		"timeout":    func(r *AdmittedRoute) { r.Backend.Timeout = 1 },
		"allowlist":  func(r *AdmittedRoute) { r.Backend.IPAllowlist = "10.0.0.0/9" },
		"ratelimit":  func(r *AdmittedRoute) { r.Backend.RateLimit.RateHTTP = 2 },
		"rewrite":    func(r *AdmittedRoute) { r.Backend.RewriteTarget = "/y" },
		"forwarded":  func(r *AdmittedRoute) { r.Backend.ForwardedHeaders = "never" },
		"maxconn":    func(r *AdmittedRoute) { r.Backend.PodConcurrentConnections = 3 },
		"svc weight": func(r *AdmittedRoute) { r.Services[0].Weight = 1 },
		"server":     func(r *AdmittedRoute) { r.Services[0].Servers[1].Port = 81 },
		"h2c":        func(r *AdmittedRoute) { r.Services[0].Servers[1].H2C = true },
		"servers":    func(r *AdmittedRoute) { r.Services[0].Servers = r.Services[0].Servers[:1] },
		"services":   func(r *AdmittedRoute) { r.Services = nil },
	}
	a := base()
	if b := base(); !a.SameOutput(&b) {
		t.Fatal("equal routes compare different")
	}
	// Admission's field: the same output.
	b := base()
	b.CreationTimestamp = b.CreationTimestamp.Add(1)
	if !a.SameOutput(&b) {
		t.Error("routes differing only in creationTimestamp compare different")
	}
	for name, change := range changes {
		b := base()
		change(&b)
		if a.SameOutput(&b) {
			t.Errorf("%s: changed route compares same", name)
		}
	}
}

// Every BackendSettings field is named by one row of the annotation table,
// so plan can give a reason for any change of it: changing any field yields
// exactly one named change.
func TestBackendChangesCoverEveryField(t *testing.T) {
	base := BackendSettings{Balance: BalanceRoundRobin, HealthCheckInterval: 5 * time.Second}
	changes := map[string]func(b *BackendSettings){
		"balance":                      func(b *BackendSettings) { b.Balance = BalanceLeastConn },
		"timeout":                      func(b *BackendSettings) { b.Timeout = time.Second },
		"timeout-tunnel":               func(b *BackendSettings) { b.TunnelTimeout = time.Second },
		"health.check.interval":        func(b *BackendSettings) { b.HealthCheckInterval = time.Second },
		"ip_allowlist":                 func(b *BackendSettings) { b.IPAllowlist = "10.0.0.0/8" },
		"hsts_header":                  func(b *BackendSettings) { b.HSTSHeader = "max-age=1" },
		"disable_cookies":              func(b *BackendSettings) { b.DisableCookies = true },
		"cookie_name":                  func(b *BackendSettings) { b.CookieName = "c" },
		"cookie-same-site":             func(b *BackendSettings) { b.CookieSameSite = "Lax" },
		"rate-limit-connections":       func(b *BackendSettings) { b.RateLimit.RateTCP = 1 },
		"pod-concurrent-connections":   func(b *BackendSettings) { b.PodConcurrentConnections = 1 },
		"rewrite-target":               func(b *BackendSettings) { b.RewriteTarget = "/" },
		"set-forwarded-headers":        func(b *BackendSettings) { b.ForwardedHeaders = "never" },
		"httpHeaders.actions.request":  func(b *BackendSettings) { b.RequestHeaders = "Delete\tX-A\n" },
		"httpHeaders.actions.response": func(b *BackendSettings) { b.ResponseHeaders = "Set\tX-B\tv\n" },
	}
	if n := reflect.TypeFor[BackendSettings]().NumField(); n != len(changes) {
		t.Fatalf("BackendSettings has %d fields, this test changes %d", n, len(changes))
	}
	s := DefaultSettings()
	for field, change := range changes {
		b := base
		change(&b)
		got := BackendChanges(&base, &b, &s, &s)
		if len(got) != 1 || got[0].Field != field {
			t.Errorf("changing %s: changes %+v", field, got)
		}
	}
	if got := BackendChanges(&base, &base, &s, &s); got != nil {
		t.Errorf("no change: %+v", got)
	}
	// Following the router's new default is not a route change.
	r2 := s
	r2.HealthCheckInterval = time.Second
	b := base
	b.HealthCheckInterval = time.Second
	if got := BackendChanges(&base, &b, &s, &r2); got != nil {
		t.Errorf("inherited interval reported: %+v", got)
	}
}

// A route's own backend name gives its key back, whatever its termination.
func TestBackendNameRouteKey(t *testing.T) {
	for _, term := range []Termination{TerminationNone, TerminationEdge, TerminationReencrypt, TerminationPassthrough} {
		r := AdmittedRoute{Key: RouteKey{Namespace: "ns-1", Name: "web.v2"}, Termination: term}
		if key, ok := r.BackendName().RouteKey(); !ok || key != r.Key {
			t.Errorf("%s: %q gives %v, %v", term, r.BackendName(), key, ok)
		}
	}
	for _, b := range []BackendName{"be_http", "be_http:ns", ""} {
		if key, ok := b.RouteKey(); ok {
			t.Errorf("%q gives %v", b, key)
		}
	}
}
