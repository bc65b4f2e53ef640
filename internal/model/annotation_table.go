package model

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The route annotations haroute reads, in one table: the key, which route
// kinds it applies to, how its value is parsed into BackendSettings, and
// how plan names a change of it. Adding an annotation is one row here plus
// the BackendSettings field and the render code that uses it; validation,
// Equal and the plan's reload reasons follow from the row.

// RouteKinds is a set of route terminations.
type RouteKinds uint8

const (
	KindHTTP RouteKinds = 1 << iota
	KindEdge
	KindReencrypt
	KindPassthrough

	KindsAll = KindHTTP | KindEdge | KindReencrypt | KindPassthrough
	// KindsDecrypted are the routes whose HTTP HAProxy sees.
	KindsDecrypted = KindHTTP | KindEdge | KindReencrypt
	// KindsTLSTerminated are the routes HAProxy serves over TLS itself.
	KindsTLSTerminated = KindEdge | KindReencrypt
)

// KindOf is the one-kind set of termination t.
func KindOf(t Termination) RouteKinds {
	switch t {
	case TerminationEdge:
		return KindEdge
	case TerminationReencrypt:
		return KindReencrypt
	case TerminationPassthrough:
		return KindPassthrough
	default:
		return KindHTTP
	}
}

// Annotation is one row of the annotation table.
type Annotation struct {
	Key string
	// Field is the short name plan reasons use ("timeout").
	Field string
	// Kinds are the routes it applies to; on the others it is ignored
	// with the warning Elsewhere.
	Kinds     RouteKinds
	Elsewhere string
	// AliasOf names the annotation this one is a legacy spelling of: read
	// only when that one is absent, and not diffed on its own.
	AliasOf string
	// Unsupported marks an annotation OpenShift's router honours and
	// haroute does not: a warning names it, so a route that relies on it
	// does not pass `check --strict` unnoticed.
	Unsupported string

	// parse names the parser that reads the value into the settings (see
	// annotationParse.run).
	parse parser
	// setting compares and shows the BackendSettings field the annotation
	// sets; nil when it sets none (or its alias's row does).
	setting *backendSetting
}

// Backend reports whether a change of the annotation changes the route's
// backend, which HAProxy only takes through a reload.
func (a *Annotation) Backend() bool { return a.setting != nil }

// backendSetting is one comparable field of BackendSettings.
type backendSetting struct {
	same func(a, b *BackendSettings) bool
	show func(b *BackendSettings) string
	// inherited, when set, reports a change that only follows the
	// router's default, which plan reports once as the router setting.
	inherited func(a, b *BackendSettings, ra, rb *Settings) bool
}

// field builds a backendSetting from an accessor; comparing needs no
// allocation, so a plan over 10k routes costs what it did by hand.
func field[T comparable](get func(b *BackendSettings) T, show func(T) string) *backendSetting {
	return &backendSetting{
		same: func(a, b *BackendSettings) bool { return get(a) == get(b) },
		show: func(b *BackendSettings) string { return show(get(b)) },
	}
}

// parser is a parse function of the table. The table names parsers by
// number, not by func value: a call through a func value would move the
// parse state of every route to the heap.
type parser uint8

const (
	noParser parser = iota
	pBalance
	pTimeout
	pTunnelTimeout
	pHealthCheckInterval
	pAllowlist
	pHSTSAnnotation
	pDisableCookies
	pCookieName
	pCookieSameSite
	pRateLimit
	pRateLimitMember
	pPodConcurrentConnections
	pRewriteTarget
	pForwardedHeaders
)

// run parses v with parser id, or returns why it is ignored.
func (p *annotationParse) run(id parser, v string) error {
	switch id {
	case pBalance:
		return parseBalance(p, v)
	case pTimeout:
		return parseTimeout(p, v)
	case pTunnelTimeout:
		return parseTunnelTimeout(p, v)
	case pHealthCheckInterval:
		return parseHealthCheckInterval(p, v)
	case pAllowlist:
		return parseAllowlist(p, v)
	case pHSTSAnnotation:
		return parseHSTSAnnotation(p, v)
	case pDisableCookies:
		return parseDisableCookies(p, v)
	case pCookieName:
		return parseCookieName(p, v)
	case pCookieSameSite:
		return parseCookieSameSite(p, v)
	case pRateLimit:
		return parseRateLimit(p, v)
	case pRateLimitMember:
		return parseRateLimitMember(p, v)
	case pPodConcurrentConnections:
		return parsePodConcurrentConnections(p, v)
	case pRewriteTarget:
		return parseRewriteTarget(p, v)
	case pForwardedHeaders:
		return parseForwardedHeaders(p, v)
	}
	return nil
}

