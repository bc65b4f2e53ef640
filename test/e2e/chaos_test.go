package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// The chaos test (issue 9): the built `haroute run` in a process of its
// own, a real HAProxy and real backends, a config dir published the way
// kubelet's AtomicWriter publishes it, steady traffic to several routes,
// and faults injected one at a time, in a seeded random order, until the
// time is up. Only killing HAProxy itself may cost requests, those in
// flight on the processes killed (the listening sockets outlive them, so
// none is refused); every other fault must cost none.
//
// HAROUTE_CHAOS_DURATION (a Go duration, default 75s) sets how long faults
// are injected; HAROUTE_CHAOS_SEED replays a run (the seed is logged).
// RELIABILITY.md holds the figures.

// faultKind names one kind of fault; the names are the rows of the report.
type faultKind string

const (
	faultHarouteKill     faultKind = "kill -9 haroute, start again"
	faultHarouteRestart  faultKind = "SIGTERM haroute, start again"
	faultMasterKill      faultKind = "kill -9 HAProxy master"
	faultWorkerKill      faultKind = "kill -9 HAProxy worker"
	faultDirTeardown     faultKind = "config dir torn down, republished"
	faultInvalidHost     faultKind = "invalid route (host with port), fixed"
	faultYAMLError       faultKind = "YAML syntax error, fixed"
	faultEmptiedDir      faultKind = "directory emptied, refilled"
	faultAdminSocketLoss faultKind = "admin.sock deleted"
)

// allFaults is the deck each round shuffles: every kind once per round,
// so even a short run injects each of them.
var allFaults = []faultKind{
	faultHarouteKill, faultHarouteRestart, faultMasterKill, faultWorkerKill,
	faultDirTeardown, faultInvalidHost, faultYAMLError, faultEmptiedDir,
	faultAdminSocketLoss,
}

// costsInFlight says whether a fault may fail requests: only an HAProxy
// process dying takes connections with it.
func (k faultKind) costsInFlight() bool {
	return k == faultMasterKill || k == faultWorkerKill
}

// faultWindow is one injected fault, from injection until the router was
// seen whole again.
type faultWindow struct {
	kind       faultKind
	detail     string
	start, end time.Time
}

// windowGrace extends a window past its recovery: a request that failed
// just before the router was seen whole still belongs to the fault.
const windowGrace = 500 * time.Millisecond

// chaosTarget is a route the traffic asks for, and who must answer.
type chaosTarget struct {
	host, want string
	tls        bool
	// stable routes' configuration stays valid throughout; their failures
	// are the ones asserted.
	stable bool
}

func chaosSettings(t *testing.T) (time.Duration, uint64) {
	t.Helper()
	d := 75 * time.Second
	if s := os.Getenv("HAROUTE_CHAOS_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil || v <= 0 {
			t.Fatalf("HAROUTE_CHAOS_DURATION=%q: want a positive Go duration", s)
		}
		d = v
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HAROUTE_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("HAROUTE_CHAOS_SEED=%q: want an unsigned integer", s)
		}
		seed = v
	}
	return d, seed
}

func TestChaos(t *testing.T) {
	testutil.HAProxy(t) // skips locally, fails under CI=true, before the build
	duration, seed := chaosSettings(t)
	t.Logf("chaos: seed %d (HAROUTE_CHAOS_SEED=%d replays it), faults for %v", seed, seed, duration)
	c := newChaos(t, seed)
	c.start()
	c.waitRecovered("first start", 60*time.Second)
	for _, tg := range c.targets {
		c.waitAnswers(tg)
	}

	traffic := startChaosTraffic(c.r, c.targets)
	t.Cleanup(traffic.stop) // before the routers' cleanups, which run later
	time.Sleep(2 * time.Second)

	deadline := time.Now().Add(duration)
	for time.Now().Before(deadline) {
		deck := append([]faultKind(nil), allFaults...)
		c.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		for _, k := range deck {
			if !time.Now().Before(deadline) {
				break
			}
			c.inject(k)
			// A recovery gap of steady traffic before the next fault.
			time.Sleep(time.Second + time.Duration(c.rng.IntN(1500))*time.Millisecond)
		}
	}
	traffic.stop()

	c.checkEnd()
	c.report(traffic)
}

