package model

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// loadRouterConfig loads spec (YAML, indented as under "spec:") as the
// RouterConfig of rc.yaml through the real decoder, and returns the
// settings in force and every diagnostic as path:line:col text. The spec
// starts on line 5.
func loadRouterConfig(t *testing.T, spec string) (Settings, []string) {
	t.Helper()
	doc := "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: r\nspec:\n" + spec
	res := NewLoader().Load([]SourceFile{{Path: "rc.yaml", Data: []byte(doc)}})
	var ds []string
	for _, d := range res.Diagnostics {
		if d.Severity == SeverityNote && strings.Contains(d.Message, "previous settings stay in force") {
			continue
		}
		ds = append(ds, d.String())
	}
	if res.Desired == nil {
		t.Fatal("no desired state")
	}
	return res.Desired.Router, ds
}

// edgeCase is one RouterConfig spec, the settings it should give (from the
// defaults) and the diagnostics it should report. With errors, the
// defaults stay in force.
type edgeCase struct {
	name  string
	spec  string
	want  func(s *Settings)
	diags []string
}

func runEdgeCases(t *testing.T, cases []edgeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ds := loadRouterConfig(t, c.spec)
			want := DefaultSettings()
			if c.want != nil {
				c.want(&want)
			}
			if !reflect.DeepEqual(ds, c.diags) {
				t.Errorf("diagnostics:\n got %q\nwant %q", ds, c.diags)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("settings:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestRouterConfigBuffersAndTimeouts(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{name: "defaults as OpenShift's", want: func(s *Settings) {
			if s.HeaderBufferBytes != 32768 || s.HeaderBufferMaxRewriteBytes != 8192 ||
				s.HTTPKeepAliveTimeout != 300*time.Second || s.HTTPRequestTimeout != 10*time.Second || s.IgnoreEmptyRequests {
				t.Errorf("defaults %+v", s)
			}
		}},
		{
			name: "all set",
			spec: "  httpEmptyRequestsPolicy: Ignore\n  tuningOptions:\n    headerBufferBytes: 65536\n    headerBufferMaxRewriteBytes: 16384\n    httpKeepAliveTimeout: 1.5s\n    httpRequestTimeout: 3s\n",
			want: func(s *Settings) {
				s.IgnoreEmptyRequests = true
				s.HeaderBufferBytes, s.HeaderBufferMaxRewriteBytes = 65536, 16384
				s.HTTPKeepAliveTimeout, s.HTTPRequestTimeout = 1500*time.Millisecond, 3*time.Second
			},
		},
		{
			name: "Respond is the default",
			spec: "  httpEmptyRequestsPolicy: Respond\n",
		},
		{
			name:  "below the minimums",
			spec:  "  tuningOptions:\n    headerBufferBytes: 8192\n    headerBufferMaxRewriteBytes: 1024\n",
			diags: []string{"rc.yaml:7:24: error: spec.tuningOptions.headerBufferBytes: headerBufferBytes 8192 is below the minimum of 16384", "rc.yaml:8:34: error: spec.tuningOptions.headerBufferMaxRewriteBytes: headerBufferMaxRewriteBytes 1024 is below the minimum of 4096"},
		},
		{
			name:  "rewrite must leave room for requests",
			spec:  "  tuningOptions:\n    headerBufferMaxRewriteBytes: 32768\n",
			diags: []string{"rc.yaml:7:34: error: spec.tuningOptions.headerBufferMaxRewriteBytes: headerBufferMaxRewriteBytes 32768 must be less than headerBufferBytes 32768 (requests may use only the difference)"},
		},
		{
			name:  "keep-alive in hours is not in the API's pattern",
			spec:  "  tuningOptions:\n    headerBufferBytes: 16384\n    httpKeepAliveTimeout: 1h\n",
			diags: []string{"rc.yaml:8:27: error: spec.tuningOptions.httpKeepAliveTimeout: httpKeepAliveTimeout \"1h\" must be a duration with units ms, s or m (e.g. 300ms, 1.5s, 2m45s)"},
		},
		{
			name:  "keep-alive out of range",
			spec:  "  tuningOptions:\n    httpKeepAliveTimeout: 16m\n    httpRequestTimeout: soon\n",
			diags: []string{"rc.yaml:7:27: error: spec.tuningOptions.httpKeepAliveTimeout: httpKeepAliveTimeout \"16m\" is out of range 1ms-15m", "rc.yaml:8:25: error: spec.tuningOptions.httpRequestTimeout: httpRequestTimeout \"soon\" is not a duration (e.g. 30s, 1m, 1h)"},
		},
		{
			name:  "empty requests policy",
			spec:  "  httpEmptyRequestsPolicy: Drop\n",
			diags: []string{"rc.yaml:6:28: error: spec.httpEmptyRequestsPolicy: httpEmptyRequestsPolicy \"Drop\" is not one of Respond, Ignore"},
		},
		{
			name: "idle connections closed at the next response",
			spec: "  idleConnectionTerminationPolicy: Deferred\n",
			want: func(s *Settings) { s.DeferIdleClose = true },
		},
		{
			name: "Immediate is the default",
			spec: "  idleConnectionTerminationPolicy: Immediate\n",
		},
		{
			name:  "idle connection policy",
			spec:  "  idleConnectionTerminationPolicy: deferred\n",
			diags: []string{"rc.yaml:6:36: error: spec.idleConnectionTerminationPolicy: idleConnectionTerminationPolicy \"deferred\" is not one of Immediate, Deferred"},
		},
	})
}

