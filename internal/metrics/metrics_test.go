package metrics

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// exercise touches every metric once so that vectors have series to show.
func exercise(m *Metrics) {
	now := time.Unix(1_700_000_000, 500_000_000)
	m.ObserveReload(120*time.Millisecond, []string{"route added: default/shop", "route added: default/cart", "ports changed"}, true, now)
	m.ObserveReload(80*time.Millisecond, []string{"runtime-fallback: add server refused"}, false, now.Add(time.Minute))
	m.ObserveWrite(3 * time.Millisecond)
	m.RuntimeUpdate("add-server", 3)
	m.RuntimeUpdate("set-weight", 0) // ignored
	m.RuntimeFallback("read-back mismatch: be_http:default:shop/ep_10.0.0.1_8080")
	m.SetGeneration(1)
	m.SetGeneration(2)
	m.SetInputProblems(2, 1, 0)
	m.SetStale(1)
	m.DeletionGuardHeld()
	m.SnapshotError()
	m.SetRoutes(map[string]int{"admitted": 4, "rejected": 1})
	m.SetProcesses(1, 2)
	m.WatchEvent()
	m.WatchEvent()
}

func TestGatherNamesAndTypes(t *testing.T) {
	m := New()
	exercise(m)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]dto.MetricType{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "haroute_") {
			got[f.GetName()] = f.GetType()
		}
	}
	want := map[string]dto.MetricType{
		"haroute_reload_seconds":                        dto.MetricType_HISTOGRAM,
		"haroute_reload_failures_total":                 dto.MetricType_COUNTER,
		"haroute_last_reload_successful":                dto.MetricType_GAUGE,
		"haroute_last_reload_success_timestamp_seconds": dto.MetricType_GAUGE,
		"haroute_write_config_seconds":                  dto.MetricType_HISTOGRAM,
		"haroute_reloads_total":                         dto.MetricType_COUNTER,
		"haroute_runtime_updates_total":                 dto.MetricType_COUNTER,
		"haroute_runtime_fallbacks_total":               dto.MetricType_COUNTER,
		"haroute_config_generation":                     dto.MetricType_GAUGE,
		"haroute_input_problems":                        dto.MetricType_GAUGE,
		"haroute_stale_objects":                         dto.MetricType_GAUGE,
		"haroute_deletion_guard_holds_total":            dto.MetricType_COUNTER,
		"haroute_snapshot_errors_total":                 dto.MetricType_COUNTER,
		"haroute_routes":                                dto.MetricType_GAUGE,
		"haroute_haproxy_processes":                     dto.MetricType_GAUGE,
		"haroute_watch_events_total":                    dto.MetricType_COUNTER,
	}
	for name, typ := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("metric %s missing", name)
			continue
		}
		if g != typ {
			t.Errorf("metric %s has type %v, want %v", name, g, typ)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected metric %s", name)
		}
	}
	// The Go and process collectors are registered too.
	var haveGo, haveProcess bool
	for _, f := range families {
		haveGo = haveGo || f.GetName() == "go_goroutines"
		haveProcess = haveProcess || f.GetName() == "process_open_fds"
	}
	if !haveGo || !haveProcess {
		t.Errorf("go collector present %v, process collector present %v; want both", haveGo, haveProcess)
	}
}

