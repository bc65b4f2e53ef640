package model

import (
	"fmt"
	"net/netip"
	"strings"
)

// Name rules shared by routes, services, namespaces and hosts. They are
// Kubernetes' (DNS-1123), written out by hand rather than as regular
// expressions because admission runs them for every route of every
// snapshot.

const (
	maxDNS1123Label     = 63
	maxDNS1123Subdomain = 253
)

// isDNS1123Label: 1–63 lowercase alphanumerics or '-', alphanumeric at both
// ends. Namespaces and service names.
func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > maxDNS1123Label {
		return false
	}
	if !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain: at most 253 characters of dot-separated labels, each
// lowercase alphanumerics or '-', alphanumeric at both ends. Kubernetes
// does not cap each label at 63 here (object names); hostProblem does.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > maxDNS1123Subdomain {
		return false
	}
	for rest := s; ; {
		label, after, more := strings.Cut(rest, ".")
		if len(label) == 0 || !isLowerAlnum(label[0]) || !isLowerAlnum(label[len(label)-1]) {
			return false
		}
		for i := 1; i < len(label)-1; i++ {
			if !isLowerAlnum(label[i]) && label[i] != '-' {
				return false
			}
		}
		if !more {
			return true
		}
		rest = after
	}
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// nameProblem checks metadata.name of a route: a DNS-1123 subdomain.
func nameProblem(name string) string {
	switch {
	case name == "":
		return "name is required"
	case len(name) > maxDNS1123Subdomain:
		return fmt.Sprintf("name is %d characters long, more than %d", len(name), maxDNS1123Subdomain)
	case !isDNS1123Subdomain(name):
		return fmt.Sprintf("name %q is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending alphanumeric)", name)
	}
	return ""
}

// namespaceProblem checks metadata.namespace (or a namespaces allow-list
// entry): a DNS-1123 label.
func namespaceProblem(ns string) string {
	switch {
	case len(ns) > maxDNS1123Label:
		return fmt.Sprintf("namespace is %d characters long, more than %d", len(ns), maxDNS1123Label)
	case !isDNS1123Label(ns):
		return fmt.Sprintf("namespace %q is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)", ns)
	}
	return ""
}

// hostProblem checks spec.host. Hosts are matched lowercased in HAProxy's
// maps, so an uppercase host is refused rather than silently folded:
// OpenShift refuses it too, and a manifest that works here then works there.
func hostProblem(host string) string {
	if msg := hostSyntaxProblem(host); msg != "" {
		return msg
	}
	return labelLengthProblem(host)
}

// hostSyntaxProblem is hostProblem without the label length rule.
func hostSyntaxProblem(host string) string {
	switch {
	case host == "":
		return "host is required: haroute has no default domain to generate one from"
	case strings.Contains(host, ":") && isIPv6Literal(host):
		// (An IPv4 address is a valid DNS-1123 subdomain, and OpenShift
		// admits it as a host.)
		return fmt.Sprintf("host %q is an IPv6 address; a route's host is a DNS name", host)
	case strings.Contains(host, ":"):
		return "host must not include a port"
	case strings.Contains(host, "*"):
		return "host must not contain \"*\": write the host of one subdomain and set wildcardPolicy: Subdomain"
	case len(host) > maxDNS1123Subdomain:
		return fmt.Sprintf("host is %d characters long, more than %d", len(host), maxDNS1123Subdomain)
	case strings.ToLower(host) != host:
		return fmt.Sprintf("host %q must be lowercase", host)
	case !isDNS1123Subdomain(host):
		return fmt.Sprintf("host %q is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each label starting and ending alphanumeric)", host)
	}
	return ""
}