// chaos is the router under test and what the faults need to know.
type chaos struct {
	t       *testing.T
	r       *router
	bin     string
	args    []string
	rng     *rand.Rand
	w       *publish.AtomicWriter
	good    map[string][]byte
	targets []chaosTarget
	proc    *harouteProc
	logs    []string // every haroute's log, in start order
	windows []faultWindow
	spare   *backend // the victim's backend after the last change
}

func newChaos(t *testing.T, seed uint64) *chaos {
	t.Helper()
	c := &chaos{t: t, bin: buildHaroute(t), r: newRouter(t), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	r := c.r
	stateDir := filepath.Join(t.TempDir(), "state")
	c.args = []string{"--config-dir", r.dir, "--run-dir", r.runDir, "--state-dir", stateDir,
		"--metrics-address", r.metrics, "--watch-mode", "atomic"}

	var routes, eps []string
	for i := range 4 {
		name := fmt.Sprintf("s%d", i)
		be := startBackend(t, name)
		routes = append(routes, routeYAML(name, name+".chaos.test", "", name))
		eps = append(eps, endpointsYAML(name, be))
		c.targets = append(c.targets, chaosTarget{host: name + ".chaos.test", want: name, stable: true})
	}
	tlsBackend := startBackend(t, "secure")
	routes = append(routes, edgeRouteYAML("secure", "secure.chaos.test", "secure"))
	eps = append(eps, endpointsYAML("secure", tlsBackend))
	c.targets = append(c.targets, chaosTarget{host: "secure.chaos.test", want: "secure", tls: true, stable: true})
	// The victim's file is the one broken generations break; its last good
	// version should keep serving too, but it is counted apart.
	victim := startBackend(t, "victim")
	eps = append(eps, endpointsYAML("victim", victim))
	c.targets = append(c.targets, chaosTarget{host: "victim.chaos.test", want: "victim"})
	c.spare = startBackend(t, "spare")
	eps = append(eps, endpointsYAML("spare", c.spare))

	c.good = files(
		"router.yaml", r.routerConfig(""),
		"stable.yaml", join(routes...),
		"victim.yaml", routeYAML("victim", "victim.chaos.test", "", "victim"),
		"endpoints.yaml", join(eps...),
	)
	c.w = publish.NewAtomicWriter(r.dir)
	must(t, c.w.Publish(c.good))
	return c
}

// start runs a new `haroute run` on the same run dir and state dir.
func (c *chaos) start() {
	c.proc = runHaroute(c.t, c.bin, c.args...)
	c.logs = append(c.logs, c.proc.logs)
}

// inject applies one fault and waits until the router is whole again,
// recording the window.
func (c *chaos) inject(k faultKind) {
	t := c.t
	t.Helper()
	w := faultWindow{kind: k, start: time.Now()}
	switch k {
	case faultHarouteKill:
		must(t, c.proc.cmd.Process.Kill())
		c.proc.waitExit(t)
		time.Sleep(c.pause(200, 1500)) // the orphaned HAProxy serves alone
		c.start()
	case faultHarouteRestart:
		must(t, c.proc.cmd.Process.Signal(syscall.SIGTERM))
		if out, err := c.proc.waitExit(t); err != nil {
			t.Fatalf("haroute exited with %v after SIGTERM; log:\n%s", err, tail(out, 30))
		}
		c.start()
	case faultMasterKill:
		info := c.showProc()
		must(t, syscall.Kill(info.Master.PID, syscall.SIGKILL))
		w.detail = fmt.Sprintf("master %d", info.Master.PID)
		c.waitNewHAProxy(k, func(now haproxy.ProcInfo) bool { return now.Master.PID != info.Master.PID })
	case faultWorkerKill:
		info := c.showProc()
		if len(info.Workers) == 0 {
			t.Fatalf("show proc lists no worker: %+v", info)
		}
		pid := info.Workers[0].PID
		must(t, syscall.Kill(pid, syscall.SIGKILL))
		w.detail = fmt.Sprintf("worker %d", pid)
		c.waitNewHAProxy(k, func(now haproxy.ProcInfo) bool {
			return len(now.Workers) > 0 && now.Workers[0].PID != pid
		})
	case faultDirTeardown:
		// The kubelet's teardown removes the links and the timestamped
		// directory; a recreated pod volume removes the directory too.
		if c.rng.IntN(2) == 0 {
			tearDown(t, c.r.dir)
			w.detail = "links and generation removed"
		} else {
			must(t, os.RemoveAll(c.r.dir))
			w.detail = "whole directory removed"
		}
		time.Sleep(c.pause(300, 2000))
		c.w = publish.NewAtomicWriter(c.r.dir)
		must(t, c.w.Publish(c.good))
	case faultInvalidHost:
		c.breakFor(map[string][]byte{"victim.yaml": []byte(routeYAML("victim", "victim.chaos.test:80", "", "victim"))})
	case faultYAMLError:
		c.breakFor(map[string][]byte{"victim.yaml": []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: [victim\n")})
	case faultEmptiedDir:
		// Held well inside the deletion guard's quiet period (15 s).
		must(t, c.w.Publish(files("README", "nothing here")))
		time.Sleep(c.pause(1000, 3000))
		must(t, c.w.Publish(c.good))
	case faultAdminSocketLoss:
		must(t, os.Remove(filepath.Join(c.r.runDir, "admin.sock")))
		time.Sleep(200 * time.Millisecond) // let the heal notice before asking
	}
	c.waitRecovered(string(k), 60*time.Second)
	w.end = time.Now()
	c.windows = append(c.windows, w)
	c.t.Logf("chaos: %-40s recovered in %v %s", k, w.end.Sub(w.start).Round(time.Millisecond), w.detail)
}

// breakFor publishes the good generation with some files replaced, holds
// it for a moment, and publishes the good one again.
func (c *chaos) breakFor(broken map[string][]byte) {
	gen := maps.Clone(c.good)
	maps.Copy(gen, broken)
	must(c.t, c.w.Publish(gen))
	time.Sleep(c.pause(1000, 3000))
	must(c.t, c.w.Publish(c.good))
}

// pause is a random duration in [minMs, maxMs) milliseconds.
func (c *chaos) pause(minMs, maxMs int) time.Duration {
	return time.Duration(minMs+c.rng.IntN(maxMs-minMs)) * time.Millisecond
}

// showProc asks the master CLI, retrying while a restart or reload has it
// away.
func (c *chaos) showProc() haproxy.ProcInfo {
	c.t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var info haproxy.ProcInfo
		if info, err = c.queryProc(); err == nil {
			return info
		}
	}
	c.t.Fatalf("show proc: %v", err)
	return haproxy.ProcInfo{}
}

func (c *chaos) queryProc() (haproxy.ProcInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return haproxy.NewMaster(filepath.Join(c.r.runDir, "master.sock")).ShowProc(ctx)
}

// waitNewHAProxy waits until the master CLI shows what replaced the
// killed process.
func (c *chaos) waitNewHAProxy(k faultKind, replaced func(haproxy.ProcInfo) bool) {
	c.t.Helper()
	c.r.eventually(60*time.Second, fmt.Sprintf("HAProxy back after %s", k), func() error {
		info, err := c.queryProc()
		if err != nil {
			return err
		}
		if !replaced(info) {
			return fmt.Errorf("show proc still lists the killed process: %+v", info)
		}
		return nil
	})
}

// waitRecovered waits until the router is whole: haroute says ready, and
// HAProxy's sockets are in place and its master lists a worker.
func (c *chaos) waitRecovered(after string, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = c.whole(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("router not whole %v after %s: %v\nharoute log:\n%s", timeout, after, err, c.logTail(40))
}

func (c *chaos) whole() error {
	code, body, err := c.r.readyz()
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("/readyz %d %s", code, body)
	}
	for _, s := range []string{"master.sock", "admin.sock", "fe_sni.sock"} {
		if _, err := os.Stat(filepath.Join(c.r.runDir, s)); err != nil {
			return err
		}
	}
	info, err := c.queryProc()
	if err != nil {
		return err
	}
	if len(info.Workers) == 0 {
		return errors.New("no HAProxy worker")
	}
	return nil
}

// waitAnswers waits until tg is answered by its backend.
func (c *chaos) waitAnswers(tg chaosTarget) {
	c.t.Helper()
	cl := newTargetClient(c.r, tg, false)
	c.r.eventually(20*time.Second, tg.host+" answered by "+tg.want, func() error { return cl.check() })
}

// checkEnd: one HAProxy master serves, every route answers, and a change
// made after all the faults is still applied.
func (c *chaos) checkEnd() {
	t := c.t
	t.Helper()
	c.waitRecovered("the last fault", 60*time.Second)
	master := c.showProc().Master.PID
	c.r.eventually(30*time.Second, "one HAProxy master naming the run dir", func() error {
		if g := haproxyGroups(t, c.r.runDir); len(g) != 1 || g[master] == 0 {
			return fmt.Errorf("HAProxy process groups naming the run dir: %v, want only master %d's", g, master)
		}
		return nil
	})
	for _, tg := range c.targets {
		if err := newTargetClient(c.r, tg, false).check(); err != nil {
			t.Errorf("after the faults, %s: %v", tg.host, err)
		}
	}
	gen := maps.Clone(c.good)
	gen["victim.yaml"] = []byte(routeYAML("victim", "victim.chaos.test", "", "spare"))
	must(t, c.w.Publish(gen))
	c.waitAnswers(chaosTarget{host: "victim.chaos.test", want: c.spare.Name})
}

// --- traffic -------------------------------------------------------------

// targetClient asks one route. Keep-alive clients reuse connections (and
// Go retries a GET whose reused connection was closed before any answer,
// as browsers do); the others open a connection per request, so a moment
// with no listener on the port is seen.
type targetClient struct {
	tg  chaosTarget
	url string
	cl  *http.Client
}

func newTargetClient(r *router, tg chaosTarget, keepAlive bool) *targetClient {
	tr := &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4}
	url := fmt.Sprintf("http://127.0.0.1:%d/", r.http)
	if tg.tls {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, ServerName: tg.host}
		url = fmt.Sprintf("https://127.0.0.1:%d/", r.https)
	}
	return &targetClient{tg: tg, url: url, cl: &http.Client{Timeout: 5 * time.Second, Transport: tr}}
}

// check asks once: an error, a status but 200, or another backend's
// answer is a failure.
func (tc *targetClient) check() error {
	req, err := http.NewRequest("GET", tc.url, nil)
	if err != nil {
		return err
	}
	req.Host = tc.tg.host
	resp, err := tc.cl.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != tc.tg.want {
		return fmt.Errorf("status %d, body %q, want 200 %q", resp.StatusCode, strings.TrimSpace(string(body)), tc.tg.want)
	}
	return nil
}

type failedRequest struct {
	host       string
	start, end time.Time
	err        string
}

// chaosTraffic is the steady load: clients looping over every target.
type chaosTraffic struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once

	mu       sync.Mutex
	ok       map[string]int
	failures []failedRequest
}

