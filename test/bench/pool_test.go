package bench

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/testenv"
)

// Figure 8: a mixed stream of route adds, deletes, host moves and
// endpoint changes, one at a time, each confirmed through HAProxy, while
// the pool has room: no reload.
func TestBenchMixedChanges(t *testing.T) {
	needBench(t)
	const routes, changes = 1000, 1000
	r := newRouter(t)
	base, alt := startBackend(t, "base"), startBackend(t, "alt")
	tr := r.publishOn(routes, base)
	r.start("mixed")
	if _, err := r.untilServed(hostName(routes-1), "base", time.Minute); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(8, 8))
	live := make([]int, routes)
	for i := range live {
		live[i] = i
	}
	pick := func() int { return live[rng.IntN(len(live))] }
	serving := func(i int) string { // the backend that answers for route i
		if tr.eps[i][0].port == alt.Port {
			return "alt"
		}
		return "base"
	}
	kinds := []string{"add", "endpoints", "host", "delete"}
	took := map[string][]time.Duration{}
	before := r.reloads()
	// The heap after a collection, every quarter of the changes: what a
	// change leaves behind (audit T21 found the heap growing about 50 kB
	// a change under mixed churn; the endpoint changes of figures 3f and
	// 3j alone left nothing).
	heaps := []string{r.liveHeap()}
	for n := range changes {
		if n > 0 && n%(changes/4) == 0 {
			heaps = append(heaps, r.liveHeap())
		}
		kind := kinds[n%len(kinds)]
		var d time.Duration
		var err error
		switch kind {
		case "add":
			i := tr.addRoute([]endpoint{endpointOf(base)})
			live = append(live, i)
			d, err = r.timed(tr, func() (time.Time, error) {
				return r.untilServedEvery(tr.host(i), "base", 30*time.Second, time.Millisecond)
			})
		case "endpoints":
			i := pick()
			to, want := alt, "alt"
			if serving(i) == "alt" {
				to, want = base, "base"
			}
			tr.setEndpoints(i, []endpoint{endpointOf(to)})
			d, err = r.timed(tr, func() (time.Time, error) {
				return r.untilServedEvery(tr.host(i), want, 30*time.Second, time.Millisecond)
			})
		case "host":
			i := pick()
			tr.moveHost(i, fmt.Sprintf("m-%04d.bench.test", n))
			d, err = r.timed(tr, func() (time.Time, error) {
				return r.untilServedEvery(tr.host(i), serving(i), 30*time.Second, time.Millisecond)
			})
		case "delete":
			k := rng.IntN(len(live))
			i := live[k]
			live = append(live[:k], live[k+1:]...)
			host := tr.host(i)
			tr.removeRoute(i)
			d, err = r.timed(tr, func() (time.Time, error) {
				return r.untilGone(host, 30*time.Second)
			})
		}
		if err != nil {
			t.Fatalf("change %d (%s): %v", n, kind, err)
		}
		took[kind] = append(took[kind], d)
	}
	reloads := r.reloads() - before
	var all []time.Duration
	var parts []string
	for _, kind := range kinds {
		all = append(all, took[kind]...)
		parts = append(parts, fmt.Sprintf("%s p50 %s", kind, ms(percentile(took[kind], 50))))
	}
	record(t, figure{"8", fmt.Sprintf("Reloads during %d mixed changes, one at a time, each confirmed through HAProxy (%d routes; route adds, deletes, host moves and endpoint changes in turn; swap → served: %s; all: %s)",
		changes, routes, strings.Join(parts, ", "), spread(all)), "0", strconv.Itoa(reloads), verdict(reloads == 0)})
	heaps = append(heaps, r.liveHeap())
	record(t, figure{"8-heap", fmt.Sprintf("Harness heap after a collection (daemon in-process, %d routes) before and after each %d of the %d mixed changes of figure 8", routes, changes/4, changes),
		"report it", strings.Join(heaps, ", "), "—"})
	if reloads != 0 {
		t.Errorf("%d mixed changes caused %d reloads, want 0", changes, reloads)
	}
}

// liveHeap is the harness's heap after a collection, in MB, without the
// states the apply log held (it keeps every one the daemon reported).
func (r *router) liveHeap() string {
	r.applies.reset()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("%.1f MB", float64(ms.HeapAlloc)/(1<<20))
}

// timed publishes tr and returns how long until done reports the change
// seen through HAProxy.
func (r *router) timed(tr *tree, done func() (time.Time, error)) (time.Duration, error) {
	t0 := r.publish(tr)
	at, err := done()
	return at.Sub(t0), err
}

