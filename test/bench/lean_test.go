package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
)

// Figures 3c–3f (issue 11, "a lean change path at 10k routes"): one endpoint
// change through haroute against the same change sent straight to
// HAProxy's admin socket, in the same run on the same HAProxy, and the
// controller's memory over 1000 changes.
func TestBenchLeanChange10k(t *testing.T) {
	needBench(t)
	const routes, rawChanges, every = 10000, 50, 100
	changes := 1000
	if n, err := strconv.Atoi(os.Getenv("HAROUTE_BENCH_LEAN_CHANGES")); err == nil && n >= every {
		changes = n - n%every // a shorter run, to look at one stage
	}
	r := newRouter(t)
	base, added, raw := startBackend(t, "base"), startBackend(t, "added"), startBackend(t, "raw")
	tr := r.publishOn(routes, base)
	r.start("lean10k")
	if _, err := r.untilServed(hostName(routes-1), "base", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	desired := r.lastDesired()

	// The baseline; services ≡ 5 (mod 10) are left to it, haroute
	// changes those ≡ 0.
	rawServed := r.rawChanges(desired, tr, raw, rawChanges, 2*time.Millisecond)

	// haroute: 1000 changes, one service each, in rounds of 100; the
	// process's resident memory after each round, as the OS counts it (no
	// forced GC). The daemon shares the process with the harness, whose
	// tree of 10k routes is in it too.
	var res changeResults
	rss := []int64{residentBytes(t)}
	before := r.reloads()
	profile(t, "lean10k", func() {
		for round := range changes / every {
			got := r.endpointChanges(tr, added, every, func(i int) int {
				// Multiples of 10: the raw baseline took services ≡ 5.
				k := (round*every + i) * (routes / changes)
				return k - k%10
			}, 10)
			res.applied = append(res.applied, got.applied...)
			res.served = append(res.served, got.served...)
			res.appliedSample = append(res.appliedSample, got.appliedSample...)
			res.publish = append(res.publish, got.publish...)
			rss = append(rss, residentBytes(t))
		}
	})
	reloads := r.reloads() - before
	if reloads != 0 {
		t.Errorf("%d endpoint changes caused %d reloads, want 0", changes, reloads)
	}

	rawP50, ourP50 := percentile(rawServed, 50), percentile(res.served, 50)
	record(t, figure{"3c", fmt.Sprintf("Raw runtime API baseline: the add-server commands of one endpoint sent straight to the admin socket → new server answers (%d routes)",
		routes), "—", spread(rawServed), "—"})
	record(t, figure{"3d", fmt.Sprintf("haroute, same run: swap adding one endpoint → new server answers (sampled; %d changes, %d routes; OnApply %s)",
		changes, routes, spread(res.applied)), "—", spread(res.served), "—"})
	ratio := float64(ourP50) / float64(max(rawP50, time.Microsecond))
	record(t, figure{"3e", "haroute p50 / raw runtime API p50, endpoint change served (3d / 3c)",
		"≤ 3×", fmt.Sprintf("%.1f×", ratio), verdict(ratio <= 3)})
	first, last, peak := rss[1], rss[len(rss)-1], slices.Max(rss)
	flat := last-first <= 10<<20
	record(t, figure{"3f", fmt.Sprintf("Harness process RSS (daemon in-process) at %d routes over %d changes: before %s, after each %d: %s",
		routes, changes, mb(rss[0]), every, mbs(rss[1:])), "≤ 100 MB, flat (≤ 10 MB growth after the first 100)",
		fmt.Sprintf("peak %s, growth %s", mb(peak), mb(last-first)), verdict(peak <= 100<<20 && flat)})
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use %s, heap sys %s, GC cycles %d", mb(int64(ms.HeapInuse)), mb(int64(ms.HeapSys)), ms.NumGC)
	heapProfile(t, "lean10k")
}

// rawChanges sends the commands haroute sends for one added endpoint (add
// server with the rendered arguments, health, enable) straight to the
// admin socket, for n services ≡ 5 (mod 10) of tr spread over its routes,
// each adding raw, and returns how long each took until the new server
// answered, polled every poll.
func (r *router) rawChanges(desired *model.Desired, tr *tree, raw *backend, n int, poll time.Duration) []time.Duration {
	t := r.t
	t.Helper()
	rt := haproxy.NewRuntime(filepath.Join(r.runDir, render.AdminSocket))
	var served []time.Duration
	for i := range n {
		k := i*(len(tr.eps)/n) + 5
		cmds := addServerCommands(t, desired, tr.key(k), endpointOf(raw))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		_, err := rt.Apply(ctx, cmds)
		cancel()
		if err != nil {
			t.Fatalf("raw change %d: %v", i, err)
		}
		at, err := r.untilServedEvery(hostName(k), raw.Name, 30*time.Second, poll)
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, at.Sub(t0))
	}
	return served
}

// heapProfile writes what the heap holds (daemon and harness) to the
// results directory, if any.
func heapProfile(t *testing.T, name string) {
	out := os.Getenv("HAROUTE_BENCH_OUT")
	if out == "" {
		return
	}
	f, err := os.Create(filepath.Join(out, name+".heap.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Logf("no heap profile: %v", err)
	}
}

// lastDesired is the state the daemon applied last.
func (r *router) lastDesired() *model.Desired {
	r.t.Helper()
	ap, err := r.applies.wait(time.Minute, func(daemon.Applied) bool { return true })
	if err != nil {
		r.t.Fatal(err)
	}
	last := ap.a.Desired
	r.applies.mu.Lock()
	if n := len(r.applies.items); n > 0 {
		last = r.applies.items[n-1].a.Desired
	}
	r.applies.mu.Unlock()
	return last
}

// addServerCommands are the runtime commands that add ep to route key as
// haroute would: its server name, the rendered server arguments, checks
// on (the route then has two endpoints) and out of maintenance.
func addServerCommands(t testing.TB, d *model.Desired, key model.RouteKey, ep endpoint) []string {
	t.Helper()
	for _, route := range d.Routes {
		if route.Key != key {
			continue
		}
		// What haroute's plan sends: the route with the endpoint added
		// has two, so its servers become checked twins (ck_), each added
		// with its rendered arguments and health, the unchecked one set
		// to maint.
		next := *route // the daemon's: shared, read-only
		next.Services = slices.Clone(route.Services)
		// One service: each server weighs 1, whatever their number (the
		// OpenShift router's weights, model.spreadWeights).
		next.Services[0].Servers = append(slices.Clone(route.Services[0].Servers), model.Server{Address: ep.ip, Port: ep.port, Weight: 1})
		next.NameServers()
		var cmds []string
		for _, s := range next.Servers() {
			op := plan.AddServer{Backend: next.BackendName(), Server: s.Name, Addr: s.Address, Port: s.Port,
				Args: render.ServerArgs(&next, s, render.Input{Desired: d}), Checked: next.HealthChecked()}
			cmds = append(cmds, op.Commands()...)
		}
		for _, s := range route.Servers() {
			cmds = append(cmds, fmt.Sprintf("set server %s/%s state maint", route.BackendName(), s.Name))
		}
		return cmds
	}
	t.Fatalf("route %s not admitted", key)
	return nil
}

// residentBytes is this process's resident set (VmRSS).
func residentBytes(t *testing.T) int64 {
	t.Helper()
	return processRSS(t, os.Getpid())
}

func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

func mbs(bs []int64) string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = strconv.FormatInt(b>>20, 10)
	}
	return strings.Join(out, ", ") + " MB"
}