// annotationParse is the state one route's annotations are parsed with.
type annotationParse struct {
	c    *routeCheck
	ann  map[string]string
	term Termination
	// insecure is the route's insecureEdgeTerminationPolicy.
	insecure InsecureEdgeTerminationPolicy
	b        BackendSettings
}

// surroundingSpace says why a value with white space around it is not
// used.
func surroundingSpace(v string) string {
	return fmt.Sprintf("value %s has white space around it, which OpenShift's router does not match (a YAML block scalar ends with a newline)", shortQuote(v))
}

func (p *annotationParse) ignore(key, format string, args ...any) {
	p.c.warnf(annotationField(key), format+"; annotation ignored", args...)
}

const (
	notOnPassthrough = "has no effect on passthrough routes, whose traffic HAProxy does not decrypt"
	onlyTLS          = "HSTS applies only to edge and reencrypt routes, where HAProxy writes the response headers"
	// OpenShift writes SameSite only on the Secure cookies of edge and
	// reencrypt routes.
	onlySecureCookies = "applies only to edge and reencrypt routes, whose cookies are Secure; OpenShift ignores it elsewhere"
)

// Annotations is the table, in the order plan lists changes.
var Annotations = []*Annotation{
	{Key: AnnotationBalance, Field: "balance", Kinds: KindsAll, parse: pBalance,
		setting: field(func(b *BackendSettings) BalanceAlgorithm { return b.Balance }, showString[BalanceAlgorithm])},
	{Key: AnnotationTimeout, Field: "timeout", Kinds: KindsAll, parse: pTimeout,
		setting: field(func(b *BackendSettings) time.Duration { return b.Timeout }, time.Duration.String)},
	{Key: AnnotationTimeoutTunnel, Field: "timeout-tunnel", Kinds: KindsAll, parse: pTunnelTimeout,
		setting: field(func(b *BackendSettings) time.Duration { return b.TunnelTimeout }, time.Duration.String)},
	{Key: AnnotationHealthCheckInterval, Field: "health.check.interval", Kinds: KindsAll, parse: pHealthCheckInterval,
		setting: healthCheckSetting()},
	{Key: AnnotationIPAllowlist, Field: "ip_allowlist", Kinds: KindsAll, parse: pAllowlist,
		setting: field(func(b *BackendSettings) AddressList { return b.IPAllowlist }, AddressList.show)},
	{Key: AnnotationIPWhitelist, Field: "ip_allowlist", Kinds: KindsAll, AliasOf: AnnotationIPAllowlist, parse: pAllowlist},
	{Key: AnnotationHSTSHeader, Field: "hsts_header", Kinds: KindsTLSTerminated, Elsewhere: onlyTLS, parse: pHSTSAnnotation,
		setting: field(func(b *BackendSettings) string { return b.HSTSHeader }, showString[string])},
	{Key: AnnotationDisableCookies, Field: "disable_cookies", Kinds: KindsDecrypted, Elsewhere: notOnPassthrough, parse: pDisableCookies,
		setting: field(func(b *BackendSettings) bool { return b.DisableCookies }, strconv.FormatBool)},
	{Key: AnnotationCookieName, Field: "cookie_name", Kinds: KindsDecrypted, Elsewhere: notOnPassthrough, parse: pCookieName,
		setting: field(func(b *BackendSettings) string { return b.CookieName }, showString[string])},
	{Key: AnnotationCookieSameSite, Field: "cookie-same-site", Kinds: KindsTLSTerminated, Elsewhere: onlySecureCookies, parse: pCookieSameSite,
		setting: field(func(b *BackendSettings) string { return b.CookieSameSite }, showString[string])},
	{Key: AnnotationRateLimit, Field: "rate-limit-connections", Kinds: KindsAll, parse: pRateLimit,
		setting: field(func(b *BackendSettings) RateLimit { return b.RateLimit }, RateLimit.String)},
	// The family's members are read with rate-limit-connections.
	{Key: AnnotationRateLimitConcurrentTCP, Field: "rate-limit-connections", Kinds: KindsAll, parse: pRateLimitMember},
	{Key: AnnotationRateLimitRateTCP, Field: "rate-limit-connections", Kinds: KindsAll, parse: pRateLimitMember},
	{Key: AnnotationRateLimitRateHTTP, Field: "rate-limit-connections", Kinds: KindsAll, parse: pRateLimitMember},
	{Key: AnnotationPodConcurrentConnection, Field: "pod-concurrent-connections", Kinds: KindsAll, parse: pPodConcurrentConnections,
		setting: field(func(b *BackendSettings) int { return b.PodConcurrentConnections }, strconv.Itoa)},
	{Key: AnnotationRewriteTarget, Field: "rewrite-target", Kinds: KindsDecrypted, Elsewhere: notOnPassthrough, parse: pRewriteTarget,
		setting: field(func(b *BackendSettings) string { return b.RewriteTarget }, showRewriteTarget)},
	// Honoured by OpenShift's router, not by haroute.
	{Key: AnnotationH1AdjustCase, Field: "h1-adjust-case", Kinds: KindsDecrypted,
		Unsupported: "haroute does not adjust the case of HTTP/1 header names (OpenShift's h1-case-adjust-bogus-server); headers reach the backend lowercased"},
	// Read by route validation (specHostProblem), not a backend setting.
	{Key: AnnotationAllowNonDNSCompliantHost, Field: "allow-non-dns-compliant-host", Kinds: KindsAll},
	{Key: AnnotationSetForwardedHeaders, Field: "set-forwarded-headers", Kinds: KindsDecrypted, Elsewhere: notOnPassthrough, parse: pForwardedHeaders,
		setting: field(func(b *BackendSettings) string { return b.ForwardedHeaders }, showString[string])},
}

