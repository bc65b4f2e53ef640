package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The runtime path commits the live files after its commands (the daemon's
// stageLive): once a change is applied, haproxy.cfg names the servers
// runtime built, no temporary file is left, and HAProxy restarted from
// disk serves exactly them.
func TestRuntimeChangeLandsOnDiskForRestart(t *testing.T) {
	r := newRouter(t)
	r.breaksHAProxy = true
	one, two := startBackend(t, "one"), startBackend(t, "two")
	w := serveWeb(t, r, "", one)
	before := r.reloads()
	must(t, w.Publish(scaleFiles(r, "", []*backend{two})))
	r.eventually(30*time.Second, "only two answers", func() error {
		for range 10 {
			if got, err := r.get("web.e2e.test", "/"); err != nil || got != "two" {
				return fmt.Errorf("answered by %q (%v)", got, err)
			}
		}
		return nil
	})
	if n := r.reloads() - before; n != 0 {
		t.Fatalf("the endpoint change caused %d reloads, want 0 (runtime path)", n)
	}
	live := filepath.Join(r.stateDir, "live")
	cfg := filepath.Join(live, "haproxy.cfg")
	server := func(b *backend) string { return fmt.Sprintf("127.0.0.1:%d", b.Port) }
	r.eventually(10*time.Second, "haproxy.cfg holds the runtime state", func() error {
		data, err := os.ReadFile(cfg)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), server(two)) || strings.Contains(string(data), server(one)) {
			return fmt.Errorf("haproxy.cfg does not name exactly the new server %s", server(two))
		}
		temps, _ := filepath.Glob(filepath.Join(live, ".*.tmp-*"))
		if len(temps) > 0 {
			return fmt.Errorf("staged files left: %v", temps)
		}
		return nil
	})

	pid := r.store.Get().HAProxy.PID
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	r.eventually(30*time.Second, "haproxy restarted from disk", func() error {
		st := r.store.Get()
		if st.HAProxy.PID == pid || st.HAProxy.PID == 0 || !st.Ready {
			return fmt.Errorf("pid %d ready=%v", st.HAProxy.PID, st.Ready)
		}
		return nil
	})
	r.eventually(30*time.Second, "the restarted haproxy serves the runtime-built server", func() error {
		for range 10 {
			if got, err := r.get("web.e2e.test", "/"); err != nil || got != "two" {
				return fmt.Errorf("answered by %q (%v)", got, err)
			}
		}
		return nil
	})
}
