package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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

// HAProxy killed: what haroute does when its HAProxy dies under it.

// killable starts a router serving one.e2e.test, for a test that kills
// its HAProxy; edit, when set, changes the first generation.
func killable(t *testing.T, edit func(r *router, gen map[string][]byte)) (*router, *publish.AtomicWriter, map[string][]byte) {
	t.Helper()
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	gen := oneRoute(r, one)
	if edit != nil {
		edit(r, gen)
	}
	must(t, w.Publish(gen))
	r.start("atomic")
	return r, w, gen
}

// haproxyPID waits until HAProxy serves and returns its master's pid,
// which leads its process group.
func (r *router) haproxyPID() int {
	r.t.Helper()
	pid := 0
	r.eventually(30*time.Second, "haproxy running", func() error {
		st := r.store.Get()
		if !st.Ready || st.HAProxy.PID == 0 {
			return fmt.Errorf("not ready")
		}
		pid = st.HAProxy.PID
		return nil
	})
	return pid
}

// restartedFrom reports whether a HAProxy other than pid serves.
func (r *router) restartedFrom(pid int) bool {
	st := r.store.Get()
	return st.Ready && st.HAProxy.PID != 0 && st.HAProxy.PID != pid
}

// killHAProxy kills HAProxy's master with SIGKILL and waits until
// another serves.
func (r *router) killHAProxy(t *testing.T) {
	t.Helper()
	pid := r.haproxyPID()
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	r.eventually(30*time.Second, "haproxy restarted", func() error {
		if !r.restartedFrom(pid) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
}

// HAProxy's master killed with SIGKILL comes back and serves the current
// state.
func TestHAProxyKilledComesBack(t *testing.T) {
	r, _, _ := killable(t, nil)
	r.serves("one.e2e.test", "/", "one")
	r.killHAProxy(t)
	r.serves("one.e2e.test", "/", "one")
	// Seen in status and metrics, not only in the log: a restart that
	// succeeds fast left no trace for a dashboard.
	st := r.store.Get()
	if len(st.RecentErrors) == 0 || !strings.Contains(st.RecentErrors[len(st.RecentErrors)-1].Message, "haproxy exited") {
		t.Errorf("recent errors %+v, want the exit", st.RecentErrors)
	}
	if st.LastError != nil {
		t.Errorf("last error %q after HAProxy came back", st.LastError.Message)
	}
	body, err := r.scrapeMetrics()
	must(t, err)
	if !strings.Contains(body, "haroute_haproxy_exits_total 1\n") {
		t.Errorf("metrics lack haroute_haproxy_exits_total 1")
	}
}

// HAProxy killed now and then, after serving a while each time, comes
// back at once each time: it is not a crash loop. Counted as one, the
// second kill waited half a second and the fourth let the listening
// sockets go, refusing every connection for 2 s, then 4, 8, 16 and 30.
func TestHAProxyKilledNowAndThenComesBackAtOnce(t *testing.T) {
	r, _, _ := killable(t, nil)
	for range 2 {
		r.serves("one.e2e.test", "/", "one")
		time.Sleep(6 * time.Second) // longer than a crash loop's HAProxy lives
		r.killHAProxy(t)
	}
	r.serves("one.e2e.test", "/", "one")
	var exits []string
	for _, e := range r.store.Get().RecentErrors {
		if strings.HasPrefix(e.Message, "haproxy exited") {
			exits = append(exits, e.Message)
		}
	}
	if len(exits) != 2 {
		t.Fatalf("recent errors show %d exits, want 2: %q", len(exits), exits)
	}
	for _, msg := range exits {
		if !strings.Contains(msg, "(exit 1 in a row)") {
			t.Errorf("restart counted towards a crash loop: %q", msg)
		}
	}
}

// HAProxy killed outright, master and worker at once (the OOM killer, a
// kill -9 of its group): its ports stay open on the listening sockets
// haroute keeps, so every connection made while it is down waits and is
// answered by the next HAProxy. None is refused.
func TestKilledHAProxyRefusesNoConnection(t *testing.T) {
	r, _, _ := killable(t, nil)
	r.serves("one.e2e.test", "/", "one")
	pid := r.haproxyPID()
	must(t, syscall.Kill(-pid, syscall.SIGKILL))

	// Fresh connections, one request each, from the kill until the next
	// HAProxy is ready.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var wg sync.WaitGroup
	var answered atomic.Int64
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := testenv.Get(client, r.http, "one.e2e.test", "/")
				if err == nil && got != "one" {
					err = fmt.Errorf("answered by %q", got)
				}
				if err != nil {
					errs <- err
					return
				}
				answered.Add(1)
				if r.restartedFrom(pid) {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a request made while haproxy was down: %v", err)
	}
	t.Logf("%d requests made while haproxy was down or coming back, all answered", answered.Load())
}

// An HAProxy that keeps dying is restarted with a growing wait. Across
// the first waits (at most a second) the ports stay open on the kept
// sockets; once HAProxy is not to be back that soon, they refuse
// connections, so that clients and load balancers fail over instead of
// waiting for it (they hung for up to 30 s).
func TestCrashLoopRefusesRatherThanQueues(t *testing.T) {
	r, _, _ := killable(t, nil)
	r.serves("one.e2e.test", "/", "one")
	addr := fmt.Sprintf("127.0.0.1:%d", r.http)
	for kill := 1; kill <= 4; kill++ {
		pid := r.haproxyPID()
		must(t, syscall.Kill(-pid, syscall.SIGKILL))
		if kill < 4 {
			r.eventually(30*time.Second, "haproxy restarted", func() error {
				if !r.restartedFrom(pid) {
					return fmt.Errorf("not yet")
				}
				return nil
			})
			continue
		}
		// The fourth restart in a row waits 2 s: meanwhile the port
		// refuses, it does not accept and hang.
		r.eventually(1500*time.Millisecond, "the port refuses while haproxy is down", func() error {
			c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
			if err == nil {
				c.Close()
				return fmt.Errorf("a connection was accepted with no haproxy to answer it")
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return err
			}
			return nil
		})
	}
	r.serves("one.e2e.test", "/", "one")
}

// Listeners on a specific IPv6 address pass from one HAProxy to the next
// like IPv4 ones: at a reload, and to the HAProxy started after a kill.
// HAProxy did not match them (Linux makes such a socket IPv6-only, and
// the bind line did not say so): every reload refused connections while
// the new process bound afresh, and the restart after a kill failed.
func TestIPv6ListenersPassOnAtReloadAndKill(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		testutil.Skip(t, "no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	r, w, gen := killable(t, func(r *router, gen map[string][]byte) {
		gen["router.yaml"] = []byte(strings.Replace(r.routerConfig(""), "address: 127.0.0.1", `address: "::1"`, 1))
	})
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(host string) (string, error) {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://[::1]:%d/", r.http), nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		return string(b), err
	}
	r.eventually(20*time.Second, "served over IPv6", func() error { _, err := get("one.e2e.test"); return err })

	// Fresh connections across a reload: none may fail.
	stop := make(chan struct{})
	var sent atomic.Int64
	failed := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if got, err := get("one.e2e.test"); err != nil || got != "one" {
				select {
				case failed <- fmt.Errorf("request %d: %q, %v", sent.Load()+1, got, err):
				default:
				}
			}
			sent.Add(1)
		}
	}()
	before := r.reloads()
	gen["two.yaml"] = []byte(reloadingRouteYAML("two", "two.e2e.test", "one"))
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "the reload", func() error {
		if r.reloads() == before {
			return fmt.Errorf("no reload yet")
		}
		_, err := get("two.e2e.test")
		return err
	})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	select {
	case err := <-failed:
		t.Fatalf("over IPv6, across a reload: %v", err)
	default:
	}

	// HAProxy killed: the connections made from then on until the next
	// one serves are all answered (those in flight at the kill are cut).
	pid := r.haproxyPID()
	must(t, syscall.Kill(-pid, syscall.SIGKILL))
	down := 0
	for {
		if got, err := get("one.e2e.test"); err != nil || got != "one" {
			t.Fatalf("over IPv6, request %d after a kill of haproxy: %q, %v", down+1, got, err)
		}
		down++
		if r.restartedFrom(pid) {
			break
		}
	}
	t.Logf("over IPv6: %d requests across a reload and %d after a kill, none failed", sent.Load(), down)
}

// An exit of HAProxy is an error until HAProxy runs again, also while the
// directory has an error of its own (a rejected route): the exit stood as
// the last error for as long as the directory was not clean.
func TestHAProxyExitResolvesWhileInputErrorsStand(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	must(t, publish.NewAtomicWriter(r.dir).Publish(files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"bad.yaml", routeYAML("bad", "bad.e2e.test:8080", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one))))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.breaksHAProxy = true
	r.killHAProxy(t)
	r.serves("a.e2e.test", "/", "one")
	r.eventually(10*time.Second, "the exit resolved", func() error {
		st := r.store.Get()
		if st.LastError != nil && strings.Contains(st.LastError.Message, "haproxy exited") {
			return fmt.Errorf("last error %q", st.LastError.Message)
		}
		for _, e := range st.RecentErrors {
			if strings.Contains(e.Message, "haproxy exited") && e.Standing() {
				return fmt.Errorf("standing: %s", e.Message)
			}
		}
		return nil
	})
	if st := r.store.Get(); st.LastError == nil || !strings.Contains(st.LastError.Message, "bad.yaml") {
		t.Errorf("last error %+v, want the directory's problem, which still stands", st.LastError)
	}
}
