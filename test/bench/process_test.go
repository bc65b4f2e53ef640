package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// Figures 3g–3j (issue 11): the controller as an operator runs it, `haroute
// run` in a process of its own, so its memory is its own and not shared
// with the harness's generated tree, and every figure is what a client
// sees: swap → the new endpoint or route answers through HAProxy.
func TestBenchControllerProcess(t *testing.T) {
	needBench(t)
	// 200 adds and deletes: the p99 of 50 would be the slowest one alone.
	const routes, changes, every, adds, rawChanges = 10000, 1000, 100, 200, 50
	r := newRouter(t)
	base, added, raw := startBackend(t, "base"), startBackend(t, "added"), startBackend(t, "raw")
	tr := r.publishOn(routes, base)
	bin := buildHaroute(t)
	startAt := time.Now()
	pid := r.startProcess(t, bin)
	if _, err := r.untilServed(hostName(routes-1), "base", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	started := time.Since(startAt)
	rss := []int64{processRSS(t, pid)}

	// The raw runtime API baseline on the same HAProxy, as figure 3c
	// measures it for the in-process daemon (rawChanges), polled as 3h
	// is; haroute changes multiples of 10.
	rawServed := r.rawChanges(model.NewLoader().Load(tr.sourceFiles()).Desired, tr, raw, rawChanges, time.Millisecond)

	before := r.reloads()
	var served []time.Duration
	for round := range changes / every {
		for i := range every {
			k := (round*every + i) * (routes / changes)
			tr.setEndpoints(k, []endpoint{endpointOf(base), endpointOf(added)})
			t0 := r.publish(tr)
			at, err := r.untilServedEvery(hostName(k), added.Name, 30*time.Second, time.Millisecond)
			if err != nil {
				t.Fatalf("change %d: %v", round*every+i, err)
			}
			served = append(served, at.Sub(t0))
		}
		rss = append(rss, processRSS(t, pid))
	}
	addedAt, deleted := r.addsAndDeletes(tr, base, adds)
	reloads := r.reloads() - before

	record(t, figure{"3g", fmt.Sprintf("`haroute run` in its own process: start → serving, %d routes", routes),
		"—", ms(started), "—"})
	record(t, figure{"3h", fmt.Sprintf("`haroute run` in its own process: swap adding one endpoint → new server answers (%d changes, %d routes, every change confirmed; %d reloads)",
		changes, routes, reloads), "—", spread(served), "—"})
	rawP50, ourP50 := percentile(rawServed, 50), percentile(served, 50)
	ratio := float64(ourP50) / float64(max(rawP50, time.Microsecond))
	record(t, figure{"3k", fmt.Sprintf("`haroute run` in its own process: one endpoint change served (3h) against the raw runtime API on the same HAProxy in the same run (the add-server commands sent straight to the admin socket → new server answers, polled alike: %s)",
		spread(rawServed)), "≤ 3×", fmt.Sprintf("%.1f× (p50 %s / %s)", ratio, ms(ourP50), ms(rawP50)), verdict(ratio <= 3)})
	record(t, figure{"3i", fmt.Sprintf("`haroute run` in its own process: route added → served, route deleted → gone (%d routes, one at a time; deletes: %s)",
		routes, spread(deleted)), "p99 ≤ 50 ms", spread(addedAt),
		verdict(percentile(addedAt, 99) <= 50*time.Millisecond && percentile(deleted, 99) <= 50*time.Millisecond)})
	first, last, peak := rss[1], rss[len(rss)-1], slices.Max(rss)
	record(t, figure{"3j", fmt.Sprintf("Controller RSS, `haroute run` alone (HAProxy not counted), %d routes: after start %s, after each %d of %d changes: %s",
		routes, mb(rss[0]), every, changes, mbs(rss[1:])), "≤ 100 MB, flat (≤ 10 MB growth after the first 100)",
		fmt.Sprintf("peak %s, growth %s", mb(peak), mb(last-first)), verdict(peak <= 100<<20 && last-first <= 10<<20)})
	if reloads != 0 {
		t.Errorf("%d endpoint changes and %d route adds and deletes caused %d reloads, want 0", changes, 2*adds, reloads)
	}
}

// Figure 1-process: start → serving of `haroute run` in a process of its
// own, as an operator starts it (a fresh state dir each time: a cold
// start, no saved state), against the hand-written config's start under a
// master, in interleaved rounds. Figure 1-daemon runs the daemon inside
// the harness, whose own heap (the generated tree) and goroutines share
// the cores.
func TestBenchStartProcess(t *testing.T) {
	needBench(t)
	const routes, rounds = 10000, 5
	r := newRouter(t)
	base := startBackend(t, "base")
	r.publishOn(routes, base)
	bin := buildHaroute(t)
	host := hostName(routes - 1)
	var mine, hand []time.Duration
	for round := range rounds {
		ownStart := func() {
			at := time.Now()
			stop := r.runProcess(t, bin)
			if _, err := r.untilServed(host, "base", 2*time.Minute); err != nil {
				t.Fatal(err)
			}
			mine = append(mine, time.Since(at))
			stop()
		}
		handStart := func() {
			at := time.Now()
			h := runHandWritten(t, routes, base.Port, host, handOptions{master: true})
			hand = append(hand, time.Since(at))
			h.stop()
		}
		if round%2 == 0 {
			ownStart()
			handStart()
		} else {
			handStart()
			ownStart()
		}
	}
	m, h := percentile(mine, 50), percentile(hand, 50)
	ratio := float64(m) / float64(h)
	record(t, figure{"1-process", fmt.Sprintf("`haroute run` in its own process, start → serving, %d routes, cold (no saved state), against a hand-written config's start under a master on HAProxy's default threads (median of %d interleaved rounds each: haroute %s, hand-written %s)",
		routes, rounds, durations(mine), durations(hand)),
		"≤ 1.5× hand-written", fmt.Sprintf("%s vs %s (%.2f×)", ms(m), ms(h), ratio), verdict(ratio <= 1.5)})
}

// durations lists ds in milliseconds.
func durations(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = strconv.FormatInt(d.Milliseconds(), 10)
	}
	return strings.Join(out, ", ") + " ms"
}

