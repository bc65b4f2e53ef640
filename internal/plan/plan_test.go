package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

const (
	beAB    = "be_http:default:ab"
	beHello = "be_http:default:hello"
	bePair  = "be_http:default:pair"
	httpMap = testDir + "/maps/http.map"
	// httpHostMap is httpMap's hosts that have no path (render.HTTPHostMap).
	httpHostMap = testDir + "/maps/http_host.map"
	certPath    = testDir + "/certs/default_secure.pem"
)

func cookieKey(be string) string { return render.DynamicCookieKey(model.BackendName(be)) }

// TestCompute has one row per change type of DESIGN §5, each applied to the
// same base state, with the exact runtime commands or reload reasons.
func TestCompute(t *testing.T) {
	tests := []struct {
		name string
		// change edits the desired state; applied stays baseDesired.
		change  func(t *testing.T, d *model.Desired, in *render.Input)
		applied func(t *testing.T, d *model.Desired)
		pending map[model.BackendName]map[model.ServerName]string

		wantReasons  []string
		wantCommands []string
		wantChanges  []string
		wantSummary  string
	}{
		{
			name:        "no change",
			change:      func(t *testing.T, d *model.Desired, in *render.Input) {},
			wantSummary: "plan: no changes",
		},
		{
			name: "endpoint added",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "ab")
				r.Services[1].Servers = append(r.Services[1].Servers, srv("127.0.0.1", 18088, 50))
			},
			wantCommands: []string{
				"add server " + beAB + "/ep_127.0.0.1_18088 127.0.0.1:18088 weight 50 check inter 5s",
				"enable health " + beAB + "/ep_127.0.0.1_18088",
				"enable server " + beAB + "/ep_127.0.0.1_18088",
				"set dynamic-cookie-key backend " + beAB + " " + cookieKey(beAB),
				"enable dynamic-cookie backend " + beAB,
			},
			wantChanges: []string{"runtime | endpoint added | default/ab | ep_127.0.0.1_18088"},
			wantSummary: "plan: runtime (2 operations, no reload)",
		},
		{
			name: "endpoint removed",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "ab")
				r.Services[1].Servers = r.Services[1].Servers[:1]
			},
			wantCommands: []string{"set server " + beAB + "/ck_127.0.0.1_18089 state maint"},
			wantChanges:  []string{"runtime | endpoint removed | default/ab | ck_127.0.0.1_18089"},
			wantSummary:  "plan: runtime (1 operation, no reload)",
		},
		{
			name: "endpoint address changed is an add and a drain",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "ab")
				r.Services[1].Servers[1] = srv("127.0.0.2", 18089, 50)
			},
			wantCommands: []string{
				"add server " + beAB + "/ep_127.0.0.2_18089 127.0.0.2:18089 weight 50 check inter 5s",
				"enable health " + beAB + "/ep_127.0.0.2_18089",
				"enable server " + beAB + "/ep_127.0.0.2_18089",
				"set dynamic-cookie-key backend " + beAB + " " + cookieKey(beAB),
				"enable dynamic-cookie backend " + beAB,
				"set server " + beAB + "/ck_127.0.0.1_18089 state maint",
			},
			wantChanges: []string{
				"runtime | endpoint added | default/ab | ep_127.0.0.2_18089",
				"runtime | endpoint removed | default/ab | ck_127.0.0.1_18089",
			},
			wantSummary: "plan: runtime (3 operations, no reload)",
		},
		{
			name: "weight",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "ab").Services[0].Servers[0].Weight = 50
			},
			wantCommands: []string{"set server " + beAB + "/ck_127.0.0.1_18083 weight 50"},
			wantChanges:  []string{"runtime | weight changed | default/ab | ck_127.0.0.1_18083 100 -> 50"},
			wantSummary:  "plan: runtime (1 operation, no reload)",
		},
		{
			name: "hosts moved between existing backends",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "hello").Host = "other.example.com"
				routeByName(t, d, "other").Host = "hello.example.com"
			},
			// Two values change in place: no key is ever missing.
			wantCommands: []string{
				"set map " + httpMap + " hello.example.com/ be_http:default:other",
				"set map " + httpMap + " other.example.com/ be_http:default:hello",
				"set map " + httpHostMap + " hello.example.com be_http:default:other",
				"set map " + httpHostMap + " other.example.com be_http:default:hello",
			},
			wantChanges: []string{
				"runtime | host/path changed | default/hello | hello.example.com -> other.example.com",
				"runtime | host/path changed | default/other | other.example.com -> hello.example.com",
				"runtime | map changed | maps/http.map | +2 -2 entries",
				"runtime | map changed | maps/http_host.map | +2 -2 entries",
			},
			wantSummary: "plan: runtime (2 operations, no reload)",
		},
		{
			// Without sticky cookies: a cookie is Secure only without
			// Allow, which takes a reload (next case).
			name: "redirect policy",
			applied: func(t *testing.T, d *model.Desired) {
				routeByName(t, d, "secure").Backend.DisableCookies = true
			},
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "secure").Backend.DisableCookies = true
				routeByName(t, d, "secure").InsecurePolicy = model.InsecurePolicyRedirect
			},
			wantCommands: []string{
				"set map " + httpMap + " secure.example.com/ redirect-https",
				"set map " + httpHostMap + " secure.example.com redirect-https",
			},
			wantChanges: []string{
				"runtime | redirect policy changed | default/secure | Allow -> Redirect",
				"runtime | map changed | maps/http.map | +1 -1 entries",
				"runtime | map changed | maps/http_host.map | +1 -1 entries",
			},
			wantSummary: "plan: runtime (2 operations, no reload)",
		},
		{
			name: "redirect policy away from Allow makes the sticky cookie Secure",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "secure").InsecurePolicy = model.InsecurePolicyRedirect
			},
			wantReasons: []string{"backend settings changed: default/secure (cookie)"},
			wantChanges: []string{
				"reload | backend settings changed | default/secure | (cookie) | cookie Secure false -> true (insecureEdgeTerminationPolicy Allow -> Redirect)",
				"runtime | redirect policy changed | default/secure | Allow -> Redirect",
				"runtime | map changed | maps/http.map | +1 -1 entries",
				"runtime | map changed | maps/http_host.map | +1 -1 entries",
			},
			wantSummary: "plan: reload (1 reason: backend settings changed: default/secure (cookie))",
		},
		{
			name: "certificate of an existing route",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "secure").TLS.Certificate = "-----BEGIN CERTIFICATE-----\nUk9UQVRFRA==\n-----END CERTIFICATE-----"
			},
			wantCommands: []string{
				"set ssl cert " + certPath + " <<\n-----BEGIN CERTIFICATE-----\nUk9UQVRFRA==\n-----END CERTIFICATE-----\n" + testRouteKey + "\n",
				"commit ssl cert " + certPath,
			},
			wantChanges: []string{"runtime | certificate changed | certs/default_secure.pem"},
			wantSummary: "plan: runtime (1 operation, no reload)",
		},
		{
			// Two lines serve secure.example.com; the file's order
			// decides, and `set ssl cert` would not keep it.
			name: "certificate of a route whose SNI another route's certificate shares",
			applied: func(t *testing.T, d *model.Desired) {
				r := routeByName(t, d, "reen")
				r.Host, r.Path = "secure.example.com", "/r"
				r.TLS.Certificate, r.TLS.Key = testRouteCert, testRouteKey
			},
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "reen")
				r.Host, r.Path = "secure.example.com", "/r"
				r.TLS.Certificate, r.TLS.Key = testRouteCert, testRouteKey
				routeByName(t, d, "secure").TLS.Certificate = "-----BEGIN CERTIFICATE-----\nUk9UQVRFRA==\n-----END CERTIFICATE-----"
			},
			wantReasons: []string{"certificate changed: certs/default_secure.pem"},
			wantChanges: []string{"reload | certificate changed | certs/default_secure.pem | another crt-list line serves its SNI too: which one wins is the file's order, which only a reload keeps"},
			wantSummary: "plan: reload (1 reason: certificate changed: certs/default_secure.pem)",
		},
		{
			name: "certificate too large for one runtime payload",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				in.DefaultCertificate = []byte("-----BEGIN CERTIFICATE-----\n" + strings.Repeat("QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n", 200) +
					"-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nTkVXS0VZ\n-----END PRIVATE KEY-----\n")
			},
			wantReasons: []string{"certificate changed: certs/default.pem"},
			wantChanges: []string{"reload | certificate changed | certs/default.pem | PEM of 13117 bytes exceeds the 12288 one runtime payload can carry"},
			wantSummary: "plan: reload (1 reason: certificate changed: certs/default.pem)",
		},
		{
			name: "default certificate",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				in.DefaultCertificate = []byte("-----BEGIN CERTIFICATE-----\nTkVX\n-----END CERTIFICATE-----\n\n-----BEGIN PRIVATE KEY-----\nTkVXS0VZ\n-----END PRIVATE KEY-----\n")
			},
			wantCommands: []string{
				"set ssl cert " + testDir + "/certs/default.pem <<\n-----BEGIN CERTIFICATE-----\nTkVX\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nTkVXS0VZ\n-----END PRIVATE KEY-----\n",
				"commit ssl cert " + testDir + "/certs/default.pem",
			},
			wantChanges: []string{"runtime | certificate changed | certs/default.pem"},
			wantSummary: "plan: runtime (1 operation, no reload)",
		},
		{
			name: "new route",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Routes = append(d.Routes, new(httpRoute("zz-new", "new.example.com", svc("new", 100, srv("127.0.0.1", 18099, 256)))))
			},
			wantReasons: []string{"route added: default/zz-new"},
			wantChanges: []string{"reload | route added | default/zz-new"},
			wantSummary: "plan: reload (1 reason: route added: default/zz-new)",
		},
		{
			name: "deleted route",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Routes = slices.DeleteFunc(d.Routes, func(r *model.AdmittedRoute) bool { return r.Key.Name == "other" })
			},
			wantReasons: []string{"route deleted: default/other"},
			wantChanges: []string{"reload | route deleted | default/other"},
			wantSummary: "plan: reload (1 reason: route deleted: default/other)",
		},
		{
			name: "annotation changing backend settings",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "ab")
				r.Backend.Balance = model.BalanceRoundRobin
				r.Backend.Timeout = time.Minute
			},
			wantReasons: []string{"backend settings changed: default/ab (balance, timeout)"},
			wantChanges: []string{`reload | backend settings changed | default/ab | (balance, timeout) | balance "" -> roundrobin; timeout 0s -> 1m0s`},
			wantSummary: "plan: reload (1 reason: backend settings changed: default/ab (balance, timeout))",
		},
		{
			name: "server-only annotation (pod-concurrent-connections)",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "pair").Backend.PodConcurrentConnections = 10
			},
			wantReasons: []string{"backend settings changed: default/pair (pod-concurrent-connections)"},
			wantChanges: []string{
				"reload | backend settings changed | default/pair | (pod-concurrent-connections) | pod-concurrent-connections 0 -> 10",
			},
			wantSummary: "plan: reload (1 reason: backend settings changed: default/pair (pod-concurrent-connections))",
		},
		{
			name: "route drops its destination CA",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "reen").TLS.DestinationCACertificate = ""
			},
			// The servers' ca-file changes with a reload; the file alone
			// could go at runtime.
			wantReasons: []string{"server options changed: default/reen"},
			wantChanges: []string{
				"reload | server options changed | default/reen | ep_127.0.0.1_18092",
				"runtime | CA file changed | cas/default_reen.pem | removed",
			},
			wantSummary: "plan: reload (1 reason: server options changed: default/reen)",
		},
		{
			name: "RouterConfig tuning",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.MaxConnections = 20000
			},
			wantReasons: []string{"router settings changed: maxConnections"},
			wantChanges: []string{"reload | router settings changed | maxConnections | 50000 -> 20000"},
			wantSummary: "plan: reload (1 reason: router settings changed: maxConnections)",
		},
		{
			name: "buffers and HTTP timeouts",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.HeaderBufferBytes = 65536
				d.Router.HTTPKeepAliveTimeout = 75 * time.Second
				d.Router.IgnoreEmptyRequests = true
				d.Router.DeferIdleClose = true
			},
			wantReasons: []string{"router settings changed: headerBufferBytes", "router settings changed: httpKeepAliveTimeout", "router settings changed: httpEmptyRequestsPolicy", "router settings changed: idleConnectionTerminationPolicy"},
			wantChanges: []string{
				"reload | router settings changed | headerBufferBytes | 32768 -> 65536",
				"reload | router settings changed | httpKeepAliveTimeout | 5m0s -> 1m15s",
				"reload | router settings changed | httpEmptyRequestsPolicy | Respond -> Ignore",
				"reload | router settings changed | idleConnectionTerminationPolicy | Immediate -> Deferred",
			},
			wantSummary: "plan: reload (4 reasons: router settings changed: headerBufferBytes; router settings changed: httpKeepAliveTimeout; router settings changed: httpEmptyRequestsPolicy; router settings changed: idleConnectionTerminationPolicy)",
		},
		{
			name: "router health check interval is one reason, not one per route",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.HealthCheckInterval = 10 * time.Second
				for i := range d.Routes {
					d.Routes[i].Backend.HealthCheckInterval = 10 * time.Second
				}
			},
			wantReasons: []string{"router settings changed: healthCheckInterval"},
			wantChanges: []string{"reload | router settings changed | healthCheckInterval | 5s -> 10s"},
			wantSummary: "plan: reload (1 reason: router settings changed: healthCheckInterval)",
		},
		{
			name: "ports",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.HTTPPort = 8080
				d.Router.StatsPort = 9936
			},
			wantReasons: []string{"router settings changed: ports"},
			wantChanges: []string{"reload | router settings changed | ports | http 80 -> 8080, stats 1936 -> 9936"},
			wantSummary: "plan: reload (1 reason: router settings changed: ports)",
		},
		{
			name: "listen addresses",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.BindAddress = "127.0.0.1"
				d.Router.BindAddresses = []string{"127.0.0.1", "::1"}
			},
			wantReasons: []string{"router settings changed: bindAddress"},
			wantChanges: []string{"reload | router settings changed | bindAddress | [] -> [127.0.0.1,::1]"},
			wantSummary: "plan: reload (1 reason: router settings changed: bindAddress)",
		},
		{
			name: "client certificates",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.ClientTLS = &model.ClientTLSPolicy{Verify: "required", SubjectFilter: "(?:^/CN=a$)", CAFile: "/etc/ca.pem"}
				in.ClientCA = []byte("ca")
			},
			wantReasons: []string{"router settings changed: clientTLS", "CA file changed: cas/client-ca.pem"},
			wantChanges: []string{
				"reload | router settings changed | clientTLS | off -> required (?:^/CN=a$)",
				"reload | CA file changed | cas/client-ca.pem | added",
			},
			wantSummary: "plan: reload (2 reasons: router settings changed: clientTLS; CA file changed: cas/client-ca.pem)",
		},
		{
			name: "unique id header",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.UniqueID = &model.UniqueID{Header: "X-Request-Id", Format: "%[rand]"}
			},
			wantReasons: []string{"router settings changed: httpHeaders.uniqueId"},
			wantChanges: []string{"reload | router settings changed | httpHeaders.uniqueId | off -> X-Request-Id %[rand]"},
			wantSummary: "plan: reload (1 reason: router settings changed: httpHeaders.uniqueId)",
		},
		{
			name: "forwarded header policy and header actions",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.ForwardedHeaderPolicy = "replace"
				d.Router.RequestHeaderActions = []model.HeaderAction{{Name: "X-Env", Value: "prod"}, {Name: "X-Secret", Delete: true}}
			},
			wantReasons: []string{"router settings changed: httpHeaders.forwardedHeaderPolicy", "router settings changed: httpHeaders.actions.request"},
			wantChanges: []string{
				`reload | router settings changed | httpHeaders.forwardedHeaderPolicy | "" -> replace`,
				"reload | router settings changed | httpHeaders.actions.request | [] -> [set X-Env, delete X-Secret]",
			},
			wantSummary: "plan: reload (2 reasons: router settings changed: httpHeaders.forwardedHeaderPolicy; router settings changed: httpHeaders.actions.request)",
		},
		{
			name: "compression",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.CompressionMIMETypes = []string{"text/html", "application/json"}
			},
			wantReasons: []string{"router settings changed: httpCompression.mimeTypes"},
			wantChanges: []string{"reload | router settings changed | httpCompression.mimeTypes | [] -> [text/html,application/json]"},
			wantSummary: "plan: reload (1 reason: router settings changed: httpCompression.mimeTypes)",
		},
		{
			name: "error pages",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.ErrorPagesDir = "/etc/haroute/error-pages"
				in.ErrorPages = map[int][]byte{503: []byte("HTTP/1.0 503 X\r\n\r\n")}
			},
			wantReasons: []string{"router settings changed: httpErrorCodePages", "file changed: errorpages/503.http"},
			wantChanges: []string{
				`reload | router settings changed | httpErrorCodePages | "" -> /etc/haroute/error-pages`,
				"reload | file changed | errorpages/503.http | content",
			},
			wantSummary: "plan: reload (2 reasons: router settings changed: httpErrorCodePages; file changed: errorpages/503.http)",
		},
		{
			name: "http2",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.HTTP2 = true
			},
			// The fixture's routes with their own certificates now offer
			// h2: their crt-list lines change with the reload.
			wantReasons: []string{"router settings changed: http2"},
			wantChanges: []string{"reload | router settings changed | http2 | false -> true", "runtime | crt-list changed | crt-list | +1 -1 lines"},
			wantSummary: "plan: reload (1 reason: router settings changed: http2)",
		},
		{
			name: "reload interval only concerns the daemon",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.ReloadInterval = 10 * time.Second
			},
			wantChanges: []string{"daemon | router settings changed | reloadInterval | 5s -> 10s"},
			wantSummary: "plan: no HAProxy changes",
		},
		{
			name: "a new domain moves the hosts generated in it, in the maps",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.Domain = "apps.example.com"
				routeByName(t, d, "hello").Host = "hello-default.apps.example.com"
			},
			wantChanges: []string{
				`daemon | router settings changed | domain | "" -> apps.example.com`,
				"runtime | host/path changed | default/hello | hello.example.com -> hello-default.apps.example.com",
				"runtime | map changed | maps/http.map | +1 -1 entries",
				"runtime | map changed | maps/http_host.map | +1 -1 entries",
			},
			wantCommands: []string{
				"add map /var/lib/haroute/bundle/maps/http.map hello-default.apps.example.com/ be_http:default:hello",
				"del map /var/lib/haroute/bundle/maps/http.map hello.example.com/",
				"add map /var/lib/haroute/bundle/maps/http_host.map hello-default.apps.example.com be_http:default:hello",
				"del map /var/lib/haroute/bundle/maps/http_host.map hello.example.com",
			},
			wantSummary: "plan: runtime (2 operations, no reload)",
		},
		{
			name: "DCM turned off reloads a runtime change",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.DynamicConfigManager = false
				routeByName(t, d, "ab").Services[0].Servers[0].Weight = 50
			},
			wantReasons: []string{"dynamic config manager disabled", "weight changed: default/ab"},
			wantChanges: []string{
				"reload | dynamic config manager disabled",
				"daemon | router settings changed | dynamicConfigManager | true -> false",
				"reload | weight changed | default/ab | ck_127.0.0.1_18083 100 -> 50",
			},
			wantSummary: "plan: reload (2 reasons: dynamic config manager disabled; weight changed: default/ab)",
		},
		{
			name: "DCM off: an endpoint change reloads",
			applied: func(t *testing.T, d *model.Desired) {
				d.Router.DynamicConfigManager = false
			},
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.DynamicConfigManager = false
				r := routeByName(t, d, "ab")
				r.Services[1].Servers = r.Services[1].Servers[:1]
			},
			wantReasons: []string{"dynamic config manager disabled", "endpoint removed: default/ab"},
			wantChanges: []string{
				"reload | dynamic config manager disabled",
				"reload | endpoint removed | default/ab | ck_127.0.0.1_18089",
			},
			wantSummary: "plan: reload (2 reasons: dynamic config manager disabled; endpoint removed: default/ab)",
		},
		{
			name: "DCM off without changes",
			applied: func(t *testing.T, d *model.Desired) {
				d.Router.DynamicConfigManager = false
			},
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				d.Router.DynamicConfigManager = false
			},
			wantSummary: "plan: no changes",
		},
		{
			// The existing server was rendered without `check`, which 2.6
			// cannot add at runtime: its checked twin (ck_) is added with
			// the new endpoint and the unchecked one drains, so the
			// running servers equal the rendered ones with no reload.
			name: "one to two endpoints trades the server for its checked twin",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "hello")
				r.Services[0].Servers = append(r.Services[0].Servers, srv("127.0.0.1", 18082, 256))
				r.NameServers()
			},
			wantCommands: []string{
				"add server be_http:default:hello/ck_127.0.0.1_18081 127.0.0.1:18081 weight 256 check inter 5s",
				"enable health be_http:default:hello/ck_127.0.0.1_18081",
				"enable server be_http:default:hello/ck_127.0.0.1_18081",
				"add server be_http:default:hello/ck_127.0.0.1_18082 127.0.0.1:18082 weight 256 check inter 5s",
				"enable health be_http:default:hello/ck_127.0.0.1_18082",
				"enable server be_http:default:hello/ck_127.0.0.1_18082",
				"set dynamic-cookie-key backend be_http:default:hello " + render.DynamicCookieKey(beHello),
				"enable dynamic-cookie backend be_http:default:hello",
				"set server be_http:default:hello/ep_127.0.0.1_18081 state maint",
			},
			wantChanges: []string{
				"runtime | endpoint added | default/hello | ck_127.0.0.1_18081",
				"runtime | endpoint added | default/hello | ck_127.0.0.1_18082",
				"runtime | endpoint removed | default/hello | ep_127.0.0.1_18081",
			},
			wantSummary: "plan: runtime (4 operations, no reload)",
		},
		{
			name: "two to one endpoint trades the server for its unchecked twin",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "pair")
				r.Services[0].Servers = r.Services[0].Servers[:1]
				r.NameServers()
			},
			wantCommands: []string{
				"add server be_http:default:pair/ep_127.0.0.1_18090 127.0.0.1:18090 weight 256",
				"enable server be_http:default:pair/ep_127.0.0.1_18090",
				"set dynamic-cookie-key backend be_http:default:pair " + render.DynamicCookieKey(bePair),
				"enable dynamic-cookie backend be_http:default:pair",
				"set server be_http:default:pair/ck_127.0.0.1_18090 state maint",
				"set server be_http:default:pair/ck_127.0.0.1_18091 state maint",
			},
			wantChanges: []string{
				"runtime | endpoint added | default/pair | ep_127.0.0.1_18090",
				"runtime | endpoint removed | default/pair | ck_127.0.0.1_18090",
				"runtime | endpoint removed | default/pair | ck_127.0.0.1_18091",
			},
			wantSummary: "plan: runtime (4 operations, no reload)",
		},
		{
			name: "weight zero leaves one active endpoint: unchecked twins",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "pair")
				r.Services[0].Servers[1].Weight = 0
				r.NameServers()
			},
			wantCommands: []string{
				"add server be_http:default:pair/ep_127.0.0.1_18090 127.0.0.1:18090 weight 256",
				"enable server be_http:default:pair/ep_127.0.0.1_18090",
				"add server be_http:default:pair/ep_127.0.0.1_18091 127.0.0.1:18091 weight 0",
				"enable server be_http:default:pair/ep_127.0.0.1_18091",
				"set dynamic-cookie-key backend be_http:default:pair " + render.DynamicCookieKey(bePair),
				"enable dynamic-cookie backend be_http:default:pair",
				"set server be_http:default:pair/ck_127.0.0.1_18090 state maint",
				"set server be_http:default:pair/ck_127.0.0.1_18091 state maint",
			},
			wantChanges: []string{
				"runtime | endpoint added | default/pair | ep_127.0.0.1_18090",
				"runtime | endpoint added | default/pair | ep_127.0.0.1_18091",
				"runtime | endpoint removed | default/pair | ck_127.0.0.1_18090",
				"runtime | endpoint removed | default/pair | ck_127.0.0.1_18091",
			},
			wantSummary: "plan: runtime (5 operations, no reload)",
		},
		{
			name: "endpoint back while pending deletion is re-enabled",
			applied: func(t *testing.T, d *model.Desired) {
				r := routeByName(t, d, "ab")
				r.Services[1].Servers = r.Services[1].Servers[:1]
			},
			pending: map[model.BackendName]map[model.ServerName]string{beAB: {"ck_127.0.0.1_18089": "weight 0 check inter 5s"}},
			change:  func(t *testing.T, d *model.Desired, in *render.Input) {},
			wantCommands: []string{
				"set server " + beAB + "/ck_127.0.0.1_18089 weight 50",
				"enable health " + beAB + "/ck_127.0.0.1_18089",
				"set server " + beAB + "/ck_127.0.0.1_18089 state ready",
			},
			wantChanges: []string{"runtime | endpoint re-enabled | default/ab | ck_127.0.0.1_18089"},
			wantSummary: "plan: runtime (1 operation, no reload)",
		},
		{
			// It drained speaking HTTP/2 in clear (appProtocol h2c) and
			// comes back without: the server that drains keeps its
			// options, so re-enabling it would serve unlike the file.
			name: "endpoint back while pending deletion, with other options, reloads",
			applied: func(t *testing.T, d *model.Desired) {
				r := routeByName(t, d, "ab")
				r.Services[1].Servers = r.Services[1].Servers[:1]
			},
			pending:     map[model.BackendName]map[model.ServerName]string{beAB: {"ck_127.0.0.1_18089": "weight 0 check inter 5s proto h2"}},
			change:      func(t *testing.T, d *model.Desired, in *render.Input) {},
			wantReasons: []string{"server options changed: default/ab"},
			wantChanges: []string{"reload | server options changed | default/ab | ck_127.0.0.1_18089 (back while it drains, with other options)"},
			wantSummary: "plan: reload (1 reason: server options changed: default/ab)",
		},
		{
			name: "termination changed",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "secure").Termination = model.TerminationReencrypt
			},
			wantReasons: []string{"termination changed: default/secure"},
			wantChanges: []string{"reload | termination changed | default/secure | edge -> reencrypt"},
			wantSummary: "plan: reload (1 reason: termination changed: default/secure)",
		},
		{
			name: "destination CA changed",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "reen").TLS.DestinationCACertificate = "-----BEGIN CERTIFICATE-----\nTkVXQ0E=\n-----END CERTIFICATE-----"
			},
			wantReasons: []string{"CA file changed: cas/default_reen.pem"},
			wantChanges: []string{"reload | CA file changed | cas/default_reen.pem | content"},
			wantSummary: "plan: reload (1 reason: CA file changed: cas/default_reen.pem)",
		},
		{
			name: "route gains its own certificate",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "reen")
				r.TLS.Certificate, r.TLS.Key = testRouteCert, testRouteKey
			},
			// Loaded, then served by a line of the crt-list, at runtime.
			wantChanges: []string{
				"runtime | crt-list changed | crt-list | +1 -0 lines",
				"runtime | certificate file changed | certs/default_reen.pem | added",
			},
			wantCommands: []string{
				"new ssl cert /var/lib/haroute/bundle/certs/default_reen.pem",
				"set ssl cert /var/lib/haroute/bundle/certs/default_reen.pem <<\n" + certPayload([]byte(testRouteCert+"\n"+testRouteKey+"\n")),
				"commit ssl cert /var/lib/haroute/bundle/certs/default_reen.pem",
				"add ssl crt-list /var/lib/haroute/bundle/crt-list <<\n/var/lib/haroute/bundle/certs/default_reen.pem reen.example.com\n",
			},
			wantSummary: "plan: runtime (2 operations, no reload)",
		},
		{
			name: "route loses its own certificate",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "secure").TLS = model.RouteTLS{}
			},
			// Its line goes, then the file: nothing uses it any more.
			wantChanges: []string{
				"runtime | crt-list changed | crt-list | +0 -1 lines",
				"runtime | certificate file changed | certs/default_secure.pem | removed",
			},
			wantCommands: []string{
				"del ssl crt-list /var/lib/haroute/bundle/crt-list /var/lib/haroute/bundle/certs/default_secure.pem",
				"del ssl cert /var/lib/haroute/bundle/certs/default_secure.pem",
			},
			wantSummary: "plan: runtime (2 operations, no reload)",
		},
		{
			name: "a route with its own certificate moves host",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				routeByName(t, d, "secure").Host = "moved.example.com"
			},
			// The line is replaced before the maps send the new host to the
			// route, the new one added before the old one goes (the old
			// host is never without its certificate); the certificate
			// stays loaded.
			wantChanges: []string{
				"runtime | host/path changed | default/secure | secure.example.com -> moved.example.com",
				"runtime | crt-list changed | crt-list | +1 -1 lines",
				"runtime | map changed | maps/http.map | +1 -1 entries",
				"runtime | map changed | maps/http_host.map | +1 -1 entries",
				"runtime | map changed | maps/https.map | +1 -1 entries",
				"runtime | map changed | maps/https_host.map | +1 -1 entries",
			},
			wantCommands: append([]string{
				"add ssl crt-list /var/lib/haroute/bundle/crt-list <<\n/var/lib/haroute/bundle/certs/default_secure.pem moved.example.com\n",
				"show ssl crt-list -n /var/lib/haroute/bundle/crt-list",
				"del ssl crt-list /var/lib/haroute/bundle/crt-list /var/lib/haroute/bundle/certs/default_secure.pem:1",
			}, secureMovedMaps...),
			wantSummary: "plan: runtime (5 operations, no reload)",
		},
		{
			name: "a route with its own certificate moves host with a new certificate",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "secure")
				r.Host = "moved.example.com"
				r.TLS.Certificate = "-----BEGIN CERTIFICATE-----\nTU9WRUQ=\n-----END CERTIFICATE-----"
			},
			// No line may name content that is not its own: the content
			// is staged, the old line goes, the content is committed, the
			// new line comes. Replaced in place, the new host was served
			// the old host's certificate until the commit.
			wantChanges: []string{
				"runtime | host/path changed | default/secure | secure.example.com -> moved.example.com",
				"runtime | crt-list changed | crt-list | +1 -1 lines",
				"runtime | map changed | maps/http.map | +1 -1 entries",
				"runtime | map changed | maps/http_host.map | +1 -1 entries",
				"runtime | map changed | maps/https.map | +1 -1 entries",
				"runtime | map changed | maps/https_host.map | +1 -1 entries",
				"runtime | certificate changed | certs/default_secure.pem",
			},
			wantCommands: append([]string{
				"set ssl cert " + certPath + " <<\n-----BEGIN CERTIFICATE-----\nTU9WRUQ=\n-----END CERTIFICATE-----\n" + testRouteKey + "\n",
				"del ssl crt-list /var/lib/haroute/bundle/crt-list " + certPath,
				"commit ssl cert " + certPath,
				"add ssl crt-list /var/lib/haroute/bundle/crt-list <<\n" + certPath + " moved.example.com\n",
			}, secureMovedMaps...),
			wantSummary: "plan: runtime (5 operations, no reload)",
		},
		{
			name: "a host moves between two routes with their own certificates",
			applied: func(t *testing.T, d *model.Desired) {
				r := routeByName(t, d, "reen")
				r.TLS.Certificate, r.TLS.Key = testRouteCert, testRouteKey
			},
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				reen, secure := routeByName(t, d, "reen"), routeByName(t, d, "secure")
				reen.TLS.Certificate, reen.TLS.Key = "-----BEGIN CERTIFICATE-----\nT1RIRVI=\n-----END CERTIFICATE-----", testRouteKey
				reen.Host = "other.example.com"
				secure.Host = "reen.example.com"
				secure.TLS.Certificate = "-----BEGIN CERTIFICATE-----\nUkVFTg==\n-----END CERTIFICATE-----"
			},
			// secure takes reen.example.com over: its line is in place,
			// with its own content, before reen's line for that name
			// goes. The name is served by a line whose file holds a
			// certificate meant for it at every moment.
			wantCommands: []string{
				"set ssl cert " + certPath + " <<\n-----BEGIN CERTIFICATE-----\nUkVFTg==\n-----END CERTIFICATE-----\n" + testRouteKey + "\n",
				"del ssl crt-list /var/lib/haroute/bundle/crt-list " + certPath,
				"commit ssl cert " + certPath,
				"add ssl crt-list /var/lib/haroute/bundle/crt-list <<\n" + certPath + " reen.example.com\n",
				"set ssl cert /var/lib/haroute/bundle/certs/default_reen.pem <<\n-----BEGIN CERTIFICATE-----\nT1RIRVI=\n-----END CERTIFICATE-----\n" + testRouteKey + "\n",
				"del ssl crt-list /var/lib/haroute/bundle/crt-list /var/lib/haroute/bundle/certs/default_reen.pem",
				"commit ssl cert /var/lib/haroute/bundle/certs/default_reen.pem",
				"add ssl crt-list /var/lib/haroute/bundle/crt-list <<\n/var/lib/haroute/bundle/certs/default_reen.pem other.example.com\n",
				"add map /var/lib/haroute/bundle/maps/http.map reen.example.com/ be_edge_http:default:secure",
				"del map /var/lib/haroute/bundle/maps/http.map secure.example.com/",
				"add map /var/lib/haroute/bundle/maps/http_host.map reen.example.com be_edge_http:default:secure",
				"del map /var/lib/haroute/bundle/maps/http_host.map secure.example.com",
				"set map /var/lib/haroute/bundle/maps/https.map reen.example.com/ be_edge_http:default:secure",
				"add map /var/lib/haroute/bundle/maps/https.map other.example.com/ be_secure:default:reen",
				"del map /var/lib/haroute/bundle/maps/https.map secure.example.com/",
				"set map /var/lib/haroute/bundle/maps/https_host.map reen.example.com be_edge_http:default:secure",
				"add map /var/lib/haroute/bundle/maps/https_host.map other.example.com be_secure:default:reen",
				"del map /var/lib/haroute/bundle/maps/https_host.map secure.example.com",
			},
			wantChanges: []string{
				"runtime | host/path changed | default/reen | reen.example.com -> other.example.com",
				"runtime | host/path changed | default/secure | secure.example.com -> reen.example.com",
				"runtime | crt-list changed | crt-list | +2 -2 lines",
				"runtime | map changed | maps/http.map | +1 -1 entries",
				"runtime | map changed | maps/http_host.map | +1 -1 entries",
				"runtime | map changed | maps/https.map | +2 -2 entries",
				"runtime | map changed | maps/https_host.map | +2 -2 entries",
				"runtime | certificate changed | certs/default_reen.pem",
				"runtime | certificate changed | certs/default_secure.pem",
			},
			wantSummary: "plan: runtime (6 operations, no reload)",
		},
		{
			name: "a second certificate for a name already in the crt-list",
			change: func(t *testing.T, d *model.Desired, in *render.Input) {
				r := routeByName(t, d, "reen")
				r.Host = "secure.example.com"
				r.Path = "/api"
				r.TLS.Certificate, r.TLS.Key = testRouteCert, testRouteKey
			},
			// Which line HAProxy finds first would depend on the order of
			// lines, which runtime and the file do not share: a reload.
			wantReasons: []string{"crt-list changed: crt-list", "certificate file changed: certs/default_reen.pem"},
			wantChanges: []string{
				"runtime | host/path changed | default/reen | reen.example.com -> secure.example.com/api",
				`reload | crt-list changed | crt-list | /var/lib/haroute/bundle/certs/default_reen.pem: SNI "secure.example.com" is not unique in the list`,
				"runtime | map changed | maps/https.map | +2 -1 entries",
				"runtime | map changed | maps/https_host.map | +0 -2 entries",
				"reload | certificate file changed | certs/default_reen.pem | added",
			},
			wantSummary: "plan: reload (2 reasons: crt-list changed: crt-list; certificate file changed: certs/default_reen.pem)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := baseDesired()
			if tt.applied != nil {
				tt.applied(t, old)
			}
			applied := stateOf(t, testInput(old))
			applied.PendingDeletes = tt.pending

			cur := baseDesired()
			in := testInput(cur)
			tt.change(t, cur, &in)
			p := Compute(applied, stateOf(t, in))

			if got := reasonStrings(p); !slices.Equal(got, tt.wantReasons) {
				t.Errorf("reasons:\n got %q\nwant %q", got, tt.wantReasons)
			}
			if p.Reload != (len(tt.wantReasons) > 0) {
				t.Errorf("Reload = %v with reasons %q", p.Reload, reasonStrings(p))
			}
			if got := commands(p); !slices.Equal(got, tt.wantCommands) {
				t.Errorf("commands:\n got %q\nwant %q", got, tt.wantCommands)
			}
			if got := changeLines(p); !slices.Equal(got, tt.wantChanges) {
				t.Errorf("changes:\n got %q\nwant %q", got, tt.wantChanges)
			}
			if got := p.Summary(); got != tt.wantSummary {
				t.Errorf("summary:\n got %q\nwant %q", got, tt.wantSummary)
			}
		})
	}
}

