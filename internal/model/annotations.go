package model

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Route annotations, with OpenShift's names and meanings so that routes
// exported from OpenShift keep working. An invalid value is ignored with a
// warning on the route (which stays admitted): one typo in a timeout must
// not take a site down, and must not pass unnoticed either.

const (
	AnnotationHealthCheckInterval     = "router.openshift.io/haproxy.health.check.interval"
	AnnotationBalance                 = "haproxy.router.openshift.io/balance"
	AnnotationTimeout                 = "haproxy.router.openshift.io/timeout"
	AnnotationTimeoutTunnel           = "haproxy.router.openshift.io/timeout-tunnel"
	AnnotationIPAllowlist             = "haproxy.router.openshift.io/ip_allowlist"
	AnnotationIPWhitelist             = "haproxy.router.openshift.io/ip_whitelist" // legacy spelling
	AnnotationHSTSHeader              = "haproxy.router.openshift.io/hsts_header"
	AnnotationDisableCookies          = "haproxy.router.openshift.io/disable_cookies"
	AnnotationCookieName              = "router.openshift.io/cookie_name"
	AnnotationCookieSameSite          = "router.openshift.io/cookie-same-site"
	AnnotationRateLimit               = "haproxy.router.openshift.io/rate-limit-connections"
	AnnotationRateLimitConcurrentTCP  = "haproxy.router.openshift.io/rate-limit-connections.concurrent-tcp"
	AnnotationRateLimitRateTCP        = "haproxy.router.openshift.io/rate-limit-connections.rate-tcp"
	AnnotationRateLimitRateHTTP       = "haproxy.router.openshift.io/rate-limit-connections.rate-http"
	AnnotationPodConcurrentConnection = "haproxy.router.openshift.io/pod-concurrent-connections"
	AnnotationRewriteTarget           = "haproxy.router.openshift.io/rewrite-target"
	AnnotationSetForwardedHeaders     = "haproxy.router.openshift.io/set-forwarded-headers"
	// AnnotationAllowNonDNSCompliantHost "true" waives the 63-character
	// limit on each label of spec.host (openshift/api route/v1).
	AnnotationAllowNonDNSCompliantHost = "route.openshift.io/allow-non-dns-compliant-host"
	// AnnotationH1AdjustCase asks OpenShift's router to rewrite header
	// name case for HTTP/1 backends, which haroute does not do.
	AnnotationH1AdjustCase = "haproxy.router.openshift.io/h1-adjust-case"
)

// maxHAProxyTime is the largest time HAProxy accepts (2^31-1 ms).
const maxHAProxyTime = 2147483647 * time.Millisecond

// Default balance algorithms, for routes without the balance annotation.
// OpenShift balances a route whose traffic is split over two or more
// services with roundrobin, the algorithm that honours weights; so does
// haroute. For a single service OpenShift uses random, and source for
// passthrough. haroute keeps source for passthrough (HAProxy sees no HTTP
// there, and the same client should keep reaching the same TLS server)
// but uses roundrobin for the rest, measured on HAProxy 2.6.12 (test/e2e
// balance_test.go): `balance random` does not send traffic to some servers
// added with `add server` (5 servers, 2 never chosen), which would defeat
// runtime endpoint changes; leastconn ignores weights when requests do not
// overlap (90/5/5 served 333/334/333 of 1000) and sends nothing to a
// re-added server still holding long-lived connections; roundrobin served
// 902/49/49, and every added and re-added server its share.
const (
	DefaultBalance            = BalanceRoundRobin
	DefaultPassthroughBalance = BalanceSource
)

// defaultBalance is the balance of a route without the annotation.
func defaultBalance(term Termination, spec *RouteSpec) BalanceAlgorithm {
	if term == TerminationPassthrough && activeServices(spec) < 2 {
		return DefaultPassthroughBalance
	}
	return DefaultBalance
}

