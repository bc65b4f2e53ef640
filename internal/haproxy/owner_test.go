package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
)

// steadyLoad sends requests through the rig's HTTP port from 4 clients
// until stop is called, which returns how many succeeded and failed, and
// the first failure.
func steadyLoad(t *testing.T, r *rig) (stop func() (ok, failed int64, first string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var okN, failedN atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 5 * time.Second}
			for ctx.Err() == nil {
				resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", r.HTTP))
				if err == nil {
					if resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
					resp.Body.Close()
				}
				if err != nil {
					failedN.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				okN.Add(1)
			}
		}()
	}
	return func() (int64, int64, string) {
		cancel()
		wg.Wait()
		first, _ := firstErr.Load().(string)
		return okN.Load(), failedN.Load(), first
	}
}

// With noreuseport, master-worker reloads stay seamless: the master hands
// the listening sockets to each new worker, nothing binds twice.
func TestNoRequestFailsAcrossReloads(t *testing.T) {
	r := newRig(t)
	r.start(t)
	stop := steadyLoad(t, r)
	for i := range 20 {
		if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
			stop()
			t.Fatalf("reload %d: %v", i+1, err)
		}
		time.Sleep(50 * time.Millisecond) // let requests reach the new worker
	}
	ok, failed, first := stop()
	if failed != 0 || ok == 0 {
		t.Fatalf("%d of %d requests failed across 20 reloads; first: %s", failed, ok+failed, first)
	}
	t.Logf("%d requests, none failed, across 20 reloads", ok)
}

// An HAProxy left running on the run dir (its haroute was killed with
// SIGKILL) is taken over by the next Start without losing a request: the
// new one inherits the listening sockets and soft-stops the old one.
func TestStartTakesOverPreviousHAProxy(t *testing.T) {
	r := newRig(t)
	r.start(t)
	old := r.proc
	stop := steadyLoad(t, r)
	time.Sleep(200 * time.Millisecond)

	// A second supervisor stands for the restarted haroute: it knows only
	// the run dir.
	next, err := NewSupervisor(r.sup.opts)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := next.Start(ctxT(t, 20*time.Second))
	if err != nil {
		stop()
		t.Fatalf("start over a previous haproxy: %v", err)
	}
	t.Cleanup(func() { proc.Stop(context.Background()) })
	select {
	case <-old.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the previous haproxy %d is still running", old.PID())
	}
	time.Sleep(200 * time.Millisecond)
	ok, failed, first := stop()
	if failed != 0 || ok == 0 {
		t.Fatalf("%d of %d requests failed across the takeover; first: %s", failed, ok+failed, first)
	}
	// The master re-executes itself without the takeover arguments; its
	// first worker still shows how it was started.
	info, err := proc.Master().ShowProc(ctxT(t, 5*time.Second))
	if err != nil || len(info.Workers) != 1 {
		t.Fatalf("show proc = %+v, %v", info, err)
	}
	cmdline := readCmdline(t, info.Workers[0].PID)
	if !strings.Contains(cmdline, " -x "+r.sup.AdminSocket()+" -sf "+strconv.Itoa(old.PID())) {
		t.Errorf("new haproxy %q did not inherit the sockets of %d", cmdline, old.PID())
	}
	if pids := haproxyPIDs(t, r.Cfg); len(pids) != 2 {
		t.Errorf("haproxy processes after takeover: %v, want the new master and its worker", pids)
	}
	// A reload of the new master does not carry the takeover arguments
	// along: -sf would signal a pid that may since have been reused.
	if _, err := proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	// (As a word: a path may hold its digits, and from 3.1 a reloaded
	// master names its own old worker with -sf.)
	if cmdline := readCmdline(t, proc.PID()); slices.Contains(strings.Fields(cmdline), strconv.Itoa(old.PID())) {
		t.Errorf("reloaded master %q still names the previous one", cmdline)
	}
	t.Logf("%d requests, none failed, across the takeover", ok)
}