// Figure 6b: routes added at runtime with long-lived connections open
// leave one worker, as endpoint changes do (figure 6). At 1000 routes the
// pool keeps 100 http spares, room for the 100 adds; at 100 routes it
// keeps 16, and the adds cost 2 reloads (the pool grows with the burst,
// daemon/pool.go topUp), each leaving an old worker while streams last.
func TestBenchRouteAddsLongLived(t *testing.T) {
	needBench(t)
	const routes, conns, adds = 1000, 500, 100
	r := newRouter(t)
	base := startBackend(t, "base")
	tr := r.publishOn(routes, base)
	r.start("routeadds")
	if _, err := r.untilServed(hostName(0), "base", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	streams := openStreams(t, r.http, conns, routes)
	defer streams.close()
	before := r.reloads()
	for range adds {
		i := tr.addRoute([]endpoint{endpointOf(base)})
		r.publish(tr)
		if _, err := r.untilServedEvery(hostName(i), "base", 30*time.Second, time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	info := r.showProc()
	alive := streams.alive(3 * time.Second)
	reloads := r.reloads() - before
	ok := len(info.Workers) == 1 && len(info.OldWorkers) == 0 && reloads == 0
	record(t, figure{"6b", fmt.Sprintf("HAProxy workers after %d route adds with %d long-lived streams open (%d still streaming; %d reloads)",
		adds, conns, alive, reloads), "1 worker, 0 old",
		fmt.Sprintf("%d worker, %d old", len(info.Workers), len(info.OldWorkers)), verdict(ok)})
	if !ok || alive != conns {
		t.Errorf("after %d route adds: %d workers, %d old, %d reloads, %d of %d streams alive",
			adds, len(info.Workers), len(info.OldWorkers), reloads, alive, conns)
	}
}

// Figure 12: what a spare backend costs in HAProxy's memory. The same
// routes are rendered with and without a pool the size the daemon keeps,
// each config is started alone, and the worker's resident memory is
// compared once it serves.
func TestBenchPoolMemory(t *testing.T) {
	needBench(t)
	for _, routes := range []int{1000, 10000} {
		tr := newTree("bench", routes, func(i int) []endpoint {
			return []endpoint{{ip: "127.0.0.1", port: 1 + i%60000}}
		})
		tr.edgeEvery = 4
		http := testutil.FreePort(t)
		tr.router = testenv.RouterConfig(http, testutil.FreePort(t), testutil.FreePort(t),
			"    maxConnections: 2000\n") // within the fd limit of a test
		res := model.NewLoader().Load(tr.sourceFiles())
		if res.Desired == nil {
			t.Fatalf("%d routes: no desired state: %v", routes, res.Diagnostics)
		}
		spares := poolOf(res.Desired)
		without := haproxyRSS(t, res.Desired, nil, http)
		with := haproxyRSS(t, res.Desired, spares, http)
		per := float64(with-without) / float64(len(spares))
		record(t, figure{"12", fmt.Sprintf("HAProxy memory per spare backend (%d routes, %d spares: worker RSS %.1f MB with the pool, %.1f MB without)",
			routes, len(spares), float64(with)/1e6, float64(without)/1e6), "report it", fmt.Sprintf("%.1f kB", per/1e3), "—"})
	}
}

// poolOf makes the spares the daemon keeps for d's routes: per class in
// use, max(16, 10%) of its routes (daemon/pool.go), and 4 for the others.
func poolOf(d *model.Desired) []model.AdmittedRoute {
	type class struct {
		t     model.Termination
		allow bool
	}
	count := map[class]int{}
	for _, r := range d.Routes {
		allow := r.InsecurePolicy == model.InsecurePolicyAllow && r.Termination != model.TerminationPassthrough
		count[class{r.Termination, allow}]++
	}
	var out []model.AdmittedRoute
	seq := 0
	for _, c := range []class{{model.TerminationNone, false}, {model.TerminationEdge, false}, {model.TerminationEdge, true},
		{model.TerminationReencrypt, false}, {model.TerminationReencrypt, true}, {model.TerminationPassthrough, false}} {
		n := 4
		if count[c] > 0 {
			n = max(16, count[c]/10)
		}
		for range n {
			seq++
			slot := model.BackendName(fmt.Sprintf("be_pool:%s:%d", c.t, seq))
			out = append(out, model.SpareRoute(c.t, c.allow, slot, &d.Router))
		}
	}
	return out
}

// haproxyRSS renders d with spares, starts HAProxy on it in the
// foreground, waits until it serves on port and returns its resident
// memory in bytes.
func haproxyRSS(t *testing.T, d *model.Desired, spares []model.AdmittedRoute, port int) int64 {
	t.Helper()
	dir, runDir := t.TempDir(), testenv.RunDir(t)
	b, err := render.Render(render.Input{Desired: d, Dir: dir, RunDir: runDir,
		DefaultCertificate: defaultCert(t), Spares: spares})
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Files {
		f := &b.Files[i]
		full := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, f.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(testutil.HAProxy(t), "-db", "-f", filepath.Join(dir, render.ConfigFile))
	out, _ := os.Create(filepath.Join(dir, "haproxy.log"))
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { cmd.Process.Kill(); <-exited }()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			exited <- err
			log, _ := os.ReadFile(filepath.Join(dir, "haproxy.log"))
			t.Fatalf("haproxy exited (%v): %s", err, log)
		default:
		}
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "haproxy.log"))
			t.Fatalf("haproxy did not listen on %d: %s", port, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // settled after the first accept
	return vmRSS(t, cmd.Process.Pid)
}

// vmRSS reads a process's resident set size from /proc.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}
