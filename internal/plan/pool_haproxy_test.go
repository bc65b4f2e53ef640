package plan

import (
	"github.com/haroute/haroute/internal/testutil/testroutes"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/testutil"
)

// TestPoolBindingOnHAProxy binds routes that carry what a spare takes at
// runtime (own certificate, own destination CA, timeouts, forwarded
// headers, HSTS, an allowlist in every spelling admission admits) to the
// spares of a real HAProxy, then unbinds them: every command must be
// accepted, the allowlist HAProxy holds must be the route's, and a fresh
// HAProxy must load the files the bound state renders. What `check`
// admits, HAProxy loads, at runtime and at start alike.
func TestPoolBindingOnHAProxy(t *testing.T) {
	bin := testutil.HAProxy(t)
	def := testutil.SelfSignedPEM(t, "default.example", 1)
	ownCert, ownKey, _ := testutil.SelfSignedCert(t, "own.example.com", big.NewInt(2), time.Now().Add(time.Hour))
	ca := testutil.NewCA(t, "route CA")

	base := func() *model.Desired {
		d := &model.Desired{Router: model.DefaultSettings()}
		d.Router.MaxConnections = 1000 // within the test's file descriptor limit
		d.Router.DynamicConfigManager = true
		d.Routes = testroutes.Of([]model.AdmittedRoute{httpRoute("a", "a.example.com", svc("a", 100, srv("127.0.0.1", 18081, 256)))})
		return d
	}
	empty := base()
	spares := []model.AdmittedRoute{
		model.SpareRoute(model.TerminationNone, false, "be_pool:http:1", &empty.Router),
		model.SpareRoute(model.TerminationEdge, false, "be_pool:edge:2", &empty.Router),
		model.SpareRoute(model.TerminationReencrypt, false, "be_pool:reencrypt:3", &empty.Router),
	}
	// bind makes the route a spare of termination t would admit to, bound
	// to it, with set applied.
	bind := func(d *model.Desired, sp model.AdmittedRoute, name, host string, set func(*model.AdmittedRoute)) {
		r := sp
		r.Key, r.Host = model.RouteKey{Namespace: "default", Name: name}, host
		r.Services = []model.ServiceBackend{svc(name, 100, srv("127.0.0.1", 18090+len(d.Routes), 256))}
		r.NameServers()
		set(&r)
		d.Routes = append(d.Routes, &r)
		slices.SortFunc(d.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
	}
	// Spellings parseIPAllowlist keeps as written: a prefix with host
	// bits, an IPv4-mapped IPv6 address, a duplicate, the whole space.
	const allow = "10.1.2.3/8 ::ffff:192.0.2.1 2001:db8::/32 192.0.2.7 192.0.2.7 0.0.0.0/0"
	boundDesired := func() *model.Desired {
		d := base()
		bind(d, spares[0], "plain", "plain.example.com", func(r *model.AdmittedRoute) {
			r.Backend.Timeout, r.Backend.TunnelTimeout = 90*time.Second, 2*time.Hour
			r.Backend.IPAllowlist = allow
			r.Backend.ForwardedHeaders = "never"
		})
		bind(d, spares[1], "own", "own.example.com", func(r *model.AdmittedRoute) {
			r.TLS.Certificate, r.TLS.Key = string(ownCert), string(ownKey)
			r.Backend.HSTSHeader = "max-age=31536000;includeSubDomains"
		})
		bind(d, spares[2], "reen", "reen.example.com", func(r *model.AdmittedRoute) {
			r.TLS.DestinationCACertificate = ca.PEM
		})
		return d
	}
	bound := boundDesired()

	live := startHAProxy(t, bin, empty, def, spares...)
	bound.Router.HTTPPort, bound.Router.HTTPSPort, bound.Router.StatsPort = empty.Router.HTTPPort, empty.Router.HTTPSPort, empty.Router.StatsPort
	boundState := stateFor(t, bound, def, live.dir, live.runDir, spares...)
	p := Compute(live.state, boundState)
	if p.Reload {
		t.Fatalf("binding reloads: %v", reasonStrings(p))
	}
	live.apply(t, p)
	for _, want := range []struct{ cmd, has string }{
		{"show acl " + render.SlotACLID("be_pool:http:1"), " ::ffff:192.0.2.1\n"},
		{"show ssl crt-list " + live.dir + "/" + render.CrtListFile, "own.example.com"},
		{"show ssl ca-file", live.dir + "/cas/default_reen.pem"},
		{"show map " + live.dir + "/" + render.TimeoutServerMap, "be_pool:http:1 90000"},
		{"show map " + live.dir + "/" + render.HSTSMap, "be_pool:edge:2 max-age=31536000;includeSubDomains"},
		{"show map " + live.dir + "/" + render.ForwardedMap, "be_pool:http:1 never"},
	} {
		if got := live.cmd(t, want.cmd); !strings.Contains(got, want.has) {
			t.Errorf("%s after binding:\n%s\nwant %q in it", want.cmd, got, want.has)
		}
	}
	if got := strings.Count(live.cmd(t, "show acl "+render.SlotACLID("be_pool:http:1")), "\n0x"); got != strings.Count(allow, " ") {
		t.Errorf("the bound allowlist holds %d patterns after the first, want %d", got, strings.Count(allow, " "))
	}

	// The files of the bound state load in a fresh HAProxy (they fail the
	// test in startHAProxy otherwise).
	fresh := startHAProxy(t, bin, boundDesired(), def, spares...)
	if got := fresh.cmd(t, "show acl "+render.SlotACLID("be_pool:http:1")); !strings.Contains(got, " 2001:db8::/32\n") {
		t.Errorf("a fresh start from the bound files holds the allowlist\n%s", got)
	}

	// Unbound again, at runtime too.
	emptyAgain := base()
	emptyAgain.Router = bound.Router
	p = Compute(boundState, stateFor(t, emptyAgain, def, live.dir, live.runDir, spares...))
	if p.Reload {
		t.Fatalf("unbinding reloads: %v", reasonStrings(p))
	}
	live.apply(t, p)
	if got := live.cmd(t, "show ssl crt-list "+live.dir+"/"+render.CrtListFile); strings.Contains(got, "own.example.com") {
		t.Errorf("the crt-list still serves the unbound route:\n%s", got)
	}
	if got := live.cmd(t, "show map "+live.dir+"/"+render.ForwardedMap); strings.Contains(got, "be_pool:http:1") {
		t.Errorf("the spare keeps the unbound route's forwarded-headers policy:\n%s", got)
	}
	if got := live.cmd(t, "show acl "+render.SlotACLID("be_pool:http:1")); !strings.Contains(got, " 0.0.0.0/0\n") || strings.Contains(got, "192.0.2.7") {
		t.Errorf("the spare's allowlist is not open again:\n%s", got)
	}
}
