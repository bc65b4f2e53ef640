package haproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
)

func TestCheck(t *testing.T) {
	bin := testutil.HAProxy(t)
	r := newRig(t)
	bad := filepath.Join(r.Run, "bad.cfg")
	writeFile(t, bad, "global\n    bogus_keyword\n")

	if err := Check(ctxT(t, 10*time.Second), bin, r.Cfg); err != nil {
		t.Errorf("Check(good config) = %v, want nil", err)
	}

	err := Check(ctxT(t, 10*time.Second), bin, bad)
	var ce *CheckError
	if !errors.As(err, &ce) {
		t.Fatalf("Check(bad config) = %v, want *CheckError", err)
	}
	// 2.6.12's exact messages, pid noise removed.
	want := fmt.Sprintf("haproxy rejected %[1]s: "+
		"[ALERT] config : parsing [%[1]s:2] : unknown keyword 'bogus_keyword' in 'global' section; "+
		"[ALERT] config : Error(s) found in configuration file : %[1]s; "+
		"[ALERT] config : Fatal errors found in configuration.", bad)
	if err.Error() != want {
		t.Errorf("Check(bad config) error\n got: %s\nwant: %s", err, want)
	}

	err = Check(ctxT(t, 10*time.Second), "/nonexistent/haproxy", r.Cfg)
	if want := "haproxy binary /nonexistent/haproxy: stat /nonexistent/haproxy: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("Check(missing binary) = %v, want %q", err, want)
	}
}

func TestNewSupervisorMissingBinary(t *testing.T) {
	_, err := NewSupervisor(Options{Binary: "/nonexistent/haproxy", ConfigPath: "x.cfg", RunDir: "/tmp/hrx"})
	if want := "haproxy binary /nonexistent/haproxy: stat /nonexistent/haproxy: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("NewSupervisor(missing binary) = %v, want %q", err, want)
	}
	// A path that is there but runs nothing: every `haproxy -c` failed,
	// and the failure was pinned on the RouterConfig.
	file := filepath.Join(t.TempDir(), "haproxy")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = NewSupervisor(Options{Binary: file, ConfigPath: "x.cfg", RunDir: "/tmp/hrx"})
	if want := "haproxy binary " + file + " is not an executable file (mode -rw-r--r--)"; err == nil || err.Error() != want {
		t.Errorf("NewSupervisor(a file without x bits) = %v, want %q", err, want)
	}
}

