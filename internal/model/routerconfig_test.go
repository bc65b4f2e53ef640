package model

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// rcFields are the RouterConfig fields testRouterConfig positions: the n-th
// is on line 10+n of rc.yaml.
var rcFields = []string{
	"spec.bindOptions.address",                        // 10
	"spec.bindOptions.ports.http",                     // 11
	"spec.bindOptions.ports.https",                    // 12
	"spec.bindOptions.ports.stats",                    // 13
	"spec.tuningOptions.reloadInterval",               // 14
	"spec.tuningOptions.healthCheckInterval",          // 15
	"spec.tuningOptions.maxConnections",               // 16
	"spec.tuningOptions.threadCount",                  // 17
	"spec.tuningOptions.clientTimeout",                // 18
	"spec.tuningOptions.hardStopAfter",                // 19
	"spec.defaultCertificate",                         // 20
	"spec.defaultDestinationCA",                       // 21
	"spec.routeSelector.matchExpressions[0].operator", // 22
	"spec.routeSelector.matchExpressions[0].values",   // 23
	"spec.routeSelector.matchLabels.shard",            // 24
	"spec.namespaces[1]",                              // 25
	"spec.tuningOptions.tunnelTimeout",                // 26
	"spec.domain",                                     // 27
	"spec.stats.credentialsFile",                      // 28
}

