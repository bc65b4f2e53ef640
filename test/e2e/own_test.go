package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/status"
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
		if t.Failed() {
			out, _ := os.ReadFile(logs)
			t.Logf("haroute %v log:\n%s", args, out)
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
	r := newRouter(t)
	o := killWhileServing(t, r)
	time.Sleep(300 * time.Millisecond) // the orphaned HAProxy serves alone

	bin, args := o.bin, o.args
	second := runHaroute(t, bin, args...)
	newMaster := tookOver(t, r, o.oldMaster)
	time.Sleep(300 * time.Millisecond)
	o.traffic.noneFailed(t, "across kill -9 and restart of haroute")

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

// A restart whose first HAProxy loses its worker as it starts (the OOM
// killer, say), with a RouterConfig changed meanwhile: the valid settings
// were pinned as refused by HAProxy until their file changed, or, with
// the same settings, haroute stopped blaming the http port its earlier
// HAProxy held, which then served unsupervised (T39). Now the start is
// tried once more, the earlier HAProxy taken over without waiting for
// the master socket the failed start replaced, and the settings applied.
func TestRestartWhoseFirstHAProxyLosesItsWorker(t *testing.T) {
	for _, changed := range []bool{true, false} {
		t.Run(fmt.Sprintf("settings changed %v", changed), func(t *testing.T) {
			r := newRouter(t)
			o := killWhileServing(t, r)
			if changed {
				o.gen["router.yaml"] = []byte(r.routerConfig("    clientTimeout: 31s\n"))
				must(t, o.w.Publish(o.gen))
			}
			// The first master it starts loses its worker once forked,
			// and so exits; every later one is HAProxy itself.
			wrapper := filepath.Join(t.TempDir(), "haproxy")
			must(t, os.WriteFile(wrapper, []byte(fmt.Sprintf(`#!/bin/sh
marker=%[1]s.failed
case " $* " in *" -W "*)
  if [ ! -e "$marker" ]; then
    : > "$marker"
    %[2]s "$@" & master=$!
    for i in $(seq 1 1000); do
      worker=$(cat /proc/$master/task/$master/children 2>/dev/null)
      [ -n "$worker" ] && break
      sleep 0.01
    done
    kill -9 $worker
    wait $master
    exit $?
  fi;;
esac
exec %[2]s "$@"
`, wrapper, testutil.HAProxy(t))), 0o755))
			second := runHaroute(t, o.bin, append(slices.Clone(o.args), "--haproxy", wrapper)...)
			newMaster := tookOver(t, r, o.oldMaster)
			if _, err := os.Stat(wrapper + ".failed"); err != nil {
				t.Fatalf("no start failed: %v", err)
			}
			select {
			case err := <-second.exited:
				out, _ := os.ReadFile(second.logs)
				t.Fatalf("haroute stopped: %v\n%s", err, out)
			default:
			}
			// The killed worker served from its fork on 2.6 and 3.0 (the
			// master loads first): each client may lose the one request
			// it had there. Refused ports lost thousands.
			o.traffic.atMostFailed(t, 4, "across the restart and its failed start")
			if changed {
				cfg := filepath.Join(o.args[slices.Index(o.args, "--state-dir")+1], "live", "haproxy.cfg")
				r.eventually(20*time.Second, "the new settings applied", func() error {
					if b, err := os.ReadFile(cfg); err != nil || !strings.Contains(string(b), "timeout client 31s") {
						return fmt.Errorf("no timeout client 31s in %s (%v)", cfg, err)
					}
					return nil
				})
				resp, err := r.client.Get("http://" + r.metrics + "/status")
				must(t, err)
				if body := readAll(resp); strings.Contains(body, "refused") {
					t.Errorf("status after the restart reports a refusal:\n%s", body)
				}
			}
			if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid != newMaster {
				t.Errorf("master %d, want %d", pid, newMaster)
			}
		})
	}
}

// A haroute that stops while it waits for a RouterConfig it can use (an
// upgrade that refuses the one the earlier version served, with no
// saved state here) has not taken over the HAProxy an earlier haroute
// left serving; that haroute's reaper left it alone, since this one held
// the run dir. The stop left it serving unsupervised for good. Now it is
// handed over as the stopping haroute's own HAProxy is: a reaper stops
// it once no haroute has taken it over by the grace.
func TestStopBeforeTakeoverLeavesNoHAProxyBehind(t *testing.T) {
	r := newRouter(t)
	o := killWhileServing(t, r)
	o.traffic.noneFailed(t, "the kill")
	o.gen["router.yaml"] = []byte(r.routerConfig("  httpHeaders:\n    uniqueId:\n      name: Host\n"))
	must(t, o.w.Publish(o.gen))
	args := append(slices.Clone(o.args), "--handover-grace", "1s")
	args[slices.Index(args, "--state-dir")+1] = filepath.Join(t.TempDir(), "state") // no saved settings
	waiting := runHaroute(t, o.bin, args...)
	r.eventually(20*time.Second, "the RouterConfig refused", func() error {
		resp, err := r.client.Get("http://" + r.metrics + "/readyz")
		if err != nil {
			return err
		}
		if body := readAll(resp); !strings.Contains(body, "RouterConfig invalid") {
			return fmt.Errorf("readyz: %s", body)
		}
		return nil
	})
	r.serves("one.e2e.test", "/", "one") // the earlier HAProxy, not taken over
	resp, err := r.client.Get("http://" + r.metrics + "/status")
	must(t, err)
	if body, want := readAll(resp), fmt.Sprintf("the HAProxy an earlier haroute left (pid %d) serves", o.oldMaster); !strings.Contains(body, want) {
		t.Errorf("status does not say %q:\n%s", want, body)
	}
	if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid != o.oldMaster {
		t.Fatalf("master %d, want the earlier one (%d) serving", pid, o.oldMaster)
	}
	must(t, waiting.cmd.Process.Signal(syscall.SIGTERM))
	if out, err := waiting.waitExit(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	r.eventually(20*time.Second, "the reaper stops the earlier HAProxy", func() error {
		if err := syscall.Kill(o.oldMaster, 0); err == nil {
			return fmt.Errorf("master %d still running", o.oldMaster)
		}
		return nil
	})
}

// A route HAProxy refuses, published while haroute was down, must not stop
// the restarted haroute from taking over: its first start is refused while
// the orphaned HAProxy keeps serving, the route is found by the check and
// rejected with HAProxy's message, and the rest start without it, still
// without losing a request. (A wrapper stands in for an HAProxy that
// refuses the route's certificate: it refuses any configuration whose
// crt-list names refused.e2e.test, at a start or a check.)
func TestTakeoverWithRefusedRouteKeepsServing(t *testing.T) {
	r := newRouter(t)
	o := killWhileServing(t, r)

	cert, key := makeCert(t, "refused.e2e.test", 5006)
	o.gen["two.yaml"] = []byte(routeYAML("two", "two.e2e.test", "", "one"))
	o.gen["refused.yaml"] = []byte(routeYAML("refused", "refused.e2e.test", "", "one") + "  tls:\n    termination: edge\n    certificate: |\n" +
		indent(cert, 6) + "\n    key: |\n" + indent(key, 6) + "\n")
	must(t, o.w.Publish(o.gen))
	second := runHaroute(t, o.bin, append(o.args, "--haproxy", refusingHAProxy(t, "refused.e2e.test", ""))...)

	tookOver(t, r, o.oldMaster)
	r.serves("two.e2e.test", "/", "one")
	time.Sleep(300 * time.Millisecond)
	o.traffic.noneFailed(t, "across kill -9, a refused route and the takeover")
	r.eventually(10*time.Second, "the refusal in the log", func() error {
		out, _ := os.ReadFile(second.logs)
		if !strings.Contains(string(out), "route refused by haproxy") || !strings.Contains(string(out), "unable to load certificate") {
			return errors.New("no \"route refused by haproxy\" with HAProxy's message yet")
		}
		return nil
	})
	// Its status, as an operator reads it from /status: rejected with
	// HAProxy's message, not served.
	r.eventually(10*time.Second, "e2e/refused rejected in /status", func() error {
		st, err := status.Fetch(t.Context(), r.metrics)
		if err != nil {
			return err
		}
		for _, rt := range st.Routes {
			if rt.Key == "e2e/refused" {
				if rt.State != model.RouteRejected || !strings.Contains(strings.Join(rt.Reasons, " "), "unable to load certificate") {
					return fmt.Errorf("state %s, reasons %q", rt.State, rt.Reasons)
				}
				return nil
			}
		}
		return errors.New("no status for e2e/refused")
	})
}

// A restart on a full or read-only state disk, after the tree changed,
// cannot write the new tree's files. haroute then takes the running
// HAProxy over on the saved last good state, whose files are on disk
// already, rather than leave it serving unsupervised (or, after a stop,
// reaped: every route down); the new tree applies once the disk takes
// writes again, without waiting for the next resync. Without a saved
// state to start on (here it is unreadable), HAProxy is started on the
// live files as they are. A 4 MB tmpfs stands for the state disk (root
// only: CI runs as root).
func TestRestartOnABrokenStateDiskTakesOverHAProxy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		harm, mend func(t *testing.T, disk string)
		want       string
	}{
		{"full", func(t *testing.T, disk string) { fillDisk(t, filepath.Join(disk, "filler")) },
			func(t *testing.T, disk string) { must(t, os.Remove(filepath.Join(disk, "filler"))) }, "no space left"},
		{"read-only", func(t *testing.T, disk string) { testutil.Mount(t, "-o", "remount,ro", disk) },
			func(t *testing.T, disk string) { testutil.Mount(t, "-o", "remount,rw", disk) }, "read-only file system"},
		// No saved state to start on: HAProxy is started on the live
		// files as they are, and the new tree goes in whole, by a
		// reload, once it can be written.
		{"full with the saved state unreadable", func(t *testing.T, disk string) {
			must(t, os.WriteFile(filepath.Join(disk, "state", "lastgood", "index.json"), []byte("{"), 0o600))
			fillDisk(t, filepath.Join(disk, "filler"))
		}, func(t *testing.T, disk string) { must(t, os.Remove(filepath.Join(disk, "filler"))) }, "no space left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := t.TempDir()
			testutil.Tmpfs(t, disk, "4m")
			r := newRouter(t)
			o := killWhileServingOn(t, r, filepath.Join(disk, "state"))

			o.gen["two.yaml"] = []byte(routeYAML("two", "two.e2e.test", "", "one"))
			must(t, o.w.Publish(o.gen))
			tc.harm(t, disk)
			second := runHaroute(t, o.bin, o.args...)
			tookOver(t, r, o.oldMaster)
			time.Sleep(300 * time.Millisecond)
			o.traffic.noneFailed(t, "across kill -9 and a restart, the state disk "+tc.name)
			if got, err := r.get("two.e2e.test", "/"); err == nil {
				t.Fatalf("two.e2e.test answered %q, want it waiting for the disk", got)
			}
			r.eventually(10*time.Second, "the write failure in /status", func() error {
				st, err := status.Fetch(t.Context(), r.metrics)
				if err != nil {
					return err
				}
				if st.LastError == nil || !strings.Contains(st.LastError.Message, tc.want) {
					return fmt.Errorf("last error %+v, want %q", st.LastError, tc.want)
				}
				return nil
			})

			tc.mend(t, disk)
			r.serves("two.e2e.test", "/", "one")
			r.serves("one.e2e.test", "/", "one")
			if out, _ := os.ReadFile(second.logs); !strings.Contains(string(out), "serving the saved last good state") &&
				!strings.Contains(string(out), "starting haproxy on the files left on disk") {
				t.Errorf("the log says neither that the saved state serves nor that the files on disk do:\n%s", out)
			}
		})
	}
}