func startChaosTraffic(r *router, targets []chaosTarget) *chaosTraffic {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &chaosTraffic{cancel: cancel, ok: map[string]int{}}
	for i := range 4 {
		keepAlive := i%2 == 0
		pace := 3 * time.Millisecond
		if !keepAlive {
			pace = 10 * time.Millisecond // bounds TIME_WAIT sockets
		}
		var clients []*targetClient
		for _, tg := range targets {
			clients = append(clients, newTargetClient(r, tg, keepAlive))
		}
		tr.wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				tc := clients[n%len(clients)]
				start := time.Now()
				err := tc.check()
				tr.record(tc.tg.host, start, err)
				time.Sleep(pace)
			}
		})
	}
	return tr
}

func (tr *chaosTraffic) record(host string, start time.Time, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if err == nil {
		tr.ok[host]++
		return
	}
	tr.failures = append(tr.failures, failedRequest{host: host, start: start, end: time.Now(), err: err.Error()})
}

func (tr *chaosTraffic) stop() {
	tr.stopOnce.Do(func() {
		tr.cancel()
		tr.wg.Wait()
	})
}

// --- report --------------------------------------------------------------

// noFault is where a failure outside every fault window is counted.
const noFault faultKind = "(between faults)"

// attribute names the fault whose window a failed request overlaps.
func (c *chaos) attribute(f failedRequest) faultKind {
	if w := c.windowOf(f); w != nil {
		return w.kind
	}
	return noFault
}

