package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/test/publish"
)

// statsGet asks the stats port for path, with basic auth when user is set,
// and returns the status code and body.
func (r *router) statsGet(path, user, password string) (int, string, error) {
	req, err := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", r.stats, path), nil)
	if err != nil {
		return 0, "", err
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// statsAnswers waits until path on the stats port answers with code.
func (r *router) statsAnswers(path, user, password string, code int) string {
	r.t.Helper()
	var body string
	r.eventually(20*time.Second, fmt.Sprintf("%s answers %d", path, code), func() error {
		got, b, err := r.statsGet(path, user, password)
		if err != nil {
			return err
		}
		if got != code {
			return fmt.Errorf("status %d", got)
		}
		body = b
		return nil
	})
	return body
}

// The /stats page lists every backend and endpoint address, /metrics
// every backend and server name: both ask for the credentials of
// spec.stats.credentialsFile (as OpenShift's ROUTER_METRICS_USERNAME and
// _PASSWORD guard its metrics); without them the page is off and
// /metrics open. /healthz stays open. The password is in haproxy.cfg
// (mode 0600) and nowhere in the status.
func TestStatsPageNeedsCredentials(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	const password = `s3cr#t$"x\y:z`
	creds := filepath.Join(t.TempDir(), "stats-credentials")
	must(t, os.WriteFile(creds, []byte("admin:"+password+"\n"), 0o600))
	statsWith := func(file string) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig("  stats:\n    credentialsFile: "+file+"\n"),
			"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
			"endpoints.yaml", endpointsYAML("one", one),
		)
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(statsWith(creds)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "one")

	r.statsAnswers("/stats", "", "", http.StatusUnauthorized)
	r.statsAnswers("/stats", "admin", "wrong", http.StatusUnauthorized)
	if page := r.statsAnswers("/stats", "admin", password, http.StatusOK); !strings.Contains(page, "be_http:e2e:one") {
		t.Errorf("the stats page does not list be_http:e2e:one:\n%.500s", page)
	}
	r.statsAnswers("/metrics", "", "", http.StatusUnauthorized)
	r.statsAnswers("/metrics", "admin", "wrong", http.StatusUnauthorized)
	if m := r.statsAnswers("/metrics", "admin", password, http.StatusOK); !strings.Contains(m, "haproxy_process_") {
		t.Errorf("/metrics is not the Prometheus exporter:\n%.500s", m)
	}
	r.statsAnswers("/healthz", "", "", http.StatusOK)

	// The RouterConfig binds 127.0.0.1: the stats port must not answer
	// on another local address.
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.2:%d", r.stats), 2*time.Second); err == nil {
		c.Close()
		t.Errorf("the stats port answers on 127.0.0.2; want only the bind address 127.0.0.1")
	}

	cfg := filepath.Join(r.stateDir, "live", "haproxy.cfg")
	fi, err := os.Stat(cfg)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600: it holds the stats password", cfg, fi.Mode().Perm())
	}

	// A bad credentials file is reported without its content, and the
	// last good configuration keeps serving.
	bad := filepath.Join(t.TempDir(), "bad-credentials")
	must(t, os.WriteFile(bad, []byte("admin:"+password+" with spaces\n"), 0o600))
	must(t, w.Publish(statsWith(bad)))
	r.reportsError(bad)
	r.statsAnswers("/stats", "admin", password, http.StatusOK)
	status, err := json.Marshal(r.store.Get())
	must(t, err)
	if strings.Contains(string(status), "s3cr") {
		t.Errorf("the status shows the stats password:\n%s", status)
	}

	// Without credentials the page is off.
	must(t, w.Publish(files(
		"router.yaml", r.routerConfig(""),
		"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one),
	)))
	r.statsAnswers("/stats", "admin", password, http.StatusServiceUnavailable)
	r.statsAnswers("/metrics", "", "", http.StatusOK)
}