func TestRouterConfigAccessLog(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "container, as the IngressController documentation shows it",
			spec: "  logging:\n    access:\n      destination:\n        type: Container\n",
			want: func(s *Settings) {
				s.AccessLog = &AccessLog{Target: "stdout", Facility: "local1", MaxLength: 1024}
			},
		},
		{
			name: "syslog over UDP with captures",
			spec: `  logging:
    access:
      destination:
        type: Syslog
        syslog:
          address: 127.0.0.1
          port: 10514
          facility: local2
          maxLength: 4096
      httpLogFormat: '%ci:%cp [%t] %ft %b/%s %B %bq %HM %HU %HV'
      httpCaptureHeaders:
        request:
          - name: Host
            maxLength: 90
        response:
          - name: Content-Type
            maxLength: 30
      httpCaptureCookies:
        - matchType: Prefix
          namePrefix: sess
          maxLength: 256
      logEmptyRequests: Ignore
`,
			want: func(s *Settings) {
				s.AccessLog = &AccessLog{Target: "127.0.0.1:10514", Facility: "local2", MaxLength: 4096,
					Format:                 "%ci:%cp [%t] %ft %b/%s %B %bq %HM %HU %HV",
					CaptureRequestHeaders:  []CaptureHeader{{"Host", 90}},
					CaptureResponseHeaders: []CaptureHeader{{"Content-Type", 30}},
					CaptureCookie:          &CaptureCookie{Name: "sess", MaxLength: 256},
					IgnoreEmpty:            true,
				}
			},
		},
		{
			name: "unix socket, IPv6 and an exact cookie",
			spec: "  logging:\n    access:\n      destination:\n        type: Syslog\n        syslog:\n          address: /dev/log\n      httpCaptureCookies:\n        - matchType: Exact\n          name: id\n          maxLength: 10\n",
			want: func(s *Settings) {
				s.AccessLog = &AccessLog{Target: "/dev/log", Facility: "local1", MaxLength: 1024, CaptureCookie: &CaptureCookie{Name: "id=", MaxLength: 10}}
			},
		},
		{
			name: "bad values at their fields",
			spec: `  logging:
    access:
      destination:
        type: Syslog
        syslog:
          address: 127.0.0.1
          port: 70000
          facility: local9
          maxLength: 100
      httpLogFormat: '%[src'
      httpCaptureHeaders:
        request:
          - name: "Bad Header"
            maxLength: 10
          - name: Host
      httpCaptureCookies:
        - matchType: Any
          maxLength: 1
      logEmptyRequests: Never
`,
			diags: []string{
				"rc.yaml:12:17: error: spec.logging.access.destination.syslog.port: port 70000 is out of range 1-65535",
				`rc.yaml:13:21: error: spec.logging.access.destination.syslog.facility: facility "local9" is not one of kern, user, mail, daemon, auth, syslog, lpr, news, uucp, cron, auth2, ftp, ntp, audit, alert, cron2, local0, local1, local2, local3, local4, local5, local6, local7`,
				"rc.yaml:14:22: error: spec.logging.access.destination.syslog.maxLength: maxLength 100 is out of range 480-4096",
				`rc.yaml:15:22: error: spec.logging.access.httpLogFormat: httpLogFormat "%[src" is not an HAProxy log format: every % must start %%, an alias (%ci) or a sample (%[src]), and control characters are not allowed`,
				"rc.yaml:18:19: error: spec.logging.access.httpCaptureHeaders.request[0].name: header name \"Bad Header\" is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~)",
				"rc.yaml:20:13: error: spec.logging.access.httpCaptureHeaders.request[1]: maxLength is required, 1-16384",
				`rc.yaml:22:22: error: spec.logging.access.httpCaptureCookies[0].matchType: matchType "Any" is not one of Exact, Prefix`,
				`rc.yaml:24:25: error: spec.logging.access.logEmptyRequests: logEmptyRequests "Never" is not one of Log, Ignore`,
			},
		},
		{
			name:  "an IP without a port",
			spec:  "  logging:\n    access:\n      destination:\n        type: Syslog\n        syslog:\n          address: 10.0.0.1\n",
			diags: []string{`rc.yaml:11:20: error: spec.logging.access.destination.syslog.address: address "10.0.0.1" needs a port (1-65535)`},
		},
		{
			name:  "no type",
			spec:  "  logging:\n    access:\n      destination: {}\n",
			diags: []string{"rc.yaml:8:7: error: spec.logging.access.destination: destination.type is required: Container or Syslog"},
		},
		{
			name:  "unknown field",
			spec:  "  logging:\n    access:\n      destination:\n        type: Container\n      format: x\n",
			diags: []string{"rc.yaml:1:1: note: file has errors: it contributes nothing until fixed", "rc.yaml:10:7: error: spec.logging.access.format: unknown field"},
		},
	})
}