// A stop that comes while a restarted haroute takes HAProxy over does not
// stop the new master half way: -sf may already have sent the previous
// one away, and both would be gone. The takeover completes, and the stop
// then hands the new master over as it would any other.
func TestTakeoverCompletesWhenStoppedMidway(t *testing.T) {
	r := newRig(t)
	r.start(t)
	old := r.proc
	next, err := NewSupervisor(r.sup.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	launchedHook = cancel // the stop lands as the new master starts
	t.Cleanup(func() { launchedHook = nil })
	proc, err := next.Start(ctx)
	if err != nil {
		t.Fatalf("a takeover stopped midway failed: %v", err)
	}
	t.Cleanup(func() { proc.Stop(context.Background()) })
	select {
	case <-old.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the previous haproxy %d is still running", old.PID())
	}
	if got := r.get(t, "a.example.com"); got != "200 b0" {
		t.Fatalf("after the takeover: answered %q, want 200 b0", got)
	}
}

// An earlier haroute killed just after it launched HAProxy leaves a
// master still loading its configuration, with no pid file yet. A
// restarted haroute must take it over rather than race it for the ports:
// the loser of that race exited, and took the new haroute with it.
func TestStartTakesOverStartingHAProxy(t *testing.T) {
	r := newRig(t)
	// The earlier haroute's HAProxy: this run dir's master socket and pid
	// file, and a configuration that takes a while to load.
	slowCfg := slowLoading(t, r, r.B0)
	earlierSup, err := NewSupervisor(Options{Binary: testutil.HAProxy(t), ConfigPath: slowCfg, RunDir: r.Run})
	if err != nil {
		t.Fatal(err)
	}
	earlier := exec.Command(testutil.HAProxy(t), earlierSup.masterArgs()...)
	earlier.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := earlier.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = earlier.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-earlier.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	// A restarted haroute comes a while later (its own start, load and
	// render): by then the earlier HAProxy is past the exec of the 3.0
	// wrapper (sh, then ld.so), whose command line reads empty in the
	// middle of an exec.
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(r.sup.PIDFile()); err == nil {
		t.Fatal("the earlier haproxy wrote its pid file before the restart began: the test needs a configuration that loads longer")
	}
	// A stale pid file from before, naming a process that is not HAProxy,
	// until the earlier one writes its own: said once, not every 20 ms.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	if err := os.WriteFile(r.sup.PIDFile(), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r.start(t)
	if n := strings.Count(r.log.String(), "pid file names a process that is not"); n != 1 {
		t.Errorf("the stale pid file was warned about %d times, want once; log:\n%s", n, r.log)
	}
	// Up to 3.0 a master loads before it forks: one without a worker is
	// still starting. From 3.1 its worker loads: the wait is for the
	// worker to answer.
	saw := "still starting"
	if v, err := BinaryVersion(ctxT(t, 10*time.Second), testutil.HAProxy(t)); err == nil && v.AtLeast(3, 1) {
		saw = "or its worker does not"
	}
	if !strings.Contains(r.log.String(), saw) {
		t.Errorf("the restart did not see the starting haproxy %d; log:\n%s", earlier.Process.Pid, r.log)
	}
	info, err := r.proc.Master().ShowProc(ctxT(t, 5*time.Second))
	if err != nil || len(info.Workers) != 1 {
		t.Fatalf("show proc = %+v, %v", info, err)
	}
	if cmdline := readCmdline(t, info.Workers[0].PID); !strings.Contains(cmdline, " -sf "+strconv.Itoa(earlier.Process.Pid)) {
		t.Errorf("new haproxy %q did not take over %d", cmdline, earlier.Process.Pid)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("the earlier haproxy %d still runs after the takeover", earlier.Process.Pid)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the takeover = %q, want %q", got, "200 b0")
	}
}

// An HAProxy of the run dir whose pid file is gone (deleted with the run
// dir, say) is taken over at once: it runs workers, so it is not loading,
// and waiting for a pid file it will never write again would only delay
// the start into a port clash.
func TestStartTakesOverHAProxyWithoutPIDFile(t *testing.T) {
	r := newRig(t)
	r.start(t)
	old := r.proc
	if err := os.Remove(r.sup.PIDFile()); err != nil {
		t.Fatal(err)
	}
	next, err := NewSupervisor(r.sup.opts)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := next.Start(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("start over an haproxy without a pid file: %v", err)
	}
	t.Cleanup(func() { proc.Stop(context.Background()) })
	info, err := proc.Master().ShowProc(ctxT(t, 5*time.Second))
	if err != nil || len(info.Workers) != 1 {
		t.Fatalf("show proc = %+v, %v", info, err)
	}
	if cmdline := readCmdline(t, info.Workers[0].PID); !strings.Contains(cmdline, " -sf "+strconv.Itoa(old.PID())) {
		t.Errorf("new haproxy %q did not take over %d", cmdline, old.PID())
	}
	select {
	case <-old.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("the previous haproxy %d is still running", old.PID())
	}
	if strings.Contains(r.log.String(), "still starting") {
		t.Errorf("a running haproxy was taken for one still starting; log:\n%s", r.log)
	}
}

// A `haproxy -c` of the live config (a check before a reload, left
// running by a haroute killed during it) names the config as a master
// does, but is none: a start must not wait for it.
func TestStartIgnoresRunningCheck(t *testing.T) {
	r := newRig(t)
	slow := slowLoading(t, r, r.B0)
	if err := os.Rename(slow, r.Cfg); err != nil {
		t.Fatal(err)
	}
	check := exec.Command(testutil.HAProxy(t), "-c", "-f", r.Cfg)
	if err := check.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = check.Process.Kill(); _ = check.Wait() })
	time.Sleep(100 * time.Millisecond) // past the 3.0 wrapper's execs, as in TestStartTakesOverStartingHAProxy
	r.start(t)
	if strings.Contains(r.log.String(), "still starting") || strings.Contains(r.log.String(), "without a pid file") {
		t.Errorf("a start took `haproxy -c` (pid %d) for an HAProxy to take over; log:\n%s", check.Process.Pid, r.log)
	}
}

