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

	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

func snapshotMode(m string) snapshot.Mode {
	if m == "" {
		return snapshot.ModeAuto
	}
	return snapshot.Mode(m)
}

// A route added is served, a route removed stops being served, and an
// endpoint change is followed — through a directory published the way
// kubelet publishes a ConfigMap volume.
func TestRouteLifecycleAtomicWriter(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")

	// Add a route (a reload) and point it at its own backend.
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("one", "one.e2e.test", "", "one"), routeYAML("two", "two.e2e.test", "", "two")),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
	)))
	r.serves("two.e2e.test", "/", "two")
	r.serves("one.e2e.test", "/", "one")

	// Endpoint change: route one now goes to backend two.
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("one", "one.e2e.test", "", "one"), routeYAML("two", "two.e2e.test", "", "two")),
		"endpoints.yaml", join(endpointsYAML("one", two), endpointsYAML("two", two)),
	)))
	r.serves("one.e2e.test", "/", "two")

	// Remove route two: it stops being served.
	must(t, w.Publish(oneRoute(r, two)))
	r.eventually(20*time.Second, "two.e2e.test no longer served", func() error {
		if got, err := r.get("two.e2e.test", "/"); err == nil {
			return fmt.Errorf("still served by %q", got)
		}
		return nil
	})
	r.serves("one.e2e.test", "/", "two")
}

// A generation with a broken file leaves the routes that were served in
// place, and the error is visible in the status.
func TestBadGenerationKeepsServing(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	good := oneRoute(r, one)
	must(t, w.Publish(good))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")

	bad := files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: one, namespace: e2e\nspec: [",
		"endpoints.yaml", endpointsYAML("one", one),
	)
	must(t, w.Publish(bad))
	r.reportsError("routes.yaml")
	r.keepsServing("one.e2e.test", "one", 20, "after a bad generation")
	// A broken RouterConfig (port 0) keeps the last good one: still served.
	must(t, w.Publish(files(
		"router.yaml", strings.Replace(r.routerConfig(""), fmt.Sprintf("http: %d", r.http), "http: 0", 1),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.reportsError("router.yaml")
	r.keepsServing("one.e2e.test", "one", 20, "after a bad RouterConfig")
}

// git-sync publishes by renaming a temporary link over the configured one.
func TestGitSyncLink(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	g, _ := serveViaGitSync(t, r, files(
		"router.yaml", r.routerConfig(""),
		"routes/one.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	), "one")
	must(t, g.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes/one.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"routes/two.yaml", routeYAML("two", "two.e2e.test", "/api", "two"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("two", two)),
	)))
	r.serves("two.e2e.test", "/api/x", "two")
	r.serves("one.e2e.test", "/", "one")
}

// HAProxy killed with SIGKILL comes back and serves the current state.
func TestHAProxyKilledComesBack(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	pid := r.store.Get().HAProxy.PID
	if pid == 0 {
		t.Fatal("status has no HAProxy pid")
	}
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	r.eventually(30*time.Second, "haproxy restarted", func() error {
		st := r.store.Get()
		if st.HAProxy.PID == pid || st.HAProxy.PID == 0 || !st.Ready {
			return fmt.Errorf("pid %d ready=%v", st.HAProxy.PID, st.Ready)
		}
		return nil
	})
	r.serves("one.e2e.test", "/", "one")
}

// HAProxy killed outright, master and worker at once (the OOM killer, a
// kill -9 of its group): its ports stay open on the listening sockets
// haroute keeps, so every connection made while it is down waits and is
// answered by the next HAProxy. None is refused.
func TestKilledHAProxyRefusesNoConnection(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	pid := r.store.Get().HAProxy.PID
	if pid == 0 {
		t.Fatal("status has no HAProxy pid")
	}
	// The master leads its own process group.
	must(t, syscall.Kill(-pid, syscall.SIGKILL))

	// Fresh connections, one request each, from the kill until the next
	// HAProxy is ready.
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	back := func() bool {
		st := r.store.Get()
		return st.Ready && st.HAProxy.PID != 0 && st.HAProxy.PID != pid
	}
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
				if back() {
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
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(oneRoute(r, one)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	addr := fmt.Sprintf("127.0.0.1:%d", r.http)
	for kill := 1; kill <= 4; kill++ {
		pid := 0
		r.eventually(30*time.Second, "haproxy running", func() error {
			st := r.store.Get()
			if !st.Ready || st.HAProxy.PID == 0 {
				return fmt.Errorf("not ready")
			}
			pid = st.HAProxy.PID
			return nil
		})
		must(t, syscall.Kill(-pid, syscall.SIGKILL))
		if kill < 4 {
			r.eventually(30*time.Second, "haproxy restarted", func() error {
				if st := r.store.Get(); !st.Ready || st.HAProxy.PID == pid {
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
// the bind line did not say so): the restart after a kill failed to bind,
// and the connections queued meanwhile were reset.
func TestIPv6ListenersPassOnAtReloadAndKill(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		testutil.Skip(t, "no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	r := newRouter(t)
	r.breaksHAProxy = true
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	gen := oneRoute(r, one)
	gen["router.yaml"] = []byte(strings.Replace(r.routerConfig(""), "address: 127.0.0.1", `address: "::1"`, 1))
	must(t, w.Publish(gen))
	r.start("atomic")

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
	pid := r.store.Get().HAProxy.PID
	must(t, syscall.Kill(-pid, syscall.SIGKILL))
	down := 0
	for {
		if got, err := get("one.e2e.test"); err != nil || got != "one" {
			t.Fatalf("over IPv6, request %d after a kill of haproxy: %q, %v", down+1, got, err)
		}
		down++
		if st := r.store.Get(); st.Ready && st.HAProxy.PID != pid && st.HAProxy.PID != 0 {
			break
		}
	}
	t.Logf("over IPv6: %d requests across a reload and %d after a kill, none failed", sent.Load(), down)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