func TestRouterConfigTLSProfile(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{name: "Intermediate by default", want: func(s *Settings) {
			if s.TLS.MinVersion != "TLSv1.2" || s.TLS.CipherSuites != "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256" ||
				strings.Contains(s.TLS.Ciphers, "TLS_") || !strings.HasPrefix(s.TLS.Ciphers, "ECDHE-ECDSA-AES128-GCM-SHA256:") {
				t.Errorf("default TLS %+v", s.TLS)
			}
		}},
		{
			name: "Old raises TLS 1.0 to 1.1 as the ingress operator does",
			spec: "  tlsSecurityProfile:\n    type: Old\n    old: {}\n",
			want: func(s *Settings) { s.TLS = tlsProfiles["Old"] },
		},
		{
			name: "Modern has no TLS 1.2 ciphers",
			spec: "  tlsSecurityProfile:\n    type: Modern\n    modern: {}\n",
			want: func(s *Settings) {
				s.TLS = TLSPolicy{Profile: "Modern", CipherSuites: "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256", MinVersion: "TLSv1.3"}
			},
		},
		{
			name: "Custom",
			spec: "  tlsSecurityProfile:\n    type: Custom\n    custom:\n      ciphers:\n        - ECDHE-RSA-AES256-GCM-SHA384\n        - TLS_AES_256_GCM_SHA384\n      minTLSVersion: VersionTLS12\n",
			want: func(s *Settings) {
				s.TLS = TLSPolicy{Profile: "Custom", Ciphers: "ECDHE-RSA-AES256-GCM-SHA384", CipherSuites: "TLS_AES_256_GCM_SHA384", MinVersion: "TLSv1.2"}
			},
		},
		{
			name: "Custom with TLS 1.3 ciphers alone and TLS 1.2 allowed",
			spec: "  tlsSecurityProfile:\n    type: Custom\n    custom:\n      ciphers: [TLS_AES_128_GCM_SHA256]\n      minTLSVersion: VersionTLS12\n",
			want: func(s *Settings) {
				s.TLS = TLSPolicy{Profile: "Custom", Ciphers: tlsProfiles["Intermediate"].Ciphers, CipherSuites: "TLS_AES_128_GCM_SHA256", MinVersion: "TLSv1.2"}
			},
			diags: []string{"rc.yaml:9:7: warning: spec.tlsSecurityProfile.custom.ciphers: no cipher for TLS 1.2, which minTLSVersion VersionTLS12 allows, is listed: TLS 1.2 uses the Intermediate profile's ciphers, as on OpenShift; set minTLSVersion VersionTLS13 to allow TLS 1.3 alone"},
		},
		{
			name: "Custom errors at their fields",
			spec: "  tlsSecurityProfile:\n    type: Custom\n    custom:\n      ciphers:\n        - ECDHE-RSA-AES256-GCM-SHA384\n        - '!aNULL'\n      minTLSVersion: TLS12\n",
			diags: []string{
				`rc.yaml:11:11: error: spec.tlsSecurityProfile.custom.ciphers[1]: cipher "!aNULL" is not an OpenSSL cipher name`,
				`rc.yaml:12:22: error: spec.tlsSecurityProfile.custom.minTLSVersion: minTLSVersion "TLS12" is not one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13`,
			},
		},
		{
			name:  "TLS 1.3 only without a TLS 1.3 cipher",
			spec:  "  tlsSecurityProfile:\n    type: Custom\n    custom:\n      ciphers: [ECDHE-RSA-AES256-GCM-SHA384]\n      minTLSVersion: VersionTLS13\n",
			diags: []string{"rc.yaml:9:7: error: spec.tlsSecurityProfile.custom.ciphers: minTLSVersion is VersionTLS13 but no TLS 1.3 cipher (TLS_AES_128_GCM_SHA256, …) is listed: no client could connect"},
		},
		{
			name:  "unknown type",
			spec:  "  tlsSecurityProfile:\n    type: Strict\n",
			diags: []string{`rc.yaml:7:11: error: spec.tlsSecurityProfile.type: type "Strict" is not one of Old, Intermediate, Modern, Custom`},
		},
	})
}

