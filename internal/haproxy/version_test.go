package haproxy

import (
	"os"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
)

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

func TestBinaryVersion(t *testing.T) {
	bin := testutil.HAProxy(t)
	v, err := BinaryVersion(ctxT(t, 10*time.Second), bin)
	if err != nil {
		t.Fatal(err)
	}
	if !v.AtLeast(2, 4) {
		t.Fatalf("BinaryVersion(%s) = %v, want 2.4 or later", bin, v)
	}
	// The running binary says the same in `show info`.
	r := newRig(t)
	r.start(t)
	if got := r.version(t); got != v {
		t.Fatalf("show info says %v, haproxy -v says %v", got, v)
	}
}

// Debian installs haproxy in /usr/sbin, which a user's PATH often lacks:
// `make run` as a user failed with "not found in PATH".
func TestBinaryFoundOutsidePATH(t *testing.T) {
	testutil.HAProxy(t) // fails under CI=true when none is installed
	if _, err := os.Stat("/usr/sbin/haproxy"); err != nil {
		t.Skip("no /usr/sbin/haproxy here")
	}
	t.Setenv("PATH", t.TempDir())
	got, err := Binary("")
	if err != nil || got != "/usr/sbin/haproxy" {
		t.Fatalf("Binary(\"\") with /usr/sbin outside PATH = %q, %v; want /usr/sbin/haproxy", got, err)
	}
	if _, err := Binary("haproxy-nosuch"); err == nil {
		t.Fatal("a name found nowhere resolved")
	}
}