// activeServices counts the route's services that receive traffic: those
// whose weight is not zero (unset means 100).
func activeServices(spec *RouteSpec) int {
	n := 0
	for i := -1; i < len(spec.AlternateBackends); i++ {
		ref := &spec.To
		if i >= 0 {
			ref = &spec.AlternateBackends[i]
		}
		if ref.Weight == nil || *ref.Weight > 0 {
			n++
		}
	}
	return n
}

// parseHAProxyTime parses HAProxy's time format: digits with an optional
// unit us, ms, s, m, h or d; no unit means milliseconds. Zero is refused:
// for HAProxy it means "no timeout", never what a route annotation wants.
func parseHAProxyTime(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("value %q is not an HAProxy time (digits with an optional unit us, ms, s, m, h, d)", v)
	}
	unit := time.Millisecond
	switch s[i:] {
	case "":
	case "us":
		unit = time.Microsecond
	case "ms":
	case "s":
		unit = time.Second
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	default:
		return 0, fmt.Errorf("value %q is not an HAProxy time (digits with an optional unit us, ms, s, m, h, d)", v)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > int64(maxHAProxyTime/unit) {
		return capped(v)
	}
	d := time.Duration(n) * unit
	if d == 0 {
		return 0, fmt.Errorf("value %q must be greater than zero", v)
	}
	if d > maxHAProxyTime {
		return capped(v)
	}
	return d, nil
}

// capped is HAProxy's longest time for a value beyond it, with a warning
// that says so: OpenShift caps such a timeout too (a route annotated 30d
// for a long poll got the 30 s default when the annotation was ignored).
func capped(v string) (time.Duration, error) {
	return maxHAProxyTime, notice{fmt.Errorf("value %q is more than HAProxy's maximum; 2147483647ms is used", v)}
}

// notice is an annotation problem whose value is still used: a warning,
// not "annotation ignored".
type notice struct{ error }

// parseTimeSpec parses a route's time annotation as OpenShift's router
// reads it (the template's timeSpecPattern, matched whole): a number
// without leading zeros and an optional unit. Anything else ("05s", a Go
// duration such as "1m30s") leaves the default in force there; haroute
// used to apply it.
func parseTimeSpec(v string) (time.Duration, error) {
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 || v[0] == '0' {
		return 0, fmt.Errorf("value %q is not a time as OpenShift's router reads it: digits not starting with 0, with an optional unit us, ms, s, m, h, d", v)
	}
	return parseHAProxyTime(v)
}

// parseIPAllowlist parses a space-separated list of IPs and CIDRs into
// the entries it can read and those it cannot (see parseAllowlist).
func parseIPAllowlist(v string) (list, bad []string) {
	fields := strings.Fields(v)
	list = make([]string, 0, len(fields))
	for _, f := range fields {
		if strings.Contains(f, "/") {
			if p, err := netip.ParsePrefix(f); err == nil {
				list = append(list, p.String())
			} else {
				bad = append(bad, f)
			}
			continue
		}
		if a, err := netip.ParseAddr(f); err == nil && a.Zone() == "" {
			list = append(list, a.String())
		} else {
			bad = append(bad, f)
		}
	}
	return list, bad
}

// maxHSTSDigits bounds max-age's digits: OpenShift takes any number of
// them, and 2147483647 (ten, a value operators use) was refused when
// they were read as a port's. 20 are enough for any 64-bit count of
// seconds; the value reaches the header as written.
const maxHSTSDigits = 20

