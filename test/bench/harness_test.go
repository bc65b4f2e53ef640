package bench

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// The harness follows test/e2e: the daemon runs in-process, HAProxy and the
// backends are real, and generations are published like kubelet does.

// needBench skips load tests unless HAROUTE_BENCH=1: they take minutes and
// measure rather than assert, so `go test ./...` leaves them out.
func needBench(t *testing.T) {
	t.Helper()
	if os.Getenv("HAROUTE_BENCH") != "1" {
		t.Skip("load harness: set HAROUTE_BENCH=1 (make bench)")
	}
	testutil.HAProxy(t)
}

// backend is a named server on 127.0.0.1 (see testenv.Backend); its
// /stream ticks once a second.
type backend = testenv.Backend

func startBackend(t testing.TB, name string) *backend {
	return testenv.StartBackend(t, name, time.Second)
}

// endpointOf is the tree endpoint of a backend.
func endpointOf(b *backend) endpoint { return endpoint{ip: "127.0.0.1", port: b.Port} }

// appliedAt is one state the daemon reported applied, with when.
type appliedAt struct {
	at time.Time
	a  daemon.Applied
}

// applyLog collects OnApply reports. The daemon's loop calls add, so add
// never blocks; waiters poll the list when signalled.
type applyLog struct {
	mu     sync.Mutex
	items  []appliedAt
	signal chan struct{}
}

func newApplyLog() *applyLog { return &applyLog{signal: make(chan struct{}, 1)} }

func (l *applyLog) add(a daemon.Applied) {
	now := time.Now()
	l.mu.Lock()
	l.items = append(l.items, appliedAt{at: now, a: a})
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// reset forgets what was reported so far (and the states it holds).
func (l *applyLog) reset() {
	l.mu.Lock()
	l.items = nil
	l.mu.Unlock()
}

// wait returns the first report satisfying match, dropping it and every
// report before it.
func (l *applyLog) wait(timeout time.Duration, match func(daemon.Applied) bool) (appliedAt, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for i, it := range l.items {
			if match(it.a) {
				l.items = slices.Clone(l.items[i+1:])
				l.mu.Unlock()
				return it, nil
			}
		}
		l.mu.Unlock()
		select {
		case <-l.signal:
		case <-deadline.C:
			return appliedAt{}, fmt.Errorf("no matching state applied within %v", timeout)
		}
	}
}

// router is one daemon serving a published directory.
type router struct {
	t                  testing.TB
	dir, runDir        string
	http, https, stats int
	store              *status.Store
	applies            *applyLog
	writer             *publish.AtomicWriter
	client             *http.Client
	// tuning is extra YAML under spec.tuningOptions (4-space indent).
	tuning string
}

func newRouter(t testing.TB) *router {
	t.Helper()
	runDir := testenv.RunDir(t)
	dir := filepath.Join(t.TempDir(), "config")
	r := &router{
		t: t, dir: dir, runDir: runDir,
		http: testutil.FreePort(t), https: testutil.FreePort(t), stats: testutil.FreePort(t),
		store: &status.Store{}, applies: newApplyLog(),
		writer: publish.NewAtomicWriter(dir),
		// No keep-alive: a kept connection to an old worker would answer
		// for the old configuration after a reload and blur the timing.
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	return r
}

// routerConfig binds to 127.0.0.1 with a 1 s reload interval.
func (r *router) routerConfig() string {
	return testenv.RouterConfig(r.http, r.https, r.stats, r.tuning)
}

// publish makes tr the new generation and returns when the rename is done.
func (r *router) publish(tr *tree) time.Time {
	r.t.Helper()
	tr.router = r.routerConfig()
	if err := r.writer.Publish(tr.files()); err != nil {
		r.t.Fatal(err)
	}
	return time.Now()
}

// publishOn publishes a tree of routes routes, each served by b alone,
// and returns it.
func (r *router) publishOn(routes int, b *backend) *tree {
	r.t.Helper()
	tr := newTree("bench", routes, func(int) []endpoint { return []endpoint{endpointOf(b)} })
	r.publish(tr)
	return tr
}

// start runs the daemon on what was published and waits until it is ready.
// Logs go to the results directory, if any, else nowhere.
func (r *router) start(name string) {
	t := r.t
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if out := os.Getenv("HAROUTE_BENCH_OUT"); out != "" {
		f, err := os.Create(filepath.Join(out, "daemon-"+name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		level := slog.LevelInfo
		if os.Getenv("HAROUTE_BENCH_DEBUG") == "1" {
			level = slog.LevelDebug // per-stage timings of every change
		}
		logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level}))
	}
	testenv.StartDaemon(t, daemon.Options{
		ConfigDir: r.dir, WatchMode: "atomic", RunDir: r.runDir, StateDir: filepath.Join(t.TempDir(), "state"),
		Resync: time.Minute, Logger: logger, Status: r.store, OnApply: r.applies.add,
	}, 2*time.Minute)
}

