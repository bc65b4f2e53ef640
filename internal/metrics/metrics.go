// Package metrics holds haroute's own Prometheus metrics: how reloads,
// runtime updates and snapshots go. HAProxy's traffic metrics come from its
// built-in exporter on the stats port; these describe the router itself.
//
// Metrics live in a registry of their own (never the global default one), so
// tests and embedders can build as many daemons as they like in one process.
package metrics

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/plan"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "haroute"

// Metrics is the set of collectors the daemon updates. Its methods are safe
// for concurrent use (the underlying collectors are).
type Metrics struct {
	registry *prometheus.Registry

	reloadSeconds       prometheus.Histogram
	reloadFailures      prometheus.Counter
	lastReloadOK        prometheus.Gauge
	lastReloadSuccessTS prometheus.Gauge
	writeConfigSeconds  prometheus.Histogram
	reloads             *prometheus.CounterVec
	runtimeUpdates      *prometheus.CounterVec
	runtimeFallbacks    *prometheus.CounterVec
	generation          prometheus.Gauge
	snapshotErrors      prometheus.Counter
	inputProblems       *prometheus.GaugeVec
	staleObjects        prometheus.Gauge
	guardHolds          prometheus.Counter
	routes              *prometheus.GaugeVec
	processes           *prometheus.GaugeVec
	watchEvents         prometheus.Counter
	behind              prometheus.Gauge
	unreadable          prometheus.Gauge
	haproxyExits        prometheus.Counter
	workerCrashes       prometheus.Counter
}

// New builds the metrics and registers them, with the Go runtime and process
// collectors, in a fresh registry.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		reloadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "reload_seconds",
			Help:      "Time from asking HAProxy to reload until the new worker was confirmed (or the reload failed).",
			// Reloads take tens of milliseconds when idle and seconds on a
			// loaded host with many certificates.
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}),
		reloadFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "reload_failures_total",
			Help:      "Reloads that failed: the live configuration was refused by haproxy -c at reload time, or HAProxy did not confirm a new worker. A candidate refused before it reaches the live directory is not a reload and is not counted.",
		}),
		lastReloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "last_reload_successful",
			Help:      "1 if HAProxy's last load (its start or the last reload) succeeded, 0 if the last reload failed.",
		}),
		lastReloadSuccessTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "last_reload_success_timestamp_seconds",
			Help:      "Unix time of HAProxy's last successful load (its start or a reload).",
		}),
		writeConfigSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "write_config_seconds",
			Help:      "Time to write a rendered bundle (haproxy.cfg, maps, certificates) to disk.",
			Buckets:   []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "reloads_total",
			Help:      "Reloads attempted (including ones that failed), by kind of reason; a reload with several kinds of reason counts once under each.",
		}, []string{"reason"}),
		runtimeUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "runtime_updates_total",
			Help:      "Runtime API operations sent as part of a runtime plan that was applied and read back, by operation.",
		}, []string{"op"}),
		runtimeFallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "runtime_fallbacks_total",
			Help:      "Runtime plans that fell back to a reload, by why: command-failed (HAProxy refused or did not answer a command), read-back-mismatch (the read-back disagreed with the plan), other.",
		}, []string{"reason"}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "config_generation",
			Help:      "Generation of the configuration HAProxy runs: configurations applied since haroute started, 0 before the first. The content hash is in /status.",
		}),
		inputProblems: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "input_problems",
			Help:      "Diagnostics (YAML, validation, admission) of the last generation read from the config directory, by severity: error, warning, note. An error means some object is rejected or serves its last good version.",
		}, []string{"severity"}),
		staleObjects: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "stale_objects",
			Help:      "Objects (routes, endpoints, the RouterConfig) serving their last good version because their current version is invalid.",
		}),
		guardHolds: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "deletion_guard_holds_total",
			Help:      "Holds of the deletion guard: a drop of all routes or more than the allowed share, or (plain mode) of any route, counts once while the same routes stay dropped; (plain mode) a changed file without a final newline counts once for each version of it held.",
		}),
		snapshotErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "snapshot_errors_total",
			Help:      "Config directory reads that failed, plus files in a newly read directory that could not be read (permissions, size limit, refused file type, link leaving the directory). YAML and validation errors are not counted here; see haroute_input_problems.",
		}),
		routes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "routes",
			Help:      "Routes in the last evaluated generation, by state: admitted, admitted-with-warnings, rejected (never good, not served), stale (serving its last good version), held (deleted from the directory, served while the deletion guard holds it).",
		}, []string{"status"}),
		processes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "haproxy_processes",
			Help:      "HAProxy worker processes: the current one and old ones still draining connections after reloads.",
		}, []string{"role"}),
		behind: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "directory_behind",
			Help:      "1 while the config directory's latest generation cannot be applied (HAProxy refuses it as a whole, with no route or setting to blame, or it cannot be written); the last good one serves. 0 once one is applied.",
		}),
		unreadable: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "config_dir_unreadable",
			Help:      "1 while the config directory itself cannot be read (gone, not a directory, no permission); the last good state serves. 0 once it reads again.",
		}),
		haproxyExits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "haproxy_exits_total",
			Help:      "HAProxy master exits haroute did not ask for (a crash, a kill, the OOM killer); each is followed by a restart.",
		}),
		workerCrashes: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "haproxy_worker_crashes_total",
			Help:      "Old HAProxy workers, draining connections after a reload, that crashed or were killed (the OOM killer): the connections they still served were cut. HAProxy's master only warns of it.",
		}),
		watchEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "watch_events_total",
			Help:      "File system events and resync ticks that made haroute look at the config directory.",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.reloadSeconds,
		m.reloadFailures,
		m.lastReloadOK,
		m.lastReloadSuccessTS,
		m.writeConfigSeconds,
		m.reloads,
		m.runtimeUpdates,
		m.runtimeFallbacks,
		m.generation,
		m.inputProblems,
		m.staleObjects,
		m.guardHolds,
		m.snapshotErrors,
		m.routes,
		m.processes,
		m.watchEvents,
		m.behind,
		m.unreadable,
		m.haproxyExits,
		m.workerCrashes,
	)
	// Both roles exist from the start so dashboards see 0, not "no data".
	m.processes.WithLabelValues("current").Set(0)
	m.processes.WithLabelValues("old").Set(0)
	m.SetRoutes(nil)
	m.SetInputProblems(0, 0, 0)
	for _, op := range RuntimeOps {
		m.runtimeUpdates.WithLabelValues(op)
	}
	for _, kind := range ReloadReasonKinds {
		m.reloads.WithLabelValues(kind)
	}
	for _, kind := range FallbackKinds {
		m.runtimeFallbacks.WithLabelValues(kind)
	}
	return m
}