// slowLoading writes the rig's configuration with 6000 more backends,
// which take HAProxy about half a second to load, and b0 as the port of the
// default backend's servers, and returns its path.
func slowLoading(t *testing.T, r *rig, b0 int) string {
	t.Helper()
	cfg, err := os.ReadFile(r.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	var slow strings.Builder
	slow.WriteString(strings.ReplaceAll(string(cfg), fmt.Sprintf("127.0.0.1:%d", r.B0), fmt.Sprintf("127.0.0.1:%d", b0)))
	// 20000 backends: with 6000, HAProxy 3.0 on a quiet machine wrote its
	// pid file within the 100 ms TestStartTakesOverStartingHAProxy waits.
	for i := range 20000 {
		fmt.Fprintf(&slow, "backend slow%d\n    server s 127.0.0.1:%d\n", i, r.B1)
	}
	path := filepath.Join(r.Run, "slow.cfg")
	writeFile(t, path, slow.String())
	return path
}

// A haroute killed (or restarted) while its HAProxy reloads leaves a
// master that is loading its configuration again. The restarted
// haroute's takeover (-sf) must wait for it: a master re-executing for a
// reload loses the SIGUSR1. Without the wait, 3 runs in 5 of this test
// refused the first request after the takeover (EOF).
func TestTakeoverDuringReloadKeepsConnections(t *testing.T) {
	r := newRig(t)
	slowAddr, entered := slowBackend(t, 3*time.Second)
	slowPort := slowAddr.Port

	// The earlier haroute's HAProxy, serving a request that takes 3 s.
	earlierSup, err := NewSupervisor(Options{Binary: testutil.HAProxy(t), ConfigPath: slowLoading(t, r, slowPort), RunDir: r.Run,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SoftStopTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	earlier, err := earlierSup.Start(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = earlier.Stop(context.Background()) })
	inFlight := requestInFlight(t, r, entered)

	// Its reload starts, and the restarted haroute starts at once.
	go func() { _, _ = earlier.Master().Reload(ctxT(t, 20*time.Second)) }()
	untilMasterReloads(t, earlier.Master())
	r.start(t)

	if got := <-inFlight; got != "200 slow" {
		t.Errorf("request in flight across the takeover = %q, want %q", got, "200 slow")
	}
	if !strings.Contains(r.log.String(), "does not answer yet") {
		t.Errorf("the takeover did not wait for the reloading master; log:\n%s", r.log)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the takeover = %q, want %q", got, "200 b0")
	}
}

// untilMasterReloads returns once m no longer answers: its master has
// begun loading its configuration again. A fixed 20 ms sleep instead
// raced the reload's start on a loaded machine, and the takeover then
// met a master that still answered.
func untilMasterReloads(t *testing.T, m *Master) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := m.ShowProc(ctx)
		cancel()
		if err != nil {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("the master never began its reload")
}

// A restarted haroute takes the earlier HAProxy over and soft-stops it;
// the takeover then sent it SIGTERM after SoftStopTimeout (3 s here),
// which cut every connection it still served. It drains instead, as old
// workers do after a reload, and the earlier haroute's reaper, should the
// new haroute stop within its grace, leaves it to drain too.
func TestTakeoverLetsThePreviousHAProxyFinishItsConnections(t *testing.T) {
	r := newRig(t)
	slowAddr, entered := slowBackend(t, 6*time.Second)
	cfg, err := os.ReadFile(r.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, r.Cfg, strings.ReplaceAll(string(cfg), fmt.Sprintf("127.0.0.1:%d", r.B0), slowAddr.String()))
	r.start(t)
	old := r.proc
	inFlight := requestInFlight(t, r, entered)

	next, err := NewSupervisor(r.sup.opts)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := next.Start(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("start over a previous haproxy: %v", err)
	}
	t.Cleanup(func() { proc.Stop(context.Background()) })
	// The reaper the earlier haroute left (haroute reap) wakes while its
	// HAProxy drains: the pid file names the new master, so it must leave
	// the earlier one alone. It stopped it, cutting the request.
	if err := StopOrphan(old.PID(), r.Run, r.Cfg, time.Second, slog.New(slog.NewTextHandler(r.log, nil))); err != nil {
		t.Fatalf("StopOrphan of a master taken over: %v", err)
	}
	if got := <-inFlight; got != "200 slow" {
		t.Fatalf("request in flight across the takeover = %q, want %q", got, "200 slow")
	}
	select {
	case <-old.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the previous haproxy %d still runs with nothing left to serve", old.PID())
	}
	if strings.Contains(r.log.String(), "signalling it") {
		t.Errorf("the previous haproxy was signalled beyond its soft stop; log:\n%s", r.log)
	}
}

// slowBackend answers "slow" after d; entered receives when a request
// has arrived.
func slowBackend(t *testing.T, d time.Duration) (*net.TCPAddr, <-chan struct{}) {
	entered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case entered <- struct{}{}:
		default:
		}
		time.Sleep(d)
		io.WriteString(w, "slow")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr), entered
}