// annotationIndex finds a row by key.
var annotationIndex = func() map[string]*Annotation {
	m := make(map[string]*Annotation, len(Annotations))
	for _, a := range Annotations {
		m[a.Key] = a
	}
	return m
}()

// LookupAnnotation returns the row of key, or nil.
func LookupAnnotation(key string) *Annotation { return annotationIndex[key] }

// annotationField is the field path (and Source.Fields key) of an annotation.
func annotationField(key string) string { return "metadata.annotations." + key }

// routerAnnotationPrefixes are where OpenShift's router annotations live;
// others (kubectl's, a deployment tool's) are none of haroute's business.
var routerAnnotationPrefixes = []string{"haproxy.router.openshift.io/", "router.openshift.io/"}

// parseAnnotations turns r's annotations into backend settings, warning about
// each value it has to ignore.
func parseAnnotations(c *routeCheck, r *Route, term Termination, insecure InsecureEdgeTerminationPolicy, settings *Settings) BackendSettings {
	b := BackendSettings{Balance: defaultBalance(term, &r.Spec), HealthCheckInterval: settings.HealthCheckInterval}
	ann := r.Meta.Annotations
	if len(ann) == 0 {
		return b
	}
	p := annotationParse{c: c, ann: ann, term: term, insecure: insecure, b: b}
	kind := KindOf(term)
	for _, a := range Annotations {
		v, ok := ann[a.Key]
		if !ok {
			continue
		}
		if a.Unsupported != "" {
			// OpenShift acts on it only when true.
			if on, _ := strconv.ParseBool(strings.TrimSpace(v)); on {
				c.warnf(annotationField(a.Key), "annotation is honoured by OpenShift but not by haroute: %s", a.Unsupported)
			}
			continue
		}
		if a.parse == noParser {
			continue
		}
		if a.AliasOf != "" {
			// As OpenShift's firstMatch ".+": an empty main spelling
			// leaves the legacy one in force (an allowlist emptied by a
			// template must not open the route to every client).
			if mv, main := ann[a.AliasOf]; main && mv != "" {
				p.ignore(a.Key, "%s is set and takes precedence", a.AliasOf)
				continue
			}
		}
		if v != strings.TrimSpace(v) && a.parse != pAllowlist && a.parse != pRateLimitMember {
			// OpenShift's router matches each value whole (anchored
			// patterns, ParseBool, Atoi): one with white space around
			// it, such as the newline a YAML block scalar ends with,
			// leaves its default in force. haroute did apply it.
			p.ignore(a.Key, "%s", surroundingSpace(v))
			continue
		}
		if a.Kinds&kind == 0 {
			p.ignore(a.Key, "%s", a.Elsewhere)
			continue
		}
		if err := p.run(a.parse, v); err != nil {
			var r refusal
			var n notice
			switch {
			case errors.As(err, &r):
				c.errorf(annotationField(a.Key), "%v", err)
			case errors.As(err, &n):
				c.warnf(annotationField(a.Key), "%v", err)
			default:
				p.ignore(a.Key, "%v", err)
			}
		}
	}
	unknownAnnotations(c, ann)
	return p.b
}