// Registry returns the registry for gathering (tests, or an embedder that
// wants to merge it into its own endpoint).
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// ObserveReload records one reload attempt: how long it took, the kinds of
// its reasons (typed from plan to the label, see plan.Kind.Label), and
// whether it succeeded. now is passed in (not read here) so
// the timestamp is the one the daemon logged and shows in status.
func (m *Metrics) ObserveReload(d time.Duration, kinds []plan.Kind, ok bool, now time.Time) {
	m.reloadSeconds.Observe(d.Seconds())
	for _, kind := range reasonLabels(kinds) {
		m.reloads.WithLabelValues(kind).Inc()
	}
	if ok {
		m.lastReloadOK.Set(1)
		m.lastReloadSuccessTS.Set(float64(now.UnixNano()) / 1e9)
		return
	}
	m.reloadFailures.Inc()
	m.lastReloadOK.Set(0)
}

// ObserveStart records that HAProxy started and loaded its configuration.
// It is not a reload (no counter moves), but it is a successful load: a
// fresh daemon must not look like one whose last reload failed, or the
// reload-failure alert would fire on every healthy new install.
func (m *Metrics) ObserveStart(now time.Time) {
	m.lastReloadOK.Set(1)
	m.lastReloadSuccessTS.Set(float64(now.UnixNano()) / 1e9)
}

// ObserveWrite records the time taken to write one bundle to disk.
func (m *Metrics) ObserveWrite(d time.Duration) {
	m.writeConfigSeconds.Observe(d.Seconds())
}

