package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxExposure is the highest `systemd-analyze security` score the unit may
// have (0 = fully locked down, 10 = fully exposed; systemd calls < 2 "OK").
const maxExposure = 2.0

// systemdAnalyze returns the path of systemd-analyze; it skips locally when
// absent and fails under CI=true, where the score must be checked.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-analyze not found and CI=true (apt-get install systemd): %v", err)
		}
		t.Skipf("systemd-analyze not found: %v", err)
	}
	return p
}

var exposureRE = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// Exposure runs `systemd-analyze security --offline=true` on a unit file
// and returns the overall score.
func exposure(t *testing.T, analyze, path string) float64 {
	t.Helper()
	out, err := exec.Command(analyze, "security", "--offline=true", "--no-pager", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security %s: %v\n%s", path, err, out)
	}
	m := exposureRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure in systemd-analyze output:\n%s", out)
	}
	score, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("parse exposure %q: %v", m[1], err)
	}
	return score
}

func TestUnitExposure(t *testing.T) {
	analyze := systemdAnalyze(t)
	score := exposure(t, analyze, "haroute.service")
	t.Logf("systemd-analyze security exposure: %.1f", score)
	if score > maxExposure {
		t.Errorf("exposure %.1f > %.1f", score, maxExposure)
	}
}

// TestUnitWithCommandVerifies checks that systemd parses the ExecStart= line
// we generate for awkward arguments (spaces, quotes, specifiers, $).
func TestUnitWithCommandVerifies(t *testing.T) {
	analyze := systemdAnalyze(t)
	text, err := UnitWithCommand("/bin/echo", []string{"run", "--config-dir", "/srv/my config", `--x=a"b\c`, "100%", "$HOME", ";", ""})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, UnitName)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: err=%v\n%s", err, out)
	}
	if score := exposure(t, analyze, path); score > maxExposure {
		t.Errorf("exposure of the rewritten unit %.1f > %.1f", score, maxExposure)
	}
}

func TestUnitWithCommand(t *testing.T) {
	text, err := UnitWithCommand("/usr/local/bin/haroute", []string{"run", "--config-dir", "/var/lib/git-sync/config", "--metrics-address", "127.0.0.1:9191"})
	if err != nil {
		t.Fatal(err)
	}
	want := "ExecStart=/usr/local/bin/haroute run --config-dir /var/lib/git-sync/config --metrics-address 127.0.0.1:9191\n"
	if !strings.Contains(text, "\n"+want) {
		t.Errorf("unit lacks %q", want)
	}
	if n := strings.Count(text, "\nExecStart="); n != 1 {
		t.Errorf("unit has %d ExecStart= lines, want 1", n)
	}
	// Everything else is the shipped unit, byte for byte.
	orig := strings.Split(unit, "\n")
	got := strings.Split(text, "\n")
	if len(orig) != len(got) {
		t.Fatalf("line count %d, want %d", len(got), len(orig))
	}
	for i := range orig {
		if orig[i] != got[i] && !strings.HasPrefix(orig[i], "ExecStart=") {
			t.Errorf("line %d changed: %q -> %q", i+1, orig[i], got[i])
		}
	}

	if _, err := UnitWithCommand("haroute", nil); err == nil || err.Error() != `unit ExecStart: executable "haroute" is not an absolute path` {
		t.Errorf("relative executable: err = %v", err)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"/usr/bin/haroute", "run"}, "/usr/bin/haroute run"},
		{[]string{"/a", "my dir"}, `/a "my dir"`},
		{[]string{"/a", `q"uote`}, `/a "q\"uote"`},
		{[]string{"/a", `back\slash`}, `/a "back\\slash"`},
		{[]string{"/a", "100%"}, "/a 100%%"},
		{[]string{"/a", "$HOME"}, "/a $$HOME"},
		{[]string{"/a", "it's"}, `/a "it's"`},
		{[]string{"/a", ";"}, `/a ";"`},
		{[]string{"/a", ""}, `/a ""`},
		{[]string{"/a", "tab\there"}, `/a "tab\there"`},
		{[]string{"/a", "bell\x07"}, `/a "bell\x07"`},
	}
	for _, tt := range tests {
		if got := CommandLine(tt.words); got != tt.want {
			t.Errorf("CommandLine(%q) = %s, want %s", tt.words, got, tt.want)
		}
	}
}

// TestUnitSettings pins the settings the design depends on, so a careless
// edit shows up as a failing test, not as a router that cannot bind :443.
func TestUnitSettings(t *testing.T) {
	for _, line := range []string{
		"User=haroute",
		"Group=haroute",
		"ExecStart=/usr/bin/haroute run --config-dir /etc/haroute/config --run-dir /run/haroute",
		"ExecReload=/bin/kill -HUP $MAINPID",
		"AmbientCapabilities=CAP_NET_BIND_SERVICE CAP_LEASE",
		"CapabilityBoundingSet=CAP_NET_BIND_SERVICE CAP_LEASE",
		"RuntimeDirectory=haroute",
		"RuntimeDirectoryMode=0700",
		"StateDirectory=haroute",
		"ConfigurationDirectory=haroute",
		"LimitNOFILE=1048576",
		"KillMode=process",
		"RuntimeDirectoryPreserve=restart",
		"Restart=on-failure",
		"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
		"SystemCallFilter=@system-service",
		"UMask=0077",
	} {
		if !strings.Contains(unit, "\n"+line+"\n") {
			t.Errorf("unit lacks %q", line)
		}
	}
	for _, forbidden := range []string{"\nMemoryDenyWriteExecute=yes", "\nPrivateUsers=yes", "\nPrivateNetwork=yes", "\nIPAddressDeny="} {
		if strings.Contains(unit, forbidden) {
			t.Errorf("unit sets %q, which breaks HAProxy as a router", strings.TrimSpace(forbidden))
		}
	}
}
