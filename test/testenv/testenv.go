// Package testenv holds what the end-to-end tests and the benchmark harness
// share: named backends on 127.0.0.1, a daemon running in the test process,
// and reading HAProxy's master CLI the way an operator would.
package testenv

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/testutil"
)

// Backend is an HTTP server on 127.0.0.1 that answers every request with
// its name, and on /stream with one line per tick until the client leaves:
// the long-lived connection that keeps old HAProxy workers alive.
type Backend struct {
	Name string
	Port int

	mu   sync.Mutex
	hits int
}

// Hits counts the requests the backend has answered.
func (b *Backend) Hits() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits
}

// StartBackend starts a backend that streams a line every streamEvery on
// /stream; it stops when the test ends.
func StartBackend(t testing.TB, name string, streamEvery time.Duration) *Backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &Backend{Name: name, Port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.hits++
		b.mu.Unlock()
		if r.URL.Path != "/stream" {
			fmt.Fprint(w, name)
			return
		}
		fl := w.(http.Flusher)
		tick := time.NewTicker(streamEvery)
		defer tick.Stop()
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "%s %d\n", name, i); err != nil {
				return
			}
			fl.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

// ShowProc asks the master CLI in runDir for `show proc`. While a reload
// re-executes the master its socket refuses connections for a moment, so
// this retries for up to 10 s.
func ShowProc(t testing.TB, runDir string) haproxy.ProcInfo {
	t.Helper()
	master := haproxy.NewMaster(filepath.Join(runDir, "master.sock"))
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, e := master.ShowProc(ctx)
		cancel()
		if e == nil {
			return info
		}
		err = e
	}
	t.Fatalf("show proc: %v", err)
	return haproxy.ProcInfo{}
}

// RouterConfig is a RouterConfig binding 127.0.0.1 on the given ports with
// a 1 s reload interval; extra is appended as is (more tuningOptions lines,
// or further spec fields).
func RouterConfig(http, https, stats int, extra string) string {
	return fmt.Sprintf(`apiVersion: haroute.io/v1alpha1
kind: RouterConfig
metadata:
  name: router
spec:
  bindOptions:
    address: 127.0.0.1
    ports:
      http: %d
      https: %d
      stats: %d
  tuningOptions:
    reloadInterval: 1s
%s`, http, https, stats, extra)
}

// RunDir is a fresh directory for HAProxy's sockets, removed when the test
// ends. It lives directly under the system temp dir: t.TempDir() paths can
// exceed the 107 bytes a unix socket path may have.
func RunDir(t testing.TB) string {
	t.Helper()
	return testutil.ShortTempDir(t)
}

// StartDaemon runs a daemon built from opts in this process until the test
// ends, and returns once opts.Status (required) says ready. It fails at
// once if Run returns before that (HAProxy refused to start, say), with
// Run's error. The daemon runs the HAProxy testutil.HAProxy finds, unless
// opts names one.
//
// It returns a function that stops the daemon before the test ends (for
// restart tests); calling it is optional. A readyWithin of 0 does not
// wait at all.
func StartDaemon(t testing.TB, opts daemon.Options, readyWithin time.Duration) (stop func()) {
	t.Helper()
	if opts.HAProxy == "" {
		opts.HAProxy = testutil.HAProxy(t)
	}
	d, err := daemon.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("daemon stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("daemon did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	if readyWithin == 0 {
		return stop // the caller waits for what it expects
	}
	deadline := time.Now().Add(readyWithin)
	for {
		st := opts.Status.Get()
		if st.Ready {
			return stop
		}
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("daemon stopped before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not ready within %v: %s (last error: %v)", readyWithin, st.NotReadyReason, st.LastError)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Get fetches http://127.0.0.1:port/path with the given Host through the
// router and returns the body (the demo backends answer with their name);
// any status but 200 is an error carrying the body.
func Get(client *http.Client, port int, host, path string) (string, error) {
	req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
