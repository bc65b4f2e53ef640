package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// edgeRouteYAML is an edge-terminated route served with the default
// certificate: its traffic crosses the unix hop socket.
func edgeRouteYAML(name, host, service string) string {
	return routeYAML(name, host, "", service) + "  tls:\n    termination: edge\n"
}

// getTLS fetches https://host/ through the router's HTTPS port.
func (r *router) getTLS(host string) (string, error) {
	req, err := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/", r.https), nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: host}, DisableKeepAlives: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	body := readAll(resp)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
	}
	return body, nil
}

// healTraffic is steady traffic from several clients, each on a new
// connection per request (so every request goes through the listeners,
// and every TLS request through the unix hop), counting what fails.
type healTraffic struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	ok, fail atomic.Int64
	first    atomic.Value // the first failure, as a string
}

// startHealTraffic runs clients against host over HTTP and tlsHost over
// HTTPS until stop.
func (r *router) startHealTraffic(clients int, host, tlsHost string) *healTraffic {
	ctx, cancel := context.WithCancel(context.Background())
	h := &healTraffic{cancel: cancel}
	get := map[bool]func() (string, error){
		false: func() (string, error) {
			req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.http), nil)
			if err != nil {
				return "", err
			}
			req.Host = host
			resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
			if err != nil {
				return "", err
			}
			body := readAll(resp)
			if resp.StatusCode != http.StatusOK {
				return "", fmt.Errorf("status %d: %s", resp.StatusCode, body)
			}
			return body, nil
		},
		true: func() (string, error) { return r.getTLS(tlsHost) },
	}
	for c := range clients {
		tls := c%2 == 1
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for ctx.Err() == nil {
				if _, err := get[tls](); err != nil {
					h.fail.Add(1)
					h.first.CompareAndSwap(nil, fmt.Sprintf("tls=%v: %v", tls, err))
					continue
				}
				h.ok.Add(1)
			}
		}()
	}
	return h
}

// stop ends the traffic and returns how many requests succeeded and
// failed.
func (h *healTraffic) stop() (ok, failed int64) {
	h.cancel()
	h.wg.Wait()
	return h.ok.Load(), h.fail.Load()
}

