package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"time"

	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// checkEverySecond makes a failed first check happen within the test.
const checkEverySecond = "    healthCheckInterval: 1s\n"

// lateBackend is a backend whose port is known before anything listens
// on it: endpoints can name it while it is still down.
func lateBackend(t *testing.T, name string) *backend {
	return &backend{Name: name, Port: testutil.FreePort(t)}
}

// listen starts b's server (answering with its name) until the test ends.
func listen(t *testing.T, b *backend) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port)))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, b.Name)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// serverStates reads `show servers state be` and returns each server's
// operational state (0 down, 2 up) by the port it points at.
func serverStates(t *testing.T, r *router, be string) map[int]int {
	t.Helper()
	out := readShowServers(t, r, be)
	states := map[int]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		// be_id be_name srv_id srv_name srv_addr srv_op_state … srv_port (18th)
		if len(f) < 19 || strings.HasPrefix(line, "#") {
			continue
		}
		op, _ := strconv.Atoi(f[5])
		port, _ := strconv.Atoi(f[18])
		states[port] = op
	}
	return states
}

// waitServerState waits until the server of be on port has op state want.
func (r *router) waitServerState(t *testing.T, be string, port, want int) {
	t.Helper()
	r.eventually(20*time.Second, fmt.Sprintf("%s server on port %d in state %d", be, port, want), func() error {
		if got, ok := serverStates(t, r, be)[port]; !ok || got != want {
			return fmt.Errorf("servers: %s", readShowServers(t, r, be))
		}
		return nil
	})
}

const (
	opDown = 0
	opUp   = 2
)

// A single-endpoint route whose backend is down when the router starts
// serves once the backend comes up: its server sends no checks and is
// considered UP (OpenShift's rule), rather than kept DOWN by a failed
// first check.
func TestSingleEndpointBackendStartedAfterRouter(t *testing.T) {
	r := newRouter(t)
	one := lateBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(checkEverySecond),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.start("atomic")
	r.waitServerState(t, "be_http:e2e:one", one.Port, opUp)
	listen(t, one)
	r.serves("one.e2e.test", "/", "one")
}

// A route that shrinks from two endpoints to one while both are DOWN
// (checked, failed) keeps no DOWN server behind: the remaining one stops
// being checked and is UP, so it serves as soon as its backend does. This
// is the runtime path (DisableHealth), where a failed check has certainly
// happened before checks are turned off.
func TestShrunkToOneEndpointComesUp(t *testing.T) {
	r := newRouter(t)
	one, two := lateBackend(t, "one"), lateBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	gen := func(bs ...*backend) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig(checkEverySecond),
			"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
			"endpoints.yaml", endpointsYAML("one", bs...),
		)
	}
	must(t, w.Publish(gen(one, two)))
	r.start("atomic")
	const be = "be_http:e2e:one"
	r.waitServerState(t, be, one.Port, opDown)
	r.waitServerState(t, be, two.Port, opDown)
	reloads := r.reloads()
	must(t, w.Publish(gen(one)))
	r.waitServerState(t, be, one.Port, opUp)
	if got := r.reloads(); got != reloads {
		t.Fatalf("shrinking to one endpoint reloaded (%d -> %d reloads), want a runtime change", reloads, got)
	}
	listen(t, one)
	r.serves("one.e2e.test", "/", "one")
}

// With two endpoints every server is checked: one whose backend is down
// at start is DOWN and takes no traffic, and comes UP once its backend
// starts.
func TestCheckedServerDownAtStartComesUp(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), lateBackend(t, "two")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(checkEverySecond),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one, two),
	)))
	r.start("atomic")
	const be = "be_http:e2e:one"
	r.waitServerState(t, be, two.Port, opDown)
	r.keepsServing("one.e2e.test", "one", 10, "the DOWN server takes no traffic")
	// `haroute status` shows what HAProxy says of the route's servers.
	r.statusServers("e2e/one", status.Servers{Up: 1, Down: 1}, "1 up, 1 down")
	listen(t, two)
	r.waitServerState(t, be, two.Port, opUp)
	r.serves("one.e2e.test", "/", "two")
	r.statusServers("e2e/one", status.Servers{Up: 2}, "every route has a server up or unchecked")
}

// statusServers waits until the daemon's /status, as `haroute status`
// fetches it, gives route key the servers want and its text shows text.
func (r *router) statusServers(key string, want status.Servers, text string) {
	r.t.Helper()
	r.eventually(20*time.Second, fmt.Sprintf("status of %s's servers", key), func() error {
		st, err := status.Fetch(context.Background(), r.metrics)
		if err != nil {
			return err
		}
		var b strings.Builder
		st.Format(&b)
		for _, rt := range st.Routes {
			if rt.Key != key {
				continue
			}
			if rt.Servers == nil || *rt.Servers != want || !strings.Contains(b.String(), text) {
				return fmt.Errorf("servers %+v (error %q), want %+v:\n%s", rt.Servers, st.ServersError, want, b.String())
			}
			return nil
		}
		return fmt.Errorf("no route %s in status", key)
	})
}

// A route whose only service has weight 0 answers 503, and `haroute
// status` names it so: its server, not health-checked, read as one that
// might answer (T47).
func TestStatusNamesARouteOfWeightZero(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one")+"---\n"+
			strings.Replace(routeYAML("zero", "zero.e2e.test", "", "one"), "    name: one\n", "    name: one\n    weight: 0\n", 1),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	if body, err := r.get("zero.e2e.test", "/"); err == nil {
		t.Fatalf("the route of weight 0 answered %q", body)
	}
	r.statusServers("e2e/zero", status.Servers{Maint: 1}, "1 of 2 routes have no server up or unchecked (503; a passthrough route closes the connection): e2e/zero")
}
