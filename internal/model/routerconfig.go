package model

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// RouterConfig validation. Misconfiguring the router itself must never
// pass quietly, and must never take the running router down either: any
// error leaves the previous settings in force.

// reloadIntervalPattern is the pattern OpenShift's IngressController
// applies to tuningOptions.reloadInterval. Compiled once; never mutated.
var reloadIntervalPattern = regexp.MustCompile(`^(0|([0-9]+(\.[0-9]+)?(s|m))+)$`)

const (
	minReloadInterval      = time.Second
	maxReloadInterval      = 120 * time.Second
	minHealthCheckInterval = time.Second
	// Below this, checks from every worker towards every server start to
	// look like a SYN flood to the backends.
	quietHealthCheckInterval = 5 * time.Second
	maxThreadCount           = 64
	// maxMaxConnections is OpenShift's upper bound for the
	// IngressController's maxConnections. HAProxy keeps maxconn in an
	// int and wraps larger values without complaint.
	maxMaxConnections = 2_000_000
	nodePortMin       = 30000
	nodePortMax       = 32767
)

// routerConfigKept is the note on a RouterConfig with errors.
const routerConfigKept = "RouterConfig has errors; the previous settings stay in force"

// resolveSettings returns the settings in force for a snapshot: defaults
// when there is no RouterConfig, the RouterConfig's when it is valid, and
// prev (or defaults) when it is not.
func resolveSettings(rcs []RouterConfig, prev *Settings) (Settings, Diagnostics) {
	if len(rcs) == 0 {
		return DefaultSettings(), nil
	}
	fallback := DefaultSettings()
	if prev != nil {
		fallback = *prev
	}
	sorted := make([]*RouterConfig, len(rcs))
	for i := range rcs {
		sorted[i] = &rcs[i]
	}
	sort.SliceStable(sorted, func(i, j int) bool { return positionLess(sorted[i].Source.Pos, sorted[j].Source.Pos) })

	var ds Diagnostics
	var s Settings
	for i, rc := range sorted {
		var rds Diagnostics
		s, rds = settingsFrom(rc)
		ds = append(ds, rds...)
		if i > 0 {
			ds = append(ds, Diagnostic{
				Pos: rc.Source.Pos, Severity: SeverityError, Field: "kind",
				Message: fmt.Sprintf("more than one RouterConfig (%s and %s): at most one is allowed; the previous settings stay in force",
					sorted[0].Source.Pos, rc.Source.Pos),
			})
		}
	}
	if len(sorted) > 1 || ds.HasErrors(false) {
		if len(sorted) == 1 {
			ds = append(ds, Diagnostic{
				Pos: sorted[0].Source.Pos, Severity: SeverityNote,
				Message: routerConfigKept,
			})
		}
		return fallback, ds
	}
	return s, ds
}