func TestComputeInitial(t *testing.T) {
	p := Compute(State{}, stateOf(t, testInput(baseDesired())))
	if !p.Reload || len(p.Ops) != 0 {
		t.Fatalf("Reload = %v, %d ops; want a reload without ops", p.Reload, len(p.Ops))
	}
	if got, want := reasonStrings(p), []string{"initial configuration"}; !slices.Equal(got, want) {
		t.Errorf("reasons = %q, want %q", got, want)
	}
}

// TestCookieKeyMatchesConfig checks that the key a runtime add sends is the
// one the rendered config holds for that backend: only then does a server
// added at runtime get the cookie a reload would give it.
func TestCookieKeyMatchesConfig(t *testing.T) {
	// Two endpoints before, three after: checks run on both sides.
	old, cur := baseDesired(), baseDesired()
	for _, d := range []*model.Desired{old, cur} {
		r := routeByName(t, d, "secure")
		r.Services[0].Servers = append(r.Services[0].Servers, srv("127.0.0.1", 18095, 256))
	}
	applied := stateOf(t, testInput(old))
	r := routeByName(t, cur, "secure")
	r.Services[0].Servers = append(r.Services[0].Servers, srv("127.0.0.1", 18093, 256))
	desired := stateOf(t, testInput(cur))
	p := Compute(applied, desired)

	var got []SetDynamicCookieKey
	for _, op := range p.Ops {
		if o, ok := op.(SetDynamicCookieKey); ok {
			got = append(got, o)
		}
	}
	if len(got) != 1 {
		t.Fatalf("got %d SetDynamicCookieKey ops, want 1: %v", len(got), p.Ops)
	}
	want := configCookieKey(t, desired.Bundle.Skeleton, got[0].Backend)
	if got[0].Backend != "be_edge_http:default:secure" || got[0].Key != want {
		t.Errorf("op = %+v, want backend be_edge_http:default:secure key %q (from haproxy.cfg)", got[0], want)
	}
}