// requestInFlight sends one request through r's HTTP port and returns
// once it has reached the slow backend; its outcome ("200 slow", or the
// error) comes on the channel.
func requestInFlight(t *testing.T, r *rig, entered <-chan struct{}) <-chan string {
	t.Helper()
	inFlight := make(chan string, 1)
	go func() {
		client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", r.HTTP))
		if err != nil {
			inFlight <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inFlight <- fmt.Sprintf("%d %s", resp.StatusCode, body)
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the slow backend")
	}
	return inFlight
}

func readCmdline(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
}

// A pid file naming a process that is not this run dir's HAProxy (the pid
// was reused) is ignored: nothing is signalled, Start starts afresh.
func TestPIDFileOfUnrelatedProcessIgnored(t *testing.T) {
	r := newRig(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	writeFile(t, r.sup.PIDFile(), strconv.Itoa(sleeper.Process.Pid)+"\n")
	r.start(t)
	if strings.Contains(readCmdline(t, r.proc.PID()), "-sf") {
		t.Errorf("started as a takeover of the unrelated pid %d", sleeper.Process.Pid)
	}
	if err := sleeper.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the unrelated process was signalled away: %v", err)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET = %q", got)
	}
}

// A second HAProxy on the same ports (another run dir: another router)
// fails with HAProxy's bind error naming the port, rather than sharing
// the port through SO_REUSEPORT.
func TestSecondHAProxyOnSamePortsFails(t *testing.T) {
	r := newRig(t)
	r.start(t)
	other := newRig(t)
	cfg, err := os.ReadFile(r.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, other.Cfg, strings.ReplaceAll(string(cfg), r.Run, other.Run))
	writeFile(t, filepath.Join(other.Run, "site.pem"), string(testutil.SelfSignedPEM(t, "localhost", 2)))
	_, err = other.sup.Start(ctxT(t, 20*time.Second))
	want := fmt.Sprintf("cannot bind socket (Address already in use) for [127.0.0.1:%d]", r.HTTP)
	if err == nil || !strings.HasPrefix(err.Error(), "haproxy exited during startup: "+want+"; another process holds the port (ss -tanp names it: a listener, or an outgoing connection the kernel gave it from its ephemeral range, net.ipv4.ip_local_port_range); haproxy master ") {
		t.Fatalf("second haproxy on the same ports: err = %v, want it to contain %q", err, want)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("the first haproxy after the second failed: GET = %q", got)
	}
}