// settingsFrom applies defaults to one RouterConfig and validates it.
func settingsFrom(rc *RouterConfig) (Settings, Diagnostics) {
	v := rcCheck{src: rc.Source}
	s := DefaultSettings()
	spec := &rc.Spec

	v.bindAddresses(&spec.BindOptions, &s)
	v.ports(spec.BindOptions.Ports, &s)

	if d, ok := v.reloadInterval(spec.TuningOptions.ReloadInterval); ok {
		s.ReloadInterval = d
	}
	if d, ok := v.healthCheckInterval(spec.TuningOptions.HealthCheckInterval); ok {
		s.HealthCheckInterval = d
	}

	if p := spec.TuningOptions.MaxConnections; p != nil {
		// As the IngressController reads it: 0 is the default, -1 as many
		// as the file-descriptor limit allows.
		switch {
		case *p == 0:
		case *p == -1:
			s.MaxConnections, s.MaxConnectionsAuto = maxMaxConnections, true
		case *p < 1:
			v.errorf("spec.tuningOptions.maxConnections", "maxConnections %d must be a positive integer, 0 (the default, %d) or -1 (as many as the file-descriptor limit allows)", *p, DefaultMaxConnections)
		case *p > maxMaxConnections:
			v.errorf("spec.tuningOptions.maxConnections", "maxConnections %d is more than %d", *p, maxMaxConnections)
		default:
			s.MaxConnections = *p
		}
	}
	if p := spec.TuningOptions.ThreadCount; p != nil {
		if *p < 0 || *p > maxThreadCount {
			v.errorf("spec.tuningOptions.threadCount", "threadCount %d is out of range 1-%d (0 or unset: HAProxy's default)", *p, maxThreadCount)
		} else {
			s.ThreadCount = *p
		}
	}
	t := &spec.TuningOptions
	for _, d := range []struct {
		name  string
		value string
		dst   *time.Duration
	}{
		{"clientTimeout", t.ClientTimeout, &s.ClientTimeout},
		{"serverTimeout", t.ServerTimeout, &s.ServerTimeout},
		{"connectTimeout", t.ConnectTimeout, &s.ConnectTimeout},
		{"tunnelTimeout", t.TunnelTimeout, &s.TunnelTimeout},
		{"clientFinTimeout", t.ClientFinTimeout, &s.ClientFinTimeout},
		{"serverFinTimeout", t.ServerFinTimeout, &s.ServerFinTimeout},
		{"tlsInspectDelay", t.TLSInspectDelay, &s.TLSInspectDelay},
		{"hardStopAfter", t.HardStopAfter, &s.HardStopAfter},
	} {
		if got, ok := v.timeout(d.name, d.value); ok {
			*d.dst = got
		}
	}

	v.buffers(t, &s)
	v.httpTimeouts(t, &s)
	s.IgnoreEmptyRequests = v.toggle("spec.httpEmptyRequestsPolicy", spec.HTTPEmptyRequestsPolicy, "Respond", "Ignore")
	// As the IngressController's: Immediate (HAProxy's default since 2.4)
	// closes the old process's idle keep-alive connections at a reload,
	// and a request a client sends on one at that moment meets a closed
	// connection (a browser sends a GET again; a POST fails). Deferred
	// keeps them until their next request, answered with Connection:
	// close, at the cost of old processes that live on until then (or
	// the keep-alive timeout, or hardStopAfter).
	s.DeferIdleClose = v.toggle("spec.idleConnectionTerminationPolicy", spec.IdleConnectionTerminationPolicy, "Immediate", "Deferred")
	s.AccessLog = v.accessLog(spec.Logging.Access)
	v.tlsProfile(spec.TLSSecurityProfile, &s)
	v.publishing(&spec.EndpointPublishingStrategy, &s)
	s.ClientTLS = v.clientTLS(spec.ClientTLS)
	s.UniqueID = v.uniqueID(&spec.HTTPHeaders.UniqueID)
	v.forwardedPolicy(spec.HTTPHeaders.ForwardedHeaderPolicy, &s)
	s.RequestHeaderActions = v.headerActions("request", spec.HTTPHeaders.Actions.Request)
	s.ResponseHeaderActions = v.headerActions("response", spec.HTTPHeaders.Actions.Response)
	s.CompressionMIMETypes = v.compression(spec.HTTPCompression.MimeTypes)
	s.HTTP2 = v.http2(rc)
	if d := spec.HTTPErrorCodePages; d != "" {
		if strings.IndexByte(d, 0) >= 0 || !strings.HasPrefix(d, "/") {
			v.errorf("spec.httpErrorCodePages", "httpErrorCodePages %q is not a directory's absolute path", d)
		} else {
			s.ErrorPagesDir = d
		}
	}

	if spec.DynamicConfigManager != nil {
		s.DynamicConfigManager = *spec.DynamicConfigManager
	}

	if c := spec.DefaultCertificate; c != "" {
		const f = "spec.defaultCertificate"
		if looksLikePEM(c) {
			if err := CheckCertificateBundle([]byte(c)); err != nil {
				v.errorf(f, "defaultCertificate %v", err)
			} else {
				s.DefaultCertificate = c
			}
		} else if msg := filePathProblem("defaultCertificate", c); msg != "" {
			v.errorf(f, "%s", msg)
		} else {
			s.DefaultCertificateFile = c
		}
	}
	if c := spec.DefaultDestinationCA; c != "" {
		const f = "spec.defaultDestinationCA"
		if looksLikePEM(c) {
			if err := CheckCABundle([]byte(c)); err != nil {
				v.errorf(f, "defaultDestinationCA %v", err)
			} else {
				s.DefaultDestinationCA = c
			}
		} else if msg := filePathProblem("defaultDestinationCA", c); msg != "" {
			v.errorf(f, "%s", msg)
		} else {
			s.DefaultDestinationCAFile = c
		}
	}

	if sel := spec.RouteSelector; sel != nil {
		v.ds = append(v.ds, validateSelector(sel, rc.Source, "spec.routeSelector")...)
		s.RouteSelector = sel
	}
	for i, ns := range spec.Namespaces {
		if msg := namespaceProblem(ns); msg != "" {
			v.errorf(fmt.Sprintf("spec.namespaces[%d]", i), "%s", msg)
		}
	}
	if len(spec.Namespaces) > 0 {
		s.Namespaces = append([]string(nil), spec.Namespaces...)
	}
	s.AllowWildcardRoutes = spec.AllowWildcardRoutes
	routeAdmission(&v, rc, &s)
	if d := spec.Domain; d != "" {
		if msg := domainProblem(d); msg != "" {
			v.errorf("spec.domain", "%s", msg)
		} else {
			s.Domain = d
		}
	}
	if p := spec.Stats.CredentialsFile; p != "" {
		if msg := statsCredentialsPathProblem(p); msg != "" {
			v.errorf("spec.stats.credentialsFile", "%s", msg)
		} else {
			s.StatsCredentialsFile = p
		}
	}
	return s, v.ds
}