// RuntimeUpdate counts n runtime API operations of one kind, e.g.
// ("add-server", 3). Non-positive n is ignored.
func (m *Metrics) RuntimeUpdate(op string, n int) {
	if n <= 0 {
		return
	}
	m.runtimeUpdates.WithLabelValues(op).Add(float64(n))
}

// Why a runtime plan fell back to a reload: the label values of
// runtime_fallbacks_total.
const (
	// FallbackCommandFailed: HAProxy refused a runtime command, or its
	// socket did not answer.
	FallbackCommandFailed = "command-failed"
	// FallbackReadBack: the commands went through, but reading the state
	// back disagreed with the plan.
	FallbackReadBack = "read-back-mismatch"
	// FallbackOther: anything else.
	FallbackOther = "other"
)

// FallbackKinds are the label values of runtime_fallbacks_total, each with
// a series from the start.
var FallbackKinds = []string{FallbackCommandFailed, FallbackReadBack, FallbackOther}

// RuntimeFallback counts a runtime plan that had to become a reload. kind
// should be one of FallbackKinds; anything else is reduced with ReasonKind
// and counted as FallbackOther unless that yields a known kind, so free
// text (an error message) can never create series.
func (m *Metrics) RuntimeFallback(kind string) {
	m.runtimeFallbacks.WithLabelValues(fallbackKind(kind)).Inc()
}

func fallbackKind(kind string) string {
	if slices.Contains(FallbackKinds, kind) {
		return kind
	}
	if k := ReasonKind(kind); slices.Contains(FallbackKinds, k) {
		return k
	}
	return FallbackOther
}

// SetGeneration publishes the generation of the configuration HAProxy now
// runs. Call it only once HAProxy has accepted and loaded the generation.
func (m *Metrics) SetGeneration(generation uint64) { m.generation.Set(float64(generation)) }

// SetInputProblems publishes the diagnostics of the last generation read:
// the current counts, not a running total, so an alert fires exactly while
// the tree has errors.
func (m *Metrics) SetInputProblems(errors, warnings, notes int) {
	m.inputProblems.WithLabelValues("error").Set(float64(errors))
	m.inputProblems.WithLabelValues("warning").Set(float64(warnings))
	m.inputProblems.WithLabelValues("note").Set(float64(notes))
}

// SetStale publishes how many objects serve their last good version.
func (m *Metrics) SetStale(n int) { m.staleObjects.Set(float64(n)) }

// DeletionGuardHeld counts one generation held back by the deletion guard.
func (m *Metrics) DeletionGuardHeld() { m.guardHolds.Inc() }

// SnapshotError counts one failed read of the config directory, or one
// file in it that could not be read. It is not for YAML or validation
// errors: those are SetInputProblems.
func (m *Metrics) SnapshotError() { m.snapshotErrors.Inc() }

// SetRoutes publishes route counts by state (the keys are RouteStates;
// status.RouteCounts builds the map). Every known state is set on each
// call, so a state missing from counts shows 0 rather than its old value.
// Keys that are not RouteStates are ignored: a label value must never
// come and go with the input.
func (m *Metrics) SetRoutes(counts map[string]int) {
	for _, state := range RouteStates {
		m.routes.WithLabelValues(state).Set(float64(counts[state]))
	}
}

// RouteStates are the states routes are counted by (model.RouteState
// values); each has a series from the start.
var RouteStates = []string{"admitted", "admitted-with-warnings", "rejected", "stale", "held"}

// ReloadReasonKinds are the label values of reloads_total that haroute
// produces today, each with a series from the start: the kinds of
// internal/plan (plan.Kind through ReasonKind) and the daemon's own
// reasons (a runtime fallback, healing a broken run dir or socket).
// ReasonKind may return others for reasons added later; they get a series
// when they first occur.
var ReloadReasonKinds = []string{
	"initial-configuration", "dynamic-config-manager-disabled", "router-settings-changed",
	"route-added", "route-deleted", "route-bound-to-a-spare-backend", "route-unbound-from-its-spare-backend",
	"termination-changed", "backend-settings-changed",
	"host-path-changed", "redirect-policy-changed",
	"endpoint-added", "endpoint-removed", "endpoint-re-enabled", "endpoint-address-changed",
	"server-options-changed", "weight-changed", "health-checks-changed",
	"map-changed", "map-file-changed", "certificate-changed", "certificate-file-changed",
	"crt-list-changed", "ca-file-changed", "allowlist-changed", "file-changed", "haproxy-cfg-changed",
	"runtime-fallback", "heal", "pool-of-spare-backends-topped-up", "coalesced-with-a-pending-reload", "haproxy-started", "other",
}

