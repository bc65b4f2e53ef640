package e2e

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/test/publish"
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

// Deleting the run dir or one of HAProxy's sockets in it is noticed and
// healed: the status reports it (and /readyz is not ready meanwhile), the
// sockets come back, and the TLS route, which crosses the hop socket,
// answers again.
func TestDeletedSocketsAreHealed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(runDir string) string // returns the path deleted
	}{
		{"hop socket", func(d string) string { return filepath.Join(d, "fe_sni.sock") }},
		{"admin socket", func(d string) string { return filepath.Join(d, "admin.sock") }},
		{"master socket", func(d string) string { return filepath.Join(d, "master.sock") }},
		{"run dir", func(d string) string { return d }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter(t)
			one := startBackend(t, "one")
			w := publish.NewAtomicWriter(r.dir)
			must(t, w.Publish(files(
				"router.yaml", r.routerConfig(""),
				"routes.yaml", edgeRouteYAML("tls", "tls.e2e.test", "one"),
				"endpoints.yaml", endpointsYAML("one", one),
			)))
			r.start("atomic")
			r.eventually(20*time.Second, "TLS route served", func() error { _, err := r.getTLS("tls.e2e.test"); return err })

			gone := tc.delete(r.runDir)
			must(t, os.RemoveAll(gone))
			r.reportsError("haproxy sockets missing or dead: " + gone)
			r.eventually(30*time.Second, "TLS route served again", func() error {
				got, err := r.getTLS("tls.e2e.test")
				if err == nil && got != "one" {
					err = fmt.Errorf("answered by %q", got)
				}
				return err
			})
			r.eventually(30*time.Second, "ready again with every socket back", func() error {
				for _, s := range []string{"master.sock", "admin.sock", "fe_sni.sock"} {
					if _, err := os.Stat(filepath.Join(r.runDir, s)); err != nil {
						return err
					}
				}
				if st := r.store.Get(); !st.Ready {
					return fmt.Errorf("not ready: %s", st.NotReadyReason)
				}
				return nil
			})
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
				"routes.yaml", edgeRouteYAML("tls", "tls.e2e.test", "one"),
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