// fillDisk writes zeros to path until its file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			return
		}
	}
}

// orphaned is a router whose haroute was killed with SIGKILL while its
// HAProxy served one route under traffic: what a restart needs.
type orphaned struct {
	bin       string
	args      []string
	w         *publish.AtomicWriter
	gen       map[string][]byte // published
	oldMaster int
	traffic   *requests
}

// killWhileServing starts haroute serving one route, starts traffic to it
// and kills haroute with SIGKILL, leaving its HAProxy serving.
func killWhileServing(t *testing.T, r *router) *orphaned {
	t.Helper()
	return killWhileServingOn(t, r, filepath.Join(t.TempDir(), "state"))
}

// killWhileServingOn is killWhileServing with its state in stateDir.
func killWhileServingOn(t *testing.T, r *router, stateDir string) *orphaned {
	t.Helper()
	o := &orphaned{w: publish.NewAtomicWriter(r.dir), gen: oneRoute(r, startBackend(t, "one"))}
	must(t, o.w.Publish(o.gen))
	o.bin = buildHaroute(t)
	o.args = []string{"--config-dir", r.dir, "--run-dir", r.runDir, "--state-dir", stateDir, "--metrics-address", r.metrics}
	first := runHaroute(t, o.bin, o.args...)
	r.serves("one.e2e.test", "/", "one")
	o.oldMaster = testenv.ShowProc(t, r.runDir).Master.PID
	// Taken over, it is gone by the end; a test that fails before the
	// takeover left it serving, with its ports, after the run.
	master := o.oldMaster
	t.Cleanup(func() { _ = syscall.Kill(master, syscall.SIGTERM) })
	o.traffic = keepRequesting(r, "one.e2e.test", "one")
	// Killed once it saved what it serves, as a router that has run a
	// while has: under the parallel suite's load, 300 ms after the first
	// answer were once not enough (on 3.2.26), and the tests that harm
	// the saved state found none.
	r.eventually(10*time.Second, "the last good state saved", func() error {
		_, err := os.Stat(filepath.Join(stateDir, "lastgood", "index.json"))
		return err
	})
	time.Sleep(300 * time.Millisecond)
	must(t, first.cmd.Process.Kill())
	first.waitExit(t)
	return o
}

