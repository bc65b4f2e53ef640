package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// frontendText is the section of cfg that starts with "frontend name ".
func frontendText(t *testing.T, cfg, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(cfg, "\nfrontend "+name+" ")
	if !ok {
		t.Fatalf("no frontend %s in:\n%s", name, cfg)
	}
	section, _, _ := strings.Cut(rest, "\n\n")
	return section
}

// TestNoTrafficLogWithoutAccessLog: without an access log the frontends
// have no loggers, so HAProxy builds no per-request log line only to drop
// it; with one they log as before.
func TestNoTrafficLogWithoutAccessLog(t *testing.T) {
	in := baseInput(t)
	cfg := string(mustRender(t, in).File(ConfigFile).Bytes())
	for _, fe := range []string{"public", "public_ssl", "fe_sni"} {
		if !strings.Contains(frontendText(t, cfg, fe), "\n  no log\n") {
			t.Errorf("frontend %s without an access log: no \"no log\"", fe)
		}
	}
	if !strings.Contains(cfg, "defaults base\n  mode http\n  log global\n") {
		t.Errorf("the base defaults lost \"log global\": backends log server state changes")
	}

	in.Desired.Router.AccessLog = &model.AccessLog{Target: "127.0.0.1:514", Facility: "local1", MaxLength: 1024}
	cfg = string(mustRender(t, in).File(ConfigFile).Bytes())
	for _, fe := range []string{"public", "public_ssl", "fe_sni"} {
		if strings.Contains(frontendText(t, cfg, fe), "no log") {
			t.Errorf("frontend %s with an access log has \"no log\"", fe)
		}
	}
}

// TestForwardedIPv6TestOnlyWhereClientsMayBeIPv6: the Forwarded header's
// for= is formatted once a connection, and the test of the client's
// address family is written only when a client may be IPv6; the header
// itself is added unconditionally, with no test a request.
func TestForwardedIPv6TestOnlyWhereClientsMayBeIPv6(t *testing.T) {
	const header = "  http-request add-header Forwarded for=%[var(sess.fwd_for)];host=%[req.hdr(host)];proto=%[ssl_fc,iif(https,http)]\n"
	const v4Only = "  tcp-request session set-var-fmt(sess.fwd_for) %ci\n"
	for _, c := range []struct {
		name string
		set  func(*model.Settings)
		ipv6 bool
	}{
		{"all IPv4 addresses", func(*model.Settings) {}, false},
		{"one IPv4 address", func(s *model.Settings) { s.BindAddress = "127.0.0.1" }, false},
		{"IPv6 loopback", func(s *model.Settings) { s.BindAddress = "::1" }, true},
		{"IPv4 and IPv6", func(s *model.Settings) { s.BindAddresses = []string{"127.0.0.1", "::"} }, true},
		{"PROXY protocol", func(s *model.Settings) { s.ProxyProtocol = true }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := baseInput(t)
			c.set(&in.Desired.Router)
			cfg := string(mustRender(t, in).File(ConfigFile).Bytes())
			if got := strings.Contains(cfg, "src -m sub :"); got != c.ipv6 {
				t.Errorf("IPv6 test written: %v, want %v", got, c.ipv6)
			}
			if got := strings.Contains(cfg, v4Only); got == c.ipv6 {
				t.Errorf("unconditional IPv4 for= written: %v, want %v", got, !c.ipv6)
			}
			if !strings.Contains(cfg, header) {
				t.Errorf("no unconditional line %q", header)
			}
		})
	}
}

// TestHostEntries: a host goes to the host map only when its root is its
// one entry; a host with paths, or with a path and no root, stays out, so
// its requests take the prefix lookup.
func TestHostEntries(t *testing.T) {
	src, _ := sortEntries([]MapEntry{
		{"alone.example.com/", "be_alone"},
		{"paths.example.com/", "be_root"},
		{"paths.example.com/api?", "be_api"},
		{"paths.example.com/api/", "be_api"},
		{"onlypath.example.com/x?", "be_x"},
		{"onlypath.example.com/x/", "be_x"},
		{"redirect.example.com/", RedirectValue},
		{"dot.example.com./", "be_dot"},
	})
	got := hostEntries(src)
	want := []MapEntry{{"alone.example.com", "be_alone"}, {"dot.example.com.", "be_dot"}, {"redirect.example.com", RedirectValue}}
	if !slices.Equal(got, want) {
		t.Errorf("hostEntries = %v, want %v", got, want)
	}
}
