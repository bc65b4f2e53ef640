package e2e

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// split sends n sequential requests to host and counts which backend
// answered each.
func (r *router) split(host string, n int) map[string]int {
	r.t.Helper()
	counts := map[string]int{}
	for range n {
		got, err := r.get(host, "/")
		must(r.t, err)
		counts[got]++
	}
	return counts
}

// withinShare fails unless every backend's share of n requests is within
// ±5 percentage points of its expected share.
func withinShare(t *testing.T, what string, counts map[string]int, n int, want map[string]float64) {
	t.Helper()
	t.Logf("%s: %v of %d requests", what, counts, n)
	for name, share := range want {
		got := float64(counts[name]) / float64(n)
		if math.Abs(got-share) > 0.05 {
			t.Errorf("%s: %s got %.1f%% of %d requests, want %.1f%% ± 5 points (split %v)", what, name, 100*got, n, 100*share, counts)
		}
	}
}

// An A/B route without a balance annotation keeps its weights: 90/5/5
// over 1000 sequential requests (OpenShift balances such routes with
// roundrobin; leastconn split them 67/67/66, as it sees no connections
// to compare).
func TestABWeightsHonouredByDefault(t *testing.T) {
	r := newRouter(t)
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	route := `apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: ab
  namespace: e2e
spec:
  host: ab.e2e.test
  to:
    kind: Service
    name: a
    weight: 90
  alternateBackends:
    - kind: Service
      name: b
      weight: 5
    - kind: Service
      name: c
      weight: 5
`
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", route,
		"endpoints.yaml", join(endpointsYAML("a", a), endpointsYAML("b", b), endpointsYAML("c", c)),
	)))
	r.start("atomic")
	r.serves("ab.e2e.test", "/", "a")
	const n = 1000
	withinShare(t, "90/5/5", r.split("ab.e2e.test", n), n, map[string]float64{"a": 0.90, "b": 0.05, "c": 0.05})
}

// Servers added at runtime, and a server re-added while it still holds
// long-lived connections, each receive their share of new requests
// without a reload. (Under leastconn the re-added server, busy with its
// old connections, got none, and the new one took nearly everything.)
func TestAddedAndReaddedEndpointsReceiveRequests(t *testing.T) {
	r := newRouter(t)
	one, two, three := startBackend(t, "one"), startBackend(t, "two"), startBackend(t, "three")
	w := serveWeb(t, r, "", one, two)
	before := r.reloads()

	// Long-lived connections on both servers.
	onServer := map[string]int{}
	for i := 0; i < 8 && (onServer["one"] < 2 || onServer["two"] < 2); i++ {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/stream", r.http), nil)
		req.Host = "web.e2e.test"
		resp, err := (&http.Client{}).Do(req)
		must(t, err)
		defer resp.Body.Close()
		lines := bufio.NewScanner(resp.Body)
		if !lines.Scan() {
			t.Fatalf("stream %d: no first line: %v", i, lines.Err())
		}
		name, _, _ := strings.Cut(lines.Text(), " ")
		onServer[name]++
	}
	if onServer["one"] < 2 || onServer["two"] < 2 {
		t.Fatalf("long-lived connections per server: %v, want at least 2 each", onServer)
	}

	// two leaves (drained: its streams stay open), then comes back with a
	// new endpoint, three.
	must(t, w.Publish(scaleFiles(r, "", []*backend{one})))
	r.eventually(20*time.Second, "two drained", func() error {
		for range 10 {
			if got, err := r.get("web.e2e.test", "/"); err != nil || got != "one" {
				return fmt.Errorf("answered by %q, %v", got, err)
			}
		}
		return nil
	})
	must(t, w.Publish(scaleFiles(r, "", []*backend{one, two, three})))
	r.serves("web.e2e.test", "/", "three")
	const n = 300
	withinShare(t, "re-added two, added three", r.split("web.e2e.test", n), n,
		map[string]float64{"one": 1.0 / 3, "two": 1.0 / 3, "three": 1.0 / 3})
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("endpoint changes caused %d reloads, want 0", got)
	}
}

// Servers added at runtime to a backend that balances on a consistent-hash
// tree (source, random) all get traffic: HAProxy 2.6 placed each such
// server by an id it had not given it yet, the same for all
// (render.ServerID), and of four added to an empty `balance source`
// backend only the first and the last got clients (51/0/0/49 of 100
// client addresses); random left servers out the same way.
func TestHashBalancedServersAddedAtRuntimeAllServe(t *testing.T) {
	for _, balance := range []string{"source", "random"} {
		t.Run(balance, func(t *testing.T) {
			r := newRouter(t)
			bs := []*backend{startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c"), startBackend(t, "d")}
			w := publish.NewAtomicWriter(r.dir)
			route := annotated(routeYAML("h", "h.e2e.test", "", "h"), "haproxy.router.openshift.io/balance", balance)
			gen := files("router.yaml", r.routerConfig(""), "route.yaml", route, "endpoints.yaml", endpointsYAML("h"))
			must(t, w.Publish(gen))
			r.start("atomic")
			r.eventually(20*time.Second, "h answers 503 with no endpoints", func() error {
				if _, err := r.get("h.e2e.test", "/"); err == nil || !strings.Contains(err.Error(), "status 503") {
					return fmt.Errorf("answered %v", err)
				}
				return nil
			})
			before := r.reloads()
			gen["endpoints.yaml"] = []byte(endpointsYAML("h", bs...))
			must(t, w.Publish(gen))
			r.eventually(20*time.Second, "h served", func() error {
				_, err := r.get("h.e2e.test", "/")
				return err
			})
			if got := r.reloads() - before; got != 0 {
				t.Fatalf("adding the endpoints took %d reloads, want 0 (added at runtime)", got)
			}
			// source: one request from each of 60 client addresses;
			// random: 200 from one. Spread on the tree, each server gets
			// some (missing by chance: (3/4)^60 ≈ 3e-8 per server).
			counts := map[string]int{}
			if balance == "random" {
				counts = r.split("h.e2e.test", 200)
			} else {
				for i := range 60 {
					src := &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(i+2))}
					cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
						DialContext: (&net.Dialer{LocalAddr: src}).DialContext}}
					got, err := testenv.Get(cl, r.http, "h.e2e.test", "/")
					must(t, err)
					counts[got]++
				}
			}
			t.Logf("requests per server: %v", counts)
			for _, b := range bs {
				if counts[b.Name] == 0 {
					t.Errorf("server %s got none (%v): runtime-added servers share the tree's places", b.Name, counts)
				}
			}
		})
	}
}