func TestRouterConfigProxyProtocol(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "PROXY",
			spec: "  endpointPublishingStrategy:\n    type: HostNetwork\n    hostNetwork:\n      protocol: PROXY\n",
			want: func(s *Settings) { s.ProxyProtocol = true },
		},
		{name: "TCP", spec: "  endpointPublishingStrategy:\n    hostNetwork:\n      protocol: TCP\n"},
		{
			name: "other strategies and protocols",
			spec: "  endpointPublishingStrategy:\n    type: LoadBalancerService\n    hostNetwork:\n      protocol: proxy\n",
			diags: []string{
				`rc.yaml:7:11: error: spec.endpointPublishingStrategy.type: type "LoadBalancerService" is not supported: haroute listens on the host network (HostNetwork)`,
				`rc.yaml:9:17: error: spec.endpointPublishingStrategy.hostNetwork.protocol: protocol "proxy" is not one of TCP, PROXY`,
			},
		},
	})
}

func TestRouterConfigBindAddresses(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "IPv4 and IPv6",
			spec: "  bindOptions:\n    addresses:\n      - 127.0.0.1\n      - \"::1\"\n",
			want: func(s *Settings) {
				s.BindAddress = "127.0.0.1"
				s.BindAddresses = []string{"127.0.0.1", "::1"}
			},
		},
		{
			name: "every address of both families",
			spec: "  bindOptions:\n    addresses: [\"0.0.0.0\", \"::\"]\n",
			want: func(s *Settings) {
				s.BindAddress = "0.0.0.0"
				s.BindAddresses = []string{"0.0.0.0", "::"}
			},
		},
		{
			name:  "address and addresses",
			spec:  "  bindOptions:\n    address: 127.0.0.1\n    addresses: [\"::1\"]\n",
			diags: []string{"rc.yaml:8:5: error: spec.bindOptions.addresses: address and addresses are both set: list every address in addresses"},
		},
		{
			name: "bad, repeated and overlapping addresses",
			spec: "  bindOptions:\n    addresses:\n      - 10.0.0.1\n      - localhost\n      - 10.0.0.1\n      - 0.0.0.0\n      - fe80::1%eth0\n",
			diags: []string{
				`rc.yaml:9:9: error: spec.bindOptions.addresses[1]: address "localhost" is not an IP address`,
				"rc.yaml:10:9: error: spec.bindOptions.addresses[2]: address 10.0.0.1 is listed twice",
				"rc.yaml:11:9: error: spec.bindOptions.addresses[3]: addresses 10.0.0.1 and 0.0.0.0 overlap: 0.0.0.0 already listens on every address of its family",
				`rc.yaml:12:9: error: spec.bindOptions.addresses[4]: address "fe80::1%eth0" has a zone; only plain IP addresses are supported`,
			},
		},
	})
}