// windowOf is the fault window f falls in, nil when none.
func (c *chaos) windowOf(f failedRequest) *faultWindow {
	for i := range c.windows {
		w := &c.windows[i]
		if !f.end.Before(w.start) && !f.start.After(w.end.Add(windowGrace)) {
			return w
		}
	}
	return nil
}

// backingOff is the class of a refusal in a window where HAProxy had died
// several times in a row, and haroute, restarting it after a growing
// wait, let the kept listening sockets go on purpose (so clients fail
// over rather than wait): by design, not a gap.
const backingOff = "refused while the restart backs off"

// releasedOnPurpose reports whether haroute's log says, within w, that it
// let the kept listening sockets go for a restart backing off.
func (c *chaos) releasedOnPurpose(w *faultWindow, memo map[*faultWindow]bool) bool {
	if v, ok := memo[w]; ok {
		return v
	}
	v := slices.ContainsFunc(c.logLines(w.start, w.end.Add(windowGrace)), func(l string) bool {
		return strings.Contains(l, "let go of the listening sockets kept from the last haproxy")
	})
	memo[w] = v
	return v
}

// report logs the figures as RELIABILITY.md's table and asserts: stable
// routes lose no request except around an HAProxy kill.
func (c *chaos) report(tr *chaosTraffic) {
	t := c.t
	stable := map[string]bool{}
	for _, tg := range c.targets {
		stable[tg.host] = tg.stable
	}
	injected := map[faultKind]int{}
	for _, w := range c.windows {
		injected[w.kind]++
	}
	failedStable, failedVictim := map[faultKind]int{}, map[faultKind]int{}
	examples := map[faultKind][]failedRequest{}
	classes := map[faultKind]map[string]int{}
	failedByHost := map[string]int{}
	released := map[*faultWindow]bool{}
	for _, f := range tr.failures {
		k := c.attribute(f)
		failedByHost[f.host]++
		if stable[f.host] {
			if classes[k] == nil {
				classes[k] = map[string]int{}
			}
			class := failureClass(f.err)
			if class == "refused" && k.costsInFlight() && c.releasedOnPurpose(c.windowOf(f), released) {
				class = backingOff
			}
			classes[k][class]++
			failedStable[k]++
			if len(examples[k]) < 5 {
				examples[k] = append(examples[k], f)
			}
		} else {
			failedVictim[k]++
		}
	}
	sent, sentStable := 0, 0
	for host, n := range tr.ok {
		sent += n
		if stable[host] {
			sentStable += n
		}
	}
	sent += len(tr.failures)
	for _, n := range failedStable {
		sentStable += n
	}

	var b strings.Builder
	fmt.Fprintf(&b, "chaos figures (%s):\n", time.Now().UTC().Format(time.DateOnly))
	fmt.Fprintf(&b, "requests sent: %d (stable routes %d)\n", sent, sentStable)
	fmt.Fprintf(&b, "| fault | injected | failed, stable routes | failed, victim route | how the stable ones failed |\n|---|---:|---:|---:|---|\n")
	kinds := append(append([]faultKind(nil), allFaults...), noFault)
	for _, k := range kinds {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", k, injected[k], failedStable[k], failedVictim[k], classSummary(classes[k]))
	}
	fmt.Fprintf(&b, "| route | answered | failed |\n|---|---:|---:|\n")
	for _, tg := range c.targets {
		fmt.Fprintf(&b, "| %s | %d | %d |\n", tg.host, tr.ok[tg.host], failedByHost[tg.host])
	}
	fmt.Fprintf(&b, "HAProxy process groups naming the run dir at the end: %d\n", len(haproxyGroups(t, c.r.runDir)))
	t.Log(b.String())

	if sentStable == 0 {
		t.Fatal("no request reached the stable routes")
	}
	// One subtest per fault kind that must cost nothing, so a daemon gap
	// is named by the fault that shows it.
	for _, k := range kinds {
		if k.costsInFlight() {
			// An HAProxy kill may cut the connections its processes
			// held, nothing else: the ports stay open on the sockets
			// haroute keeps, so no connection is refused meanwhile
			// (unless kills in a row make the restart back off, when
			// haroute lets the ports refuse on purpose).
			t.Run(string(k), func(t *testing.T) {
				for class, n := range classes[k] {
					cut := class == "reset/EOF" || class == "TLS alert" && k == faultMasterKill
					if !cut && class != backingOff {
						t.Errorf("%s: %d requests failed as %s, want only connections in flight cut (reset/EOF, TLS alert); first ones:\n%sharoute log around the first:\n%s",
							k, n, class, failedList(examples[k]), c.logAround(examples[k][0].start.Add(-2*time.Second), examples[k][0].end.Add(time.Second)))
					}
				}
			})
			continue
		}
		t.Run(string(k), func(t *testing.T) {
			if k != noFault && injected[k] == 0 {
				testutil.Skip(t, "not injected in %d faults; run longer", len(c.windows))
			}
			if failedStable[k] == 0 {
				return
			}
			first := examples[k][0]
			msg := fmt.Sprintf("%s cost %d requests to routes whose configuration stayed valid (%s); first ones:\n%sharoute log around the first:\n%s",
				k, failedStable[k], classSummary(classes[k]), failedList(examples[k]), c.logAround(first.start.Add(-2*time.Second), first.end.Add(time.Second)))
			if gap, known := chaosKnownGaps[k]; known && os.Getenv("HAROUTE_CHAOS_STRICT") == "" {
				t.Skipf("KNOWN DAEMON GAP, not yet fixed (%s); HAROUTE_CHAOS_STRICT=1 makes it fail:\n%s", gap, msg)
			}
			t.Error(msg)
		})
	}
}

