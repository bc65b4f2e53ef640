package metrics

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/plan"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// exercise touches every metric once so that vectors have series to show.
func exercise(m *Metrics) {
	now := time.Unix(1_700_000_000, 500_000_000)
	m.ObserveReload(120*time.Millisecond, []plan.Kind{plan.KindRouteAdded, plan.KindRouteAdded, plan.KindRouterSettings}, true, now)
	m.ObserveReload(80*time.Millisecond, []plan.Kind{plan.KindRuntimeFallback}, false, now.Add(time.Minute))
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
	m.SetBehind(true)
	m.SetUnreadable(true)
	m.HAProxyExited()
	m.HAProxyWorkerCrashed()
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
		"haroute_directory_behind":                      dto.MetricType_GAUGE,
		"haroute_config_dir_unreadable":                 dto.MetricType_GAUGE,
		"haroute_haproxy_exits_total":                   dto.MetricType_COUNTER,
		"haroute_haproxy_worker_crashes_total":          dto.MetricType_COUNTER,
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

// withZeros adds a 0 series for every known label value that want does
// not list, and sorts: the full exposition, exactly.
func withZeros(want []string) []string {
	listed := map[string]bool{}
	for _, w := range want {
		name, _, _ := strings.Cut(w, " ")
		listed[name] = true
	}
	add := func(metric, label string, values []string) {
		for _, v := range values {
			name := metric + "{" + label + `="` + v + `"}`
			if !listed[name] {
				want = append(want, name+" 0")
			}
		}
	}
	add("haroute_reloads_total", "reason", ReloadReasonKinds)
	add("haroute_runtime_updates_total", "op", RuntimeOps)
	add("haroute_runtime_fallbacks_total", "reason", FallbackKinds)
	add("haroute_routes", "status", RouteStates)
	add("haroute_input_problems", "severity", []string{"error", "warning", "note"})
	add("haroute_haproxy_processes", "role", []string{"current", "old"})
	sort.Strings(want)
	return want
}

func TestSeriesValues(t *testing.T) {
	m := New()
	exercise(m)
	want := withZeros([]string{
		`haroute_config_dir_unreadable 1`,
		`haroute_config_generation 2`,
		`haroute_deletion_guard_holds_total 1`,
		`haroute_directory_behind 1`,
		`haroute_haproxy_exits_total 1`,
		`haroute_haproxy_worker_crashes_total 1`,
		`haroute_haproxy_processes{role="current"} 1`,
		`haroute_haproxy_processes{role="old"} 2`,
		`haroute_input_problems{severity="error"} 2`,
		`haroute_input_problems{severity="warning"} 1`,
		`haroute_last_reload_success_timestamp_seconds 1700000000.5`,
		`haroute_last_reload_successful 0`,
		`haroute_reload_failures_total 1`,
		`haroute_reload_seconds_count 2`,
		`haroute_reloads_total{reason="route-added"} 1`,
		`haroute_reloads_total{reason="router-settings-changed"} 1`,
		`haroute_reloads_total{reason="runtime-fallback"} 1`,
		`haroute_routes{status="admitted"} 4`,
		`haroute_routes{status="rejected"} 1`,
		`haroute_runtime_fallbacks_total{reason="read-back-mismatch"} 1`,
		`haroute_runtime_updates_total{op="add-server"} 3`,
		`haroute_snapshot_errors_total 1`,
		`haroute_stale_objects 1`,
		`haroute_watch_events_total 2`,
		`haroute_write_config_seconds_count 1`,
	})
	got := series(t, m)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A later success flips the gauge back.
	m.ObserveReload(time.Millisecond, nil, true, time.Unix(1_700_000_100, 0))
	got = series(t, m)
	for _, w := range []string{
		`haroute_last_reload_successful 1`,
		`haroute_last_reload_success_timestamp_seconds 1700000100`,
		`haroute_reloads_total{reason="other"} 1`,
	} {
		if !contains(got, w) {
			t.Errorf("missing %s in\n%s", w, strings.Join(got, "\n"))
		}
	}
}

// A fresh registry shows exactly the known labelled series, all at 0, so
// alerts and dashboards see 0 rather than "no data" (and increase() sees
// the first event).
func TestFreshRegistryShowsKnownSeriesAtZero(t *testing.T) {
	m := New()
	want := withZeros([]string{
		`haroute_config_dir_unreadable 0`,
		`haroute_config_generation 0`,
		`haroute_deletion_guard_holds_total 0`,
		`haroute_directory_behind 0`,
		`haroute_haproxy_exits_total 0`,
		`haroute_haproxy_worker_crashes_total 0`,
		`haroute_last_reload_success_timestamp_seconds 0`,
		`haroute_last_reload_successful 0`,
		`haroute_reload_failures_total 0`,
		`haroute_reload_seconds_count 0`,
		`haroute_snapshot_errors_total 0`,
		`haroute_stale_objects 0`,
		`haroute_watch_events_total 0`,
		`haroute_write_config_seconds_count 0`,
	})
	got := series(t, m)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fresh series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range []struct {
		name string
		n    int
	}{
		{"haroute_reloads_total", len(ReloadReasonKinds)},
		{"haroute_runtime_updates_total", len(RuntimeOps)},
		{"haroute_runtime_fallbacks_total", len(FallbackKinds)},
		{"haroute_routes", 5},
		{"haroute_input_problems", 3},
	} {
		n, err := testutil.GatherAndCount(m.Registry(), c.name)
		if err != nil {
			t.Fatal(err)
		}
		if n != c.n {
			t.Errorf("%s has %d series in a fresh registry, want %d", c.name, n, c.n)
		}
	}
	for _, state := range []string{"admitted", "admitted-with-warnings", "rejected", "stale", "held"} {
		if !slices.Contains(RouteStates, state) {
			t.Errorf("RouteStates lacks %q", state)
		}
	}
}

// A state that drops to zero shows 0, not its old value; keys that are not
// states create no series.
func TestSetRoutesResetsMissingStates(t *testing.T) {
	m := New()
	m.SetRoutes(map[string]int{"admitted": 3, "stale": 2, "rejected": 1})
	m.SetRoutes(map[string]int{"admitted": 4, "bogus": 9})
	for state, want := range map[string]float64{"admitted": 4, "admitted-with-warnings": 0, "rejected": 0, "stale": 0} {
		if got := testutil.ToFloat64(m.routes.WithLabelValues(state)); got != want {
			t.Errorf("routes{status=%q} = %v, want %v", state, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.routes); n != len(RouteStates) {
		t.Errorf("routes has %d series, want %d (no series for an unknown key)", n, len(RouteStates))
	}
}

// The gauges hold the current counts: problems that are gone show 0.
func TestInputProblemsAndStaleAreCurrent(t *testing.T) {
	m := New()
	m.SetInputProblems(3, 2, 1)
	m.SetStale(2)
	m.SetInputProblems(0, 1, 0)
	m.SetStale(0)
	want := `
# HELP haroute_input_problems Diagnostics (YAML, validation, admission) of the last generation read from the config directory, by severity: error, warning, note. An error means some object is rejected or serves its last good version.
# TYPE haroute_input_problems gauge
haroute_input_problems{severity="error"} 0
haroute_input_problems{severity="note"} 0
haroute_input_problems{severity="warning"} 1
# HELP haroute_stale_objects Objects (routes, endpoints, the RouterConfig) serving their last good version because their current version is invalid.
# TYPE haroute_stale_objects gauge
haroute_stale_objects 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "haroute_input_problems", "haroute_stale_objects"); err != nil {
		t.Error(err)
	}
}

// The generation is one series whatever its value (haroute_config_info made
// a series per change), and snapshot_errors_total says it is not YAML.
func TestGenerationGaugeAndSnapshotErrorsHelp(t *testing.T) {
	m := New()
	for gen := uint64(1); gen <= 5; gen++ {
		m.SetGeneration(gen)
	}
	m.SnapshotError()
	want := `
# HELP haroute_config_generation Generation of the configuration HAProxy runs: configurations applied since haroute started, 0 before the first. The content hash is in /status.
# TYPE haroute_config_generation gauge
haroute_config_generation 5
# HELP haroute_snapshot_errors_total Config directory reads that failed, plus files in a newly read directory that could not be read (permissions, size limit, refused file type, link leaving the directory). YAML and validation errors are not counted here; see haroute_input_problems.
# TYPE haroute_snapshot_errors_total counter
haroute_snapshot_errors_total 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "haroute_config_generation", "haroute_snapshot_errors_total", "haroute_config_info"); err != nil {
		t.Error(err)
	}
}

// Fallback labels are a fixed set: free text cannot create a series.
func TestRuntimeFallbackKinds(t *testing.T) {
	m := New()
	m.RuntimeFallback(FallbackCommandFailed)
	m.RuntimeFallback("read-back mismatch: be_x/ep_1")
	m.RuntimeFallback("runtime-fallback: set server be_x/ep_1 weight 5: No such server")
	m.RuntimeFallback("something entirely new")
	for kind, want := range map[string]float64{FallbackCommandFailed: 1, FallbackReadBack: 1, FallbackOther: 2} {
		if got := testutil.ToFloat64(m.runtimeFallbacks.WithLabelValues(kind)); got != want {
			t.Errorf("runtime_fallbacks_total{reason=%q} = %v, want %v", kind, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.runtimeFallbacks); n != len(FallbackKinds) {
		t.Errorf("runtime_fallbacks_total has %d series, want %d", n, len(FallbackKinds))
	}
}

// Every plan.Kind maps to its own pre-initialised reload reason label, so
// a new plan kind cannot go unnoticed. The kinds are read from plan's
// source (metrics does not import plan).
func TestPlanKindsArePreinitialised(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "plan", "plan.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
			return true
		}
		for _, v := range vs.Values {
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				kinds = append(kinds, s)
			}
		}
		return true
	})
	if len(kinds) < 20 {
		t.Fatalf("found only %d plan kinds in plan.go: %q", len(kinds), kinds)
	}
	labels := map[string]string{}
	for _, k := range kinds {
		label := ReasonKind(k + ": default/shop")
		if typed := plan.Kind(k).Label(); typed != label {
			t.Errorf("plan kind %q: typed label %q, from the reason text %q", k, typed, label)
		}
		if !slices.Contains(ReloadReasonKinds, label) {
			t.Errorf("plan kind %q gives reason %q, which is not in ReloadReasonKinds", k, label)
		}
		if other, dup := labels[label]; dup {
			t.Errorf("plan kinds %q and %q share the reason label %q", other, k, label)
		}
		labels[label] = k
	}
	for _, daemonReason := range []string{"runtime-fallback: add server refused", "heal: admin socket missing"} {
		if label := ReasonKind(daemonReason); !slices.Contains(ReloadReasonKinds, label) {
			t.Errorf("daemon reason %q gives %q, not in ReloadReasonKinds", daemonReason, label)
		}
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

// TestReasonLabels: one reload counts once per kind, and a reload without
// reasons still counts.
func TestReasonLabels(t *testing.T) {
	got := reasonLabels([]plan.Kind{plan.KindRouteAdded, plan.KindCAFile, plan.KindRouteAdded, plan.KindConfig})
	want := []string{"route-added", "ca-file-changed", "haproxy-cfg-changed"}
	if !slices.Equal(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
	if got := reasonLabels(nil); !slices.Equal(got, []string{"other"}) {
		t.Errorf("no reasons: %v, want [other]", got)
	}
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
		{"host/path changed: default/shop", "host-path-changed"},
		{"haproxy.cfg changed", "haproxy-cfg-changed"},
		{"CA file changed: ca/x.pem", "ca-file-changed"},
		{"endpoint re-enabled: be/ep", "endpoint-re-enabled"},
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
	reloads := 0.0
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			switch f.GetName() {
			case "haroute_last_reload_successful", "haroute_last_reload_success_timestamp_seconds":
				values[f.GetName()] = metric.GetGauge().GetValue()
			case "haroute_reloads_total":
				reloads += metric.GetCounter().GetValue()
			}
		}
	}
	if got := values["haroute_last_reload_successful"]; got != 1 {
		t.Fatalf("last_reload_successful = %v after a start, want 1", got)
	}
	if got := values["haroute_last_reload_success_timestamp_seconds"]; got != 1700000000 {
		t.Fatalf("last_reload_success_timestamp_seconds = %v, want 1700000000", got)
	}
	if reloads != 0 {
		t.Fatalf("a start counted %v reloads", reloads)
	}
}