// A flag one subject pattern sets holds for that pattern alone: joined
// bare, "(?i)" let /CN=ADMIN through "^/CN=admin$". Go's regexp reads
// flags in groups as PCRE, HAProxy's, does.
func TestSubjectPatternFlagsStayInTheirPattern(t *testing.T) {
	got, ds := loadRouterConfig(t, "  clientTLS:\n    clientCertificatePolicy: Required\n    clientCA: /ca.pem\n"+
		"    allowedSubjectPatterns: [\"(?i)^/CN=foo$\", \"^/CN=admin$\"]\n")
	if len(ds) > 0 || got.ClientTLS == nil {
		t.Fatalf("client TLS %+v, diagnostics %q", got.ClientTLS, ds)
	}
	re := regexp.MustCompile(got.ClientTLS.SubjectFilter)
	for dn, want := range map[string]bool{"/CN=FOO": true, "/CN=foo": true, "/CN=admin": true, "/CN=ADMIN": false} {
		if got := re.MatchString(dn); got != want {
			t.Errorf("filter %s matches %s: %v, want %v", re, dn, got, want)
		}
	}
}

func TestRouterConfigClientTLS(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "required, a CA file and two subject patterns",
			spec: "  clientTLS:\n    clientCertificatePolicy: Required\n    clientCA: /etc/haroute/client-ca.pem\n" +
				"    allowedSubjectPatterns:\n      - \"^/CN=example.com/ST=NC/C=US/O=Security/OU=OpenShift$\"\n      - \"/O=Team A/\"\n",
			want: func(s *Settings) {
				s.ClientTLS = &ClientTLSPolicy{Verify: "required", CAFile: "/etc/haroute/client-ca.pem",
					SubjectFilter: "(?:(?:^/CN=example.com/ST=NC/C=US/O=Security/OU=OpenShift$)|(?:/O=Team A/))"}
			},
		},
		{
			name: "optional",
			spec: "  clientTLS:\n    clientCertificatePolicy: Optional\n    clientCA: /ca.pem\n",
			want: func(s *Settings) { s.ClientTLS = &ClientTLSPolicy{Verify: "optional", CAFile: "/ca.pem"} },
		},
		{
			name: "the IngressController's ConfigMap reference",
			spec: "  clientTLS:\n    clientCertificatePolicy: Required\n    clientCA:\n      name: client-ca\n",
			diags: []string{
				"rc.yaml:1:1: note: file has errors: it contributes nothing until fixed",
				"rc.yaml:8:5: error: spec.clientTLS.clientCA: clientCA names a ConfigMap; haroute reads the CA bundle itself: give its file's absolute path or inline PEM",
			},
		},
		{
			name: "bad policy, relative path, bad pattern",
			spec: "  clientTLS:\n    clientCertificatePolicy: Always\n    clientCA: ca.pem\n    allowedSubjectPatterns: [\"(unclosed\"]\n",
			diags: []string{
				`rc.yaml:7:30: error: spec.clientTLS.clientCertificatePolicy: clientCertificatePolicy "Always" is not one of Required, Optional`,
				`rc.yaml:8:15: error: spec.clientTLS.clientCA: clientCA "ca.pem" is neither inline PEM (-----BEGIN …) nor an absolute file path`,
				"rc.yaml:9:30: error: spec.clientTLS.allowedSubjectPatterns[0]: pattern \"(unclosed\" is not a regular expression: error parsing regexp: missing closing ): `(unclosed`",
			},
		},
		{
			name: "no policy, no CA",
			spec: "  clientTLS: {}\n",
			diags: []string{
				"rc.yaml:6:3: error: spec.clientTLS: clientCA is required: the CA bundle client certificates are verified against (a file's absolute path or inline PEM)",
				"rc.yaml:6:3: error: spec.clientTLS: clientCertificatePolicy is required: Required or Optional",
			},
		},
		{
			name:  "inline PEM that is no certificate",
			spec:  "  clientTLS:\n    clientCertificatePolicy: Required\n    clientCA: \"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n\"\n",
			diags: []string{"rc.yaml:8:15: error: spec.clientTLS.clientCA: clientCA block 1 does not parse as a certificate: x509: malformed certificate"},
		},
	})
}

