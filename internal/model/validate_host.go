package model

import (
	"fmt"
	"strings"
)

// Host generation, as OpenShift does it for routes without spec.host: in
// the IngressController's domain (the RouterConfig's spec.domain), the
// router serves spec.subdomain as <subdomain>.<domain>, and the API server
// gives a route with neither host nor subdomain <name>-<namespace>.<domain>,
// dots in the name turned into dashes (library-go's
// hostassignment.SimpleAllocationPlugin). The generated host is then
// validated as a written one is, so a name too long for a DNS label is
// rejected, as OpenShift rejects it.

// routeHost returns the route's host and whether it was generated. An
// empty host means the route has none, and why was reported.
func routeHost(c *routeCheck, r *Route, settings *Settings) (host string, generated bool) {
	spec := &r.Spec
	if spec.Host != "" {
		if spec.Subdomain != "" {
			c.add(SeverityNote, c.pos("spec.subdomain"), "spec.subdomain", "spec.host is set; spec.subdomain is ignored")
		}
		return spec.Host, false
	}
	if spec.WildcardPolicy == WildcardPolicySubdomain {
		// OpenShift allocates no host for wildcard routes either.
		c.add(SeverityError, c.pos("spec.host", "spec"), "spec.host",
			"host is required for wildcardPolicy Subdomain: no host is generated for wildcard routes")
		return "", false
	}
	if spec.Subdomain != "" {
		if msg := subdomainProblem(spec.Subdomain); msg != "" {
			c.errorf("spec.subdomain", "%s", msg)
			return "", false
		}
	}
	if settings.Domain == "" {
		if spec.Subdomain != "" {
			c.errorf("spec.subdomain",
				"subdomain needs a domain to generate the host <subdomain>.<domain>: set spec.domain in the RouterConfig, or spec.host in the route")
		} else {
			c.add(SeverityError, c.pos("spec.host", "spec"), "spec.host",
				"host is required: set spec.host in the route, or spec.domain in the RouterConfig to generate <name>-<namespace>.<domain>")
		}
		return "", false
	}
	if c.bad {
		// An invalid name or namespace was reported; a host made of it
		// would only repeat the error.
		return "", false
	}
	if spec.Subdomain != "" {
		host = spec.Subdomain + "." + settings.Domain
	} else {
		host = strings.ReplaceAll(r.Meta.Name, ".", "-") + "-" + r.Meta.Namespace + "." + settings.Domain
	}
	f := generatedFrom(spec)
	c.add(SeverityNote, c.pos(f, "spec"), "spec.host", fmt.Sprintf("host not set: generated %s, as OpenShift does", host))
	return host, true
}

// generatedFrom is the field a generated host was made from.
func generatedFrom(spec *RouteSpec) string {
	if spec.Subdomain != "" {
		return "spec.subdomain"
	}
	return "metadata.name"
}

// subdomainProblem checks spec.subdomain as OpenShift does: at most 253
// characters of DNS-1123 labels.
func subdomainProblem(s string) string {
	if len(s) > maxDNS1123Subdomain {
		return fmt.Sprintf("subdomain is %d characters long, more than %d", len(s), maxDNS1123Subdomain)
	}
	for _, label := range strings.Split(s, ".") {
		if !isDNS1123Label(label) {
			return fmt.Sprintf("subdomain %q: label %q is not a DNS-1123 label (1-63 lowercase letters, digits and '-', starting and ending alphanumeric)", s, label)
		}
	}
	return ""
}

// domainProblem checks the RouterConfig's spec.domain: a DNS name whose
// labels are DNS-1123 labels, as a host in it must be.
func domainProblem(d string) string {
	if len(d) > maxDNS1123Subdomain {
		return fmt.Sprintf("domain is %d characters long, more than %d", len(d), maxDNS1123Subdomain)
	}
	for _, label := range strings.Split(d, ".") {
		if !isDNS1123Label(label) {
			return fmt.Sprintf("domain %q is not a DNS name: label %q is not 1-63 lowercase letters, digits and '-', starting and ending alphanumeric", d, label)
		}
	}
	return ""
}