// runProcess starts `haroute run` on r's directory with a fresh state dir,
// without waiting for it, and returns what stops it (HAProxy with it).
func (r *router) runProcess(t *testing.T, bin string) (stop func()) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--config-dir", r.dir, "--run-dir", r.runDir,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--watch-mode", "atomic",
		"--haproxy", testutil.HAProxy(t), "--metrics-address", "", "--handover-grace", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() { terminate(cmd, 30*time.Second) })
	t.Cleanup(stop)
	return stop
}

// buildHaroute builds the haroute command into a temporary directory.
func buildHaroute(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "haroute")
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	out, err := exec.Command(goBin, "build", "-o", bin, "../../cmd/haroute").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startProcess runs `haroute run` on r's directory until the test ends and
// returns its pid once its /readyz answers. Its log goes to the results
// directory, if any.
func (r *router) startProcess(t *testing.T, bin string) int {
	t.Helper()
	metrics := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	p := testutil.Process{Name: "haroute run", Ready: testutil.Ready{URL: "http://" + metrics + "/readyz"},
		Within: 2 * time.Minute, Grace: 30 * time.Second}
	if out := os.Getenv("HAROUTE_BENCH_OUT"); out != "" {
		f, err := os.Create(filepath.Join(out, "daemon-process.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		p.Output = f
	}
	args := []string{"run", "--config-dir", r.dir, "--run-dir", r.runDir,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--watch-mode", "atomic",
		"--haproxy", testutil.HAProxy(t), "--metrics-address", metrics, "--handover-grace", "0"}
	if os.Getenv("HAROUTE_BENCH_DEBUG") == "1" {
		args = append(args, "--log-level", "debug") // per-stage timings of every change
	}
	cmd := p.Start(t, bin, args)
	return cmd.Process.Pid
}

// processRSS is pid's resident memory, as the OS counts it.
func processRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