func TestRouterConfigUniqueID(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "name alone takes the IngressController's default format",
			spec: "  httpHeaders:\n    uniqueId:\n      name: unique-id\n",
			want: func(s *Settings) {
				s.UniqueID = &UniqueID{Header: "unique-id", Format: "%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid"}
			},
		},
		{
			name: "format as the documentation writes it, with an escaped space",
			spec: "  httpHeaders:\n    uniqueId:\n      name: X-Request-Id\n      format: '%{+X}o\\ %ci:%cp_%Ts_%[rand]'\n",
			want: func(s *Settings) {
				s.UniqueID = &UniqueID{Header: "X-Request-Id", Format: "%{+X}o %ci:%cp_%Ts_%[rand]"}
			},
		},
		{
			name: "bad name and format",
			spec: "  httpHeaders:\n    uniqueId:\n      name: \"X Request\"\n      format: '%'\n",
			diags: []string{
				`rc.yaml:8:13: error: spec.httpHeaders.uniqueId.name: name "X Request" is not an HTTP header name (a token of at most 1024 characters)`,
				`rc.yaml:9:15: error: spec.httpHeaders.uniqueId.format: format "%" is not an HAProxy log format: every % must start %%, an alias (%ci) or a sample (%[src]), and control characters are not allowed`,
			},
		},
		{
			// HAProxy adds it beside the client's: two Host headers.
			name:  "a name the router or HTTP needs",
			spec:  "  httpHeaders:\n    uniqueId:\n      name: Host\n",
			diags: []string{`rc.yaml:8:13: error: spec.httpHeaders.uniqueId.name: name "Host" may not carry the unique id: the router or HTTP itself uses that header`},
		},
		{
			name:  "framing header",
			spec:  "  httpHeaders:\n    uniqueId:\n      name: Content-Length\n",
			diags: []string{`rc.yaml:8:13: error: spec.httpHeaders.uniqueId.name: name "Content-Length" may not carry the unique id: the router or HTTP itself uses that header`},
		},
		{
			name:  "format without a name",
			spec:  "  httpHeaders:\n    uniqueId:\n      format: '%ci'\n",
			diags: []string{"rc.yaml:8:15: error: spec.httpHeaders.uniqueId.format: format is set but name is empty: no header would carry the id"},
		},
	})
}

