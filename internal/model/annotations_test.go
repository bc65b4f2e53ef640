package model

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestAnnotations checks each annotation: the settings a valid value gives,
// and the exact warning (or, for an allowlist, error) an invalid one gives. Annotation n (sorted by key)
// is positioned on line 30+n of ns-r.yaml.
func TestAnnotations(t *testing.T) {
	const (
		hc  = AnnotationHealthCheckInterval
		bal = AnnotationBalance
	)
	def := func(mod func(b *BackendSettings)) BackendSettings {
		b := BackendSettings{Balance: DefaultBalance, HealthCheckInterval: 5 * time.Second}
		if mod != nil {
			mod(&b)
		}
		return b
	}
	tests := []struct {
		name     string
		term     Termination
		insecure InsecureEdgeTerminationPolicy
		ann      map[string]string
		want     BackendSettings
		diag     []string
	}{
		{name: "no annotations: roundrobin balance", want: BackendSettings{Balance: BalanceRoundRobin, HealthCheckInterval: 5 * time.Second}},
		{name: "passthrough defaults to source", term: TerminationPassthrough, ann: map[string]string{},
			want: BackendSettings{Balance: BalanceSource, HealthCheckInterval: 5 * time.Second}},
		{name: "health check interval as HAProxy time", ann: map[string]string{hc: "500ms"},
			want: def(func(b *BackendSettings) { b.HealthCheckInterval = 500 * time.Millisecond })},
		{name: "health check interval as Go duration is ignored, as OpenShift does", ann: map[string]string{hc: "1m30s"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/haproxy.health.check.interval: value "1m30s" is not an HAProxy time (digits with an optional unit us, ms, s, m, h, d); annotation ignored`,
		}},
		{name: "health check interval bare number is milliseconds", ann: map[string]string{hc: "2000"},
			want: def(func(b *BackendSettings) { b.HealthCheckInterval = 2 * time.Second })},
		{name: "health check interval invalid", ann: map[string]string{hc: "fast"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/haproxy.health.check.interval: value "fast" is not a time as OpenShift's router reads it: digits not starting with 0, with an optional unit us, ms, s, m, h, d; annotation ignored`,
		}},
		{name: "health check interval over HAProxy's maximum is capped", ann: map[string]string{hc: "25d"},
			want: def(func(b *BackendSettings) { b.HealthCheckInterval = 2147483647 * time.Millisecond }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/haproxy.health.check.interval: value "25d" is more than HAProxy's maximum; 2147483647ms is used`,
			}},
		{name: "health check interval zero", ann: map[string]string{hc: "0s"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/haproxy.health.check.interval: value "0s" is not a time as OpenShift's router reads it: digits not starting with 0, with an optional unit us, ms, s, m, h, d; annotation ignored`,
		}},
		{name: "balance leastconn", ann: map[string]string{bal: "leastconn"},
			want: def(func(b *BackendSettings) { b.Balance = BalanceLeastConn })},
		{name: "balance invalid", ann: map[string]string{bal: "uri"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/balance: balance "uri" is not one of roundrobin, leastconn, source, random; annotation ignored`,
		}},
		{name: "timeouts", ann: map[string]string{AnnotationTimeout: "90s", AnnotationTimeoutTunnel: "2h"},
			want: def(func(b *BackendSettings) { b.Timeout, b.TunnelTimeout = 90*time.Second, 2*time.Hour })},
		{name: "timeout units", ann: map[string]string{AnnotationTimeout: "1500", AnnotationTimeoutTunnel: "1d"},
			want: def(func(b *BackendSettings) { b.Timeout, b.TunnelTimeout = 1500*time.Millisecond, 24*time.Hour })},
		{name: "timeout invalid", ann: map[string]string{AnnotationTimeout: "1m30s", AnnotationTimeoutTunnel: "0"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout: value "1m30s" is not an HAProxy time (digits with an optional unit us, ms, s, m, h, d); annotation ignored`,
			`ns-r.yaml:31:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout-tunnel: value "0" is not a time as OpenShift's router reads it: digits not starting with 0, with an optional unit us, ms, s, m, h, d; annotation ignored`,
		}},
		{name: "timeout with a leading zero is ignored, as OpenShift does", ann: map[string]string{AnnotationTimeout: "05s"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout: value "05s" is not a time as OpenShift's router reads it: digits not starting with 0, with an optional unit us, ms, s, m, h, d; annotation ignored`,
		}},
		{name: "timeout too large is capped, as OpenShift does", ann: map[string]string{AnnotationTimeout: "25d"},
			want: def(func(b *BackendSettings) { b.Timeout = maxHAProxyTime }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout: value "25d" is more than HAProxy's maximum; 2147483647ms is used`,
			}},
		{name: "tunnel timeout beyond int64 is capped", ann: map[string]string{AnnotationTimeoutTunnel: "99999999999999999999d"},
			want: def(func(b *BackendSettings) { b.TunnelTimeout = maxHAProxyTime }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout-tunnel: value "99999999999999999999d" is more than HAProxy's maximum; 2147483647ms is used`,
			}},
		{name: "allowlist", ann: map[string]string{AnnotationIPAllowlist: "10.0.0.0/8  192.168.1.7 fd00::/64"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.0.0.0/8 192.168.1.7 fd00::/64" })},
		{name: "allowlist with white space around it is enforced, with a warning", ann: map[string]string{AnnotationIPAllowlist: " 10.0.0.0/8\n"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.0.0.0/8" }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_allowlist: value " 10.0.0.0/8\n" has white space around it, which OpenShift's router does not match (a YAML block scalar ends with a newline); haroute enforces the list, where OpenShift's router would drop it and serve every client`,
			}},
		{name: "empty allowlist leaves the legacy whitelist in force, as on OpenShift", ann: map[string]string{AnnotationIPAllowlist: "", AnnotationIPWhitelist: "10.0.0.1"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.0.0.1" }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_allowlist: value is empty; annotation ignored`,
			}},
		{name: "values with white space around them are ignored, as OpenShift does", term: TerminationEdge, ann: map[string]string{
			AnnotationSetForwardedHeaders: " never", AnnotationTimeout: "2s\n", AnnotationRateLimit: "true", AnnotationRateLimitRateTCP: " 2", AnnotationRateLimitRateHTTP: "5",
		}, want: def(func(b *BackendSettings) { b.RateLimit = RateLimit{RateHTTP: 5} }), diag: []string{
			`ns-r.yaml:32:5: warning: metadata.annotations.haproxy.router.openshift.io/rate-limit-connections.rate-tcp: value " 2" has white space around it, which OpenShift's router does not match (a YAML block scalar ends with a newline); annotation ignored`,
			`ns-r.yaml:33:5: warning: metadata.annotations.haproxy.router.openshift.io/set-forwarded-headers: value " never" has white space around it, which OpenShift's router does not match (a YAML block scalar ends with a newline); annotation ignored`,
			`ns-r.yaml:34:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout: value "2s\n" has white space around it, which OpenShift's router does not match (a YAML block scalar ends with a newline); annotation ignored`,
		}},
		{name: "legacy whitelist", ann: map[string]string{AnnotationIPWhitelist: "10.1.2.3"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.1.2.3" })},
		{name: "allowlist wins over whitelist", ann: map[string]string{AnnotationIPAllowlist: "10.0.0.1", AnnotationIPWhitelist: "10.0.0.2"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.0.0.1" }), diag: []string{
				`ns-r.yaml:31:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_whitelist: haproxy.router.openshift.io/ip_allowlist is set and takes precedence; annotation ignored`,
			}},
		{name: "allowlist with a bad entry enforces the others, as OpenShift does", ann: map[string]string{AnnotationIPAllowlist: "10.0.0.0/8 10.0.0.300"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.0.0.0/8" }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_allowlist: "10.0.0.300" is not an IP address or CIDR; left out, as OpenShift's router leaves it out: the route allows 10.0.0.0/8 only`,
			}},
		{name: "allowlist written with commas", ann: map[string]string{AnnotationIPAllowlist: "10.0.0.1, 10.0.0.2 ::1"},
			want: def(func(b *BackendSettings) { b.IPAllowlist = "10.0.0.2 ::1" }), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_allowlist: "10.0.0.1," is not an IP address or CIDR; left out, as OpenShift's router leaves it out: the route allows 10.0.0.2 ::1 only (entries are separated by spaces, not commas)`,
			}},
		{name: "allowlist with no entry it can read is an error", ann: map[string]string{AnnotationIPAllowlist: "10.0.0.300 fe80::1%eth0 10.0.0.0/33"},
			want: def(nil), diag: []string{
				`ns-r.yaml:30:5: error: metadata.annotations.haproxy.router.openshift.io/ip_allowlist: "10.0.0.300", "fe80::1%eth0", "10.0.0.0/33" are not IP addresses or CIDRs; the route is not served with an allowlist it cannot enforce`,
			}},
		{name: "empty allowlist is ignored", ann: map[string]string{AnnotationIPAllowlist: " "},
			want: def(nil), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_allowlist: value is empty; annotation ignored`,
			}},
		{name: "hsts", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: "max-age=31536000 ; includesubdomains;preload"},
			want: def(func(b *BackendSettings) { b.HSTSHeader = "max-age=31536000;includeSubDomains;preload" })},
		{name: "hsts as OpenShift's pattern spells it", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: `preload ; max-age = "10";preload; INCLUDESUBDOMAINS`},
			want: def(func(b *BackendSettings) { b.HSTSHeader = "max-age=10;includeSubDomains;preload" })},
		{name: "hsts with a ten-digit max-age, as OpenShift takes it", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: "max-age=2147483647"},
			want: def(func(b *BackendSettings) { b.HSTSHeader = "max-age=2147483647" })},
		{name: "hsts with a max-age too long", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: "max-age=123456789012345678901"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/hsts_header: value "max-age=123456789012345678901": max-age must be given once, as a number of seconds (at most 20 digits); annotation ignored`,
		}},
		{name: "hsts with a quote left open", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: `max-age="10`}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/hsts_header: value "max-age=\"10": max-age must be given once, as a number of seconds (at most 20 digits); annotation ignored`,
		}},
		{name: "hsts invalid", term: TerminationReencrypt, ann: map[string]string{AnnotationHSTSHeader: "max-age=1y"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/hsts_header: value "max-age=1y": max-age must be given once, as a number of seconds (at most 20 digits); annotation ignored`,
		}},
		{name: "hsts without max-age", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: "preload"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/hsts_header: value "preload" has no max-age; annotation ignored`,
		}},
		{name: "hsts unknown directive", term: TerminationEdge, ann: map[string]string{AnnotationHSTSHeader: "max-age=1;always"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/hsts_header: value "max-age=1;always" is not max-age=N[;includeSubDomains][;preload]; annotation ignored`,
		}},
		{name: "hsts on plain http", ann: map[string]string{AnnotationHSTSHeader: "max-age=1"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/hsts_header: HSTS applies only to edge and reencrypt routes, where HAProxy writes the response headers; annotation ignored`,
		}},
		{name: "cookies", term: TerminationEdge, ann: map[string]string{AnnotationDisableCookies: "true", AnnotationCookieName: "SESSION_ID", AnnotationCookieSameSite: "Strict"},
			want: def(func(b *BackendSettings) {
				b.DisableCookies, b.CookieName, b.CookieSameSite = true, "SESSION_ID", "Strict"
			})},
		{name: "cookies invalid", term: TerminationReencrypt, ann: map[string]string{AnnotationDisableCookies: "yes", AnnotationCookieName: "my cookie", AnnotationCookieSameSite: "Sometimes"},
			want: def(nil), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/disable_cookies: value "yes" is not true or false; annotation ignored`,
				`ns-r.yaml:31:5: warning: metadata.annotations.router.openshift.io/cookie-same-site: value "Sometimes" is not one of Lax, Strict, None (OpenShift's router matches them as written); annotation ignored`,
				`ns-r.yaml:32:5: warning: metadata.annotations.router.openshift.io/cookie_name: cookie name "my cookie" must be non-empty and use only letters, digits, '_' and '-', as OpenShift's router requires; annotation ignored`,
			}},
		{name: "cookie name too long", term: TerminationEdge, ann: map[string]string{AnnotationCookieName: strings.Repeat("c", 1025)},
			want: def(nil), diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/cookie_name: cookie name is 1025 bytes long, more than 1024; annotation ignored`,
			}},
		{name: "cookies on passthrough", term: TerminationPassthrough, ann: map[string]string{AnnotationCookieName: "c"},
			want: BackendSettings{Balance: BalanceSource, HealthCheckInterval: 5 * time.Second}, diag: []string{
				`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/cookie_name: has no effect on passthrough routes, whose traffic HAProxy does not decrypt; annotation ignored`,
			}},
		{name: "cookie SameSite on a plain HTTP route", ann: map[string]string{AnnotationCookieSameSite: "Lax"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/cookie-same-site: applies only to edge and reencrypt routes, whose cookies are Secure; OpenShift ignores it elsewhere; annotation ignored`,
		}},
		{name: "cookie SameSite on an Allow route", term: TerminationEdge, insecure: InsecurePolicyAllow, ann: map[string]string{AnnotationCookieSameSite: "Lax"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/cookie-same-site: has no effect on routes that also serve plain HTTP (insecureEdgeTerminationPolicy Allow), whose cookies are not Secure, as on OpenShift; annotation ignored`,
		}},
		{name: "rate limit switch spelled TRUE, as OpenShift's docs do", ann: map[string]string{
			AnnotationRateLimit: "TRUE", AnnotationRateLimitRateHTTP: "50",
		}, want: def(func(b *BackendSettings) { b.RateLimit = RateLimit{RateHTTP: 50} })},
		{name: "timeout on passthrough is the tunnel timeout", term: TerminationPassthrough, ann: map[string]string{AnnotationTimeout: "90s"},
			want: BackendSettings{Balance: BalanceSource, HealthCheckInterval: 5 * time.Second, TunnelTimeout: 90 * time.Second}},
		{name: "timeout-tunnel wins on passthrough", term: TerminationPassthrough, ann: map[string]string{AnnotationTimeout: "90s", AnnotationTimeoutTunnel: "2h"},
			want: BackendSettings{Balance: BalanceSource, HealthCheckInterval: 5 * time.Second, TunnelTimeout: 2 * time.Hour}},
		{name: "timeout-tunnel it cannot use leaves timeout in force on passthrough, as OpenShift's firstMatch does", term: TerminationPassthrough,
			ann:  map[string]string{AnnotationTimeout: "90s", AnnotationTimeoutTunnel: ""},
			want: BackendSettings{Balance: BalanceSource, HealthCheckInterval: 5 * time.Second, TunnelTimeout: 90 * time.Second}, diag: []string{
				`ns-r.yaml:31:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout-tunnel: value "" is not a time as OpenShift's router reads it: digits not starting with 0, with an optional unit us, ms, s, m, h, d; annotation ignored`,
			}},
		{name: "capped timeout-tunnel still wins on passthrough", term: TerminationPassthrough,
			ann:  map[string]string{AnnotationTimeout: "90s", AnnotationTimeoutTunnel: "30d"},
			want: BackendSettings{Balance: BalanceSource, HealthCheckInterval: 5 * time.Second, TunnelTimeout: maxHAProxyTime}, diag: []string{
				`ns-r.yaml:31:5: warning: metadata.annotations.haproxy.router.openshift.io/timeout-tunnel: value "30d" is more than HAProxy's maximum; 2147483647ms is used`,
			}},
		{name: "rate limits", ann: map[string]string{
			AnnotationRateLimit: "true", AnnotationRateLimitConcurrentTCP: "10", AnnotationRateLimitRateTCP: "100", AnnotationRateLimitRateHTTP: "50",
		}, want: def(func(b *BackendSettings) { b.RateLimit = RateLimit{ConcurrentTCP: 10, RateTCP: 100, RateHTTP: 50} })},
		{name: "rate limits partly invalid", ann: map[string]string{
			AnnotationRateLimit: "true", AnnotationRateLimitConcurrentTCP: "-3", AnnotationRateLimitRateTCP: "100",
		}, want: def(func(b *BackendSettings) { b.RateLimit = RateLimit{RateTCP: 100} }), diag: []string{
			`ns-r.yaml:31:5: warning: metadata.annotations.haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp: value "-3" is not a positive integer; annotation ignored`,
		}},
		{name: "rate limit values without the switch", ann: map[string]string{AnnotationRateLimitRateHTTP: "5"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rate-limit-connections.rate-http: has no effect unless haproxy.router.openshift.io/rate-limit-connections is "true"; annotation ignored`,
		}},
		{name: "rate limit switch without values", ann: map[string]string{AnnotationRateLimit: "true"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rate-limit-connections: none of .concurrent-tcp, .rate-tcp, .rate-http is set to a limit; annotation ignored`,
		}},
		{name: "rate limit switch invalid", ann: map[string]string{AnnotationRateLimit: "on"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rate-limit-connections: value "on" is not true or false; annotation ignored`,
		}},
		{name: "pod concurrent connections", ann: map[string]string{AnnotationPodConcurrentConnection: "100"},
			want: def(func(b *BackendSettings) { b.PodConcurrentConnections = 100 })},
		{name: "pod concurrent connections invalid", ann: map[string]string{AnnotationPodConcurrentConnection: "0"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/pod-concurrent-connections: value "0" is not a positive integer; annotation ignored`,
		}},
		{name: "rewrite target", ann: map[string]string{AnnotationRewriteTarget: "/v2/"},
			want: def(func(b *BackendSettings) { b.RewriteTarget = "/v2/" })},
		{name: "rewrite target invalid", ann: map[string]string{AnnotationRewriteTarget: "v2"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "v2" must start with "/"; annotation ignored`,
		}},
		{name: "rewrite target with percent-encoding and sub-delims", ann: map[string]string{AnnotationRewriteTarget: "/a%27b/$x;y=1&z@"},
			want: def(func(b *BackendSettings) { b.RewriteTarget = "/a%27b/$x;y=1&z@" })},
		{name: "rewrite target with quote", ann: map[string]string{AnnotationRewriteTarget: "/a'b"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "/a'b" contains '\'', which OpenShift's router interprets rather than copies: percent-encode it (%27); annotation ignored`,
		}},
		{name: "rewrite target with backslash", ann: map[string]string{AnnotationRewriteTarget: `/a\b`}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "/a\\b" contains '\\', which OpenShift's router interprets rather than copies: percent-encode it (%5C); annotation ignored`,
		}},
		{name: "rewrite target with hash", ann: map[string]string{AnnotationRewriteTarget: "/a#b"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "/a#b" contains '#', which OpenShift's router interprets rather than copies: percent-encode it (%23); annotation ignored`,
		}},
		{name: "rewrite target with bare percent", ann: map[string]string{AnnotationRewriteTarget: "/100%"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "/100%": '%' must start a percent-encoded byte such as %20; annotation ignored`,
		}},
		{name: "rewrite target not ASCII", ann: map[string]string{AnnotationRewriteTarget: "/café"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "/café" must be ASCII: percent-encode other characters; annotation ignored`,
		}},
		{name: "rewrite target too long", ann: map[string]string{AnnotationRewriteTarget: "/" + strings.Repeat("a", MaxMapKeyLength)}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target is 2049 bytes long, more than the limit of 2048; annotation ignored`,
		}},
		{name: "pod concurrent connections beyond an int", ann: map[string]string{AnnotationPodConcurrentConnection: "2147483648"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/pod-concurrent-connections: value "2147483648" is more than HAProxy's maximum of 2147483647; annotation ignored`,
		}},
		{name: "pod concurrent connections at the maximum", ann: map[string]string{AnnotationPodConcurrentConnection: "2147483647"},
			want: def(func(b *BackendSettings) { b.PodConcurrentConnections = 2147483647 })},
		{name: "cookie name beyond OpenShift's pattern is ignored", ann: map[string]string{AnnotationCookieName: "my.cookie"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/cookie_name: cookie name "my.cookie" must be non-empty and use only letters, digits, '_' and '-', as OpenShift's router requires; annotation ignored`,
		}},
		{name: "cookie SameSite in lower case is ignored, as OpenShift does", term: TerminationEdge, ann: map[string]string{AnnotationCookieSameSite: "lax"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.router.openshift.io/cookie-same-site: value "lax" is not one of Lax, Strict, None (OpenShift's router matches them as written); annotation ignored`,
		}},
		{name: "rewrite target with space", ann: map[string]string{AnnotationRewriteTarget: "/a b"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/rewrite-target: rewrite target "/a b" must not contain whitespace or control characters; annotation ignored`,
		}},
		{name: "forwarded headers", ann: map[string]string{AnnotationSetForwardedHeaders: "if-none"},
			want: def(func(b *BackendSettings) { b.ForwardedHeaders = "if-none" })},
		{name: "forwarded headers invalid", ann: map[string]string{AnnotationSetForwardedHeaders: "always"}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/set-forwarded-headers: value "always" is not one of append, replace, never, if-none; annotation ignored`,
		}},
		{name: "unknown router annotation is a note; others are ignored", ann: map[string]string{
			"haproxy.router.openshift.io/hsts_preload": "x", "example.com/owner": "me",
		}, want: def(nil), diag: []string{
			`ns-r.yaml:31:5: note: metadata.annotations.haproxy.router.openshift.io/hsts_preload: annotation is not supported by haroute; ignored`,
		}},
		{name: "a misspelled annotation is a warning naming the one it is like", ann: map[string]string{
			"haproxy.router.openshift.io/ip_alowlist": "10.0.0.1",
		}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/ip_alowlist: annotation is not supported by haroute; ignored: did you mean haproxy.router.openshift.io/ip_allowlist?`,
		}},
		{name: "annotation OpenShift honours and haroute does not is a warning naming it", ann: map[string]string{
			AnnotationH1AdjustCase: "true",
		}, want: def(nil), diag: []string{
			`ns-r.yaml:30:5: warning: metadata.annotations.haproxy.router.openshift.io/h1-adjust-case: annotation is honoured by OpenShift but not by haroute: haroute does not adjust the case of HTTP/1 header names (OpenShift's h1-case-adjust-bogus-server); headers reach the backend lowercased`,
		}},
		{name: "unsupported annotation switched off is silent", ann: map[string]string{AnnotationH1AdjustCase: "false"}, want: def(nil)},
		{name: "allow-non-dns-compliant-host is known", ann: map[string]string{AnnotationAllowNonDNSCompliantHost: "true"}, want: def(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRoute("ns", "r", "a.example.com")
			r.Meta.Annotations = tt.ann
			keys := make([]string, 0, len(tt.ann))
			for k := range tt.ann {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for i, k := range keys {
				r.Source.Fields[annotationField(k)] = Position{Path: "ns-r.yaml", Line: 30 + i, Col: 5}
			}
			c := newRouteCheck(&r)
			s := DefaultSettings()
			got := parseAnnotations(c, &r, tt.term, tt.insecure, &s)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("settings:\n got %+v\nwant %+v", got, tt.want)
			}
			equalLines(t, c.diags, tt.diag)
			// Only an allowlist the route cannot be served without
			// rejects it (parseAllowlist); every other bad value is
			// left out with a warning.
			if wantBad := strings.Contains(strings.Join(tt.diag, "\n"), ": error: "); c.bad != wantBad {
				t.Errorf("route rejected = %v, want %v", c.bad, wantBad)
			}
		})
	}
}

