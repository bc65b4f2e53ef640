package haproxy

import "testing"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
	}{
		{"2.6.12-1+deb12u4", Version{2, 6}},
		{"3.0.11-1+deb13u4", Version{3, 0}},
		{"2.4.22-f8e3218", Version{2, 4}},
		{"3.2-dev5", Version{3, 2}},
	} {
		got, err := ParseVersion(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "3", "x.0", "3.x"} {
		if v, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) = %v, want an error", bad, v)
		}
	}
	v := Version{3, 0}
	if !v.AtLeast(2, 6) || !v.AtLeast(3, 0) || v.AtLeast(3, 1) || (Version{2, 6}).AtLeast(3, 0) {
		t.Errorf("AtLeast wrong around %v", v)
	}
}