// configCookieKey reads "dynamic-cookie-key" from a backend's section.
func configCookieKey(t *testing.T, cfg []byte, be model.BackendName) string {
	t.Helper()
	for _, s := range sections(cfg) {
		if s.header != "backend "+string(be) {
			continue
		}
		for line := range strings.Lines(string(s.body)) {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "dynamic-cookie-key" {
				return f[1]
			}
		}
	}
	t.Fatalf("no dynamic-cookie-key for %s in the config", be)
	return ""
}

// A passthrough backend has no cookies: adding a server sends no key.
func TestNoCookieKeyForPassthrough(t *testing.T) {
	applied := stateOf(t, testInput(baseDesired()))
	cur := baseDesired()
	r := routeByName(t, cur, "tcp")
	r.Services[0].Servers = append(r.Services[0].Servers, srv("fd00::1", 18094, 0))
	p := Compute(applied, stateOf(t, testInput(cur)))
	// One active endpoint stays one: the new server is unchecked, no
	// health command, no cookie key.
	want := []string{
		fmt.Sprintf("add server be_tcp:default:tcp/ep_fd00--1_18094 [fd00::1]:18094 weight 0 id %d", render.ServerID("ep_fd00--1_18094")),
		"enable server be_tcp:default:tcp/ep_fd00--1_18094",
	}
	if got := commands(p); !slices.Equal(got, want) {
		t.Errorf("commands:\n got %q\nwant %q", got, want)
	}
}