// chaosKnownGaps are faults that still cost requests because the daemon
// lacks what would prevent it. Each is reported as a skip naming the gap,
// so CI stays green while the rest of the promise is enforced; remove an
// entry once the daemon closes it.
var chaosKnownGaps = map[faultKind]string{}

// failureClass sorts a failed request by what the client saw: refused
// (no listener), reset or EOF (a connection cut, in flight or idle), a
// TLS alert (a handshake cut by a worker leaving), timeout, or an answer
// that was wrong.
func failureClass(err string) string {
	switch {
	case strings.Contains(err, "connection refused"):
		return "refused"
	case strings.Contains(err, "reset by peer"), strings.Contains(err, "EOF"), strings.Contains(err, "broken pipe"):
		return "reset/EOF"
	case strings.Contains(err, "remote error: tls:"):
		// A worker whose master is killed leaves through exit(), whose
		// handlers free OpenSSL's state under the other threads: the
		// handshakes they hold end in an alert ("internal error",
		// "illegal parameter") instead of a reset. Measured with 16
		// clients over 15 master kills: 2.6.12 cut 1 handshake so,
		// 3.0.11 36, beside the resets and EOFs.
		return "TLS alert"
	case strings.Contains(err, "Timeout"), strings.Contains(err, "timeout"):
		return "timeout"
	case strings.HasPrefix(err, "status "):
		code, _, _ := strings.Cut(strings.TrimPrefix(err, "status "), ",")
		return "HTTP " + code
	}
	return "other"
}