// requests is traffic kept up against one host until noneFailed.
type requests struct {
	stop       context.CancelFunc
	done       sync.WaitGroup
	ok, failed atomic.Int64
	firstErr   atomic.Value
}

// keepRequesting sends requests for host from four clients, each answer
// expected to be want, until noneFailed is called.
func keepRequesting(r *router, host, want string) *requests {
	ctx, stop := context.WithCancel(context.Background())
	q := &requests{stop: stop}
	for range 4 {
		q.done.Go(func() {
			for ctx.Err() == nil {
				if got, err := r.get(host, "/"); err != nil || got != want {
					q.failed.Add(1)
					q.firstErr.CompareAndSwap(nil, fmt.Sprintf("%q, %v", got, err))
					continue
				}
				q.ok.Add(1)
			}
		})
	}
	return q
}

// noneFailed stops the traffic and fails the test if any request failed.
func (q *requests) noneFailed(t *testing.T, during string) {
	t.Helper()
	q.atMostFailed(t, 0, during)
}

// atMostFailed stops the traffic and fails the test unless some requests
// succeeded and at most n failed.
func (q *requests) atMostFailed(t *testing.T, n int64, during string) {
	t.Helper()
	q.stop()
	q.done.Wait()
	if q.failed.Load() > n || q.ok.Load() == 0 {
		t.Fatalf("%d of %d requests failed %s (at most %d may); first: %v", q.failed.Load(), q.ok.Load()+q.failed.Load(), during, n, q.firstErr.Load())
	}
	t.Logf("%d requests, %d failed, %s", q.ok.Load()+q.failed.Load(), q.failed.Load(), during)
}

