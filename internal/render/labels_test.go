package render

import "testing"

func TestSameLabels(t *testing.T) {
	shared := map[string]string{"app": "web"}
	cases := []struct {
		name string
		a, b map[string]string
		want bool
	}{
		{"same map", shared, shared, true},
		{"equal maps", shared, map[string]string{"app": "web"}, true},
		{"different value", shared, map[string]string{"app": "api"}, false},
		{"extra key", shared, map[string]string{"app": "web", "tier": "1"}, false},
		{"nil and empty", nil, map[string]string{}, true},
		{"nil and not empty", nil, shared, false},
		{"both nil", nil, nil, true},
	}
	for _, tc := range cases {
		if got := sameLabels(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameLabels = %v, want %v", tc.name, got, tc.want)
		}
	}
}