// Deleting the run dir or one of HAProxy's sockets in it is noticed and
// healed without failing a request: steady traffic to an HTTP route and
// to an edge route (whose traffic crosses the unix hop socket) counts no
// failure from the deletion through the heal and after. The status
// reports the loss (and /readyz is not ready meanwhile), the sockets come
// back, and the admin socket serves the runtime path again.
func TestDeletedSocketsAreHealed(t *testing.T) {
	runDir := func(r *router) string { return r.runDir }
	inRunDir := func(name string) func(*router) string {
		return func(r *router) string { return filepath.Join(r.runDir, name) }
	}
	for _, tc := range []struct {
		name string
		// deletes are done one after the other, each once the one before
		// is healed; each returns the path it deletes.
		deletes []func(*router) string
		// replace puts, where each deleted path was, what answers no
		// connection: a "fifo", or a "dead" socket nobody listens on (a
		// master re-executing looks like it for a moment).
		replace string
	}{
		{"hop socket", []func(*router) string{inRunDir("fe_sni.sock")}, ""},
		{"admin socket", []func(*router) string{inRunDir("admin.sock")}, ""},
		{"master socket", []func(*router) string{inRunDir("master.sock")}, ""},
		{"run dir", []func(*router) string{runDir}, ""},
		// The backup hop, in the state dir, is healed the same way.
		{"backup hop socket", []func(*router) string{func(r *router) string { return filepath.Join(r.stateDir, "fe_sni.sock") }}, ""},
		// A second loss after a heal: the renamed sockets (and a worker
		// still on the first names) go too.
		{"hop socket then run dir", []func(*router) string{inRunDir("fe_sni.sock"), runDir}, ""},
		// A reload then goes by signal, as for a missing master socket:
		// only a missing one did, and every reload failed until the FIFO
		// was removed by hand.
		{"master socket replaced by a FIFO", []func(*router) string{inRunDir("master.sock")}, "fifo"},
		{"master socket replaced by a dead socket", []func(*router) string{inRunDir("master.sock")}, "dead"},
		{"admin socket replaced by a FIFO", []func(*router) string{inRunDir("admin.sock")}, "fifo"},
		// Another HAProxy master binds its socket there: a predecessor
		// still draining after a takeover, reloaded from outside (T39).
		// Its answers are not this master's, and its reloads fail.
		{"master socket taken by another master", []func(*router) string{inRunDir("master.sock")}, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter(t)
			one := startBackend(t, "one")
			w := publish.NewAtomicWriter(r.dir)
			routes := join(routeYAML("plain", "plain.e2e.test", "", "one"), edgeRouteYAML("tls", "tls.e2e.test", "one"))
			must(t, w.Publish(files(
				"router.yaml", r.routerConfig(""),
				"routes.yaml", routes,
				"endpoints.yaml", endpointsYAML("one", one),
			)))
			r.start("atomic")
			r.serves("plain.e2e.test", "/", "one")
			r.eventually(20*time.Second, "TLS route served", func() error { _, err := r.getTLS("tls.e2e.test"); return err })
			ours := testenv.ShowProc(t, r.runDir).Master.PID

			traffic := r.startHealTraffic(6, "plain.e2e.test", "tls.e2e.test")
			time.Sleep(300 * time.Millisecond) // traffic flows before the loss
			var gone []string
			for _, del := range tc.deletes {
				path := del(r)
				gone = append(gone, path)
				deleted := time.Now()
				must(t, os.RemoveAll(path))
				switch tc.replace {
				case "fifo":
					must(t, syscall.Mkfifo(path, 0o600))
				case "dead":
					ln, err := net.Listen("unix", path)
					must(t, err)
					ln.(*net.UnixListener).SetUnlinkOnClose(false)
					must(t, ln.Close())
				case "other":
					testutil.ServeMasterCLI(t, path, testutil.AnotherMaster(os.Getpid()))
				}
				r.reportsHeal(path, deleted)
				r.eventually(30*time.Second, "ready again with every socket back", func() error {
					for _, s := range []string{"master.sock", "admin.sock"} {
						if err := dialUnix(filepath.Join(r.runDir, s)); err != nil {
							return err
						}
					}
					if st := r.store.Get(); !st.Ready {
						return fmt.Errorf("not ready: %s", st.NotReadyReason)
					}
					if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid != ours {
						return fmt.Errorf("the master socket answers for pid %d, not %d", pid, ours)
					}
					return nil
				})
			}
			// The HAProxy worker the heal replaced finishes meanwhile.
			time.Sleep(time.Second)
			ok, failed := traffic.stop()
			if failed != 0 {
				t.Errorf("%d of %d requests failed from the deletion of %s through the heal; first: %v",
					failed, ok+failed, strings.Join(gone, " and "), traffic.first.Load())
			}
			t.Logf("%s deleted and healed: %d requests, %d failed", tc.name, ok+failed, failed)
			if ok == 0 {
				t.Fatal("no request succeeded")
			}

			if got := modeOf(t, r.runDir); got != 0o700 {
				t.Errorf("run dir mode = %v, want 0700", got)
			}
			// The lock holds again, also over a recreated run dir.
			if _, err := haproxy.LockRunDir(r.runDir); !errors.Is(err, haproxy.ErrRunDirInUse) {
				t.Errorf("lock on the healed run dir: %v, want ErrRunDirInUse", err)
			}
			// The admin socket serves the runtime path again: an endpoint
			// added is applied without a reload.
			two := startBackend(t, "two")
			reloads := r.reloads()
			must(t, w.Publish(files(
				"router.yaml", r.routerConfig(""),
				"routes.yaml", routes,
				"endpoints.yaml", endpointsYAML("one", one, two),
			)))
			r.eventually(20*time.Second, "second endpoint serves", func() error {
				got, err := r.getTLS("tls.e2e.test")
				if err == nil && got != "two" {
					err = fmt.Errorf("answered by %q", got)
				}
				return err
			})
			if got := r.reloads(); got != reloads {
				t.Errorf("adding an endpoint after the heal reloaded (%d -> %d)", reloads, got)
			}
		})
	}
}