// RuntimeOps are the operations runtime_updates_total counts, each with a
// series from the start.
var RuntimeOps = []string{"add-server", "drain-server", "reenable-server", "set-weight", "enable-health",
	"disable-health", "map-replace", "map-edit", "set-cert", "add-cert", "delete-cert", "add-crt-list-line",
	"delete-crt-list-line", "add-ca-file", "delete-ca-file", "acl-replace", "set-cookie-key", "del-server"}

// SetProcesses publishes the number of current and old (draining) HAProxy
// workers.
func (m *Metrics) SetProcesses(current, old int) {
	m.processes.WithLabelValues("current").Set(float64(current))
	m.processes.WithLabelValues("old").Set(float64(old))
}

// SetUnreadable records whether the last read of the config directory
// failed as a whole.
func (m *Metrics) SetUnreadable(unreadable bool) { setFlag(m.unreadable, unreadable) }

// SetBehind records whether the directory's latest generation could not
// be applied.
func (m *Metrics) SetBehind(behind bool) { setFlag(m.behind, behind) }

// setFlag sets a gauge that says yes (1) or no (0).
func setFlag(g prometheus.Gauge, on bool) {
	v := 0.0
	if on {
		v = 1
	}
	g.Set(v)
}

// HAProxyExited counts an exit of HAProxy haroute did not ask for.
func (m *Metrics) HAProxyExited() { m.haproxyExits.Inc() }

// HAProxyWorkerCrashed counts an old worker that crashed or was killed.
func (m *Metrics) HAProxyWorkerCrashed() { m.workerCrashes.Inc() }

// WatchEvent counts one trigger from the watcher.
func (m *Metrics) WatchEvent() { m.watchEvents.Inc() }

// maxKindLen bounds a reason label: kinds are short phrases, and anything
// longer is almost certainly free text that slipped through.
const maxKindLen = 48

// ReasonKind reduces a reload or fallback reason to a low-cardinality label
// value. Reasons read "kind: detail" ("route added: default/shop",
// "runtime-fallback: add server refused"); the detail names objects and would
// create a series per route, so only the kind is kept, lowercased, with
// spaces and underscores turned into dashes ("route-added"). Words that carry
// names or numbers (containing '/', '.', digits and the like) are dropped
// even from the kind, so a reason written without a colon stays bounded too.
// An empty result becomes "other".
func ReasonKind(reason string) string {
	kind, _, _ := strings.Cut(reason, ":")
	if k, ok := kindAliases[strings.ToLower(strings.TrimSpace(kind))]; ok {
		return k
	}
	var words []string
	for _, w := range strings.FieldsFunc(kind, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '_' || r == '-'
	}) {
		if !isPlainWord(w) {
			continue
		}
		words = append(words, strings.ToLower(w))
	}
	out := strings.Join(words, "-")
	if len(out) > maxKindLen {
		// Cut at a word boundary so the label still reads as words.
		out = out[:maxKindLen+1]
		if i := strings.LastIndexByte(out, '-'); i > 0 {
			out = out[:i]
		} else {
			out = out[:maxKindLen]
		}
	}
	if out == "" {
		return "other"
	}
	return out
}

// kindAliases name the fixed kinds whose words are not plain letters, which
// the general rule would cut down to a bare "changed".
var kindAliases = map[string]string{
	"host/path changed":   "host-path-changed",
	"haproxy.cfg changed": "haproxy-cfg-changed",
}

// isPlainWord reports whether w is made of ASCII letters only.
func isPlainWord(w string) bool {
	for _, r := range w {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return w != ""
}

// reasonLabels returns the distinct labels of reload reason kinds, in
// first-seen order, so one reload counts once per kind however many routes
// it touched.
func reasonLabels(kinds []plan.Kind) []string {
	if len(kinds) == 0 {
		return []string{"other"}
	}
	labels := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if l := k.Label(); !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	return labels
}
