package model

import (
	"regexp"
	"strings"
)

// TLSPolicy is a tlsSecurityProfile as HAProxy takes it.
type TLSPolicy struct {
	Profile string // Old, Intermediate, Modern or Custom
	// Ciphers are for TLS 1.2 and below (ssl-default-bind-ciphers);
	// empty when only TLS 1.3 ones were given.
	Ciphers string
	// CipherSuites are the TLS 1.3 ones (ssl-default-bind-ciphersuites).
	CipherSuites string
	MinVersion   string // TLSv1.1 … TLSv1.3, as ssl-min-ver takes it
}

// tlsProfiles are OpenShift's (openshift/api config/v1 TLSProfiles), split
// as the ingress operator splits them between ROUTER_CIPHERS and
// ROUTER_CIPHERSUITES, with TLS 1.0 raised to 1.1 as it does.
var tlsProfiles = map[string]TLSPolicy{
	"Old": tlsPolicy("Old", "VersionTLS10", strings.Split("TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256 "+
		"ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384 "+
		"ECDHE-ECDSA-CHACHA20-POLY1305 ECDHE-RSA-CHACHA20-POLY1305 ECDHE-ECDSA-AES128-SHA256 ECDHE-RSA-AES128-SHA256 "+
		"ECDHE-ECDSA-AES128-SHA ECDHE-RSA-AES128-SHA ECDHE-ECDSA-AES256-SHA384 ECDHE-RSA-AES256-SHA384 ECDHE-ECDSA-AES256-SHA "+
		"ECDHE-RSA-AES256-SHA AES128-GCM-SHA256 AES256-GCM-SHA384 AES128-SHA256 AES256-SHA256 AES128-SHA AES256-SHA DES-CBC3-SHA", " ")),
	"Intermediate": tlsPolicy("Intermediate", "VersionTLS12", strings.Split("TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256 "+
		"ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-RSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES256-GCM-SHA384 ECDHE-RSA-AES256-GCM-SHA384 "+
		"ECDHE-ECDSA-CHACHA20-POLY1305 ECDHE-RSA-CHACHA20-POLY1305", " ")),
	"Modern": tlsPolicy("Modern", "VersionTLS13", strings.Split("TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256", " ")),
}

// tls13Ciphers are the TLS 1.3 cipher suites OpenSSL knows.
var tls13Ciphers = map[string]bool{
	"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true,
	"TLS_AES_128_CCM_SHA256": true, "TLS_AES_128_CCM_8_SHA256": true,
}

// tlsMinVersions maps the API's versions to ssl-min-ver's; TLS 1.0 is
// raised to 1.1, as the ingress operator does.
var tlsMinVersions = map[string]string{
	"VersionTLS10": "TLSv1.1", "VersionTLS11": "TLSv1.1", "VersionTLS12": "TLSv1.2", "VersionTLS13": "TLSv1.3",
}

func tlsPolicy(profile, minVersion string, ciphers []string) TLSPolicy {
	var old, v13 []string
	for _, c := range ciphers {
		if tls13Ciphers[c] {
			v13 = append(v13, c)
		} else {
			old = append(old, c)
		}
	}
	return TLSPolicy{Profile: profile, Ciphers: strings.Join(old, ":"), CipherSuites: strings.Join(v13, ":"), MinVersion: tlsMinVersions[minVersion]}
}

// cipherName is an OpenSSL cipher name; anything else would be read by
// OpenSSL as a cipher string operator (!, +, @SECLEVEL, …).
var cipherName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func (v *rcCheck) tlsProfile(p *TLSSecurityProfile, s *Settings) {
	const f = "spec.tlsSecurityProfile"
	if p == nil {
		return
	}
	switch p.Type {
	case "", "Intermediate":
	case "Old", "Modern":
		s.TLS = tlsProfiles[p.Type]
	case "Custom":
		c := p.Custom
		if c == nil {
			v.errorf(f+".type", "type Custom needs tlsSecurityProfile.custom with ciphers and minTLSVersion")
			return
		}
		ok := true
		min, known := tlsMinVersions[c.MinTLSVersion]
		if !known {
			v.errorf(f+".custom.minTLSVersion", "minTLSVersion %q is not one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13", c.MinTLSVersion)
			ok = false
		}
		if len(c.Ciphers) == 0 {
			v.errorf(f+".custom", "custom.ciphers is empty: name at least one cipher")
			ok = false
		}
		var v13 int
		for i, name := range c.Ciphers {
			if !cipherName.MatchString(name) {
				v.errorf(index(f+".custom.ciphers", i), "cipher %q is not an OpenSSL cipher name", name)
				ok = false
			}
			if tls13Ciphers[name] {
				v13++
			}
		}
		if ok && min == "TLSv1.3" && v13 == 0 {
			v.errorf(f+".custom.ciphers", "minTLSVersion is VersionTLS13 but no TLS 1.3 cipher (TLS_AES_128_GCM_SHA256, …) is listed: no client could connect")
			ok = false
		}
		if ok {
			s.TLS = tlsPolicy("Custom", c.MinTLSVersion, c.Ciphers)
			if min != "TLSv1.3" && s.TLS.Ciphers == "" {
				// Without ssl-default-bind-ciphers, TLS 1.2 took
				// OpenSSL's DEFAULT list, wider than any profile's (CBC
				// and SHA-1 suites): a list narrowed to TLS 1.3 opened
				// 1.2 up. OpenShift's router falls back on its
				// intermediate list when ROUTER_CIPHERS is empty.
				s.TLS.Ciphers = tlsProfiles["Intermediate"].Ciphers
				v.warnf(f+".custom.ciphers", "no cipher for TLS 1.2, which minTLSVersion %s allows, is listed: TLS 1.2 uses the Intermediate profile's ciphers, as on OpenShift; set minTLSVersion VersionTLS13 to allow TLS 1.3 alone", c.MinTLSVersion)
			}
		}
	default:
		v.errorf(f+".type", "type %q is not one of Old, Intermediate, Modern, Custom", p.Type)
	}
}