func TestRouterConfigHeaderPolicyAndActions(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "policy and actions as the IngressController documentation shows them",
			spec: `  httpHeaders:
    forwardedHeaderPolicy: IfNone
    actions:
      request:
        - name: X-Forwarded-Client-Cert
          action:
            type: Set
            set:
              value: "%{+Q}[ssl_c_der,base64]"
        - name: X-SSL-Client-Der
          action:
            type: Delete
      response:
        - name: X-Frame-Options
          action:
            type: Set
            set:
              value: DENY
        - name: X-Target
          action:
            type: Set
            set:
              value: "%[res.hdr(X-Target),lower] 100%%"
`,
			want: func(s *Settings) {
				s.ForwardedHeaderPolicy = "if-none"
				s.RequestHeaderActions = []HeaderAction{{Name: "X-Forwarded-Client-Cert", Value: "%{+Q}[ssl_c_der,base64]"}, {Name: "X-SSL-Client-Der", Delete: true}}
				s.ResponseHeaderActions = []HeaderAction{{Name: "X-Frame-Options", Value: "DENY"}, {Name: "X-Target", Value: "%[res.hdr(X-Target),lower] 100%%"}}
			},
		},
		{name: "Append is the default", spec: "  httpHeaders:\n    forwardedHeaderPolicy: Append\n"},
		{
			name:  "unknown policy",
			spec:  "  httpHeaders:\n    forwardedHeaderPolicy: Overwrite\n",
			diags: []string{`rc.yaml:7:28: error: spec.httpHeaders.forwardedHeaderPolicy: forwardedHeaderPolicy "Overwrite" is not one of Append, Replace, IfNone, Never`},
		},
		{
			name: "what the API refuses",
			spec: `  httpHeaders:
    actions:
      request:
        - name: Host
          action: {type: Delete}
        - name: X-A
          action: {type: Set, set: {value: "%[src]"}}
        - name: x-a
          action: {type: Delete}
        - name: X-B
          action: {type: Set}
        - name: X-C
          action: {type: Delete, set: {value: v}}
        - name: X-D
          action: {type: Replace}
      response:
        - name: X-E
          action: {type: Set, set: {value: "%[req.hdr(host)]"}}
`,
			diags: []string{
				"rc.yaml:9:17: error: spec.httpHeaders.actions.request[0].name: host may not be set or deleted by header actions",
				`rc.yaml:12:44: error: spec.httpHeaders.actions.request[1].action.set.value: value "%[src]" is not allowed: literal text, %% and %[...] with req.hdr(name) and ssl_c_der, converted only by lower and base64`,
				"rc.yaml:13:17: error: spec.httpHeaders.actions.request[2].name: header x-a has an action already: names must be unique",
				"rc.yaml:16:11: error: spec.httpHeaders.actions.request[3].action: type Set needs set.value",
				"rc.yaml:18:34: error: spec.httpHeaders.actions.request[4].action.set: set is only allowed when type is Set",
				`rc.yaml:20:26: error: spec.httpHeaders.actions.request[5].action.type: type "Replace" is not one of Set, Delete`,
				`rc.yaml:23:44: error: spec.httpHeaders.actions.response[0].action.set.value: value "%[req.hdr(host)]" is not allowed: literal text, %% and %[...] with res.hdr(name) and ssl_c_der, converted only by lower and base64`,
			},
		},
		{
			// HAProxy answered 500 to every request with these.
			name: "more headers than a buffer holds",
			spec: "  httpHeaders:\n    actions:\n      response:\n" +
				"        - {name: X-A, action: {type: Set, set: {value: " + strings.Repeat("a", 16384) + "}}}\n" +
				"        - {name: X-B, action: {type: Set, set: {value: " + strings.Repeat("b", 16384) + "}}}\n",
			diags: []string{
				"rc.yaml:8:7: error: spec.httpHeaders.actions.response: the Set actions add 32782 bytes of headers, more than 17412 (one action with the longest name and value): HAProxy could not fit them into the message's buffer and would answer 500",
			},
		},
	})
}

