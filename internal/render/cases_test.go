package render

import (
	"github.com/haroute/haroute/internal/testutil/testroutes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// Go-built golden cases: they exercise every rendering feature without the
// YAML loader, and their expected output lives in testdata/golden/<name>/.

type goldenCase struct {
	name string
	// desired builds the state; tc reads test certificates.
	desired func(tc testCerts) *model.Desired
	// defaultDestinationCA is passed as Input.DefaultDestinationCA.
	defaultDestinationCA bool
	// statsCredentials is passed as Input.StatsCredentials.
	statsCredentials model.StatsCredentials
	// errorPages is passed as Input.ErrorPages.
	errorPages map[int][]byte
	// spares are passed as Input.Spares (the pool; routes of desired bind
	// to them by Slot).
	spares func(s *model.Settings) []model.AdmittedRoute
}

// testErrorPages are custom error pages as an operator writes them.
var testErrorPages = map[int][]byte{
	503: []byte("HTTP/1.0 503 Service Unavailable\r\nPragma: no-cache\r\nCache-Control: private, max-age=0, no-cache, no-store\r\n" +
		"Connection: close\r\nContent-Type: text/html\r\nContent-Length: 36\r\n\r\n<h1>Custom: application unavailable\n"),
	404: []byte("HTTP/1.0 404 Not Found\r\nConnection: close\r\nContent-Type: text/html\r\n\r\n<h1>Custom: no such route</h1>\n"),
}

// testCerts is PEM material from testdata/certs (100-year validity, so the
// goldens never rot): a CA, a "*.example.com" certificate and its key.
type testCerts struct {
	CA, Cert, Key, Default string
}

func loadTestCerts(t testing.TB) testCerts {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile("testdata/certs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return testCerts{CA: read("ca.pem"), Cert: read("example.com.crt"), Key: read("example.com.key"), Default: read("default.pem")}
}

// route builds an admitted route; opts adjust it.
func route(ns, name, host, path string, opts ...func(*model.AdmittedRoute)) model.AdmittedRoute {
	r := model.AdmittedRoute{
		Key:  model.RouteKey{Namespace: ns, Name: name},
		Host: host,
		Path: path,
		Backend: model.BackendSettings{
			HealthCheckInterval: 5 * time.Second,
		},
	}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// svc adds a service with endpoints "ip:port"; the service weight is
// spread over its endpoints as OpenShift does.
func svc(name string, weight int32, endpoints ...string) func(*model.AdmittedRoute) {
	return func(r *model.AdmittedRoute) {
		sb := model.ServiceBackend{Name: name, Weight: weight}
		for _, ep := range endpoints {
			host, port := splitHostPort(ep)
			w := 0
			if weight > 0 {
				w = max(1, int(weight)/len(endpoints))
			}
			sb.Servers = append(sb.Servers, model.Server{Name: model.ServerNameFor(host, port), Address: host, Port: port, Weight: w})
		}
		r.Services = append(r.Services, sb)
	}
}

func splitHostPort(ep string) (string, int) {
	for i := len(ep) - 1; i >= 0; i-- {
		if ep[i] == ':' {
			port := 0
			for _, c := range ep[i+1:] {
				port = port*10 + int(c-'0')
			}
			host := ep[:i]
			if host[0] == '[' {
				host = host[1 : len(host)-1]
			}
			return host, port
		}
	}
	panic("bad endpoint " + ep)
}

func edge(policy model.InsecureEdgeTerminationPolicy, tls model.RouteTLS) func(*model.AdmittedRoute) {
	return func(r *model.AdmittedRoute) {
		r.Termination, r.InsecurePolicy, r.TLS = model.TerminationEdge, policy, tls
	}
}

func reencrypt(policy model.InsecureEdgeTerminationPolicy, tls model.RouteTLS) func(*model.AdmittedRoute) {
	return func(r *model.AdmittedRoute) {
		r.Termination, r.InsecurePolicy, r.TLS = model.TerminationReencrypt, policy, tls
	}
}

func passthrough(policy model.InsecureEdgeTerminationPolicy) func(*model.AdmittedRoute) {
	return func(r *model.AdmittedRoute) { r.Termination, r.InsecurePolicy = model.TerminationPassthrough, policy }
}

func wildcard(r *model.AdmittedRoute) { r.Wildcard = true }

func backendSettings(f func(*model.BackendSettings)) func(*model.AdmittedRoute) {
	return func(r *model.AdmittedRoute) { f(&r.Backend) }
}

func desired(s model.Settings, routes ...model.AdmittedRoute) *model.Desired {
	return &model.Desired{Router: s, Routes: testroutes.Of(routes)}
}

func goldenCases() []goldenCase {
	def := model.DefaultSettings()
	return []goldenCase{
		{name: "no-routes", desired: func(testCerts) *model.Desired { return desired(def) }},
		{name: "error-pages", errorPages: testErrorPages, desired: func(testCerts) *model.Desired {
			s := def
			s.ErrorPagesDir = "/etc/haroute/error-pages"
			return desired(s, route("default", "hello", "hello.example.com", "", svc("hello", 100, "10.0.0.1:8080")))
		}},
		{name: "http", desired: func(testCerts) *model.Desired {
			return desired(def,
				route("default", "empty", "empty.example.com", ""),
				route("default", "hello", "hello.example.com", "", svc("hello", 100, "10.0.0.1:8080", "10.0.0.2:8080")),
				route("default", "single", "single.example.com", "", svc("single", 100, "10.0.1.1:8080")),
			)
		}},
		{name: "edge-policies", desired: func(tc testCerts) *model.Desired {
			own := model.RouteTLS{Certificate: tc.Cert, Key: tc.Key, CACertificate: tc.CA}
			return desired(def,
				route("shop", "allow", "allow.example.com", "", edge(model.InsecurePolicyAllow, own), svc("web", 100, "10.1.0.1:8080", "10.1.0.2:8080")),
				route("shop", "none", "none.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, "10.1.0.1:8080")),
				route("shop", "redirect", "redirect.example.com", "", edge(model.InsecurePolicyRedirect, own), svc("web", 100, "10.1.0.1:8080")),
			)
		}},
		// HTTP/2 is offered on the line of a route whose certificate no
		// other route has (secure), as OpenShift's router offers it;
		// own and twin share theirs (twin's written with CRLF).
		{name: "http2", desired: func(tc testCerts) *model.Desired {
			s := def
			s.HTTP2 = true
			keyAt := strings.Index(tc.Default, "-----BEGIN PRIVATE KEY-----")
			return desired(s,
				route("shop", "own", "own.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}), svc("web", 100, "10.1.0.1:8080")),
				route("shop", "shared", "shared.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("web", 100, "10.1.0.1:8080")),
				route("shop", "twin", "twin.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{Certificate: strings.ReplaceAll(tc.Cert, "\n", "\r\n"), Key: tc.Key}), svc("web", 100, "10.1.0.1:8080")),
				route("shop", "secure", "secure.example.com", "", reencrypt(model.InsecurePolicyNone,
					model.RouteTLS{Certificate: tc.Default[:keyAt], Key: tc.Default[keyAt:], DestinationCACertificate: tc.CA}), svc("api", 100, "10.2.0.2:8443")),
			)
		}},
		{name: "reencrypt", defaultDestinationCA: true, desired: func(tc testCerts) *model.Desired {
			return desired(def,
				route("bank", "default-ca", "vault.example.com", "", reencrypt(model.InsecurePolicyRedirect, model.RouteTLS{}), svc("vault", 100, "10.2.0.1:8443")),
				route("bank", "own-ca", "secure.example.com", "", reencrypt(model.InsecurePolicyNone,
					model.RouteTLS{Certificate: tc.Cert, Key: tc.Key, DestinationCACertificate: tc.CA}), svc("api", 100, "10.2.0.2:8443", "10.2.0.3:8443")),
			)
		}},
		{name: "passthrough", desired: func(testCerts) *model.Desired {
			return desired(def,
				route("db", "exact", "db.example.com", "", passthrough(model.InsecurePolicyNone), svc("pg", 100, "10.3.0.1:5443", "10.3.0.2:5443")),
				route("db", "redirect", "www.example.com", "", passthrough(model.InsecurePolicyRedirect), svc("web", 100, "10.3.0.3:8443")),
				route("db", "wild", "any.tcp.example.com", "", passthrough(model.InsecurePolicyNone), wildcard, svc("tcp", 100, "10.3.0.4:9443")),
			)
		}},
		{name: "wildcard-edge", desired: func(tc testCerts) *model.Desired {
			return desired(def,
				route("apps", "exact", "special.apps.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{}), svc("special", 100, "10.4.0.1:8080")),
				route("apps", "http-wild", "www.plain.example.com", "/", wildcard, svc("plain", 100, "10.4.0.2:8080")),
				route("apps", "wild", "www.apps.example.com", "", edge(model.InsecurePolicyRedirect,
					model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}), wildcard, svc("apps", 100, "10.4.0.3:8080", "10.4.0.4:8080")),
			)
		}},
		{name: "paths", desired: func(testCerts) *model.Desired {
			return desired(def,
				route("web", "api", "site.example.com", "/api", svc("api", 100, "10.5.0.1:8080")),
				route("web", "api-v2", "site.example.com", "/api/v2/", svc("api2", 100, "10.5.0.2:8080")),
				route("web", "root", "site.example.com", "/", svc("root", 100, "10.5.0.3:8080")),
				route("web", "static", "site.example.com", "/static", svc("static", 100, "10.5.0.4:8080")),
			)
		}},
		// Values HAProxy's config parser gives a meaning to, as the model
		// admits them: quoted where they appear in haproxy.cfg, literal in
		// the maps.
		{name: "quoting", desired: func(testCerts) *model.Desired {
			return desired(def,
				route("web", "quoted", "q.example.com", `/it's"q"\x%20$HOME;{a}`, svc("q", 100, "10.5.1.1:8080"),
					backendSettings(func(b *model.BackendSettings) {
						b.CookieName = "it's#a$cookie"
						b.RewriteTarget = "/new%27s/$x;y=(1)"
					})),
				route("web", "plain-cookie", "p.example.com", "", svc("p", 100, "10.5.1.2:8080"),
					backendSettings(func(b *model.BackendSettings) { b.CookieName = "JSESSIONID" })),
			)
		}},
		{name: "ab-weights", desired: func(testCerts) *model.Desired {
			return desired(def,
				route("ab", "split", "ab.example.com", "",
					svc("blue", 80, "10.6.0.1:8080", "10.6.0.2:8080"),
					svc("green", 20, "10.6.1.1:8080"),
					svc("off", 0, "10.6.2.1:8080")),
				route("ab", "drained", "drained.example.com", "",
					svc("blue", 100, "10.6.0.1:8080"),
					svc("old", 0, "10.6.3.1:8080")),
			)
		}},
		{name: "pool", spares: func(s *model.Settings) []model.AdmittedRoute {
			return []model.AdmittedRoute{
				model.SpareRoute(model.TerminationNone, false, "be_pool:http:1", s),
				model.SpareRoute(model.TerminationNone, false, "be_pool:http:2", s),
				model.SpareRoute(model.TerminationEdge, false, "be_pool:edge:3", s),
				model.SpareRoute(model.TerminationEdge, true, "be_pool:edge-allow:4", s),
				model.SpareRoute(model.TerminationReencrypt, false, "be_pool:reencrypt:5", s),
				model.SpareRoute(model.TerminationPassthrough, false, "be_pool:passthrough:6", s),
			}
		}, desired: func(tc testCerts) *model.Desired {
			bind := func(slot model.BackendName) func(*model.AdmittedRoute) {
				return func(r *model.AdmittedRoute) { r.Slot = slot }
			}
			// Bound routes: timeouts and forwarded headers in the maps,
			// the allowlist in the spare's ACL file, the certificate in
			// the crt-list, the backends the spares'.
			return desired(def,
				route("pool", "slow", "slow.example.com", "", svc("web", 100, "10.8.0.1:8080"), bind("be_pool:http:1"),
					backendSettings(func(b *model.BackendSettings) {
						b.Timeout = 90 * time.Second
						b.TunnelTimeout = 2 * time.Hour
						b.IPAllowlist = "10.0.0.0/8 192.168.1.7 2001:db8::/32"
						b.ForwardedHeaders = "never"
					})),
				route("pool", "own", "own.example.com", "", edge(model.InsecurePolicyNone, model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}),
					svc("web", 100, "10.8.0.2:8080"), bind("be_pool:edge:3"),
					backendSettings(func(b *model.BackendSettings) { b.HSTSHeader = "max-age=31536000;includeSubDomains;preload" })),
			)
		}},
		{name: "annotations", desired: func(tc testCerts) *model.Desired {
			many := make([]string, 0, 40)
			for i := 1; i <= 40; i++ {
				many = append(many, "192.168.0."+strconv.Itoa(i))
			}
			return desired(def,
				route("anno", "cookies", "cookies.example.com", "", edge(model.InsecurePolicyAllow, model.RouteTLS{}),
					svc("web", 100, "10.7.0.1:8080", "10.7.0.2:8080"), backendSettings(func(b *model.BackendSettings) {
						b.Balance = model.BalanceRoundRobin
						b.CookieName = "session_affinity"
						b.CookieSameSite = "Strict"
						b.HSTSHeader = "max-age=31536000;includeSubDomains;preload"
						b.ForwardedHeaders = "replace"
					})),
				route("anno", "limits", "limits.example.com", "/app", svc("web", 100, "10.7.0.3:8080", "10.7.0.4:8080"),
					backendSettings(func(b *model.BackendSettings) {
						b.Balance = model.BalanceRandom
						b.Timeout = 90 * time.Second
						b.TunnelTimeout = 2 * time.Hour
						b.HealthCheckInterval = 1500 * time.Millisecond
						b.IPAllowlist = model.AddressList(strings.Join(many, " "))
						b.RateLimit = model.RateLimit{ConcurrentTCP: 10, RateTCP: 100, RateHTTP: 200}
						b.PodConcurrentConnections = 50
						b.RewriteTarget = "/v1.0/"
						b.ForwardedHeaders = "if-none"
						b.CookieSameSite = "None"
					})),
				route("anno", "nocookies", "nocookies.example.com", "", svc("web", 100, "10.7.0.5:8080"),
					backendSettings(func(b *model.BackendSettings) {
						b.Balance = model.BalanceSource
						b.DisableCookies = true
						b.ForwardedHeaders = "never"
						b.IPAllowlist = "10.0.0.0/8 2001:db8::/32 127.0.0.1"
						b.RewriteTarget = "/"
					})),
				route("anno", "tcp", "tcp.example.com", "", passthrough(model.InsecurePolicyNone), svc("tcp", 100, "10.7.0.6:8443"),
					backendSettings(func(b *model.BackendSettings) {
						b.Balance = model.BalanceLeastConn
						b.Timeout = 10 * time.Minute
						b.IPAllowlist = "10.0.0.0/8"
						b.RateLimit = model.RateLimit{ConcurrentTCP: 5, RateHTTP: 9}
						b.HSTSHeader = "max-age=1"
						b.CookieName = "ignored"
					})),
			)
		}},
		{name: "ipv6-and-ports", statsCredentials: model.StatsCredentials{User: "admin", Password: `p#a$s"w\o:rd`}, desired: func(testCerts) *model.Desired {
			s := def
			s.BindAddress = "::1"
			s.HTTPPort, s.HTTPSPort, s.StatsPort = 9080, 9443, 9936
			s.ThreadCount = 2
			s.HardStopAfter = 30 * time.Minute
			s.MaxConnections = 20000
			s.HealthCheckInterval = 10 * time.Second
			return desired(s,
				route("v6", "dual", "dual.example.com", "", svc("dual", 100, "[fd00::1]:8080", "10.8.0.1:8080", "[2001:db8::ff]:80")),
				route("v6", "redirect", "tls.example.com", "", reencrypt(model.InsecurePolicyRedirect, model.RouteTLS{}), svc("tls", 100, "[fd00::2]:8443"),
					backendSettings(func(b *model.BackendSettings) { b.HealthCheckInterval = 0 })),
			)
		}},
	}
}