// series renders every haroute_ sample (histograms as _count) as
// `name{k="v",...} value`, sorted, for exact comparison.
func series(t *testing.T, m *Metrics) []string {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	var out []string
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "haroute_") {
			continue
		}
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+`"`+l.GetValue()+`"`)
			}
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			var v float64
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				v = mt.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				v = mt.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				v = float64(mt.GetHistogram().GetSampleCount())
				name += "_count"
			}
			out = append(out, name+" "+formatFloat(v))
		}
	}
	sort.Strings(out)
	return out
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func TestSeriesValues(t *testing.T) {
	m := New()
	exercise(m)
	want := []string{
		`haroute_config_generation 2`,
		`haroute_deletion_guard_holds_total 1`,
		`haroute_haproxy_processes{role="current"} 1`,
		`haroute_haproxy_processes{role="old"} 2`,
		`haroute_input_problems{severity="error"} 2`,
		`haroute_input_problems{severity="note"} 0`,
		`haroute_input_problems{severity="warning"} 1`,
		`haroute_last_reload_success_timestamp_seconds 1700000000.5`,
		`haroute_last_reload_successful 0`,
		`haroute_reload_failures_total 1`,
		`haroute_reload_seconds_count 2`,
		`haroute_reloads_total{reason="ports-changed"} 1`,
		`haroute_reloads_total{reason="route-added"} 1`,
		`haroute_reloads_total{reason="runtime-fallback"} 1`,
		`haroute_routes{status="admitted"} 4`,
		`haroute_routes{status="admitted-with-warnings"} 0`,
		`haroute_routes{status="rejected"} 1`,
		`haroute_routes{status="stale"} 0`,
		`haroute_runtime_fallbacks_total{reason="read-back-mismatch"} 1`,
		`haroute_runtime_updates_total{op="add-server"} 3`,
		`haroute_runtime_updates_total{op="del-server"} 0`,
		`haroute_runtime_updates_total{op="disable-health"} 0`,
		`haroute_runtime_updates_total{op="drain-server"} 0`,
		`haroute_runtime_updates_total{op="enable-health"} 0`,
		`haroute_runtime_updates_total{op="map-replace"} 0`,
		`haroute_runtime_updates_total{op="reenable-server"} 0`,
		`haroute_runtime_updates_total{op="set-cert"} 0`,
		`haroute_runtime_updates_total{op="set-cookie-key"} 0`,
		`haroute_runtime_updates_total{op="set-weight"} 0`,
		`haroute_snapshot_errors_total 1`,
		`haroute_stale_objects 1`,
		`haroute_watch_events_total 2`,
		`haroute_write_config_seconds_count 1`,
	}
	got := series(t, m)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A later success flips the gauge back and routes drop stale statuses.
	m.ObserveReload(time.Millisecond, nil, true, time.Unix(1_700_000_100, 0))
	m.SetRoutes(map[string]int{"admitted": 5})
	got = series(t, m)
	for _, w := range []string{
		`haroute_last_reload_successful 1`,
		`haroute_last_reload_success_timestamp_seconds 1700000100`,
		`haroute_reloads_total{reason="other"} 1`,
		`haroute_routes{status="admitted"} 5`,
	} {
		if !contains(got, w) {
			t.Errorf("missing %s in\n%s", w, strings.Join(got, "\n"))
		}
	}
	if contains(got, `haroute_routes{status="rejected"} 1`) {
		t.Errorf("stale rejected route count kept")
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

func TestReasonKind(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"route added: default/shop", "route-added"},
		{"route deleted: ns/name", "route-deleted"},
		{"runtime-fallback: add server refused", "runtime-fallback"},
		{"RouterConfig tuning changed", "routerconfig-tuning-changed"},
		{"annotations_changed: default/x", "annotations-changed"},
		{"backend be_http:default:shop settings changed", "backend-be-http"},
		{"route default/shop added", "route-added"},
		{"ports 80 -> 8080", "ports"},
		{"", "other"},
		{": nothing before the colon", "other"},
		{"10.0.0.1", "other"},
		{strings.Repeat("word ", 30), "word-word-word-word-word-word-word-word-word"},
		{strings.Repeat("x", 60), strings.Repeat("x", 48)},
	}
	for _, tt := range tests {
		if got := ReasonKind(tt.in); got != tt.want {
			t.Errorf("ReasonKind(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestHandlerServesText(t *testing.T) {
	m := New()
	exercise(m)
	body := scrape(t, m)
	for _, want := range []string{
		"# TYPE haroute_reload_seconds histogram",
		`haroute_config_generation 2`,
		"# TYPE go_goroutines gauge",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	if strings.Contains(body, `haroute_config_info`) {
		t.Errorf("scrape still shows config_info, a series per change")
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read scrape: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape status %d: %s", resp.StatusCode, b)
	}
	return string(b)
}

// TestPromtoolCheckMetrics lints the exposition with promtool, which CI
// installs (Debian package prometheus). Locally it skips when absent.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool not found and CI=true: %v", err)
		}
		t.Skipf("promtool not found: %v", err)
	}
	m := New()
	exercise(m)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(scrape(t, m))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out.String())
	}
	if s := strings.TrimSpace(out.String()); s != "" {
		t.Errorf("promtool check metrics reported problems:\n%s", s)
	}
}

func TestObserveStartIsASuccessfulLoad(t *testing.T) {
	m := New()
	m.ObserveStart(time.Unix(1700000000, 0))
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	reloadSeries := 0
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch f.GetName() {
			case "haroute_last_reload_successful", "haroute_last_reload_success_timestamp_seconds":
				values[f.GetName()] = metric.GetGauge().GetValue()
			case "haroute_reloads_total":
				reloadSeries++
			}
		}
	}
	if got := values["haroute_last_reload_successful"]; got != 1 {
		t.Fatalf("last_reload_successful = %v after a start, want 1", got)
	}
	if got := values["haroute_last_reload_success_timestamp_seconds"]; got != 1700000000 {
		t.Fatalf("last_reload_success_timestamp_seconds = %v, want 1700000000", got)
	}
	if reloadSeries != 0 {
		t.Fatalf("a start counted %d reload series", reloadSeries)
	}
}

// A fresh registry shows every known labelled series at 0, so alerts and
// dashboards see 0 rather than "no data".
func TestKnownSeriesStartAtZero(t *testing.T) {
	body := scrape(t, New())
	want := []string{
		`haroute_routes{status="admitted"} 0`,
		`haroute_routes{status="rejected"} 0`,
		`haroute_routes{status="stale"} 0`,
		`haroute_input_problems{severity="error"} 0`,
		`haroute_runtime_updates_total{op="add-server"} 0`,
		`haroute_runtime_updates_total{op="set-cert"} 0`,
		`haroute_stale_objects 0`,
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("fresh scrape lacks %q", w)
		}
	}
}