func statsCredentialsPathProblem(p string) string {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return "credentialsFile path must not contain a NUL byte"
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("credentialsFile %q is not an absolute file path", p)
	}
	return ""
}

// StatsCredentials are the user and password of the /stats page.
type StatsCredentials struct {
	User     string
	Password string
}

// Set reports whether the /stats page has credentials (and so is served).
func (c StatsCredentials) Set() bool { return c.User != "" }

// ParseStatsCredentials reads a credentials file's content: "user:password"
// on one line (a final newline is allowed). The password may hold any
// printable ASCII character but the single quote, which render uses to
// quote it; the user is a plain name. Errors never repeat the content:
// it is a secret.
func ParseStatsCredentials(data []byte) (StatsCredentials, error) {
	line := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if strings.ContainsAny(line, "\r\n") {
		return StatsCredentials{}, errors.New("more than one line; want user:password on one line")
	}
	user, password, ok := strings.Cut(line, ":")
	switch {
	case !ok:
		return StatsCredentials{}, errors.New("no ':'; want user:password on one line")
	case user == "":
		return StatsCredentials{}, errors.New("empty user; want user:password on one line")
	case password == "":
		return StatsCredentials{}, errors.New("empty password; want user:password on one line")
	}
	for _, c := range user {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)) {
			return StatsCredentials{}, errors.New("user may hold only letters, digits and . _ @ -")
		}
	}
	for _, c := range password {
		if c < '!' || c > '~' || c == '\'' {
			return StatsCredentials{}, errors.New("password may hold only printable ASCII characters other than space and '")
		}
	}
	return StatsCredentials{User: user, Password: password}, nil
}

// filePathProblem checks a value that is not inline PEM, so must be a file
// path for the daemon to read. Relative paths would depend on the daemon's
// working directory, which systemd does not promise.
func filePathProblem(name, p string) string {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Sprintf("%s file path must not contain a NUL byte", name)
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%s %q is neither inline PEM (-----BEGIN …) nor an absolute file path", name, p)
	}
	return ""
}

// rcCheck collects the diagnostics of one RouterConfig.
type rcCheck struct {
	src Source
	ds  Diagnostics
}