func TestRouterConfigCompression(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "as the IngressController documentation shows it",
			spec: "  httpCompression:\n    mimeTypes:\n    - \"text/html\"\n    - \"text/css; charset=utf-8\"\n    - \"application/json\"\n",
			want: func(s *Settings) {
				s.CompressionMIMETypes = []string{"text/html", "text/css; charset=utf-8", "application/json"}
			},
		},
		{name: "an empty list compresses nothing", spec: "  httpCompression:\n    mimeTypes: []\n"},
		{
			name: "not media types, or twice",
			spec: "  httpCompression:\n    mimeTypes: [html, \"text/html\", \"TEXT/HTML\", \"foo/bar\"]\n",
			diags: []string{
				`rc.yaml:7:17: error: spec.httpCompression.mimeTypes[0]: "html" is not a media type (type/subtype, e.g. text/html, application/json, text/css; charset=utf-8)`,
				"rc.yaml:7:36: error: spec.httpCompression.mimeTypes[2]: TEXT/HTML is listed twice",
				`rc.yaml:7:49: error: spec.httpCompression.mimeTypes[3]: "foo/bar" is not a media type (type/subtype, e.g. text/html, application/json, text/css; charset=utf-8)`,
			},
		},
		{
			// HAProxy's own refusal named neither the field nor the limit.
			name:  "more types than one line holds",
			spec:  "  httpCompression:\n    mimeTypes: [" + strings.TrimSuffix(strings.Repeat("text/x-a, ", 63), ", ") + "]\n",
			diags: []string{"rc.yaml:7:5: error: spec.httpCompression.mimeTypes: at most 62 media types are allowed, got 63"},
		},
	})
}

func TestRouterConfigErrorPages(t *testing.T) {
	runEdgeCases(t, []edgeCase{
		{
			name: "a directory",
			spec: "  httpErrorCodePages: /etc/haroute/error-pages\n",
			want: func(s *Settings) { s.ErrorPagesDir = "/etc/haroute/error-pages" },
		},
		{
			name:  "relative",
			spec:  "  httpErrorCodePages: pages\n",
			diags: []string{`rc.yaml:6:23: error: spec.httpErrorCodePages: httpErrorCodePages "pages" is not a directory's absolute path`},
		},
		{
			name: "the IngressController's ConfigMap reference",
			spec: "  httpErrorCodePages:\n    name: my-custom-error-code-pages\n",
			diags: []string{
				"rc.yaml:1:1: note: file has errors: it contributes nothing until fixed",
				"rc.yaml:6:3: error: spec.httpErrorCodePages: httpErrorCodePages names a ConfigMap; haroute reads the pages itself: give the absolute path of a directory holding error-page-503.http and error-page-404.http",
			},
		},
	})
}

func TestRouterConfigHTTP2(t *testing.T) {
	const annotated = "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: r\n  annotations:\n    ingress.operator.openshift.io/default-enable-http2: %q\nspec:\n%s"
	for _, c := range []struct {
		name, annotation, spec string
		want                   bool
		diags                  int
	}{
		{name: "off by default"},
		{name: "spec.http2", spec: "  http2: true\n", want: true},
		{name: "the IngressController's annotation", annotation: "true", want: true},
		{name: "spec.http2 wins over the annotation", annotation: "true", spec: "  http2: false\n"},
		{name: "a bad annotation", annotation: "yes", diags: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: r\nspec:\n" + c.spec
			if c.annotation != "" {
				doc = fmt.Sprintf(annotated, c.annotation, c.spec)
			}
			if c.spec == "" {
				doc += "  domain: apps.example.com\n"
			}
			res := NewLoader().Load([]SourceFile{{Path: "rc.yaml", Data: []byte(doc)}})
			var errs []string
			for _, d := range res.Diagnostics {
				if d.Severity == SeverityError {
					errs = append(errs, d.String())
				}
			}
			if len(errs) != c.diags || res.Desired.Router.HTTP2 != c.want {
				t.Errorf("http2 = %v, errors %q; want %v and %d errors", res.Desired.Router.HTTP2, errs, c.want, c.diags)
			}
			if c.diags > 0 && !strings.Contains(errs[0], `rc.yaml:5:3: error: metadata.annotations: annotation ingress.operator.openshift.io/default-enable-http2: "yes" is not true or false`) {
				t.Errorf("error %q", errs[0])
			}
		})
	}
}