// unknownAnnotations reports annotations under the router's prefixes that
// the table lacks, in key order.
func unknownAnnotations(c *routeCheck, ann map[string]string) {
	var unknown []string
	for k := range ann {
		if annotationIndex[k] == nil && hasRouterPrefix(k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		f := annotationField(k)
		if like, ok := nearAnnotation(k); ok {
			// A typo of one haroute reads is a warning (check --strict
			// fails): a misspelled ip_allowlist opened the route to
			// every client with a note alone.
			c.add(SeverityWarning, c.pos(f), f, fmt.Sprintf("annotation is not supported by haroute; ignored: did you mean %s?", like))
			continue
		}
		c.add(SeverityNote, c.pos(f), f, "annotation is not supported by haroute; ignored")
	}
}

// nearAnnotation returns the annotation haroute reads that k most likely
// misspells: one at most two edits away, case aside.
func nearAnnotation(k string) (string, bool) {
	lk := strings.ToLower(k)
	for _, a := range Annotations {
		if withinTwoEdits(lk, strings.ToLower(a.Key)) {
			return a.Key, true
		}
	}
	return "", false
}

func hasRouterPrefix(k string) bool {
	for _, p := range routerAnnotationPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// SettingChange is one backend setting that differs between two routes.
type SettingChange struct {
	Field    string
	From, To string
}

// BackendChanges lists the backend settings that differ between a (under
// router settings ra) and b (under rb), in table order. A health check
// interval that only follows the router's default is left out: the router
// setting change names it once.
func BackendChanges(a, b *BackendSettings, ra, rb *Settings) []SettingChange {
	if *a == *b {
		return nil
	}
	var out []SettingChange
	for _, an := range Annotations {
		s := an.setting
		if s == nil || s.same(a, b) || (s.inherited != nil && s.inherited(a, b, ra, rb)) {
			continue
		}
		out = append(out, SettingChange{Field: an.Field, From: s.show(a), To: s.show(b)})
	}
	for _, f := range specSettings {
		if !f.setting.same(a, b) {
			out = append(out, SettingChange{Field: f.field, From: f.setting.show(a), To: f.setting.show(b)})
		}
	}
	return out
}

// specSettings are the backend settings a route's spec sets rather than
// an annotation.
var specSettings = []struct {
	field   string
	setting *backendSetting
}{
	{"httpHeaders.actions.request", field(func(b *BackendSettings) HeaderActions { return b.RequestHeaders }, HeaderActions.show)},
	{"httpHeaders.actions.response", field(func(b *BackendSettings) HeaderActions { return b.ResponseHeaders }, HeaderActions.show)},
}

func healthCheckSetting() *backendSetting {
	s := field(func(b *BackendSettings) time.Duration { return b.HealthCheckInterval }, time.Duration.String)
	s.inherited = func(a, b *BackendSettings, ra, rb *Settings) bool {
		return ra.HealthCheckInterval != rb.HealthCheckInterval &&
			a.HealthCheckInterval == ra.HealthCheckInterval && b.HealthCheckInterval == rb.HealthCheckInterval
	}
	return s
}

// showString shows a string setting, "" as `""` so an unset value reads
// as one.
func showString[T ~string](v T) string {
	if v == "" {
		return `""`
	}
	return string(v)
}

func showRewriteTarget(v string) string {
	if v == "" {
		return "unset"
	}
	return v
}

// AddressList is a normalized IP allowlist: addresses and CIDRs separated
// by single spaces. A string, so BackendSettings stays comparable.
type AddressList string

// Chunks yields the list n entries at a time, each chunk a substring of
// the list (no allocation).
func (l AddressList) Chunks(n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		s := string(l)
		for s != "" {
			end, count := 0, 0
			for end < len(s) {
				i := strings.IndexByte(s[end:], ' ')
				if i < 0 {
					end = len(s)
				} else {
					end += i
				}
				if count++; count == n || end == len(s) {
					break
				}
				end++
			}
			if !yield(s[:end]) {
				return
			}
			s = strings.TrimPrefix(s[end:], " ")
		}
	}
}

// Entries yields each address or CIDR.
func (l AddressList) Entries() iter.Seq[string] { return l.Chunks(1) }

func (l AddressList) show() string { return "[" + strings.ReplaceAll(string(l), " ", ",") + "]" }

// On reports whether rate limiting is enabled.
func (r RateLimit) On() bool { return r != RateLimit{} }

func (r RateLimit) String() string {
	if !r.On() {
		return "off"
	}
	return fmt.Sprintf("concurrent-tcp=%d rate-tcp=%d rate-http=%d", r.ConcurrentTCP, r.RateTCP, r.RateHTTP)
}

func parseBalance(p *annotationParse, v string) error {
	switch a := BalanceAlgorithm(strings.TrimSpace(v)); a {
	case BalanceRoundRobin, BalanceLeastConn, BalanceSource, BalanceRandom:
		p.b.Balance = a
		return nil
	}
	return fmt.Errorf("balance %q is not one of roundrobin, leastconn, source, random", v)
}

func parseTimeout(p *annotationParse, v string) error {
	d, err := parseTimeSpec(v)
	if p.term == TerminationPassthrough {
		// HAProxy relays a passthrough connection as a tunnel: as on
		// OpenShift, timeout sets its tunnel timeout unless
		// timeout-tunnel does, with a value it can use (OpenShift's
		// firstMatch takes the first valid one). An empty or invalid
		// timeout-tunnel left the tunnel at the default hour.
		if tunnel, _ := parseTimeSpec(p.ann[AnnotationTimeoutTunnel]); tunnel == 0 && d > 0 {
			p.b.TunnelTimeout = d
		}
		return err
	}
	p.b.Timeout = d
	return err
}

func parseTunnelTimeout(p *annotationParse, v string) error {
	d, err := parseTimeSpec(v)
	if d > 0 {
		p.b.TunnelTimeout = d // else timeout's, on a passthrough route
	}
	return err
}

func parseHealthCheckInterval(p *annotationParse, v string) error {
	d, err := parseTimeSpec(v)
	if d > 0 {
		// Also when capped at HAProxy's maximum (a notice, which says the
		// maximum is used), as OpenShift clips it.
		p.b.HealthCheckInterval = d
	}
	return err
}

// An allowlist's entries that cannot be read are left out, with a
// warning, and the others enforced, as OpenShift's parseIPList does: a
// route OpenShift serves (a list written with commas) is served alike.
// An allowlist with no entry it can read is an error of the route, not an
// annotation to ignore, as OpenShift's router ignores it: that would serve
// the route to every client its owner meant to keep out. The route's last
// good version keeps serving; a new route is not served until it is fixed.
// An empty value asks for no allowlist and is ignored.
func parseAllowlist(p *annotationParse, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("value is empty")
	}
	list, bad := parseIPAllowlist(v)
	if len(list) == 0 {
		return refusal{fmt.Errorf("%s; the route is not served with an allowlist it cannot enforce", notAddresses(bad))}
	}
	p.b.IPAllowlist = AddressList(strings.Join(list, " "))
	var problems []string
	if v != strings.TrimSpace(v) {
		// OpenShift's parseIPList drops such a list, which serves the
		// route to every client: haroute enforces it, and says so.
		problems = append(problems, surroundingSpace(v)+"; haroute enforces the list, where OpenShift's router would drop it and serve every client")
	}
	if len(bad) > 0 {
		msg := notAddresses(bad) + "; left out, as OpenShift's router leaves it out: the route allows " + string(p.b.IPAllowlist) + " only"
		if slices.ContainsFunc(bad, func(b string) bool { return strings.HasSuffix(b, ",") }) {
			msg += " (entries are separated by spaces, not commas)"
		}
		problems = append(problems, msg)
	}
	if len(problems) > 0 {
		return notice{errors.New(strings.Join(problems, "; "))}
	}
	return nil
}