// isIPv6Literal reports whether host is an IPv6 address, bracketed or
// not: its colons are not a port's.
func isIPv6Literal(host string) bool {
	if h, ok := strings.CutPrefix(host, "["); ok {
		if host, ok = strings.CutSuffix(h, "]"); !ok {
			return false
		}
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Is6()
}

// labelLengthProblem bounds each label of host to 63 characters, which
// OpenShift waives for routes annotated
// route.openshift.io/allow-non-dns-compliant-host: "true".
func labelLengthProblem(host string) string {
	for rest := host; ; {
		label, after, more := strings.Cut(rest, ".")
		if len(label) > maxDNS1123Label {
			return fmt.Sprintf("host label %q is %d characters long, more than %d", label, len(label), maxDNS1123Label)
		}
		if !more {
			return ""
		}
		rest = after
	}
}

// routeKeyProblem bounds host and path together: they become one map key
// (host + path + "?" or "/"), which must stay within MaxMapKeyLength. The host
// alone never exceeds it (253 bytes at most), so the path is at fault.
func routeKeyProblem(host, path string) string {
	if n := len(host) + len(path) + 1; n > MaxMapKeyLength {
		return fmt.Sprintf("host and path are %d bytes together, more than the limit of %d: "+
			"HAProxy's map lookup cannot tell longer keys apart, so the route could serve another route's requests or none",
			n-1, MaxMapKeyLength-1)
	}
	return ""
}

// pathProblem checks spec.path. The path becomes a key in an HAProxy map
// file, where whitespace separates key from value; '?' and '#' never
// reach the path HAProxy matches, and HAProxy refuses requests with
// control or non-ASCII bytes in their path. Quotes and '\' are admitted,
// as OpenShift admits them: HAProxy accepts them in request paths, and
// render quotes them where the path appears in haproxy.cfg.
func pathProblem(path string) string {
	if path == "" {
		return ""
	}
	if path[0] != '/' {
		return fmt.Sprintf("path %q must start with \"/\"", path)
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == ' ' || c == '\t':
			return fmt.Sprintf("path %q must not contain whitespace", path)
		case c < 0x20 || c == 0x7f:
			return fmt.Sprintf("path %q must not contain control characters", path)
		case c == '#' || c == '?':
			return fmt.Sprintf("path %q must not contain %q (fragments and queries are not part of the matched path)", path, string(c))
		case c >= 0x80:
			return fmt.Sprintf("path %q must be ASCII: percent-encode other characters, as they arrive in requests", path)
		}
	}
	return ""
}

// serviceNameProblem checks spec.to.name and alternateBackends[].name.
func serviceNameProblem(name string) string {
	switch {
	case name == "":
		return "service name is required"
	case !isDNS1123Label(name):
		return fmt.Sprintf("service name %q is not a valid DNS-1123 label (lowercase letters, digits and '-', at most 63, starting and ending alphanumeric)", name)
	}
	return ""
}

// portNameProblem checks a named targetPort: Kubernetes' IANA_SVC_NAME
// (at most 15 lowercase alphanumerics or '-', at least one letter, no
// leading, trailing or double '-'). A string of digits is taken as a
// number, as the OpenShift router does.
func portNameProblem(name string) string {
	if name == "" {
		return "targetPort name is empty"
	}
	if n, ok := allDigits(name); ok {
		if n < 1 || n > 65535 {
			return fmt.Sprintf("targetPort %s is out of range 1-65535", name)
		}
		return ""
	}
	bad := len(name) > 15 || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--")
	letter := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' {
			letter = true
		} else if !(c >= '0' && c <= '9') && c != '-' {
			bad = true
		}
	}
	if bad || !letter {
		return fmt.Sprintf("targetPort name %q is not a valid port name (at most 15 lowercase letters, digits and '-', with a letter)", name)
	}
	return ""
}

// allDigits parses s as a small decimal number; ok is false when s is not
// all digits or too long to be a port.
func allDigits(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// WildcardDomain returns what a wildcardPolicy: Subdomain route with host
// serves: "*.example.com" for "www.example.com".
func WildcardDomain(host string) string {
	if i := strings.IndexByte(host, '.'); i >= 0 {
		return "*" + host[i:]
	}
	return "*." + host
}
