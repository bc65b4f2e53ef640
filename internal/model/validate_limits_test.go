package model

import (
	"strings"
	"testing"
)

// TestRouteKeyLimitCountsGeneratedHost: the map key limit holds for the
// host a route is served under, generated or written.
func TestRouteKeyLimitCountsGeneratedHost(t *testing.T) {
	s := DefaultSettings()
	s.Domain = "apps.example.com"
	host := "shop-front.apps.example.com"
	for _, c := range []struct {
		pathLen int
		bad     bool
	}{
		{MaxMapKeyLength - len(host) - 1, false},
		{MaxMapKeyLength - len(host), true},
	} {
		r := testRoute("front", "shop", "")
		r.Spec.Path = "/" + strings.Repeat("a", c.pathLen-1)
		ar, check := validateRoute(&r, &s)
		if ar.Host != host {
			t.Fatalf("host %q, want %q", ar.Host, host)
		}
		if check.bad != c.bad {
			t.Errorf("path of %d bytes under %s: rejected = %v, want %v (%v)", c.pathLen, host, check.bad, c.bad, check.diags)
		}
		if c.bad && (len(check.diags) < 1 || check.diags[len(check.diags)-1].Field != "spec.path") {
			t.Errorf("diagnostics %v, want the last at spec.path", check.diags)
		}
	}
}
