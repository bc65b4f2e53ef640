package plan

import "testing"

// Metrics labels come from the typed kind, never from a reason's text.
func TestKindLabel(t *testing.T) {
	for k, want := range map[Kind]string{
		KindRouteAdded:      "route-added",
		KindHostPath:        "host-path-changed",
		KindCAFile:          "ca-file-changed",
		KindConfig:          "haproxy-cfg-changed",
		KindRuntimeFallback: "runtime-fallback",
		KindCoalesced:       "coalesced-with-a-pending-reload",
		Kind(""):            "other",
		Kind("10/20"):       "other",
	} {
		if got := k.Label(); got != want {
			t.Errorf("%q.Label() = %q, want %q", k, got, want)
		}
	}
}