// TestDefaultBalance pins the balance of routes without the annotation:
// roundrobin, which honours weights and serves runtime-added servers,
// except source for passthrough routes with one active service; as in
// OpenShift, passthrough routes split over services use roundrobin.
func TestDefaultBalance(t *testing.T) {
	w := func(n int32) *int32 { return &n }
	for _, c := range []struct {
		name string
		term Termination
		alts []RouteTargetReference
		ann  string
		want BalanceAlgorithm
	}{
		{name: "http", want: BalanceRoundRobin},
		{name: "edge A/B", term: TerminationEdge, alts: []RouteTargetReference{{Name: "b", Weight: w(5)}}, want: BalanceRoundRobin},
		{name: "reencrypt", term: TerminationReencrypt, want: BalanceRoundRobin},
		{name: "passthrough", term: TerminationPassthrough, want: BalanceSource},
		{name: "passthrough A/B", term: TerminationPassthrough, alts: []RouteTargetReference{{Name: "b"}}, want: BalanceRoundRobin},
		{name: "passthrough alternate at weight 0", term: TerminationPassthrough,
			alts: []RouteTargetReference{{Name: "b", Weight: w(0)}}, want: BalanceSource},
		{name: "annotation wins", term: TerminationPassthrough, alts: []RouteTargetReference{{Name: "b"}}, ann: "leastconn", want: BalanceLeastConn},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := testRoute("ns", "r", "a.example.com")
			r.Spec.AlternateBackends = c.alts
			if c.ann != "" {
				r.Meta.Annotations = map[string]string{AnnotationBalance: c.ann}
			}
			s := DefaultSettings()
			if got := parseAnnotations(newRouteCheck(&r), &r, c.term, "", &s).Balance; got != c.want {
				t.Errorf("balance = %s, want %s", got, c.want)
			}
		})
	}
}

func TestParseHAProxyTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"10":           10 * time.Millisecond,
		"10us":         10 * time.Microsecond,
		"10ms":         10 * time.Millisecond,
		"10s":          10 * time.Second,
		"10m":          10 * time.Minute,
		"10h":          10 * time.Hour,
		"1d":           24 * time.Hour,
		"2147483647":   2147483647 * time.Millisecond,
		"2147483648":   -1,
		"1.5s":         -1,
		"s":            -1,
		"":             -1,
		"10 s":         -1,
		"99999999999d": -1,
	} {
		got, err := parseHAProxyTime(in)
		if want < 0 {
			if err == nil {
				t.Errorf("parseHAProxyTime(%q) = %v, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("parseHAProxyTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