// tookOver waits until an HAProxy master other than oldMaster serves the
// run dir, oldMaster is gone, and one HAProxy is left; it returns the new
// master's pid.
func tookOver(t *testing.T, r *router, oldMaster int) int {
	t.Helper()
	r.eventually(30*time.Second, "new HAProxy master, the previous one gone", func() error {
		if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid == oldMaster {
			return fmt.Errorf("master is still %d", pid)
		}
		if err := syscall.Kill(oldMaster, 0); err == nil {
			return fmt.Errorf("previous master %d still runs", oldMaster)
		}
		return nil
	})
	newMaster := testenv.ShowProc(t, r.runDir).Master.PID
	r.eventually(20*time.Second, "one HAProxy left", func() error {
		if g := haproxyGroups(t, r.runDir); len(g) != 1 || g[newMaster] == 0 {
			return fmt.Errorf("haproxy process groups naming the run dir: %v, want only %d's", g, newMaster)
		}
		return nil
	})
	return newMaster
}

// Two routers sharing one state dir took each other's HAProxy over (its
// -f names the live config there) and served each other's maps. The
// second now refuses to start, naming the first; the first keeps serving.
func TestSecondRouterOnTheSameStateDirRefuses(t *testing.T) {
	one := startBackend(t, "one")
	r, _, _, _ := poolRouter(t, one)

	other := newRouter(t)
	must(t, publish.NewAtomicWriter(other.dir).Publish(files("router.yaml", other.routerConfig(""),
		"b.yaml", routeYAML("b", "b.e2e.test", "", "one"), "endpoints.yaml", endpointsYAML("one", one))))
	d, err := daemon.New(daemon.Options{ConfigDir: other.dir, RunDir: other.runDir, StateDir: r.stateDir,
		HAProxy: testutil.HAProxy(t), Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = d.Run(ctx)
	want := fmt.Sprintf("state dir in use: %s is locked by another haroute (pid %d); give each router its own --state-dir", r.stateDir, os.Getpid())
	if err == nil || err.Error() != want {
		t.Fatalf("second router on the same state dir: %v, want %q", err, want)
	}
	r.serves("a.e2e.test", "/", "one")
}

// A metrics address another process holds does not keep haroute from
// routing: it serves, and opens the address once it is free. Failing the
// start instead, on a restart, had the reaper stop the HAProxy this
// haroute was to take over, and every route was down until the port was
// freed.
func TestTakenMetricsAddressDoesNotStopRouting(t *testing.T) {
	r := newRouter(t)
	holder, err := net.Listen("tcp", r.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	one := startBackend(t, "one")
	must(t, publish.NewAtomicWriter(r.dir).Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	holder.Close()
	r.eventually(20*time.Second, "metrics address opened once free", func() error {
		_, err := r.scrapeMetrics()
		return err
	})
}

// A haroute started with a relative --run-dir leaves a reaper that finds
// its HAProxy at the stop: relative, the reaper compared the path with
// HAProxy's command line, found no HAProxy of that run dir, and left it
// running (with the ports) for good.
func TestReaperStopsHAProxyOfARelativeRunDir(t *testing.T) {
	r := newRouter(t)
	must(t, publish.NewAtomicWriter(r.dir).Publish(oneRoute(r, startBackend(t, "one"))))
	bin := buildHaroute(t)
	// Both relative to the run dir's parent (short, as the sockets' paths
	// must be): the reaper is given the run dir and the config in it.
	state := filepath.Base(r.runDir) + "-state"
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(filepath.Dir(r.runDir), state)) })
	cmd := exec.Command(bin, "run", "--haproxy", testutil.HAProxy(t), "--config-dir", r.dir,
		"--run-dir", filepath.Base(r.runDir), "--state-dir", state,
		"--metrics-address", "", "--handover-grace", "1s")
	cmd.Dir = filepath.Dir(r.runDir)
	must(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r.serves("one.e2e.test", "/", "one")
	master := testenv.ShowProc(t, r.runDir).Master.PID
	t.Cleanup(func() { _ = syscall.Kill(master, syscall.SIGKILL) }) // should the reaper fail
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = cmd.Wait()
	r.eventually(20*time.Second, "the reaper stops the HAProxy left behind", func() error {
		if err := syscall.Kill(master, 0); err == nil {
			return fmt.Errorf("master %d still running", master)
		}
		return nil
	})
}

// HAProxy binds its backup TLS hop socket in the state dir, and a master
// that cannot bind a socket does not start. When HAProxy died after a
// restart of haroute on a read-only state disk, haroute could not start
// it again: every route down until the disk was mended. The master it
// starts now binds that socket in the run dir (the config names the
// directory through an environment variable, since the config on that
// disk cannot be rewritten), and a run dir deleted meanwhile is healed as
// before. The disk is made read-only while haroute is down: a remount
// refuses while a file on it is open for writing (haroute's lock).
func TestHAProxyRestartsOnAReadOnlyStateDisk(t *testing.T) {
	disk := t.TempDir()
	testutil.Tmpfs(t, disk, "4m")
	r := newRouter(t)
	one := startBackend(t, "one")
	must(t, publish.NewAtomicWriter(r.dir).Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("one", "one.e2e.test", "", "one"), edgeRouteYAML("tls", "tls.e2e.test", "one")),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	bin := buildHaroute(t)
	args := []string{"--config-dir", r.dir, "--run-dir", r.runDir, "--state-dir", filepath.Join(disk, "state"), "--metrics-address", r.metrics}
	first := runHaroute(t, bin, args...)
	r.serves("one.e2e.test", "/", "one")
	master := testenv.ShowProc(t, r.runDir).Master.PID
	t.Cleanup(func() { _ = syscall.Kill(master, syscall.SIGTERM) })
	must(t, first.cmd.Process.Kill())
	first.waitExit(t)
	testutil.Mount(t, "-o", "remount,ro", disk)
	t.Cleanup(func() { _ = exec.Command("mount", "-o", "remount,rw", disk).Run() })
	second := runHaroute(t, bin, args...)
	master = tookOver(t, r, master)

	for i := range 2 {
		// Twice: the second time, the master killed is a relocated one.
		must(t, syscall.Kill(master, syscall.SIGKILL))
		r.eventually(30*time.Second, "a new HAProxy master", func() error {
			if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid == master {
				return fmt.Errorf("master is still %d", pid)
			}
			return nil
		})
		master = testenv.ShowProc(t, r.runDir).Master.PID
		r.serves("one.e2e.test", "/", "one")
		r.eventually(20*time.Second, fmt.Sprintf("the TLS route served (kill %d)", i+1), func() error {
			_, err := r.getTLS("tls.e2e.test")
			return err
		})
	}
	if _, err := os.Stat(filepath.Join(r.runDir, "hop", "fe_sni.sock")); err != nil {
		t.Errorf("backup hop socket not in the run dir: %v", err)
	}
	// The relocated socket is checked where it is, so nothing is healed.
	r.eventually(10*time.Second, "/readyz ready", func() error {
		code, body, err := r.readyz()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz = %d %q", code, body)
		}
		return err
	})
	reloads := r.reloads()
	time.Sleep(2 * time.Second)
	if got := r.reloads(); got != reloads {
		t.Errorf("%d reloads while nothing changed, want none", got-reloads)
	}

	// On the read-only disk a deleted run dir cannot be healed: that
	// renders the config with new socket names. Those names were kept
	// anyway, so once HAProxy was started again on the names on disk,
	// /readyz said they were missing for good. They are put back.
	must(t, os.RemoveAll(r.runDir))
	time.Sleep(2 * time.Second) // a heal tried, and failed on the disk
	must(t, syscall.Kill(master, syscall.SIGKILL))
	r.eventually(30*time.Second, "the TLS route served by a new master", func() error {
		_, err := r.getTLS("tls.e2e.test")
		return err
	})
	ready := func() error {
		code, body, err := r.readyz()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz = %d %q", code, body)
		}
		return err
	}
	r.eventually(20*time.Second, "/readyz ready again", ready)
	for range 6 { // and it stays so: the heal finds what HAProxy binds
		time.Sleep(500 * time.Millisecond)
		if err := ready(); err != nil {
			t.Fatal(err)
		}
	}
	master = testenv.ShowProc(t, r.runDir).Master.PID

	// With the disk mended, a deleted run dir (and the backup in it) is
	// healed: the renamed backup is bound in the run dir again, where
	// this master keeps it.
	testutil.Mount(t, "-o", "remount,rw", disk)
	must(t, os.RemoveAll(r.runDir))
	r.eventually(30*time.Second, "the TLS route served after the run dir was healed", func() error {
		_, err := r.getTLS("tls.e2e.test")
		return err
	})
	r.serves("one.e2e.test", "/", "one")
	if _, err := os.Stat(filepath.Join(r.runDir, "hop", "fe_sni-1.sock")); err != nil {
		t.Errorf("renamed backup hop socket not in the run dir: %v", err)
	}
	if out, _ := os.ReadFile(second.logs); !strings.Contains(string(out), "haproxy binds its sockets elsewhere") {
		t.Errorf("the log does not say where the sockets went:\n%s", out)
	}
}
