package model

import (
	"reflect"
	"strings"
	"testing"
)

// TestValidateRoute checks each route rule, with the exact diagnostic it
// gives. testRoute positions field n of routeFields on line 10+n of
// "<ns>-<name>.yaml"; validation runs with default settings unless the
// case allows wildcards.
func TestValidateRoute(t *testing.T) {
	rsa := genPair(t, "rsa", "pkcs1", "rsa.example.com")
	ecP8 := genPair(t, "ecdsa", "pkcs8", "ec.example.com")
	ecSEC1 := genPair(t, "ecdsa", "ec", "ec1.example.com")
	ed := genPair(t, "ed25519", "pkcs8", "ed.example.com")

	tests := []struct {
		name      string
		edit      func(r *Route)
		wildcards bool
		want      []string
		check     func(t *testing.T, ar *AdmittedRoute)
	}{
		{name: "valid plain route", edit: func(r *Route) {}},
		{name: "valid edge route with RSA PKCS#1 key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert, Key: rsa.key, CACertificate: rsa.cert}
		}},
		{name: "valid edge route with ECDSA PKCS#8 key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: ecP8.cert, Key: ecP8.key}
		}},
		{name: "valid edge route with SEC 1 EC key and EC PARAMETERS", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: ecSEC1.cert,
				Key: "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + ecSEC1.key}
		}},
		{name: "valid reencrypt route with Ed25519 key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationReencrypt, Certificate: ed.cert, Key: ed.key, DestinationCACertificate: rsa.cert}
		}},
		{name: "valid passthrough with redirect", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationPassthrough, InsecureEdgeTerminationPolicy: InsecurePolicyRedirect}
		}},
		{name: "valid wildcard when allowed", wildcards: true, edit: func(r *Route) { r.Spec.WildcardPolicy = WildcardPolicySubdomain }},

		// metadata
		{name: "invalid name", edit: func(r *Route) { r.Meta.Name = "My_Route" }, want: []string{
			`ns-My_Route.yaml:10:7: error: metadata.name: name "My_Route" is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', starting and ending alphanumeric)`,
		}},
		{name: "name too long", edit: func(r *Route) { r.Meta.Name = strings.Repeat("a", 254) }, want: []string{
			`ns-` + strings.Repeat("a", 254) + `.yaml:10:7: error: metadata.name: name is 254 characters long, more than 253`,
		}},
		{name: "invalid namespace", edit: func(r *Route) { r.Meta.Namespace = "a.b" }, want: []string{
			`ns-r.yaml:11:7: error: metadata.namespace: namespace "a.b" is not a valid DNS-1123 label (lowercase letters, digits and '-', starting and ending alphanumeric)`,
		}},

		// host
		{name: "host missing", edit: func(r *Route) { r.Spec.Host = "" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host is required: set spec.host in the route, or spec.domain in the RouterConfig to generate <name>-<namespace>.<domain>`,
		}},
		{name: "host with port", edit: func(r *Route) { r.Spec.Host = "a.com:80" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host must not include a port`,
		}},
		{name: "host an IPv6 address", edit: func(r *Route) { r.Spec.Host = "::1" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host "::1" is an IPv6 address; a route's host is a DNS name`,
		}},
		{name: "host a bracketed IPv6 address", edit: func(r *Route) { r.Spec.Host = "[fd00::1]" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host "[fd00::1]" is an IPv6 address; a route's host is a DNS name`,
		}},
		{name: "host an IPv6 address with a port", edit: func(r *Route) { r.Spec.Host = "[fd00::1]:80" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host must not include a port`,
		}},
		{name: "valid host an IPv4 address, as OpenShift admits", edit: func(r *Route) { r.Spec.Host = "10.0.0.1" }},
		{name: "host with wildcard", edit: func(r *Route) { r.Spec.Host = "*.example.com" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host must not contain "*": write the host of one subdomain and set wildcardPolicy: Subdomain`,
		}},
		{name: "host uppercase", edit: func(r *Route) { r.Spec.Host = "WWW.example.com" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host "WWW.example.com" must be lowercase`,
		}},
		{name: "host underscore", edit: func(r *Route) { r.Spec.Host = "my_app.example.com" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host "my_app.example.com" is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each label starting and ending alphanumeric)`,
		}},
		{name: "host empty label", edit: func(r *Route) { r.Spec.Host = "a..example.com" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host "a..example.com" is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each label starting and ending alphanumeric)`,
		}},
		{name: "host label too long", edit: func(r *Route) { r.Spec.Host = strings.Repeat("a", 64) + ".example.com" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host label "` + strings.Repeat("a", 64) + `" is 64 characters long, more than 63 (OpenShift allows it on a route annotated route.openshift.io/allow-non-dns-compliant-host: "true")`,
		}},
		{name: "host label too long, allowed by annotation", edit: func(r *Route) {
			r.Spec.Host = strings.Repeat("a", 64) + ".example.com"
			r.Meta.Annotations = map[string]string{AnnotationAllowNonDNSCompliantHost: "true"}
		}},
		{name: "annotation does not allow an invalid host", edit: func(r *Route) {
			r.Spec.Host = "a_b.example.com"
			r.Meta.Annotations = map[string]string{AnnotationAllowNonDNSCompliantHost: "true"}
		}, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host "a_b.example.com" is not a valid DNS-1123 subdomain (lowercase letters, digits, '-' and '.', each label starting and ending alphanumeric)`,
		}},
		{name: "host too long", edit: func(r *Route) { r.Spec.Host = strings.Repeat("abcdefghi.", 26) + "com" }, want: []string{
			`ns-r.yaml:12:7: error: spec.host: host is 263 characters long, more than 253`,
		}},

		// path
		{name: "path without slash", edit: func(r *Route) { r.Spec.Path = "api" }, want: []string{
			`ns-r.yaml:13:7: error: spec.path: path "api" must start with "/"`,
		}},
		{name: "path with space", edit: func(r *Route) { r.Spec.Path = "/a b" }, want: []string{
			`ns-r.yaml:13:7: error: spec.path: path "/a b" must not contain whitespace`,
		}},
		{name: "path with query", edit: func(r *Route) { r.Spec.Path = "/a?b=1" }, want: []string{
			`ns-r.yaml:13:7: error: spec.path: path "/a?b=1" must not contain "?" (fragments and queries are not part of the matched path)`,
		}},
		{name: "path with hash", edit: func(r *Route) { r.Spec.Path = "/a#b" }, want: []string{
			`ns-r.yaml:13:7: error: spec.path: path "/a#b" must not contain "#" (fragments and queries are not part of the matched path)`,
		}},
		{name: "path with control character", edit: func(r *Route) { r.Spec.Path = "/a\x01" }, want: []string{
			`ns-r.yaml:13:7: error: spec.path: path "/a\x01" must not contain control characters`,
		}},
		{name: "path with quotes and backslash is admitted", edit: func(r *Route) { r.Spec.Path = `/a'b"c\d` }},
		{name: "path as long as allowed", edit: func(r *Route) {
			r.Spec.Path = "/" + strings.Repeat("a", MaxMapKeyLength-len(r.Spec.Host)-2)
		}},
		{name: "path too long", edit: func(r *Route) {
			r.Spec.Path = "/" + strings.Repeat("a", MaxMapKeyLength-len(r.Spec.Host)-1)
		}, want: []string{
			`ns-r.yaml:13:7: error: spec.path: host and path are 2048 bytes together, more than the limit of 2047: HAProxy's map lookup cannot tell longer keys apart, so the route could serve another route's requests or none`,
		}},
		{name: "path not ASCII", edit: func(r *Route) { r.Spec.Path = "/café" }, want: []string{
			`ns-r.yaml:13:7: error: spec.path: path "/café" must be ASCII: percent-encode other characters, as they arrive in requests`,
		}},

		// services
		{name: "kind not Service", edit: func(r *Route) { r.Spec.To.Kind = "Deployment" }, want: []string{
			`ns-r.yaml:15:7: error: spec.to.kind: kind "Deployment" is not supported: only Service`,
		}},
		{name: "service name missing", edit: func(r *Route) { r.Spec.To.Name = "" }, want: []string{
			`ns-r.yaml:14:7: error: spec.to.name: service name is required`,
		}},
		{name: "service name no Service can have", edit: func(r *Route) { r.Spec.To.Name = "web.svc" }, want: []string{
			`ns-r.yaml:14:7: warning: spec.to.name: service name "web.svc" is not a valid DNS-1123 label (lowercase letters, digits and '-', at most 63, starting and ending alphanumeric): no Service can have it, so this service never has endpoints, as on OpenShift (its share goes to the route's other services; the route answers 503 if it has none)`,
		}},
		{name: "service name empty", edit: func(r *Route) { r.Spec.To.Name = "" }, want: []string{
			`ns-r.yaml:14:7: error: spec.to.name: service name is required`,
		}},
		{name: "weight 300", edit: func(r *Route) { r.Spec.To.Weight = ptr[int32](300) }, want: []string{
			`ns-r.yaml:16:7: error: spec.to.weight: weight 300 is out of range 0-256`,
		}},
		{name: "negative alternate weight", edit: func(r *Route) {
			r.Spec.AlternateBackends = []RouteTargetReference{{Name: "b", Weight: ptr[int32](-1)}}
		}, want: []string{
			`ns-r.yaml:25:7: error: spec.alternateBackends[0].weight: weight -1 is out of range 0-256`,
		}},
		{name: "duplicate service", edit: func(r *Route) {
			r.Spec.AlternateBackends = []RouteTargetReference{{Name: "web"}}
		}, want: []string{
			`ns-r.yaml:26:7: warning: spec.alternateBackends[0].name: service "web" is already named in spec.to; it is used once, with weight 100 from here, as OpenShift does`,
		}},
		{name: "duplicate service: the last weight applies", edit: func(r *Route) {
			w := int32(7)
			r.Spec.AlternateBackends = []RouteTargetReference{{Name: "other"}, {Name: "web", Weight: &w}}
		}, want: []string{
			`ns-r.yaml:1:1: warning: spec.alternateBackends[1].name: service "web" is already named in spec.to; it is used once, with weight 7 from here, as OpenShift does`,
		}, check: func(t *testing.T, ar *AdmittedRoute) {
			if ar.Services[0].Name != "web" || ar.Services[0].Weight != 7 {
				t.Errorf("services = %+v, want web at weight 7 first", ar.Services)
			}
		}},
		{name: "four alternate backends", edit: func(r *Route) {
			r.Spec.AlternateBackends = []RouteTargetReference{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}
		}, want: []string{
			`ns-r.yaml:27:7: error: spec.alternateBackends: at most 3 alternateBackends are allowed, got 4`,
		}},
		{name: "three alternate backends are fine", edit: func(r *Route) {
			r.Spec.AlternateBackends = []RouteTargetReference{{Name: "a"}, {Name: "b"}, {Name: "c"}}
		}},

		// target port
		{name: "targetPort zero", edit: func(r *Route) { r.Spec.Port = &RoutePort{TargetPort: IntOrString{Int: 0}} }, want: []string{
			`ns-r.yaml:24:7: error: spec.port.targetPort: targetPort 0 is not a port: give a port number or name`,
		}},
		{name: "targetPort out of range", edit: func(r *Route) { r.Spec.Port = &RoutePort{TargetPort: IntOrString{Int: 70000}} }, want: []string{
			`ns-r.yaml:24:7: error: spec.port.targetPort: targetPort 70000 is out of range 1-65535`,
		}},
		{name: "targetPort negative", edit: func(r *Route) { r.Spec.Port = &RoutePort{TargetPort: IntOrString{Int: -1}} }, want: []string{
			`ns-r.yaml:24:7: error: spec.port.targetPort: targetPort -1 is out of range 1-65535`,
		}},
		{name: "targetPort \"0\" is a port name", edit: func(r *Route) {
			r.Spec.Port = &RoutePort{TargetPort: IntOrString{IsString: true, Str: "0"}}
		}, want: []string{
			`ns-r.yaml:24:7: warning: spec.port.targetPort: targetPort 0 is out of range 1-65535: it matches no endpoint port, so the route gets no endpoints`,
		}},
		{name: "targetPort empty name", edit: func(r *Route) {
			r.Spec.Port = &RoutePort{TargetPort: IntOrString{IsString: true, Str: ""}}
		}, want: []string{
			`ns-r.yaml:24:7: error: spec.port.targetPort: targetPort name is empty`,
		}},
		{name: "targetPort bad name", edit: func(r *Route) {
			r.Spec.Port = &RoutePort{TargetPort: IntOrString{IsString: true, Str: "HTTP_PORT"}}
		}, want: []string{
			`ns-r.yaml:24:7: warning: spec.port.targetPort: targetPort name "HTTP_PORT" is not a valid port name (at most 15 lowercase letters, digits and '-', with a letter): it matches no endpoint port, so the route gets no endpoints`,
		}},
		{name: "targetPort digits as string", edit: func(r *Route) {
			r.Spec.Port = &RoutePort{TargetPort: IntOrString{IsString: true, Str: "8080"}}
		}},

		// TLS
		{name: "invalid termination", edit: func(r *Route) { r.Spec.TLS = &TLSConfig{Termination: "terminate"} }, want: []string{
			`ns-r.yaml:17:7: error: spec.tls.termination: termination "terminate" is not one of edge, reencrypt, passthrough`,
		}},
		// Without a destinationCACertificate it would default to edge.
		{name: "missing termination with a destination CA", edit: func(r *Route) { r.Spec.TLS = &TLSConfig{DestinationCACertificate: rsa.cert} }, want: []string{
			`ns-r.yaml:17:7: error: spec.tls.termination: termination is required when tls is set (edge, reencrypt or passthrough)`,
		}},
		{name: "invalid insecure policy", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, InsecureEdgeTerminationPolicy: "Disable"}
		}, want: []string{
			`ns-r.yaml:22:7: error: spec.tls.insecureEdgeTerminationPolicy: insecureEdgeTerminationPolicy "Disable" is not one of None, Allow, Redirect`,
		}},
		{name: "passthrough with Allow", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationPassthrough, InsecureEdgeTerminationPolicy: InsecurePolicyAllow}
		}, want: []string{
			`ns-r.yaml:22:7: error: spec.tls.insecureEdgeTerminationPolicy: insecureEdgeTerminationPolicy Allow is not supported for passthrough routes (use None or Redirect)`,
		}},
		{name: "passthrough with path and certificate", edit: func(r *Route) {
			r.Spec.Path = "/api"
			r.Spec.TLS = &TLSConfig{Termination: TerminationPassthrough, Certificate: rsa.cert, Key: rsa.key}
		}, want: []string{
			`ns-r.yaml:13:7: error: spec.path: passthrough routes cannot have a path: TLS is not terminated, so only the SNI host is visible`,
			`ns-r.yaml:18:7: error: spec.tls.certificate: passthrough routes cannot have a certificate: the backend terminates TLS`,
			`ns-r.yaml:19:7: error: spec.tls.key: passthrough routes cannot have a key: the backend terminates TLS`,
		}},
		{name: "certificate without key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert}
		}, want: []string{
			`ns-r.yaml:19:7: error: spec.tls.key: key is required when certificate is set`,
		}},
		{name: "key without certificate", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Key: rsa.key}
		}, want: []string{
			`ns-r.yaml:19:7: warning: spec.tls.key: key without a certificate is ignored: the route is served with the default certificate, as OpenShift does; set certificate to serve the route's own`,
		}, check: func(t *testing.T, ar *AdmittedRoute) {
			if ar.TLS.Key != "" || ar.TLS.Certificate != "" {
				t.Errorf("TLS = %+v, want no key and no certificate: the default certificate serves", ar.TLS)
			}
		}},
		{name: "key without certificate that does not parse", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Key: "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"}
		}, want: []string{
			`ns-r.yaml:19:7: error: spec.tls.key: key block 1: is a certificate, not a private key`,
		}},
		{name: "key does not match", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert, Key: ecP8.key}
		}, want: []string{
			`ns-r.yaml:19:7: error: spec.tls.key: key does not match the certificate (subject "CN=rsa.example.com")`,
		}},
		{name: "broken certificate base64", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: strings.Replace(rsa.cert, "M", "*", 3), Key: rsa.key}
		}, want: []string{
			`ns-r.yaml:18:7: error: spec.tls.certificate: certificate is not valid PEM: a block does not decode (damaged base64 or missing END line)`,
		}},
		{name: "certificate is not PEM", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: "hello", Key: rsa.key}
		}, want: []string{
			`ns-r.yaml:18:7: error: spec.tls.certificate: certificate contains no PEM CERTIFICATE block`,
		}},
		{name: "certificate DER is garbage", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n", Key: rsa.key}
		}, want: []string{
			`ns-r.yaml:18:7: error: spec.tls.certificate: certificate block 1 does not parse as a certificate: x509: malformed certificate`,
		}},
		{name: "key pasted into certificate", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.key, Key: rsa.key}
		}, want: []string{
			`ns-r.yaml:18:7: error: spec.tls.certificate: certificate block 1 is a private key; certificates only here`,
		}},
		{name: "key bundled inside certificate", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert + rsa.key}
		}, want: []string{
			`ns-r.yaml:18:7: note: spec.tls.certificate: certificate holds the private key too: it is used as the key, as OpenShift does`,
		}, check: func(t *testing.T, ar *AdmittedRoute) {
			// HAProxy's crt file is written from the two fields.
			if strings.Contains(ar.TLS.Certificate, "PRIVATE KEY") || !strings.Contains(ar.TLS.Key, "PRIVATE KEY") {
				t.Errorf("key not moved out of the certificate:\ncert %s\nkey %s", ar.TLS.Certificate, ar.TLS.Key)
			}
		}},
		{name: "key bundled inside certificate and another key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert + rsa.key, Key: ecP8.key}
		}, want: []string{
			`ns-r.yaml:19:7: warning: spec.tls.key: certificate holds a private key too: that key is used and this one is ignored, as OpenShift does`,
		}},
		{name: "wrong key bundled inside certificate", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert + ecP8.key}
		}, want: []string{
			`ns-r.yaml:18:7: note: spec.tls.certificate: certificate holds the private key too: it is used as the key, as OpenShift does`,
			`ns-r.yaml:19:7: error: spec.tls.key: key does not match the certificate (subject "CN=rsa.example.com")`,
		}},
		{name: "certificate pasted into key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert, Key: rsa.cert}
		}, want: []string{
			`ns-r.yaml:19:7: error: spec.tls.key: key block 1: is a certificate, not a private key`,
		}},
		{name: "encrypted key", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: rsa.cert,
				Key: "-----BEGIN ENCRYPTED PRIVATE KEY-----\naGVsbG8=\n-----END ENCRYPTED PRIVATE KEY-----\n"}
		}, want: []string{
			`ns-r.yaml:19:7: error: spec.tls.key: key is an encrypted private key; HAProxy needs it unencrypted`,
		}},
		{name: "bad CA certificates", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationReencrypt, CACertificate: "x", DestinationCACertificate: rsa.key}
		}, want: []string{
			`ns-r.yaml:20:7: error: spec.tls.caCertificate: caCertificate contains no PEM CERTIFICATE block`,
			`ns-r.yaml:21:7: error: spec.tls.destinationCACertificate: destinationCACertificate block 1 is a private key; certificates only here`,
		}},
		{name: "edge with destination CA", edit: func(r *Route) {
			r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, DestinationCACertificate: rsa.cert}
		}, want: []string{
			`ns-r.yaml:21:7: error: spec.tls.destinationCACertificate: destinationCACertificate is only valid for reencrypt routes: edge routes talk plain HTTP to the backend`,
		}},

		// wildcards
		{name: "wildcard not allowed", edit: func(r *Route) { r.Spec.WildcardPolicy = WildcardPolicySubdomain }, want: []string{
			`ns-r.yaml:23:7: error: spec.wildcardPolicy: wildcard routes are not allowed: set spec.allowWildcardRoutes: true in the RouterConfig`,
		}},
		{name: "wildcard policy invalid", edit: func(r *Route) { r.Spec.WildcardPolicy = "All" }, want: []string{
			`ns-r.yaml:23:7: error: spec.wildcardPolicy: wildcardPolicy "All" is not one of None, Subdomain`,
		}},
		{name: "wildcard on a two-label host", wildcards: true, edit: func(r *Route) {
			r.Spec.Host = "example.com"
			r.Spec.WildcardPolicy = WildcardPolicySubdomain
		}, want: []string{
			`ns-r.yaml:23:7: error: spec.wildcardPolicy: wildcardPolicy Subdomain needs a host with at least three labels (www.example.com serves *.example.com), got "example.com"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRoute("ns", "r", "www.example.com")
			tt.edit(&r)
			r.Source = testSource(r.Meta.Namespace+"-"+r.Meta.Name+".yaml", routeFields...)
			if r.Meta.Namespace != "ns" {
				r.Source = testSource("ns-r.yaml", routeFields...)
			}
			s := DefaultSettings()
			s.AllowWildcardRoutes = tt.wildcards
			ar, c := validateRoute(&r, &s)
			equalLines(t, c.diags, tt.want)
			if tt.check != nil {
				tt.check(t, &ar)
			}
			rejected := false
			for _, w := range tt.want {
				rejected = rejected || strings.Contains(w, ": error: ")
			}
			if c.bad != rejected {
				t.Errorf("rejected = %v, want %v", c.bad, rejected)
			}
			if len(tt.want) == 0 && ar.Host != r.Spec.Host {
				t.Errorf("host = %q", ar.Host)
			}
		})
	}
}

func TestValidateRouteAdmittedForm(t *testing.T) {
	pair := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	r := testRoute("shop", "front", "shop.example.com")
	r.Meta.Labels = map[string]string{"app": "shop"}
	r.Spec.Path = "/cart"
	r.Spec.To = RouteTargetReference{Name: "cart", Weight: ptr[int32](30)}
	r.Spec.AlternateBackends = []RouteTargetReference{{Kind: "Service", Name: "cart-canary"}}
	r.Spec.TLS = &TLSConfig{Termination: TerminationEdge, Certificate: pair.cert, Key: pair.key}
	s := DefaultSettings()
	ar, c := validateRoute(&r, &s)
	if len(c.diags) != 0 {
		t.Fatalf("unexpected diagnostics: %v", c.diags)
	}
	want := AdmittedRoute{
		Key:               RouteKey{"shop", "front"},
		CreationTimestamp: r.Meta.CreationTimestamp,
		Host:              "shop.example.com",
		Path:              "/cart",
		Termination:       TerminationEdge,
		InsecurePolicy:    InsecurePolicyNone,
		TLS:               RouteTLS{Certificate: pair.cert, Key: pair.key},
		Backend:           BackendSettings{Balance: DefaultBalance, HealthCheckInterval: DefaultHealthCheckInterval},
		Services:          []ServiceBackend{{Name: "cart", Weight: 30}, {Name: "cart-canary", Weight: 100}},
	}
	if !reflect.DeepEqual(ar, want) {
		t.Errorf("admitted form:\n got %+v\nwant %+v", ar, want)
	}
	if got := ar.BackendName(); got != "be_edge_http:shop:front" {
		t.Errorf("backend name = %q", got)
	}
}

func TestWildcardDomain(t *testing.T) {
	for host, want := range map[string]string{
		"www.example.com":   "*.example.com",
		"a.b.example.co.uk": "*.b.example.co.uk",
	} {
		if got := WildcardDomain(host); got != want {
			t.Errorf("WildcardDomain(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestPortNameProblem(t *testing.T) {
	for name, want := range map[string]string{
		"http":                  "",
		"https-alt":             "",
		"8080":                  "",
		"70000":                 "targetPort 70000 is out of range 1-65535",
		"0":                     "targetPort 0 is out of range 1-65535",
		"web--x":                `targetPort name "web--x" is not a valid port name (at most 15 lowercase letters, digits and '-', with a letter)`,
		"-web":                  `targetPort name "-web" is not a valid port name (at most 15 lowercase letters, digits and '-', with a letter)`,
		"a-very-long-port-name": `targetPort name "a-very-long-port-name" is not a valid port name (at most 15 lowercase letters, digits and '-', with a letter)`,
		"":                      "targetPort name is empty",
	} {
		if got := portNameProblem(name); got != want {
			t.Errorf("portNameProblem(%q) = %q, want %q", name, got, want)
		}
	}
}