func TestLockRunDir(t *testing.T) {
	dir := filepath.Join(testutil.ShortTempDir(t), "run")
	l, err := LockRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := modeOf(t, dir); got != 0o700 {
		t.Errorf("run dir mode = %v, want 0700", got)
	}
	_, err = LockRunDir(dir)
	want := fmt.Sprintf("run dir in use: %s/%s is locked by another haroute (pid %d); give each router its own --run-dir", dir, LockFile, os.Getpid())
	if !errors.Is(err, ErrRunDirInUse) || err.Error() != want {
		t.Errorf("second lock: %v\nwant %s", err, want)
	}
	// The run dir deleted: Refresh makes the lock hold again.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := LockRunDir(dir); !errors.Is(err, ErrRunDirInUse) {
		t.Errorf("lock after the run dir was deleted and refreshed: %v, want ErrRunDirInUse", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := LockRunDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

// Sockets reports a deleted socket; a reload signalled to the master
// brings its CLI socket back. A reload does not bring the admin socket
// back under its name (its new worker inherits the deleted listener), but
// renaming it in the config and reloading does, without a failed request;
// LinkAdminSocket then makes the default name lead to it.
func TestSocketsHealed(t *testing.T) {
	r := newRig(t)
	r.start(t)
	if err := r.proc.Sockets(); err != nil {
		t.Fatalf("sockets of a fresh haproxy: %v", err)
	}

	must(t, os.Remove(r.sup.MasterSocket()))
	var se *SocketsError
	if err := r.proc.Sockets(); !errors.As(err, &se) || !se.MasterOnly || len(se.Missing) != 1 {
		t.Fatalf("sockets without master.sock = %v, want it alone missing", err)
	}
	if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reload without master socket: %v", err)
	}
	if err := r.proc.Sockets(); err != nil {
		t.Fatalf("after a signalled reload: %v", err)
	}

	stop := steadyLoad(t, r)
	must(t, os.Remove(r.sup.AdminSocket()))
	if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		stop()
		t.Fatal(err)
	}
	want := "missing or dead: " + r.sup.AdminSocket()
	if err := r.proc.Sockets(); err == nil || err.Error() != want {
		stop()
		t.Fatalf("after a reload, sockets = %v, want %q (the reload cannot heal it)", err, want)
	}
	renamed := NextSocketName(r.sup.AdminSocket())
	cfg, err := os.ReadFile(r.Cfg)
	must(t, err)
	writeFile(t, r.Cfg, strings.Replace(string(cfg), r.sup.AdminSocket(), renamed, 1))
	r.sup.SetSockets(renamed, nil)
	if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		stop()
		t.Fatalf("reload onto the renamed admin socket: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // requests reach the new worker
	ok, failed, first := stop()
	if failed != 0 || ok == 0 {
		t.Fatalf("%d of %d requests failed across the heal; first: %s", failed, ok+failed, first)
	}
	if err := r.proc.Sockets(); err != nil {
		t.Fatalf("after the reload onto %s: %v", renamed, err)
	}
	must(t, r.sup.LinkAdminSocket())
	if got, err := os.Readlink(r.sup.DefaultAdminSocket()); err != nil || got != filepath.Base(renamed) {
		t.Fatalf("admin.sock links to %q (%v), want %q", got, err, filepath.Base(renamed))
	}
	execOK(t, NewRuntime(r.sup.DefaultAdminSocket()), "show info")
	must(t, r.sup.LinkAdminSocket()) // again: nothing to do
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the heal = %q", got)
	}
}

