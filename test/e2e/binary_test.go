package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// The real binary, driven from outside as an operator's setup drives it:
// `haroute run` in its own process, a kubelet-style publisher scaling the
// endpoints of one route in and out, and traffic flowing all along. No
// reload, every request answered, every endpoint reached; SIGTERM stops
// HAProxy with it.
func TestBinaryScalesFromOutsideWithoutReload(t *testing.T) {
	haproxyBin := testutil.HAProxy(t)
	bin := buildHaroute(t)
	r := newRouter(t)
	var bs []*backend
	for i := range 6 {
		bs = append(bs, startBackend(t, fmt.Sprintf("b%d", i)))
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(scaleFiles(r, "", bs[:1])))

	logs, err := os.Create(filepath.Join(t.TempDir(), "haroute.log"))
	must(t, err)
	defer logs.Close()
	cmd := exec.Command(bin, "run", "--haproxy", haproxyBin, "--config-dir", r.dir, "--run-dir", r.runDir,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--metrics-address", r.metrics, "--handover-grace", "1s")
	cmd.Stdout, cmd.Stderr = logs, logs
	must(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	r.serves("web.e2e.test", "/", "b0")
	before := r.reloads()

	ctx, stop := context.WithCancel(context.Background())
	var mu sync.Mutex
	answered, failed := map[string]int{}, 0
	var firstErr error
	var traffic sync.WaitGroup
	traffic.Go(func() {
		for ctx.Err() == nil {
			got, err := r.get("web.e2e.test", "/")
			mu.Lock()
			if err != nil {
				failed++
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", time.Now().Format("15:04:05.000"), err)
				}
			} else {
				answered[got]++
			}
			mu.Unlock()
		}
	})
	// 1 → 6 → 1 endpoints, twice, one swap at a time.
	sizes := []int{2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 3, 6, 2, 1}
	for _, n := range sizes {
		must(t, w.Publish(scaleFiles(r, "", bs[:n])))
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	traffic.Wait()
	if got := r.reloads() - before; got != 0 {
		t.Errorf("%d reloads while scaling endpoints from outside, want 0", got)
	}
	if failed > 0 {
		t.Errorf("%d requests failed while scaling (answered: %v); the first: %v", failed, answered, firstErr)
	}
	for _, b := range bs {
		if answered[b.Name] == 0 {
			t.Errorf("%s never answered (answered: %v)", b.Name, answered)
		}
	}
	r.serves("web.e2e.test", "/", "b0") // the last generation has b0 only

	pid := testenv.ShowProc(t, r.runDir).Master.PID
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("haroute exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("haroute still running 30s after SIGTERM")
	}
	// Handed over: HAProxy serves on for the next haroute, and with none
	// coming, `haroute reap` stops it once the grace has passed.
	if _, err := r.get("web.e2e.test", "/"); err != nil {
		t.Errorf("HAProxy stopped serving when haroute stopped: %v", err)
	}
	r.eventually(30*time.Second, "HAProxy stopped by the reaper", func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return fmt.Errorf("HAProxy master %d still running", pid)
		}
		return nil
	})
	exited <- nil // for the cleanup
}

// haroute run behind a log pipe that breaks (`| head`, a log shipper that
// restarts) carries on: a Go program whose stderr write hits a closed
// pipe dies of SIGPIPE unless it says otherwise, and haroute did, leaving
// HAProxy running with no reaper. It serves the next change, and SIGTERM
// still stops it cleanly.
func TestBinarySurvivesABrokenLogPipe(t *testing.T) {
	haproxyBin := testutil.HAProxy(t)
	bin := buildHaroute(t)
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))

	logs, pipe, err := os.Pipe()
	must(t, err)
	cmd := exec.Command(bin, "run", "--haproxy", haproxyBin, "--config-dir", r.dir, "--run-dir", r.runDir,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--metrics-address", r.metrics, "--handover-grace", "0")
	cmd.Stdout, cmd.Stderr = pipe, pipe
	must(t, cmd.Start())
	pipe.Close()
	exited := make(chan struct{}) // closed once cmd has exited, with waitErr
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// The reader goes away after the first line, as `| head -1` does.
	first := make([]byte, 1)
	_, err = logs.Read(first)
	must(t, err)
	logs.Close()

	r.serves("one.e2e.test", "/", "one")
	must(t, w.Publish(oneRoute(r, two))) // logged, into the broken pipe
	r.serves("one.e2e.test", "/", "two")
	select {
	case <-exited:
		t.Fatalf("haroute exited with its log pipe broken: %v", waitErr)
	default:
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("haroute exited with %v after SIGTERM", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("haroute still running 30s after SIGTERM")
	}
}