// notAddresses says which allowlist entries are not addresses.
func notAddresses(bad []string) string {
	quoted := make([]string, len(bad))
	for i, b := range bad {
		quoted[i] = strconv.Quote(b)
	}
	if len(bad) == 1 {
		return quoted[0] + " is not an IP address or CIDR"
	}
	return strings.Join(quoted, ", ") + " are not IP addresses or CIDRs"
}

// refusal is an annotation error that rejects the route's version rather
// than leaving the annotation out: without it the route would be served
// with less protection than its owner asked for.
type refusal struct{ error }

func parseHSTSAnnotation(p *annotationParse, v string) error {
	h, err := parseHSTS(v)
	p.b.HSTSHeader = h
	return err
}

func parseDisableCookies(p *annotationParse, v string) error {
	on, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("value %q is not true or false", v)
	}
	p.b.DisableCookies = on
	return nil
}

// maxCookieName bounds a cookie name: a browser keeps at most 4096 bytes
// of a cookie's name and value, and HAProxy cut a name of 32 KiB to 9
// characters without a word (sticky sessions then stopped sticking).
const maxCookieName = 1024

func parseCookieName(p *annotationParse, v string) error {
	if !isCookieName(v) {
		return fmt.Errorf("cookie name %s must be non-empty and use only letters, digits, '_' and '-', as OpenShift's router requires", shortQuote(v))
	}
	if len(v) > maxCookieName {
		return fmt.Errorf("cookie name is %d bytes long, more than %d", len(v), maxCookieName)
	}
	p.b.CookieName = v
	return nil
}

