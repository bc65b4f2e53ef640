package metrics

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// alertsDir holds the example alerting rules, which must only use metrics
// this package exports and must pass promtool.
var alertsDir = filepath.Join("..", "..", "examples", "alerts")

func TestAlertRulesUseExportedMetrics(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join(alertsDir, "haroute.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := New()
	exercise(m)
	m.RegisterRouteStats(func(context.Context) ([]RouteStat, error) {
		return []RouteStat{{Namespace: "ns", Route: "r", Up: 1}}, nil
	})
	m.RegisterCertificates(func() ([]CertificateExpiry, time.Time) {
		return []CertificateExpiry{{Namespace: "ns", Route: "r", NotAfter: time.Unix(2e9, 0)}}, time.Unix(2e9, 0)
	})
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
	}
	names := regexp.MustCompile(`\bharoute_[a-z_]+\b`).FindAllString(string(rules), -1)
	if len(names) == 0 {
		t.Fatal("rules mention no haroute metric")
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("rules use %s, which haroute does not export", n)
		}
	}
}

func TestPromtoolRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found and CI=true: %v", err)
		}
		t.Skipf("promtool not found: %v", err)
	}
	for _, args := range [][]string{
		{"check", "rules", "haroute.rules.yml"},
		{"test", "rules", "haroute.rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = alertsDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
