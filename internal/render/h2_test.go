package render

import (
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// `proto h2` goes on h2c servers of http and edge routes only (HAProxy
// terminates HTTP there); `alpn h2,http/1.1` on reencrypt servers only
// while http2 is on: OpenShift's template, line for line.
func TestServerArgsHTTP2Upstream(t *testing.T) {
	s := model.DefaultSettings()
	h2c := model.Server{Name: "ep_10.0.0.1_80", Address: "10.0.0.1", Port: 80, Weight: 1, H2C: true}
	for _, c := range []struct {
		term  model.Termination
		http2 bool
		want  string
		not   string
	}{
		{model.TerminationNone, false, " proto h2", "alpn"},
		{model.TerminationEdge, true, " proto h2", "alpn"},
		{model.TerminationPassthrough, true, "weight 1", "proto h2"},
		{model.TerminationReencrypt, true, " ssl alpn h2,http/1.1 ", "proto h2"},
		{model.TerminationReencrypt, false, " ssl ", "alpn"},
	} {
		s.HTTP2 = c.http2
		r := model.AdmittedRoute{Key: model.RouteKey{Namespace: "ns", Name: "r"}, Termination: c.term}
		got := ServerArgs(&r, h2c, Input{Desired: &model.Desired{Router: s}})
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("%s, http2 %t: %q, want %q and no %q", c.term, c.http2, got, c.want, c.not)
		}
	}
}
