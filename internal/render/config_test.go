package render

import "testing"

// A specific IPv6 address binds v6only (HAProxy then matches the socket
// it is handed at a reload); "::" and IPv4-mapped addresses stay dual.
func TestSpecificIPv6(t *testing.T) {
	for a, want := range map[string]bool{
		"::1": true, "2001:db8::1": true, "fe80::1%eth0": true,
		"::": false, "::ffff:192.0.2.1": false, "127.0.0.1": false, "0.0.0.0": false, "": false,
	} {
		if got := specificIPv6(a); got != want {
			t.Errorf("specificIPv6(%q) = %v, want %v", a, got, want)
		}
	}
}
