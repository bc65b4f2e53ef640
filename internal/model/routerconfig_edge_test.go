package model

import (
	"reflect"
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
	})
}
