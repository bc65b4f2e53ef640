package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Route validation. Every rule reports at the field it is about, so an
// operator can go from `haroute check` output straight to the line. Errors
// reject the route alone; warnings leave it admitted and are listed in its
// status.

// maxAlternateBackends is OpenShift's limit on spec.alternateBackends.
const maxAlternateBackends = 3

// defaultServiceWeight is the weight of a service whose weight is not written.
const defaultServiceWeight = 100

// maxServiceWeight is the highest service (and HAProxy server) weight.
const maxServiceWeight = 256

// routeCheck collects the diagnostics of one route.
type routeCheck struct {
	src   Source
	diags Diagnostics
	bad   bool // an error was reported: the route is rejected
}

func newRouteCheck(r *Route) *routeCheck {
	return &routeCheck{src: r.Source}
}

// pos returns where field was written, or where the first of the fallback
// fields was, or the object: a missing field is reported at its parent.
func (c *routeCheck) pos(field string, fallbacks ...string) Position {
	return positionOf(c.src, field, fallbacks...)
}

func positionOf(src Source, field string, fallbacks ...string) Position {
	if p, ok := src.Lookup(field); ok {
		return p
	}
	for _, f := range fallbacks {
		if p, ok := src.Lookup(f); ok {
			return p
		}
	}
	return src.Pos
}

func (c *routeCheck) add(sev Severity, pos Position, field, msg string) {
	if sev == SeverityError {
		c.bad = true
	}
	c.diags = append(c.diags, Diagnostic{Pos: pos, Severity: sev, Field: field, Message: msg})
}

func (c *routeCheck) errorf(field string, format string, args ...any) {
	c.add(SeverityError, c.pos(field), field, fmt.Sprintf(format, args...))
}

func (c *routeCheck) warnf(field string, format string, args ...any) {
	c.add(SeverityWarning, c.pos(field), field, fmt.Sprintf(format, args...))
}

// validateRoute checks r against settings and returns it in admitted form,
// with services named and weighted but not yet resolved to endpoints.
// check.bad tells whether it must be rejected.
func validateRoute(r *Route, settings *Settings) (AdmittedRoute, *routeCheck) {
	c := newRouteCheck(r)
	for _, d := range r.slips {
		c.add(d.Severity, d.Pos, d.Field, d.Message)
	}
	if msg := nameProblem(r.Meta.Name); msg != "" {
		c.errorf("metadata.name", "%s", msg)
	}
	if msg := namespaceProblem(r.Meta.Namespace); msg != "" {
		c.errorf("metadata.namespace", "%s", msg)
	}
	spec := &r.Spec
	host, generated := routeHost(c, r, settings)
	ar := AdmittedRoute{
		Key:               RouteKey{Namespace: r.Meta.Namespace, Name: r.Meta.Name},
		CreationTimestamp: r.Meta.CreationTimestamp,
		Host:              host,
		Path:              spec.Path,
	}
	// keyHost is what the map key holds of the host: nothing for a
	// host already refused, so a bad host is not reported twice.
	keyHost := ""
	switch {
	case host == "": // routeHost said why
	case generated:
		if msg := hostProblem(host); msg != "" {
			f := generatedFrom(spec)
			c.add(SeverityError, c.pos(f, "spec"), f, fmt.Sprintf("generated host %q is not valid: %s; set spec.host", host, msg))
		} else {
			keyHost = host
		}
	default:
		if msg := specHostProblem(r, host); msg != "" {
			c.add(SeverityError, c.pos("spec.host", "spec"), "spec.host", msg)
		} else {
			keyHost = host
		}
	}
	if msg := routeKeyProblem(keyHost, spec.Path); msg != "" {
		c.errorf("spec.path", "%s", msg)
	} else if msg := pathProblem(spec.Path); msg != "" {
		c.errorf("spec.path", "%s", msg)
	}

	validateTLS(c, spec, &ar)
	validateWildcard(c, spec, settings, &ar)
	ar.Services = validateServices(c, spec)
	validateTargetPort(c, spec.Port)
	ar.Backend = parseAnnotations(c, r, ar.Termination, ar.InsecurePolicy, settings)
	ar.Backend.RequestHeaders, ar.Backend.ResponseHeaders = validateHTTPHeaders(c, spec, ar.Termination, settings)
	return ar, c
}