// failedList lists failed requests one per line: when, which route, how
// long it took, and what the client saw.
func failedList(fs []failedRequest) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s +%v: %s\n", f.start.Format("15:04:05.000"), f.host, f.end.Sub(f.start).Round(time.Millisecond), f.err)
	}
	return b.String()
}

func classSummary(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// logTail is the last n lines of the current haroute's log.
func (c *chaos) logTail(n int) string {
	out, _ := os.ReadFile(c.proc.logs)
	return tail(string(out), n)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logAround gathers the lines of every haroute log stamped between from
// and to (text format: "time=<RFC 3339> ..."), at most 60 of them.
func (c *chaos) logAround(from, to time.Time) string {
	lines := c.logLines(from, to)
	if len(lines) > 60 {
		lines = lines[:60]
	}
	return strings.Join(lines, "\n")
}

// logLines are every haroute's log lines stamped within [from, to], in
// time order.
func (c *chaos) logLines(from, to time.Time) []string {
	var lines []string
	for _, path := range c.logs {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			stamp, _, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "time="), " ")
			at, err := time.Parse(time.RFC3339Nano, stamp)
			if err == nil && !at.Before(from) && !at.After(to) {
				lines = append(lines, sc.Text())
			}
		}
		f.Close()
	}
	sort.Strings(lines) // the stamps lead, so this is time order
	return lines
}