// reportsHeal waits until the status history shows that path was found
// missing after since.
func (r *router) reportsHeal(path string, since time.Time) {
	r.t.Helper()
	want := "haproxy sockets missing or dead: " + path
	r.eventually(20*time.Second, "status reports "+path+" missing", func() error {
		for _, e := range r.store.Get().RecentErrors {
			if strings.HasPrefix(e.Message, want) && strings.HasSuffix(e.Message, "; healing") && !e.Time.Before(since) {
				return nil
			}
		}
		return fmt.Errorf("no %q since %v in the recent errors", want, since)
	})
}

// dialUnix connects to the unix socket at path and hangs up.
func dialUnix(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	must(t, err)
	return fi.Mode().Perm()
}

// readyz returns /readyz's status code and body.
func (r *router) readyz() (int, string, error) {
	resp, err := r.client.Get("http://" + r.metrics + "/readyz")
	if err != nil {
		return 0, "", err
	}
	return resp.StatusCode, strings.TrimSpace(readAll(resp)), nil
}

// While the run dir cannot be brought back (a file took its place),
// /readyz says why it is not ready, and HTTP keeps being served by the
// running HAProxy; once the way is clear, the heal completes.
func TestReadyzNotReadyWhileRunDirBroken(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", join(routeYAML("one", "one.e2e.test", "", "one"), edgeRouteYAML("tls", "tls.e2e.test", "one")),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")

	must(t, os.RemoveAll(r.runDir))
	must(t, os.WriteFile(r.runDir, []byte("in the way\n"), 0o600))
	want := "not ready: haproxy sockets missing or dead: " + r.runDir
	r.eventually(20*time.Second, "/readyz not ready", func() error {
		code, body, err := r.readyz()
		if err == nil && (code != http.StatusServiceUnavailable || body != want) {
			err = fmt.Errorf("/readyz = %d %q, want 503 %q", code, body, want)
		}
		return err
	})
	r.reportsError("heal run dir: ")
	r.keepsServing("one.e2e.test", "one", 5, "while the run dir is broken")

	must(t, os.Remove(r.runDir))
	r.eventually(30*time.Second, "/readyz ready again", func() error {
		code, body, err := r.readyz()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz = %d %q", code, body)
		}
		return err
	})
	r.eventually(20*time.Second, "TLS route served again", func() error { _, err := r.getTLS("tls.e2e.test"); return err })
}

// A master that reloads on its own (an operator's `reload` on the master
// CLI) binds its socket afresh, and haroute must not take that moment for
// a lost socket: healing it reloaded a second time, through the socket
// that was coming back, and recorded errors. The socket is also moved
// away for two housekeeping ticks and back, which a heal without a grace
// period always caught.
func TestMasterSocketGoneForAMomentIsNotHealed(t *testing.T) {
	r := newRouter(t)
	must(t, publish.NewAtomicWriter(r.dir).Publish(oneRoute(r, startBackend(t, "one"))))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")
	since := time.Now()
	reloads := r.reloads()

	master := filepath.Join(r.runDir, "master.sock")
	must(t, os.Rename(master, master+".away"))
	time.Sleep(2500 * time.Millisecond)
	must(t, os.Rename(master+".away", master))

	r.reloadThroughMaster()
	r.eventually(20*time.Second, "the operator's reload done", func() error {
		if got := r.reloads(); got != reloads+1 {
			return fmt.Errorf("master reloads %d, want %d", got, reloads+1)
		}
		return nil
	})
	// Past the grace period: a heal would have reloaded by now.
	time.Sleep(masterGrace + 2*time.Second)
	if got := r.reloads(); got != reloads+1 {
		t.Errorf("master reloads %d after one operator reload, want %d", got, reloads+1)
	}
	for _, e := range r.store.Get().RecentErrors {
		if !e.Time.Before(since) {
			t.Errorf("error recorded: %s", e.Message)
		}
	}
	r.serves("one.e2e.test", "/", "one")
}

// masterGrace is the daemon's masterLossGrace.
const masterGrace = 5 * time.Second

// reloadThroughMaster reloads HAProxy as an operator does, with `reload`
// on the master CLI, behind haroute's back.
func (r *router) reloadThroughMaster() {
	r.t.Helper()
	c, err := net.DialTimeout("unix", filepath.Join(r.runDir, "master.sock"), time.Second)
	must(r.t, err)
	defer c.Close()
	_, err = c.Write([]byte("reload\n"))
	must(r.t, err)
}