// specHostProblem is hostProblem for a written spec.host, whose labels may
// exceed 63 characters when the route says so, as on OpenShift.
func specHostProblem(r *Route, host string) string {
	if msg := hostSyntaxProblem(host); msg != "" {
		return msg
	}
	if r.Meta.Annotations[AnnotationAllowNonDNSCompliantHost] == "true" {
		return ""
	}
	if msg := labelLengthProblem(host); msg != "" {
		return fmt.Sprintf("%s (OpenShift allows it on a route annotated %s: \"true\")", msg, AnnotationAllowNonDNSCompliantHost)
	}
	return ""
}

func validateTLS(c *routeCheck, spec *RouteSpec, ar *AdmittedRoute) {
	tls := spec.TLS
	if tls == nil {
		return
	}
	term := defaultTermination(c, tls)
	switch term {
	case TerminationEdge, TerminationReencrypt, TerminationPassthrough:
		ar.Termination = term
	case TerminationNone:
		c.add(SeverityError, c.pos("spec.tls.termination", "spec.tls"), "spec.tls.termination",
			"termination is required when tls is set (edge, reencrypt or passthrough)")
	default:
		c.errorf("spec.tls.termination", "termination %q is not one of edge, reencrypt, passthrough", term)
	}

	switch tls.InsecureEdgeTerminationPolicy {
	case "", InsecurePolicyNone:
		ar.InsecurePolicy = InsecurePolicyNone
	case InsecurePolicyRedirect:
		ar.InsecurePolicy = InsecurePolicyRedirect
	case InsecurePolicyAllow:
		ar.InsecurePolicy = InsecurePolicyAllow
		if term == TerminationPassthrough {
			c.errorf("spec.tls.insecureEdgeTerminationPolicy",
				"insecureEdgeTerminationPolicy Allow is not supported for passthrough routes (use None or Redirect)")
		}
	default:
		c.errorf("spec.tls.insecureEdgeTerminationPolicy",
			"insecureEdgeTerminationPolicy %q is not one of None, Allow, Redirect", tls.InsecureEdgeTerminationPolicy)
	}

	if tls.ExternalCertificate != "" {
		const f = "spec.tls.externalCertificate"
		switch {
		case term == TerminationPassthrough:
			c.errorf(f, "passthrough routes cannot have an externalCertificate: the backend terminates TLS")
		case tls.Certificate != "":
			c.errorf(f, "cannot specify both tls.certificate and tls.externalCertificate")
		default:
			// Resolved against the Secrets of the route's namespace
			// at admission (resolveExternalCertificate).
			ar.TLS.ExternalCertificate = tls.ExternalCertificate
		}
	}
	if term == TerminationPassthrough {
		if spec.Path != "" {
			c.errorf("spec.path", "passthrough routes cannot have a path: TLS is not terminated, so only the SNI host is visible")
		}
		for _, f := range []struct{ field, value string }{
			{"spec.tls.certificate", tls.Certificate},
			{"spec.tls.key", tls.Key},
			{"spec.tls.caCertificate", tls.CACertificate},
			{"spec.tls.destinationCACertificate", tls.DestinationCACertificate},
		} {
			if f.value != "" {
				c.errorf(f.field, "passthrough routes cannot have a %s: the backend terminates TLS", f.field[len("spec.tls."):])
			}
		}
		return
	}

	tls = withRelabeledKey(c, withBundledKey(c, tls))
	switch {
	case tls.Certificate != "" && tls.Key == "":
		c.add(SeverityError, c.pos("spec.tls.key", "spec.tls.certificate"), "spec.tls.key", "key is required when certificate is set")
	case tls.Certificate == "" && tls.Key != "" && tls.ExternalCertificate == "":
		// OpenShift admits a key without a certificate: its router only
		// checks that the key is PEM (ExtendedValidateRoute), then serves
		// the route with the default certificate, and the key goes unused.
		if err := keyParses(tls.Key); err != nil {
			c.errorf("spec.tls.key", "key %s", err)
		} else {
			c.add(SeverityWarning, c.pos("spec.tls.key"), "spec.tls.key",
				"key without a certificate is ignored: the route is served with the default certificate, as OpenShift does; set certificate to serve the route's own")
		}
		unkeyed := *tls
		unkeyed.Key = ""
		tls = &unkeyed
	case tls.Certificate == "" && tls.Key != "":
		c.add(SeverityError, c.pos("spec.tls.certificate", "spec.tls.key"), "spec.tls.certificate", "certificate is required when key is set")
	}
	for _, p := range checkRouteTLSMaterial(tls) {
		c.errorf("spec.tls."+p.field, "%s", p.msg)
	}
	if tls.DestinationCACertificate != "" && term == TerminationEdge {
		c.errorf("spec.tls.destinationCACertificate",
			"destinationCACertificate is only valid for reencrypt routes: edge routes talk plain HTTP to the backend")
	}
	ar.TLS = RouteTLS{
		Certificate:              tls.Certificate,
		Key:                      tls.Key,
		CACertificate:            tls.CACertificate,
		DestinationCACertificate: tls.DestinationCACertificate,
		ExternalCertificate:      ar.TLS.ExternalCertificate,
	}
}

