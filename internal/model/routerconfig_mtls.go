package model

import (
	"regexp"
	"strings"
)

// Client certificates (spec.clientTLS), as the IngressController's.

// ClientTLSPolicy is spec.clientTLS, validated.
type ClientTLSPolicy struct {
	// Verify is HAProxy's verify: "required" or "optional".
	Verify string
	// SubjectFilter is the regular expression a client certificate's
	// subject DN must match, the allowed patterns joined as the ingress
	// operator joins them; "" admits every subject.
	SubjectFilter string
	// CA is inline PEM; CAFile a path the caller reads (model does no
	// I/O). Exactly one is set.
	CA     string
	CAFile string
}

func (v *rcCheck) clientTLS(c *ClientTLS) *ClientTLSPolicy {
	const f = "spec.clientTLS"
	if c == nil {
		return nil
	}
	out := &ClientTLSPolicy{}
	ok := true
	switch c.ClientCertificatePolicy {
	case "Required":
		out.Verify = "required"
	case "Optional":
		out.Verify = "optional"
	case "":
		v.errorf(f, "clientCertificatePolicy is required: Required or Optional")
		ok = false
	default:
		v.errorf(f+".clientCertificatePolicy", "clientCertificatePolicy %q is not one of Required, Optional", c.ClientCertificatePolicy)
		ok = false
	}
	switch ca := c.ClientCA; {
	case ca == "":
		v.errorf(f, "clientCA is required: the CA bundle client certificates are verified against (a file's absolute path or inline PEM)")
		ok = false
	case looksLikePEM(ca):
		if err := CheckCABundle([]byte(ca)); err != nil {
			v.errorf(f+".clientCA", "clientCA %v", err)
			ok = false
		}
		out.CA = ca
	default:
		if msg := filePathProblem("clientCA", ca); msg != "" {
			v.errorf(f+".clientCA", "%s", msg)
			ok = false
		}
		out.CAFile = ca
	}
	var pats []string
	for i, p := range c.AllowedSubjectPatterns {
		fi := index(f+".allowedSubjectPatterns", i)
		switch _, err := regexp.Compile(p); {
		case p == "":
			v.errorf(fi, "pattern is empty")
			ok = false
		case strings.ContainsFunc(p, isControl):
			v.errorf(fi, "pattern %q holds a control character", p)
			ok = false
		case err != nil:
			v.errorf(fi, "pattern %q is not a regular expression: %v", p, err)
			ok = false
		default:
			pats = append(pats, p)
		}
	}
	if len(pats) > 0 {
		// Each pattern in a group of its own: joined bare, a flag one
		// sets ("(?i)") held for the patterns after it, and "^/CN=admin$"
		// after "(?i)^/CN=foo$" also let "/CN=ADMIN" in. The ingress
		// operator joins them bare; each pattern meaning what it means
		// alone is what the API's list promises.
		out.SubjectFilter = "(?:(?:" + strings.Join(pats, ")|(?:") + "))"
	}
	if !ok {
		return nil
	}
	return out
}

func isControl(r rune) bool { return r < ' ' || r == 0x7f }

// String describes the policy for plans.
func (c *ClientTLSPolicy) String() string {
	if c == nil {
		return "off"
	}
	if c.SubjectFilter != "" {
		return c.Verify + " " + c.SubjectFilter
	}
	return c.Verify
}