func TestRouterConfigSettings(t *testing.T) {
	pair := genPair(t, "ecdsa", "ec", "default.example.com")
	ca := genPair(t, "rsa", "pkcs8", "ca.example.com")
	other := genPair(t, "ecdsa", "pkcs8", "other.example.com")

	tests := []struct {
		name  string
		spec  RouterConfigSpec
		check func(s Settings) Settings // returns the expected settings given defaults
		diags []string
	}{
		{
			name:  "empty spec gives the defaults",
			check: func(s Settings) Settings { return s },
		},
		{
			name: "ports, address and tuning",
			spec: RouterConfigSpec{
				BindOptions: BindOptions{Address: "127.0.0.1", Ports: BindPorts{HTTP: ptr(8080), HTTPS: ptr(8443), Stats: ptr(9000)}},
				TuningOptions: TuningOptions{
					ReloadInterval: "1m30s", HealthCheckInterval: "10s", MaxConnections: ptr(2000), ThreadCount: ptr(4),
					ClientTimeout: "1m", TunnelTimeout: "2h", HardStopAfter: "30m",
				},
				DynamicConfigManager: ptr(false),
				AllowWildcardRoutes:  true,
				Namespaces:           []string{"a", "b"},
			},
			check: func(s Settings) Settings {
				s.BindAddress = "127.0.0.1"
				s.HTTPPort, s.HTTPSPort, s.StatsPort = 8080, 8443, 9000
				s.ReloadInterval = 90 * time.Second
				s.HealthCheckInterval = 10 * time.Second
				s.MaxConnections, s.ThreadCount = 2000, 4
				s.ClientTimeout, s.TunnelTimeout, s.HardStopAfter = time.Minute, 2*time.Hour, 30*time.Minute
				s.DynamicConfigManager = false
				s.AllowWildcardRoutes = true
				s.Namespaces = []string{"a", "b"}
				return s
			},
		},
		{
			name:  "reloadInterval 0 means the default",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{ReloadInterval: "0", HealthCheckInterval: "0s", ThreadCount: ptr(0)}},
			check: func(s Settings) Settings { return s },
		},
		{
			name:  "reloadInterval clamped low",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{ReloadInterval: "0.5s"}},
			check: func(s Settings) Settings { s.ReloadInterval = time.Second; return s },
			diags: []string{`rc.yaml:14:7: warning: spec.tuningOptions.reloadInterval: reloadInterval "0.5s" is below 1s; using 1s`},
		},
		{
			name:  "reloadInterval clamped high",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{ReloadInterval: "3m"}},
			check: func(s Settings) Settings { s.ReloadInterval = 120 * time.Second; return s },
			diags: []string{`rc.yaml:14:7: warning: spec.tuningOptions.reloadInterval: reloadInterval "3m" is above 120s; using 120s`},
		},
		{
			name:  "reloadInterval pattern",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{ReloadInterval: "500ms"}},
			diags: []string{`rc.yaml:14:7: error: spec.tuningOptions.reloadInterval: reloadInterval "500ms" does not match ^(0|([0-9]+(\.[0-9]+)?(s|m))+)$ (e.g. 5s, 1m, 1.5m)`},
		},
		{
			name:  "reloadInterval without unit",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{ReloadInterval: "5"}},
			diags: []string{`rc.yaml:14:7: error: spec.tuningOptions.reloadInterval: reloadInterval "5" does not match ^(0|([0-9]+(\.[0-9]+)?(s|m))+)$ (e.g. 5s, 1m, 1.5m)`},
		},
		{
			name:  "healthCheckInterval invalid",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{HealthCheckInterval: "often"}},
			diags: []string{`rc.yaml:15:7: error: spec.tuningOptions.healthCheckInterval: healthCheckInterval "often" is not a duration (e.g. 5s, 500ms, 1m30s)`},
		},
		{
			name:  "healthCheckInterval negative",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{HealthCheckInterval: "-5s"}},
			diags: []string{`rc.yaml:15:7: error: spec.tuningOptions.healthCheckInterval: healthCheckInterval "-5s" must not be negative`},
		},
		{
			name:  "healthCheckInterval clamped to 1s",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{HealthCheckInterval: "100ms"}},
			check: func(s Settings) Settings { s.HealthCheckInterval = time.Second; return s },
			diags: []string{`rc.yaml:15:7: warning: spec.tuningOptions.healthCheckInterval: healthCheckInterval "100ms" is below 1s; using 1s`},
		},
		{
			name:  "healthCheckInterval clamped high",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{HealthCheckInterval: "1000h"}},
			check: func(s Settings) Settings { s.HealthCheckInterval = 2147483647 * time.Millisecond; return s },
			diags: []string{`rc.yaml:15:7: warning: spec.tuningOptions.healthCheckInterval: healthCheckInterval "1000h" is above HAProxy's maximum of 2147483647ms; using 2147483647ms`},
		},
		{
			name:  "healthCheckInterval below 5s warns",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{HealthCheckInterval: "2s"}},
			check: func(s Settings) Settings { s.HealthCheckInterval = 2 * time.Second; return s },
			diags: []string{`rc.yaml:15:7: warning: spec.tuningOptions.healthCheckInterval: healthCheckInterval "2s" is below 5s: checks from every worker to every server can look like a SYN flood to backends`},
		},
		{
			name:  "port 0",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTPS: ptr(0)}}},
			diags: []string{`rc.yaml:12:7: error: spec.bindOptions.ports.https: port 0 is not allowed: omit the field for the default 443`},
		},
		{
			name:  "port out of range",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{Stats: ptr(70000)}}},
			diags: []string{`rc.yaml:13:7: error: spec.bindOptions.ports.stats: port 70000 is out of range 1-65535`},
		},
		{
			name:  "negative port",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTP: ptr(-1)}}},
			diags: []string{`rc.yaml:11:7: error: spec.bindOptions.ports.http: port -1 is out of range 1-65535`},
		},
		{
			name:  "port clash between explicit ports",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTP: ptr(8080), Stats: ptr(8080)}}},
			diags: []string{`rc.yaml:13:7: error: spec.bindOptions.ports.stats: port clash: http and stats are both port 8080`},
		},
		{
			name:  "port clash with a default is reported where it was written",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTP: ptr(443)}}},
			diags: []string{`rc.yaml:11:7: error: spec.bindOptions.ports.http: port clash: http and https are both port 443`},
		},
		{
			name:  "NodePort range warns",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTP: ptr(30080)}}},
			check: func(s Settings) Settings { s.HTTPPort = 30080; return s },
			diags: []string{`rc.yaml:11:7: warning: spec.bindOptions.ports.http: port 30080 is inside the Kubernetes NodePort range 30000-32767`},
		},
		{
			name:  "domain",
			spec:  RouterConfigSpec{Domain: "apps.example.com"},
			check: func(s Settings) Settings { s.Domain = "apps.example.com"; return s },
		},
		{
			name:  "domain not a DNS name",
			spec:  RouterConfigSpec{Domain: "*.apps.example.com"},
			diags: []string{`rc.yaml:27:7: error: spec.domain: domain "*.apps.example.com" is not a DNS name: label "*" is not 1-63 lowercase letters, digits and '-', starting and ending alphanumeric`},
		},
		{
			name:  "domain with a long label",
			spec:  RouterConfigSpec{Domain: strings.Repeat("x", 64) + ".example.com"},
			diags: []string{`rc.yaml:27:7: error: spec.domain: domain "` + strings.Repeat("x", 64) + `.example.com" is not a DNS name: label "` + strings.Repeat("x", 64) + `" is not 1-63 lowercase letters, digits and '-', starting and ending alphanumeric`},
		},
		{
			name:  "address",
			spec:  RouterConfigSpec{BindOptions: BindOptions{Address: "localhost"}},
			diags: []string{`rc.yaml:10:7: error: spec.bindOptions.address: address "localhost" is not an IP address`},
		},
		{
			name: "maxConnections, threadCount and timeouts",
			spec: RouterConfigSpec{TuningOptions: TuningOptions{
				MaxConnections: ptr(-2), ThreadCount: ptr(65), ClientTimeout: "30", HardStopAfter: "-1m", TunnelTimeout: "1000h",
			}},
			diags: []string{
				`rc.yaml:16:7: error: spec.tuningOptions.maxConnections: maxConnections -2 must be a positive integer, 0 (the default, 50000) or -1 (as many as the file-descriptor limit allows)`,
				`rc.yaml:17:7: error: spec.tuningOptions.threadCount: threadCount 65 is out of range 1-64 (0 or unset: HAProxy's default)`,
				`rc.yaml:18:7: error: spec.tuningOptions.clientTimeout: clientTimeout "30" is not a duration (e.g. 30s, 1m, 1h)`,
				`rc.yaml:19:7: error: spec.tuningOptions.hardStopAfter: hardStopAfter "-1m" must not be negative`,
				`rc.yaml:26:7: error: spec.tuningOptions.tunnelTimeout: tunnelTimeout "1000h" is above HAProxy's maximum of 2147483647ms`,
			},
		},
		{
			// Rendered, it was 1ms without a word.
			name:  "a timeout below HAProxy's resolution",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{ClientTimeout: "1ns"}},
			diags: []string{`rc.yaml:18:7: warning: spec.tuningOptions.clientTimeout: clientTimeout "1ns" is below HAProxy's resolution of 1ms; using 1ms`},
			check: func(s Settings) Settings { s.ClientTimeout = time.Millisecond; return s },
		},
		{
			name:  "maxConnections 0 is the default",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{MaxConnections: ptr(0)}},
			check: func(s Settings) Settings { return s },
		},
		{
			name: "maxConnections -1 is as many as the descriptors allow",
			spec: RouterConfigSpec{TuningOptions: TuningOptions{MaxConnections: ptr(-1)}},
			check: func(s Settings) Settings {
				s.MaxConnections, s.MaxConnectionsAuto = 2_000_000, true
				return s
			},
		},
		{
			name:  "maxConnections above OpenShift's bound",
			spec:  RouterConfigSpec{TuningOptions: TuningOptions{MaxConnections: ptr(2_000_001)}},
			diags: []string{`rc.yaml:16:7: error: spec.tuningOptions.maxConnections: maxConnections 2000001 is more than 2000000`},
		},
		{
			name: "inline default certificate and CA",
			spec: RouterConfigSpec{DefaultCertificate: pair.cert + pair.key, DefaultDestinationCA: ca.cert},
			check: func(s Settings) Settings {
				s.DefaultCertificate = pair.cert + pair.key
				s.DefaultDestinationCA = ca.cert
				return s
			},
		},
		{
			name: "file paths",
			spec: RouterConfigSpec{DefaultCertificate: "/etc/haroute/default.pem", DefaultDestinationCA: "/etc/ssl/ca.pem"},
			check: func(s Settings) Settings {
				s.DefaultCertificateFile = "/etc/haroute/default.pem"
				s.DefaultDestinationCAFile = "/etc/ssl/ca.pem"
				return s
			},
		},
		{
			name:  "stats credentials file",
			spec:  RouterConfigSpec{Stats: StatsOptions{CredentialsFile: "/etc/haroute/stats"}},
			check: func(s Settings) Settings { s.StatsCredentialsFile = "/etc/haroute/stats"; return s },
		},
		{
			name:  "relative stats credentials file",
			spec:  RouterConfigSpec{Stats: StatsOptions{CredentialsFile: "stats.txt"}},
			diags: []string{`rc.yaml:28:7: error: spec.stats.credentialsFile: credentialsFile "stats.txt" is not an absolute file path`},
		},
		{
			name: "relative path and broken PEM",
			spec: RouterConfigSpec{DefaultCertificate: "certs/default.pem", DefaultDestinationCA: "-----BEGIN CERTIFICATE-----\nnot base64\n"},
			diags: []string{
				`rc.yaml:20:7: error: spec.defaultCertificate: defaultCertificate "certs/default.pem" is neither inline PEM (-----BEGIN …) nor an absolute file path`,
				`rc.yaml:21:7: error: spec.defaultDestinationCA: defaultDestinationCA is not valid PEM: a block does not decode (damaged base64 or missing END line)`,
			},
		},
		{
			name:  "default certificate without key",
			spec:  RouterConfigSpec{DefaultCertificate: pair.cert},
			diags: []string{`rc.yaml:20:7: error: spec.defaultCertificate: defaultCertificate contains no private key: it needs the certificate chain and its key`},
		},
		{
			name:  "default certificate with the wrong key",
			spec:  RouterConfigSpec{DefaultCertificate: pair.cert + other.key},
			diags: []string{`rc.yaml:20:7: error: spec.defaultCertificate: defaultCertificate key does not match the certificate (subject "CN=default.example.com")`},
		},
		{
			name:  "NUL in path",
			spec:  RouterConfigSpec{DefaultCertificate: "/etc/a\x00b"},
			diags: []string{`rc.yaml:20:7: error: spec.defaultCertificate: defaultCertificate file path must not contain a NUL byte`},
		},
		{
			name: "selector and namespaces",
			spec: RouterConfigSpec{
				RouteSelector: &LabelSelector{
					MatchLabels:      map[string]string{"shard": "a b"},
					MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "Equals", Values: []string{"x"}}},
				},
				Namespaces: []string{"ok", "Not_OK"},
			},
			diags: []string{
				`rc.yaml:22:7: error: spec.routeSelector.matchExpressions[0].operator: operator "Equals" is not one of In, NotIn, Exists, DoesNotExist`,
				`rc.yaml:24:7: error: spec.routeSelector.matchLabels.shard: label value "a b" must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric`,
				`rc.yaml:25:7: error: spec.namespaces[1]: namespace "Not_OK" is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)`,
			},
		},
		{
			name: "selector operators and values",
			spec: RouterConfigSpec{RouteSelector: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "In"}}}},
			diags: []string{
				`rc.yaml:23:7: error: spec.routeSelector.matchExpressions[0].values: operator In needs at least one value`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := RouterConfig{Spec: tt.spec, Source: testSource("rc.yaml", rcFields...)}
			got, ds := settingsFrom(&rc)
			equalLines(t, ds, tt.diags)
			if tt.check == nil {
				if !ds.HasErrors(false) {
					t.Errorf("expected errors")
				}
				return
			}
			want := tt.check(DefaultSettings())
			if tt.spec.RouteSelector != nil {
				want.RouteSelector = tt.spec.RouteSelector
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("settings:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestTwoRouterConfigs(t *testing.T) {
	prev := DefaultSettings()
	prev.HTTPPort = 81
	a := RouterConfig{Spec: RouterConfigSpec{BindOptions: BindOptions{Ports: BindPorts{HTTP: ptr(8080)}}}, Source: testSource("a.yaml")}
	b := RouterConfig{Source: Source{Pos: Position{Path: "b.yaml", Line: 3, Col: 1}}}
	s, ds := resolveSettings([]RouterConfig{b, a}, &prev)
	equalLines(t, ds, []string{
		`b.yaml:3:1: error: kind: more than one RouterConfig (a.yaml:1:1 and b.yaml:3:1): at most one is allowed; the previous settings stay in force`,
	})
	if !reflect.DeepEqual(s, prev) {
		t.Errorf("settings = %+v, want prev", s)
	}
}

func TestLabelSelectorMatches(t *testing.T) {
	labels := map[string]string{"shard": "a", "tier": "web"}
	tests := []struct {
		sel  *LabelSelector
		want bool
	}{
		{nil, true},
		{&LabelSelector{}, true},
		{&LabelSelector{MatchLabels: map[string]string{"shard": "a"}}, true},
		{&LabelSelector{MatchLabels: map[string]string{"shard": "b"}}, false},
		{&LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "In", Values: []string{"db", "web"}}}}, true},
		{&LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "NotIn", Values: []string{"web"}}}}, false},
		{&LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "missing", Operator: "NotIn", Values: []string{"x"}}}}, true},
		{&LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "shard", Operator: "Exists"}}}, true},
		{&LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "shard", Operator: "DoesNotExist"}}}, false},
		{&LabelSelector{MatchLabels: map[string]string{"shard": "a"}, MatchExpressions: []LabelSelectorRequirement{{Key: "tier", Operator: "DoesNotExist"}}}, false},
	}
	for i, tt := range tests {
		if got := tt.sel.Matches(labels); got != tt.want {
			t.Errorf("%d: %+v.Matches = %v, want %v", i, tt.sel, got, tt.want)
		}
	}
}

