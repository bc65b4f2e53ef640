package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// buildHaroute builds cmd/haroute into a temp dir.
func buildHaroute(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "haroute")
	// go test puts its own GOROOT/bin first in the test's PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not in PATH: %v", err)
	}
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/haroute/haroute/cmd/haroute").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// harouteProc is `haroute run` in a process of its own.
type harouteProc struct {
	cmd    *exec.Cmd
	exited chan error
	logs   string
}

func runHaroute(t *testing.T, bin string, args ...string) *harouteProc {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "haroute.log")
	f, err := os.Create(logs)
	must(t, err)
	cmd := exec.Command(bin, append([]string{"run", "--haproxy", testutil.HAProxy(t)}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	must(t, cmd.Start())
	f.Close()
	h := &harouteProc{cmd: cmd, exited: make(chan error, 1), logs: logs}
	go func() { h.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	return h
}

// waitExit waits for h to exit and returns its log and exit error.
func (h *harouteProc) waitExit(t *testing.T) (string, error) {
	t.Helper()
	select {
	case err := <-h.exited:
		h.exited <- err // for the cleanup
		out, _ := os.ReadFile(h.logs)
		return string(out), err
	case <-time.After(60 * time.Second):
		t.Fatal("haroute still running after 60s")
		return "", nil
	}
}

// haproxyGroups maps the process group of every live HAProxy process whose
// command line names runDir to its member count.
func haproxyGroups(t *testing.T, runDir string) map[int]int {
	t.Helper()
	groups := map[int]int{}
	entries, err := os.ReadDir("/proc")
	must(t, err)
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), runDir+"/") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// After "pid (comm) ": state ppid pgrp …; a zombie holds nothing.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if f[0] == "Z" {
			continue
		}
		var pgrp int
		fmt.Sscan(f[2], &pgrp)
		groups[pgrp]++
	}
	return groups
}

// haroute killed with SIGKILL leaves its HAProxy serving; the next haroute
// on the same run dir takes it over without losing a request, and one
// HAProxy is left. A second haroute on the same run dir refuses to start;
// one on another run dir but the same ports fails naming the port.
func TestRestartAfterKillTakesOverHAProxy(t *testing.T) {
	bin := buildHaroute(t)
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	stateDir := filepath.Join(t.TempDir(), "state")
	args := []string{"--config-dir", r.dir, "--run-dir", r.runDir, "--state-dir", stateDir, "--metrics-address", r.metrics}

	first := runHaroute(t, bin, args...)
	r.serves("one.e2e.test", "/", "one")
	oldMaster := testenv.ShowProc(t, r.runDir).Master.PID

	ctx, stop := context.WithCancel(context.Background())
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var traffic sync.WaitGroup
	for range 4 {
		traffic.Go(func() {
			for ctx.Err() == nil {
				if got, err := r.get("one.e2e.test", "/"); err != nil || got != "one" {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%q, %v", got, err))
					continue
				}
				ok.Add(1)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	must(t, first.cmd.Process.Kill())
	first.waitExit(t)
	time.Sleep(300 * time.Millisecond) // the orphaned HAProxy serves alone

	second := runHaroute(t, bin, args...)
	r.eventually(30*time.Second, "new HAProxy master, the previous one gone", func() error {
		if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid == oldMaster {
			return fmt.Errorf("master is still %d", pid)
		}
		if err := syscall.Kill(oldMaster, 0); err == nil {
			return fmt.Errorf("previous master %d still runs", oldMaster)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	stop()
	traffic.Wait()
	if failed.Load() != 0 || ok.Load() == 0 {
		t.Fatalf("%d of %d requests failed across kill -9 and restart; first: %v", failed.Load(), ok.Load()+failed.Load(), firstErr.Load())
	}
	t.Logf("%d requests, none failed, across kill -9 and restart of haroute", ok.Load())
	newMaster := testenv.ShowProc(t, r.runDir).Master.PID
	r.eventually(20*time.Second, "one HAProxy left", func() error {
		if g := haproxyGroups(t, r.runDir); len(g) != 1 || g[newMaster] == 0 {
			return fmt.Errorf("haproxy process groups naming the run dir: %v, want only %d's", g, newMaster)
		}
		return nil
	})

	// A second haroute on the same run dir refuses.
	out, err := runHaroute(t, bin, args...).waitExit(t)
	want := fmt.Sprintf("locked by another haroute (pid %d)", second.cmd.Process.Pid)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("second haroute on the same run dir: %v, want it to fail with %q; log:\n%s", err, want, out)
	}
	// One on its own run dir but the same ports fails naming the port.
	out, err = runHaroute(t, bin, "--config-dir", r.dir, "--run-dir", testenv.RunDir(t),
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--metrics-address", "").waitExit(t)
	want = fmt.Sprintf("cannot bind socket (Address already in use) for [127.0.0.1:%d]; another process holds the port", r.http)
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("haroute on the same ports: %v, want it to fail with %q; log:\n%s", err, want, out)
	}
	r.serves("one.e2e.test", "/", "one")
	if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid != newMaster {
		t.Errorf("the failed routers changed the master: %d, want %d", pid, newMaster)
	}
}
