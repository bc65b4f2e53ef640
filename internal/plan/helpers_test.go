package plan

import (
	"github.com/haroute/haroute/internal/testutil/testroutes"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// Fixtures: a small desired state built in Go, rendered by the real
// render.Render, so plans are computed from the bundles the daemon uses.

const (
	testDir    = "/var/lib/haroute/bundle"
	testRunDir = "/run/haroute"
	// Not real PEM: render copies it verbatim and plan only compares it.
	testDefaultCert = "-----BEGIN CERTIFICATE-----\nREFGQVVMVA==\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nREVGQVVMVEtFWQ==\n-----END PRIVATE KEY-----\n"
	testRouteCert   = "-----BEGIN CERTIFICATE-----\nU0VDVVJF\n-----END CERTIFICATE-----"
	testRouteKey    = "-----BEGIN PRIVATE KEY-----\nU0VDVVJFS0VZ\n-----END PRIVATE KEY-----"
	testDestCA      = "-----BEGIN CERTIFICATE-----\nREVTVENB\n-----END CERTIFICATE-----"
)

func srv(ip string, port, weight int) model.Server {
	return model.Server{Name: model.ServerNameFor(ip, port), Address: ip, Port: port, Weight: weight}
}

func svc(name string, weight int32, servers ...model.Server) model.ServiceBackend {
	return model.ServiceBackend{Name: name, Weight: weight, Servers: servers}
}

// httpRoute names its servers as admission does (checked ones "ck_").
func httpRoute(name, host string, services ...model.ServiceBackend) model.AdmittedRoute {
	r := model.AdmittedRoute{
		Key:      model.RouteKey{Namespace: "default", Name: name},
		Host:     host,
		Backend:  model.BackendSettings{HealthCheckInterval: model.DefaultHealthCheckInterval},
		Services: services,
	}
	r.NameServers()
	return r
}

// baseDesired returns a fresh desired state (no sharing between calls, so
// tests can mutate it):
//
//	default/ab      http, A/B split, 3 active endpoints (checked)
//	default/hello   http, 1 endpoint (unchecked)
//	default/other   http, 1 endpoint
//	default/pair    http, 2 endpoints (checked)
//	default/reen    reencrypt, own destination CA, no own certificate
//	default/secure  edge with its own certificate, insecure policy Allow
//	default/tcp     passthrough
func baseDesired() *model.Desired {
	secure := httpRoute("secure", "secure.example.com", svc("secure", 100, srv("127.0.0.1", 18086, 256)))
	secure.Termination = model.TerminationEdge
	secure.InsecurePolicy = model.InsecurePolicyAllow
	secure.TLS = model.RouteTLS{Certificate: testRouteCert, Key: testRouteKey}

	reen := httpRoute("reen", "reen.example.com", svc("reen", 100, srv("127.0.0.1", 18092, 256)))
	reen.Termination = model.TerminationReencrypt
	reen.InsecurePolicy = model.InsecurePolicyNone
	reen.TLS = model.RouteTLS{DestinationCACertificate: testDestCA}

	tcp := httpRoute("tcp", "tcp.example.com", svc("tcp", 100, srv("127.0.0.1", 18087, 256)))
	tcp.Termination = model.TerminationPassthrough

	return &model.Desired{
		Router: model.DefaultSettings(),
		Routes: testroutes.Of([]model.AdmittedRoute{
			httpRoute("ab", "ab.example.com",
				svc("a", 100, srv("127.0.0.1", 18083, 100)),
				svc("b", 100, srv("127.0.0.1", 18084, 50), srv("127.0.0.1", 18089, 50))),
			httpRoute("hello", "hello.example.com", svc("hello", 100, srv("127.0.0.1", 18081, 256))),
			httpRoute("other", "other.example.com", svc("other", 100, srv("127.0.0.1", 18085, 256))),
			httpRoute("pair", "pair.example.com", svc("pair", 100, srv("127.0.0.1", 18090, 256), srv("127.0.0.1", 18091, 256))),
			reen,
			secure,
			tcp,
		}),
	}
}

func testInput(d *model.Desired) render.Input {
	return render.Input{Desired: d, Dir: testDir, RunDir: testRunDir, DefaultCertificate: []byte(testDefaultCert)}
}

// stateOf renders in and wraps it as a plan State.
func stateOf(t testing.TB, in render.Input) State {
	t.Helper()
	b, err := render.Render(in)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return State{Desired: in.Desired, Bundle: b, Input: in}
}

// routeByName finds a route of d for mutation.
func routeByName(t testing.TB, d *model.Desired, name string) *model.AdmittedRoute {
	t.Helper()
	for i := range d.Routes {
		if d.Routes[i].Key.Name == name {
			return d.Routes[i]
		}
	}
	t.Fatalf("no route %q", name)
	return nil
}

// commands flattens a plan's ops into the exact runtime commands, with
// MapReplace versions fixed at "1".
func commands(p Plan) []string {
	var out []string
	for _, op := range p.Ops {
		switch o := op.(type) {
		case VersionedOp:
			out = append(out, o.PrepareCommand())
			out = append(out, o.Commands("1")...)
		case QueryOp:
			// As HAProxy numbers them: the old line 1, the new one 2.
			out = append(out, o.Before()...)
			out = append(out, o.Query())
			after, err := o.After(o.(ReplaceCrtListLine).Cert + ":1\n" + o.(ReplaceCrtListLine).Cert + ":2\n")
			if err != nil {
				out = append(out, err.Error())
			}
			out = append(out, after...)
		case CommandOp:
			out = append(out, o.Commands()...)
		default:
			out = append(out, "unknown op "+op.String())
		}
	}
	return out
}

// changeLines renders changes as "mode | kind | subject | detail".
func changeLines(p Plan) []string {
	var out []string
	for _, c := range p.Changes {
		parts := []string{c.Mode.String(), string(c.Kind)}
		if c.Subject != "" {
			parts = append(parts, c.Subject)
		}
		if c.Field != "" {
			parts = append(parts, "("+c.Field+")")
		}
		if c.Detail != "" {
			parts = append(parts, c.Detail)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	return out
}

func reasonStrings(p Plan) []string {
	var out []string
	for _, r := range p.Reasons {
		out = append(out, r.String())
	}
	return out
}