func parseCookieSameSite(p *annotationParse, v string) error {
	if p.insecure == InsecurePolicyAllow {
		return fmt.Errorf("has no effect on routes that also serve plain HTTP (insecureEdgeTerminationPolicy Allow), whose cookies are not Secure, as on OpenShift")
	}
	// Spelled as OpenShift's router matches it, case included.
	switch v {
	case "Lax", "Strict", "None":
		p.b.CookieSameSite = v
	default:
		return fmt.Errorf("value %q is not one of Lax, Strict, None (OpenShift's router matches them as written)", v)
	}
	return nil
}

func parsePodConcurrentConnections(p *annotationParse, v string) error {
	n, err := positiveInt(v)
	p.b.PodConcurrentConnections = n
	return err
}

func parseRewriteTarget(p *annotationParse, v string) error {
	if msg := rewriteTargetProblem(v); msg != "" {
		return fmt.Errorf("%s", msg)
	}
	p.b.RewriteTarget = v
	return nil
}

func parseForwardedHeaders(p *annotationParse, v string) error {
	switch s := strings.TrimSpace(v); s {
	case "append", "replace", "never", "if-none":
		p.b.ForwardedHeaders = s
		return nil
	}
	return fmt.Errorf("value %q is not one of append, replace, never, if-none", v)
}

// parseRateLimitMember warns about a member of the rate-limit family
// written without the annotation that enables it; with it, parseRateLimit
// reads the member.
func parseRateLimitMember(p *annotationParse, _ string) error {
	if _, ok := p.ann[AnnotationRateLimit]; !ok {
		return fmt.Errorf("has no effect unless %s is \"true\"", AnnotationRateLimit)
	}
	return nil
}

// parseRateLimit reads the rate-limit-connections family.
func parseRateLimit(p *annotationParse, v string) error {
	subs := []struct {
		key  string
		http bool
		dst  *int
	}{
		{AnnotationRateLimitConcurrentTCP, false, &p.b.RateLimit.ConcurrentTCP},
		{AnnotationRateLimitRateTCP, false, &p.b.RateLimit.RateTCP},
		{AnnotationRateLimitRateHTTP, true, &p.b.RateLimit.RateHTTP},
	}
	// OpenShift reads it with strconv.ParseBool: "TRUE", "True" and "1"
	// enable it too.
	enabled, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		p.ignore(AnnotationRateLimit, "value %q is not true or false", v)
	}
	if !enabled {
		for _, s := range subs {
			if _, ok := p.ann[s.key]; ok {
				p.ignore(s.key, "has no effect unless %s is \"true\"", AnnotationRateLimit)
			}
		}
		return nil
	}
	for _, s := range subs {
		sv, ok := p.ann[s.key]
		if !ok {
			continue
		}
		if sv != strings.TrimSpace(sv) {
			p.ignore(s.key, "%s", surroundingSpace(sv))
			continue
		}
		if s.http && p.term == TerminationPassthrough {
			p.ignore(s.key, "%s", notOnPassthrough)
			continue
		}
		n, err := positiveInt(sv)
		if err != nil {
			p.ignore(s.key, "%v", err)
			continue
		}
		*s.dst = n
	}
	if !p.b.RateLimit.On() {
		return fmt.Errorf("none of .concurrent-tcp, .rate-tcp, .rate-http is set to a limit")
	}
	return nil
}