// defaultTermination is spec.tls.termination after OpenShift's defaulting
// (openshift/library-go pkg/route/defaulting): a tls block without a
// termination, and without the destinationCACertificate that only
// reencrypt takes, is edge; "Edge", "Reencrypt" and "Passthrough" are
// read in lowercase. A note says what was defaulted; the route object
// itself is left as written.
func defaultTermination(c *routeCheck, tls *TLSConfig) Termination {
	const field = "spec.tls.termination"
	switch t := tls.Termination; t {
	case TerminationNone:
		if tls.DestinationCACertificate != "" {
			return t
		}
		c.add(SeverityNote, c.pos(field, "spec.tls"), field, "termination is not set: defaulted to edge, as OpenShift does")
		return TerminationEdge
	case "Edge", "Reencrypt", "Passthrough":
		lower := Termination(strings.ToLower(string(t)))
		c.add(SeverityNote, c.pos(field), field, fmt.Sprintf("termination %q is read as %q, as OpenShift does", t, lower))
		return lower
	default:
		return t
	}
}

func validateWildcard(c *routeCheck, spec *RouteSpec, settings *Settings, ar *AdmittedRoute) {
	switch spec.WildcardPolicy {
	case "", WildcardPolicyNone:
	case WildcardPolicySubdomain:
		ar.Wildcard = true
		if !settings.AllowWildcardRoutes {
			c.errorf("spec.wildcardPolicy",
				"wildcard routes are not allowed: set spec.allowWildcardRoutes: true in the RouterConfig")
		}
		if n := countLabels(spec.Host); spec.Host != "" && n < 3 {
			c.errorf("spec.wildcardPolicy",
				"wildcardPolicy Subdomain needs a host with at least three labels (www.example.com serves *.example.com), got %q", spec.Host)
		}
	default:
		c.errorf("spec.wildcardPolicy", "wildcardPolicy %q is not one of None, Subdomain", spec.WildcardPolicy)
	}
}

func countLabels(host string) int {
	n := 1
	for i := 0; i < len(host); i++ {
		if host[i] == '.' {
			n++
		}
	}
	return n
}

// targets are spec.to and spec.alternateBackends, in order.
func (spec *RouteSpec) targets() []RouteTargetReference {
	return append([]RouteTargetReference{spec.To}, spec.AlternateBackends...)
}