// An unexplained skeleton change still reloads, naming the section.
func TestComputeUnexplainedSkeleton(t *testing.T) {
	applied := stateOf(t, testInput(baseDesired()))
	desired := stateOf(t, testInput(baseDesired()))
	b := *desired.Bundle
	b.Skeleton = []byte(strings.Replace(string(b.Skeleton), "retries 3", "retries 4", 1))
	desired.Bundle = &b
	p := Compute(applied, desired)
	if got, want := reasonStrings(p), []string{"haproxy.cfg changed: defaults base"}; !slices.Equal(got, want) {
		t.Errorf("reasons = %q, want %q", got, want)
	}
}

func TestFormat(t *testing.T) {
	p := Plan{
		Reload: true,
		Changes: []Change{
			{Mode: ModeRuntime, Kind: KindEndpointAdded, Subject: "default/hello", Detail: "ep_127.0.0.1_18082"},
			{Mode: ModeRuntime, Kind: KindWeight, Subject: "default/ab", Detail: "ck_127.0.0.1_18084 100 -> 50"},
			{Mode: ModeReload, Kind: KindRouteAdded, Subject: "default/new"},
		},
		Reasons: []Reason{{Kind: KindRouteAdded, Subject: "default/new"}},
	}
	var b strings.Builder
	p.Format(&b)
	want := "" +
		"runtime  endpoint added  default/hello  ep_127.0.0.1_18082\n" +
		"runtime  weight changed  default/ab     ck_127.0.0.1_18084 100 -> 50\n" +
		"reload   route added     default/new\n" +
		"plan: reload (1 reason: route added: default/new)\n"
	if b.String() != want {
		t.Errorf("Format:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSummaryCapsReasons(t *testing.T) {
	var p Plan
	p.Reload = true
	for i := range 7 {
		p.Reasons = append(p.Reasons, Reason{Kind: KindRouteAdded, Subject: "default/r" + string(rune('a'+i))})
	}
	want := "plan: reload (7 reasons: route added: default/ra; route added: default/rb; route added: default/rc; " +
		"route added: default/rd; route added: default/re; and 2 more)"
	if got := p.Summary(); got != want {
		t.Errorf("Summary() =\n%q\nwant\n%q", got, want)
	}
}

// Routes out of order (Desired promises sorted ones) still pair up by key.
func TestComputeUnsortedRoutes(t *testing.T) {
	applied := stateOf(t, testInput(baseDesired()))
	cur := baseDesired()
	routeByName(t, cur, "ab").Services[0].Servers[0].Weight = 50
	desired := stateOf(t, testInput(cur))
	slices.Reverse(cur.Routes)
	p := Compute(applied, desired)
	want := []string{"set server " + beAB + "/ck_127.0.0.1_18083 weight 50"}
	if got := commands(p); p.Reload || !slices.Equal(got, want) {
		t.Errorf("reload %v (%q), commands %q; want %q", p.Reload, reasonStrings(p), got, want)
	}
}

// isRouteBackend finds a route's own backend by its key and a spare by
// the routes bound to it, and nothing else: not the backend a route would
// have with another termination, not a free spare, not a route's own name
// once it is bound to a spare.
func TestIsRouteBackend(t *testing.T) {
	own := httpRoute("a", "a.example.com")
	bound := httpRoute("b", "b.example.com")
	bound.Slot = "be_pool:http:3"
	// Parsed as a key, a spare's name names this route: a lookup by key
	// must still compare the whole name.
	lookalike := httpRoute("3", "3.example.com")
	lookalike.Key.Namespace = "http"
	routes := []*model.AdmittedRoute{&lookalike, &own, &bound}
	d := &differ{desiredRoutes: sortedRoutes(routes)}
	for be, want := range map[model.BackendName]bool{
		own.BackendName():        true,
		"be_edge_http:default:a": false,
		"be_pool:http:3":         true,
		"be_pool:http:4":         false,
		"be_http:default:b":      false,
		"be_http:http:3":         true,
		"be_http:http":           false,
		"be_http":                false,
		"":                       false,
	} {
		if got := d.isRouteBackend(be); got != want {
			t.Errorf("isRouteBackend(%q) = %v, want %v", be, got, want)
		}
	}
}

// secureMovedMaps are the map commands that move route secure from
// secure.example.com to moved.example.com.
var secureMovedMaps = []string{
	"add map /var/lib/haroute/bundle/maps/http.map moved.example.com/ be_edge_http:default:secure",
	"del map /var/lib/haroute/bundle/maps/http.map secure.example.com/",
	"add map /var/lib/haroute/bundle/maps/http_host.map moved.example.com be_edge_http:default:secure",
	"del map /var/lib/haroute/bundle/maps/http_host.map secure.example.com",
	"add map /var/lib/haroute/bundle/maps/https.map moved.example.com/ be_edge_http:default:secure",
	"del map /var/lib/haroute/bundle/maps/https.map secure.example.com/",
	"add map /var/lib/haroute/bundle/maps/https_host.map moved.example.com be_edge_http:default:secure",
	"del map /var/lib/haroute/bundle/maps/https_host.map secure.example.com",
}