func TestLabelKeyProblem(t *testing.T) {
	for key, want := range map[string]string{
		"app":                    "",
		"example.com/app":        "",
		"app.kubernetes.io/name": "",
		"Example.com/app":        `label key "Example.com/app": prefix must be a DNS-1123 subdomain`,
		"example.com/":           `label key "example.com/": name is empty`,
		"-app":                   `label key "-app": name must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric`,
		strings.Repeat("a", 64):  `label key "` + strings.Repeat("a", 64) + `": name must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric`,
	} {
		if got := labelKeyProblem(key); got != want {
			t.Errorf("labelKeyProblem(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestParseStatsCredentials(t *testing.T) {
	const secret = "s3cr#t$\"x\\y:z"
	tests := []struct {
		in      string
		want    StatsCredentials
		wantErr string
	}{
		{in: "admin:" + secret + "\n", want: StatsCredentials{User: "admin", Password: secret}},
		{in: "ops.team@x-1:pw\r\n", want: StatsCredentials{User: "ops.team@x-1", Password: "pw"}},
		{in: "admin:pw", want: StatsCredentials{User: "admin", Password: "pw"}},
		{in: "", wantErr: "no ':'; want user:password on one line"},
		{in: "adminpw\n", wantErr: "no ':'; want user:password on one line"},
		{in: ":" + secret, wantErr: "empty user; want user:password on one line"},
		{in: "admin:\n", wantErr: "empty password; want user:password on one line"},
		{in: "admin:pw\nroot:pw\n", wantErr: "more than one line; want user:password on one line"},
		{in: "ad min:" + secret, wantErr: "user may hold only letters, digits and . _ @ -"},
		{in: "admin:pass word", wantErr: "password may hold only printable ASCII characters other than space and '"},
		{in: "admin:it's", wantErr: "password may hold only printable ASCII characters other than space and '"},
		{in: "admin:p\u00e4ss", wantErr: "password may hold only printable ASCII characters other than space and '"},
	}
	for _, tt := range tests {
		got, err := ParseStatsCredentials([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseStatsCredentials(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || !got.Set() {
			t.Errorf("ParseStatsCredentials(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

// A RouterConfig whose file fails to decode (an unknown field) had its
// values' own errors reported only once that was fixed: one fix at a
// time. They are now reported together, without repeating a field that
// did not decode.
func TestBrokenRouterConfigReportsAllItsErrors(t *testing.T) {
	res := NewLoader().Load([]SourceFile{{Path: "router.yaml", Data: []byte(
		"apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: router}\nspec:\n  tuningOptions:\n" +
			"    reloadInterval: 2sec\n    maxConection: 5\n")}})
	var errs []string
	for _, d := range res.Diagnostics {
		if d.Severity == SeverityError {
			errs = append(errs, d.Pos.String()+" "+d.Field)
		}
	}
	if want := []string{"router.yaml:6:21 spec.tuningOptions.reloadInterval", "router.yaml:7:5 spec.tuningOptions.maxConection"}; !slices.Equal(errs, want) {
		t.Fatalf("errors at %q, want %q", errs, want)
	}
}