// validateServices checks spec.to and spec.alternateBackends and returns
// them as ServiceBackends (without servers).
func validateServices(c *routeCheck, spec *RouteSpec) []ServiceBackend {
	refs := spec.targets()
	if len(spec.AlternateBackends) > maxAlternateBackends {
		f := fmt.Sprintf("spec.alternateBackends[%d]", maxAlternateBackends)
		c.add(SeverityError, c.pos(f, f+".name", "spec.alternateBackends"), "spec.alternateBackends",
			fmt.Sprintf("at most %d alternateBackends are allowed, got %d", maxAlternateBackends, len(spec.AlternateBackends)))
	}
	out := make([]ServiceBackend, 0, len(refs))
	for i, ref := range refs {
		prefix := "spec.to"
		if i > 0 {
			prefix = "spec.alternateBackends[" + strconv.Itoa(i-1) + "]"
		}
		switch ref.Kind {
		case "", "Service":
		default:
			c.errorf(prefix+".kind", "kind %q is not supported: only Service", ref.Kind)
		}
		if msg := serviceNameProblem(ref.Name); msg != "" {
			sev := SeverityError
			if ref.Name != "" {
				// OpenShift admits any service name a route gives; one no
				// Service can carry just never has endpoints.
				sev, msg = SeverityWarning, msg+": no Service can have it, so this service never has endpoints, as on OpenShift (its share goes to the route's other services; "+Answers503+" if it has none)"
			}
			c.add(sev, c.pos(prefix+".name", prefix), prefix+".name", msg)
		}
		w := int32(defaultServiceWeight)
		if ref.Weight != nil {
			w = *ref.Weight
			if w < 0 || w > maxServiceWeight {
				c.errorf(prefix+".weight", "weight %d is out of range 0-%d", w, maxServiceWeight)
			}
		}
		if j := slices.IndexFunc(refs[:i], func(o RouteTargetReference) bool { return o.Name == ref.Name }); j >= 0 && ref.Name != "" {
			// OpenShift admits this and keeps the service once, with
			// the weight named last; so does haroute.
			first := "spec.to"
			if j > 0 {
				first = "spec.alternateBackends[" + strconv.Itoa(j-1) + "]"
			}
			c.warnf(prefix+".name", "service %q is already named in %s; it is used once, with weight %d from here, as OpenShift does", ref.Name, first, w)
			for k := range out {
				if out[k].Name == ref.Name {
					out[k].Weight = w
				}
			}
		}
		out = append(out, ServiceBackend{Name: ref.Name, Weight: w})
	}
	return out
}

func validateTargetPort(c *routeCheck, port *RoutePort) {
	if port == nil {
		return
	}
	tp := port.TargetPort
	const field = "spec.port.targetPort"
	// OpenShift requires only a non-zero number or a non-empty name; a
	// name that matches no port leaves the route without endpoints, so it
	// is a warning here, not a rejection (OpenShift admits "0" as a
	// name). A number outside 1-65535 is no port at all: it is an error,
	// so that a typo in a served route (80800 for 8080) keeps its last
	// good version serving rather than answer 503, where OpenShift would
	// admit it and serve nothing.
	if tp.IsString {
		if tp.Str == "" {
			c.add(SeverityError, c.pos(field, "spec.port"), field, "targetPort name is empty")
		} else if msg := portNameProblem(tp.Str); msg != "" {
			c.add(SeverityWarning, c.pos(field, "spec.port"), field, msg+": it matches no endpoint port, so the route gets no endpoints")
		}
		return
	}
	switch {
	case tp.Int == 0:
		c.add(SeverityError, c.pos(field, "spec.port"), field, "targetPort 0 is not a port: give a port number or name")
	case tp.Int < 1 || tp.Int > 65535:
		c.add(SeverityError, c.pos(field, "spec.port"), field, fmt.Sprintf("targetPort %d is out of range 1-65535", tp.Int))
	}
}