// A master left draining by a takeover and reloaded from outside (an
// operator's SIGUSR2 to every haproxy) binds its own socket on the master
// socket's path, and writes the pid file (T39): every command of the
// master CLI then reached it, and the reloads that healing sent were its
// failures ("cannot bind socket"), every TLS route down meanwhile. The
// socket is told apart by its listener's pid; this master is reloaded by
// signal, which binds the path and writes the pid file again.
func TestMasterSocketTakenByAnotherMaster(t *testing.T) {
	r := newRig(t)
	r.start(t)
	must(t, os.Remove(r.sup.MasterSocket()))
	testutil.ServeMasterCLI(t, r.sup.MasterSocket(), testutil.AnotherMaster(os.Getpid()))
	writeFile(t, r.sup.PIDFile(), strconv.Itoa(os.Getpid())+"\n")

	var se *SocketsError
	if err := r.proc.Sockets(); !errors.As(err, &se) || !se.MasterOnly || se.MasterHeldBy != os.Getpid() {
		t.Fatalf("sockets with the master socket another's = %v, want the master socket alone, held by %d", err, os.Getpid())
	}
	if _, err := r.proc.Reload(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("reload with the master socket another's: %v", err)
	}
	if err := r.proc.Sockets(); err != nil {
		t.Fatalf("after the reload: %v", err)
	}
	if pid := r.sup.pidFileMaster(); pid != r.proc.PID() {
		t.Errorf("the pid file names %d after the reload, want this master %d", pid, r.proc.PID())
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the reload = %q", got)
	}
}

func TestNextSocketName(t *testing.T) {
	for in, want := range map[string]string{
		"/run/haroute/admin.sock":    "/run/haroute/admin-1.sock",
		"/run/haroute/admin-1.sock":  "/run/haroute/admin-2.sock",
		"/run/haroute/fe_sni-9.sock": "/run/haroute/fe_sni-10.sock",
		"/run/x-y.sock":              "/run/x-y-1.sock",
		"/run/plain":                 "/run/plain-1",
	} {
		if got := NextSocketName(in); got != want {
			t.Errorf("NextSocketName(%q) = %q, want %q", in, got, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A lock held by `haroute reap` is told apart from a haroute's: a haroute
// starting while the reaper drains takes over rather than refusing to
// start with every route down (daemon lockRunDir).
func TestReaperHolding(t *testing.T) {
	run := testutil.ShortTempDir(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "reap"), "sleep 30\nexit 0\n") // not exec'd into sleep
	reaper := exec.Command("/bin/sh", "reap")                      // argv[1] is "reap", as `haroute reap …`'s
	reaper.Dir = dir
	if err := reaper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reaper.Process.Kill(); _ = reaper.Wait() })
	// Start returns once the exec is past its point of no return, which
	// can be before the kernel has set up the new command line: read in
	// that moment, /proc/<pid>/cmdline is empty (a failure seen under
	// load). The real reaper has run for a while when it is looked at.
	eventually(t, 5*time.Second, "the reaper's command line", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", reaper.Process.Pid))
		return err == nil && len(b) > 0
	})
	writeFile(t, filepath.Join(run, LockFile), strconv.Itoa(reaper.Process.Pid)+"\n")
	if got := ReaperHolding(run); got != reaper.Process.Pid {
		t.Fatalf("ReaperHolding = %d, want the reaper %d", got, reaper.Process.Pid)
	}
	writeFile(t, filepath.Join(run, LockFile), strconv.Itoa(os.Getpid())+"\n")
	if got := ReaperHolding(run); got != 0 {
		t.Fatalf("ReaperHolding = %d for a lock this test holds, want 0", got)
	}
}