func (v *rcCheck) add(sev Severity, field, format string, args ...any) {
	v.ds = append(v.ds, Diagnostic{Pos: v.src.At(field), Severity: sev, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *rcCheck) errorf(field, format string, args ...any) {
	v.add(SeverityError, field, format, args...)
}

func (v *rcCheck) warnf(field, format string, args ...any) {
	v.add(SeverityWarning, field, format, args...)
}

func (v *rcCheck) ports(p BindPorts, s *Settings) {
	type port struct {
		name     string
		field    string
		value    *int
		dst      *int
		explicit bool
	}
	ports := []*port{
		{name: "http", value: p.HTTP, dst: &s.HTTPPort},
		{name: "https", value: p.HTTPS, dst: &s.HTTPSPort},
		{name: "stats", value: p.Stats, dst: &s.StatsPort},
	}
	for _, pt := range ports {
		pt.field = "spec.bindOptions.ports." + pt.name
		if pt.value == nil {
			continue
		}
		n := *pt.value
		switch {
		case n == 0:
			v.errorf(pt.field, "port 0 is not allowed: omit the field for the default %d", *pt.dst)
		case n < 1 || n > 65535:
			v.errorf(pt.field, "port %d is out of range 1-65535", n)
		default:
			*pt.dst = n
			pt.explicit = true
			if n >= nodePortMin && n <= nodePortMax {
				v.warnf(pt.field, "port %d is inside the Kubernetes NodePort range %d-%d", n, nodePortMin, nodePortMax)
			}
		}
	}
	for j := 1; j < len(ports); j++ {
		for i := 0; i < j; i++ {
			a, b := ports[i], ports[j]
			if *a.dst != *b.dst {
				continue
			}
			at := b
			if !b.explicit {
				at = a
			}
			v.errorf(at.field, "port clash: %s and %s are both port %d", a.name, b.name, *b.dst)
		}
	}
}

func (v *rcCheck) reloadInterval(raw string) (time.Duration, bool) {
	const f = "spec.tuningOptions.reloadInterval"
	if raw == "" {
		return 0, false
	}
	if !reloadIntervalPattern.MatchString(raw) {
		v.errorf(f, "reloadInterval %q does not match %s (e.g. 5s, 1m, 1.5m)", raw, reloadIntervalPattern)
		return 0, false
	}
	d, err := time.ParseDuration(raw)
	if err != nil {
		// "0" alone and sums like "1m30s" parse; this is unreachable
		// unless the pattern and the parser disagree.
		v.errorf(f, "reloadInterval %q: %v", raw, err)
		return 0, false
	}
	switch {
	case d == 0:
		return 0, false
	case d < minReloadInterval:
		v.warnf(f, "reloadInterval %q is below 1s; using 1s", raw)
		return minReloadInterval, true
	case d > maxReloadInterval:
		v.warnf(f, "reloadInterval %q is above 120s; using 120s", raw)
		return maxReloadInterval, true
	}
	return d, true
}

func (v *rcCheck) healthCheckInterval(raw string) (time.Duration, bool) {
	const f = "spec.tuningOptions.healthCheckInterval"
	if raw == "" {
		return 0, false
	}
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		v.errorf(f, "healthCheckInterval %q is not a duration (e.g. 5s, 500ms, 1m30s)", raw)
		return 0, false
	case d < 0:
		v.errorf(f, "healthCheckInterval %q must not be negative", raw)
		return 0, false
	case d == 0:
		return 0, false
	case d < minHealthCheckInterval:
		v.warnf(f, "healthCheckInterval %q is below 1s; using 1s", raw)
		return minHealthCheckInterval, true
	case d > maxHAProxyTime:
		v.warnf(f, "healthCheckInterval %q is above HAProxy's maximum of 2147483647ms; using 2147483647ms", raw)
		return maxHAProxyTime, true
	case d < quietHealthCheckInterval:
		v.warnf(f, "healthCheckInterval %q is below 5s: checks from every worker to every server can look like a SYN flood to backends", raw)
	}
	return d, true
}

func (v *rcCheck) timeout(name, raw string) (time.Duration, bool) {
	f := "spec.tuningOptions." + name
	if raw == "" {
		return 0, false
	}
	d, err := time.ParseDuration(raw)
	switch {
	case err != nil:
		v.errorf(f, "%s %q is not a duration (e.g. 30s, 1m, 1h)", name, raw)
		return 0, false
	case d < 0:
		v.errorf(f, "%s %q must not be negative", name, raw)
		return 0, false
	case d > maxHAProxyTime:
		v.errorf(f, "%s %q is above HAProxy's maximum of 2147483647ms", name, raw)
		return 0, false
	case d == 0 && name != "hardStopAfter":
		// Zero would mean "no timeout" to HAProxy; the API treats
		// it as unset, and so do we.
		return 0, false
	case d > 0 && d < time.Millisecond:
		// HAProxy counts in milliseconds: rendered, it was 1ms, silently.
		v.warnf(f, "%s %q is below HAProxy's resolution of 1ms; using 1ms", name, raw)
		return time.Millisecond, true
	}
	return d, true
}

// Values of spec.routeAdmission, the IngressController's.
const (
	NamespaceOwnershipStrict       = "Strict"
	NamespaceOwnershipInterAllowed = "InterNamespaceAllowed"
	WildcardsAllowed               = "WildcardsAllowed"
	WildcardsDisallowed            = "WildcardsDisallowed"
)

// routeAdmission applies spec.routeAdmission. Its wildcardPolicy is the
// IngressController's spelling of allowWildcardRoutes; the two must not
// disagree when both are written.
func routeAdmission(v *rcCheck, rc *RouterConfig, s *Settings) {
	ra := rc.Spec.RouteAdmission
	switch ra.NamespaceOwnership {
	case "", NamespaceOwnershipStrict:
	case NamespaceOwnershipInterAllowed:
		s.InterNamespaceAllowed = true
	default:
		v.errorf("spec.routeAdmission.namespaceOwnership", "namespaceOwnership %q is not one of %s, %s",
			ra.NamespaceOwnership, NamespaceOwnershipStrict, NamespaceOwnershipInterAllowed)
	}
	const f = "spec.routeAdmission.wildcardPolicy"
	var allow bool
	switch ra.WildcardPolicy {
	case "":
		return
	case WildcardsAllowed:
		allow = true
	case WildcardsDisallowed:
	default:
		v.errorf(f, "wildcardPolicy %q is not one of %s, %s", ra.WildcardPolicy, WildcardsAllowed, WildcardsDisallowed)
		return
	}
	if _, written := rc.Source.Lookup("spec.allowWildcardRoutes"); written && rc.Spec.AllowWildcardRoutes != allow {
		v.errorf(f, "wildcardPolicy %s contradicts spec.allowWildcardRoutes: %t; set one of them", ra.WildcardPolicy, rc.Spec.AllowWildcardRoutes)
		return
	}
	s.AllowWildcardRoutes = allow
}