// isSeconds reports whether s is max-age's delta-seconds: digits only, at
// most maxHSTSDigits of them.
func isSeconds(s string) bool {
	if s == "" || len(s) > maxHSTSDigits {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// parseHSTS validates a Strict-Transport-Security value of the form
// max-age=N[;includeSubDomains][;preload] (directives case-insensitive, in
// any order, spaces around ';' allowed) and returns it normalized.
func parseHSTS(v string) (string, error) {
	var maxAge string
	var sub, preload bool
	for _, part := range strings.Split(v, ";") {
		// OpenShift's hstsPattern: space around ';' and '=', the tokens
		// in any case and repeated, max-age once, its number in quotes
		// or not.
		d := strings.TrimSpace(part)
		name, value, hasValue := strings.Cut(d, "=")
		switch {
		case strings.EqualFold(strings.TrimSpace(name), "max-age") && hasValue:
			value = strings.TrimSpace(value)
			if unq, ok := strings.CutPrefix(value, `"`); ok {
				value, ok = strings.CutSuffix(unq, `"`)
				if !ok {
					value = "-"
				}
			}
			if !isSeconds(value) || maxAge != "" {
				return "", fmt.Errorf("value %q: max-age must be given once, as a number of seconds (at most %d digits)", v, maxHSTSDigits)
			}
			maxAge = value
		case strings.EqualFold(d, "includeSubDomains"):
			sub = true
		case strings.EqualFold(d, "preload"):
			preload = true
		default:
			return "", fmt.Errorf("value %q is not max-age=N[;includeSubDomains][;preload]", v)
		}
	}
	if maxAge == "" {
		return "", fmt.Errorf("value %q has no max-age", v)
	}
	h := "max-age=" + maxAge
	if sub {
		h += ";includeSubDomains"
	}
	if preload {
		h += ";preload"
	}
	return h, nil
}

// isToken reports whether s is an RFC 9110 token, what a cookie name must be.
// isCookieName reports whether s matches the cookie names OpenShift's
// router accepts (its template's cookieNamePattern).
func isCookieName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// maxHAProxyInt is the largest count HAProxy keeps in an int (a server's
// maxconn): it reads larger numbers without complaint and wraps them,
// 2147483648 becoming negative.
const maxHAProxyInt = 1<<31 - 1

func positiveInt(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange) || err == nil && n > maxHAProxyInt:
		return 0, fmt.Errorf("value %s is more than HAProxy's maximum of %d", shortQuote(v), maxHAProxyInt)
	case err != nil || n < 1:
		return 0, fmt.Errorf("value %s is not a positive integer", shortQuote(v))
	}
	return n, nil
}

// rewriteTargetProblem checks the rewrite-target annotation, a path prefix
// that replaces the route's path in requests. haroute copies it literally.
// OpenShift's router interprets some characters instead (it drops
// unescaped quotes and single backslashes, reads '#' as the start of a
// comment and "%%" as one '%'), so those are refused rather than given a
// meaning that differs from OpenShift's: percent-encoding says the same
// thing unambiguously.
func rewriteTargetProblem(v string) string {
	switch {
	case v == "" || v[0] != '/':
		return fmt.Sprintf("rewrite target %s must start with \"/\"", shortQuote(v))
	case len(v) > MaxMapKeyLength:
		return fmt.Sprintf("rewrite target is %d bytes long, more than the limit of %d", len(v), MaxMapKeyLength)
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c <= ' ' || c == 0x7f:
			return fmt.Sprintf("rewrite target %s must not contain whitespace or control characters", shortQuote(v))
		case c >= 0x80:
			return fmt.Sprintf("rewrite target %s must be ASCII: percent-encode other characters", shortQuote(v))
		case c == '"' || c == '\'' || c == '\\' || c == '#':
			return fmt.Sprintf("rewrite target %s contains %q, which OpenShift's router interprets rather than copies: percent-encode it (%%%02X)", shortQuote(v), c, c)
		case c == '%' && !(i+2 < len(v) && isHex(v[i+1]) && isHex(v[i+2])):
			return fmt.Sprintf("rewrite target %s: '%%' must start a percent-encoded byte such as %%20", shortQuote(v))
		}
	}
	return ""
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// shortQuote quotes a value for a message, cut short when it is long: a
// value of megabytes must not make a diagnostic of megabytes.
func shortQuote(s string) string {
	const max = 80
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
}