// get fetches http://host/ through HAProxy and returns the body.
func (r *router) get(host string) (string, error) {
	return testenv.Get(r.client, r.http, host, "/")
}

// untilServed polls host every 2 ms until want answers, and returns when.
func (r *router) untilServed(host, want string, timeout time.Duration) (time.Time, error) {
	return r.untilServedEvery(host, want, timeout, 2*time.Millisecond)
}

// untilServedEvery polls with its own interval, for long waits that
// should not flood HAProxy with connections.
func (r *router) untilServedEvery(host, want string, timeout, every time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		got, err := r.get(host)
		if err == nil && got == want {
			return time.Now(), nil
		}
		if err == nil {
			err = fmt.Errorf("answered by %q", got)
		}
		last = err
		time.Sleep(every)
	}
	return time.Time{}, fmt.Errorf("%s not served by %s within %v: %v", host, want, timeout, last)
}

// untilGone polls until host is no longer served (any answer but 200).
func (r *router) untilGone(host string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := r.get(host); err != nil {
			return time.Now(), nil
		}
		time.Sleep(time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s still served after %v", host, timeout)
}

// showProc asks the master CLI, as an operator would.
func (r *router) showProc() haproxy.ProcInfo {
	r.t.Helper()
	return testenv.ShowProc(r.t, r.runDir)
}

// reloads is the master's reload counter.
func (r *router) reloads() int { return r.showProc().Master.Reloads }

// profile writes a CPU profile of this process (the daemon and the
// harness; HAProxy is another process) to the results directory while f
// runs. Without a results directory it just runs f.
func profile(t testing.TB, name string, f func()) {
	out := os.Getenv("HAROUTE_BENCH_OUT")
	if out == "" {
		f()
		return
	}
	file, err := os.Create(filepath.Join(out, name+".cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := pprof.StartCPUProfile(file); err != nil {
		t.Logf("no profile: %v", err)
		f()
		return
	}
	defer pprof.StopCPUProfile()
	f()
}

// --- figures -------------------------------------------------------------

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// spread summarises latencies as "p50 …, p99 …, max … (n=…)".
func spread(ds []time.Duration) string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s (n=%d)",
		ms(percentile(ds, 50)), ms(percentile(ds, 99)), ms(percentile(ds, 100)), len(ds))
}

// figure is one row of the results table.
type figure struct {
	id, what, target, measured, met string
}

// record logs a figure and appends it to figures.md in the results
// directory, which run.sh folds into BENCHMARKS.md.
func record(t testing.TB, f figure) {
	t.Helper()
	// The machine may be shared: the load average says how much the
	// figure had to compete for the two cores.
	f.what += fmt.Sprintf(" [load avg %s]", loadAvg())
	t.Logf("FIGURE %s | %s | target %s | %s | %s", f.id, f.what, f.target, f.measured, f.met)
	out := os.Getenv("HAROUTE_BENCH_OUT")
	if out == "" {
		return
	}
	file, err := os.OpenFile(filepath.Join(out, "figures.md"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	clean := func(s string) string { return strings.ReplaceAll(s, "|", "/") }
	if _, err := fmt.Fprintf(file, "| %s | %s | %s | %s | %s |\n",
		clean(f.id), clean(f.what), clean(f.target), clean(f.measured), clean(f.met)); err != nil {
		t.Fatal(err)
	}
}

// loadAvg is the 1-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	first, _, _ := strings.Cut(string(b), " ")
	return first
}

// verdict is "yes" or "**NO**" so a missed target stands out.
func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "**NO**"
}