func TestStartStop(t *testing.T) {
	r := newRig(t)
	// A pre-existing run dir with loose permissions gets tightened.
	if err := os.Chmod(r.Run, 0o755); err != nil {
		t.Fatal(err)
	}
	r.start(t)

	if got := modeOf(t, r.Run); got != 0o700 {
		t.Errorf("run dir mode = %v, want 0700", got)
	}
	for _, sock := range []string{"master.sock", "admin.sock"} {
		if got := modeOf(t, filepath.Join(r.Run, sock)); got != 0o600 {
			t.Errorf("%s mode = %v, want 0600", sock, got)
		}
	}
	pidfile, err := os.ReadFile(r.sup.PIDFile())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(pidfile)), fmt.Sprint(r.proc.PID()); got != want {
		t.Errorf("pid file = %s, want master pid %s", got, want)
	}
	info, err := r.proc.Master().ShowProc(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if info.Master.PID != r.proc.PID() || len(info.Workers) != 1 || info.Master.Reloads != 0 || info.FailedReloads != 0 {
		t.Errorf("show proc = %+v, want master %d, one worker, 0 reloads, 0 failed", info, r.proc.PID())
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET = %q, want %q", got, "200 b0")
	}
	// "New worker (N) forked" up to 3.0, "Initializing new worker (N)"
	// from 3.1.
	if !strings.Contains(strings.ToLower(r.log.String()), "new worker") {
		t.Errorf("haproxy's output was not logged; log:\n%s", r.log)
	}

	start := time.Now()
	if err := r.proc.Stop(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// An idle HAProxy soft-stops at once, well before SIGTERM would be due.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("soft stop took %s", d)
	}
	select {
	case <-r.proc.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if pids := haproxyPIDs(t, r.Cfg); len(pids) != 0 {
		t.Errorf("haproxy processes left after Stop: %v", pids)
	}
}

// TestStopDuringStart cancels a start the moment HAProxy listens, as a
// `systemctl stop` during a start does: Start stops the HAProxy it
// launched. HAProxy's master loses a SIGUSR1 that comes before it is
// ready (seen on 2.6.12 and 3.0.11): sent once, the soft stop waited out
// SoftStopTimeout and ended with SIGTERM.
func TestStopDuringStart(t *testing.T) {
	cancelled := 0
	for i := range 3 {
		r := newRig(t)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer cancel()
			for ctx.Err() == nil {
				if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTP)); err == nil {
					c.Close()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		proc, err := r.sup.Start(ctx)
		cancel()
		if err == nil {
			// Ready before the port was seen: nothing to test this time.
			if err := proc.Stop(ctxT(t, 20*time.Second)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cancelled++
		if log := r.log.String(); strings.Contains(log, "signal=terminated") {
			t.Fatalf("start %d, cancelled as HAProxy began to listen, stopped it only with SIGTERM: the soft stop was lost:\n%s", i, log)
		}
		if pids := haproxyPIDs(t, r.Cfg); len(pids) != 0 {
			t.Errorf("haproxy processes left after a cancelled start: %v", pids)
		}
	}
	if cancelled == 0 {
		t.Fatal("every start was ready before its port was seen: no stop during a start was tested")
	}
}

func TestStopEscalatesWhileConnectionsLinger(t *testing.T) {
	r := newRig(t)
	r.start(t)
	// An idle keep-alive-free TCP connection that never sends a request
	// keeps the worker in soft-stop until `timeout client` (10 s), longer
	// than SoftStopTimeout (3 s): Stop must escalate to SIGTERM.
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := r.proc.Stop(ctxT(t, 20*time.Second)); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if d := time.Since(start); d < 3*time.Second || d > 8*time.Second {
		t.Errorf("stop took %s, want the 3 s soft-stop wait then a prompt SIGTERM exit", d)
	}
	if pids := haproxyPIDs(t, r.Cfg); len(pids) != 0 {
		t.Errorf("haproxy processes left after Stop: %v", pids)
	}
}

func TestStartFailsWhenPortInUse(t *testing.T) {
	r := newRig(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = r.sup.Start(ctxT(t, 20*time.Second))
	if err == nil {
		t.Fatal("Start succeeded with the HTTP port taken")
	}
	want := fmt.Sprintf("cannot bind socket (Address already in use) for [127.0.0.1:%d]", r.HTTP)
	if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "haproxy exited during startup: ") {
		t.Errorf("Start error = %v\nwant it to start with %q and contain %q", err, "haproxy exited during startup: ", want)
	}
	if pids := haproxyPIDs(t, r.Cfg); len(pids) != 0 {
		t.Errorf("haproxy processes left after failed start: %v", pids)
	}
}

func TestMasterKilled(t *testing.T) {
	r := newRig(t)
	r.start(t)
	info, err := r.proc.Master().ShowProc(ctxT(t, 5*time.Second))
	if err != nil || len(info.Workers) != 1 {
		t.Fatalf("show proc = %+v, %v", info, err)
	}
	if err := syscall.Kill(r.proc.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.proc.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed 5 s after SIGKILL of the master")
	}
	want := fmt.Sprintf("haproxy master %d: signal: killed", r.proc.PID())
	if err := r.proc.Err(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Err() = %v, want prefix %q", err, want)
	}
	// The worker goes with its master (zombies aside: reaping them is
	// init's job, and they hold no port).
	eventually(t, 5*time.Second, fmt.Sprintf("worker %d gone", info.Workers[0].PID),
		func() bool { return len(haproxyPIDs(t, r.Cfg)) == 0 })
	// Stop after the fact is a no-op, not an error.
	if err := r.proc.Stop(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Stop after exit = %v, want nil", err)
	}
	// And a new Start works: nothing holds the ports.
	r.start(t)
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after restart = %q", got)
	}
}

func TestReload(t *testing.T) {
	r := newRig(t)
	r.start(t)
	m := r.proc.Master()
	before, err := m.ShowProc(ctxT(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// A connection in the middle of a request keeps the old worker alive.
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTP))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)

	after, err := r.proc.Reload(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if after.Master.Reloads != before.Master.Reloads+1 {
		t.Errorf("reloads = %d, want %d", after.Master.Reloads, before.Master.Reloads+1)
	}
	if len(after.Workers) != 1 || after.Workers[0].PID == before.Workers[0].PID {
		t.Errorf("workers after reload = %+v, want one new worker (old %d)", after.Workers, before.Workers[0].PID)
	}
	if after.Master.PID != before.Master.PID {
		t.Errorf("master pid changed: %d → %d", before.Master.PID, after.Master.PID)
	}
	if len(after.OldWorkers) != 1 || after.OldWorkers[0].PID != before.Workers[0].PID {
		t.Errorf("old workers = %+v, want the previous worker %d", after.OldWorkers, before.Workers[0].PID)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after reload = %q", got)
	}

	// A bad config slipped in behind haroute's back: the reload fails,
	// the current worker keeps serving.
	good, _ := os.ReadFile(r.Cfg)
	writeFile(t, r.Cfg, string(good)+"    bogus_keyword\n")
	failed, err := r.proc.Reload(ctxT(t, 20*time.Second))
	if !errors.Is(err, ErrReloadFailed) {
		t.Fatalf("reload of a bad config = %v, want ErrReloadFailed", err)
	}
	badLine := strings.Count(string(good), "\n") + 1
	wantAlert := fmt.Sprintf("[ALERT] config : parsing [%s:%d] : unknown keyword 'bogus_keyword' in 'backend' section", r.Cfg, badLine)
	if !strings.Contains(err.Error(), wantAlert) {
		t.Errorf("reload error = %v\nwant it to contain %q", err, wantAlert)
	}
	if failed.FailedReloads != 1 || failed.Master.Reloads != after.Master.Reloads+1 ||
		len(failed.Workers) != 1 || failed.Workers[0].PID != after.Workers[0].PID {
		t.Errorf("show proc after failed reload = %+v, want failed 1, reloads %d, worker %d kept",
			failed, after.Master.Reloads+1, after.Workers[0].PID)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after failed reload = %q", got)
	}

	// Fixing the file makes the next reload succeed and resets [failed].
	writeFile(t, r.Cfg, string(good))
	fixed, err := r.proc.Reload(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("reload after fix: %v", err)
	}
	if fixed.FailedReloads != 0 || fixed.Workers[0].PID == after.Workers[0].PID {
		t.Errorf("show proc after fixed reload = %+v", fixed)
	}
}

// A master that dies while a reload is in flight ends the reload at once:
// polling it for a confirmation until the caller's deadline (two minutes
// in the daemon) kept the daemon from restarting HAProxy, and every route
// was down meanwhile.
func TestReloadEndsWhenTheMasterDies(t *testing.T) {
	r := newRig(t)
	r.start(t)
	if err := os.Rename(slowLoading(t, r, r.B0), r.Cfg); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.proc.Reload(ctxT(t, 2*time.Minute))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // the master is loading the slow config
	if err := syscall.Kill(r.proc.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, errMasterExited) {
			t.Errorf("reload = %v, want errMasterExited", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reload still waits 30 s after its master died")
	}
}

// A master stopped by a signal when a reload starts is resumed, and the
// reload goes through: the daemon's housekeeping, which resumes stopped
// processes, waits behind the reload.
func TestReloadResumesAStoppedMaster(t *testing.T) {
	r := newRig(t)
	r.start(t)
	if err := syscall.Kill(r.proc.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(r.proc.PID(), syscall.SIGCONT) })
	if _, err := r.proc.Reload(ctxT(t, 30*time.Second)); err != nil {
		t.Fatalf("reload with the master stopped: %v", err)
	}
	if got := r.get(t, ""); got != "200 b0" {
		t.Errorf("GET after the reload = %q", got)
	}
}
