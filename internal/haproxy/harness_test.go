package haproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"text/template"
	"time"

	"github.com/haroute/haroute/internal/testutil"
)

// backend is a tiny HTTP server answering with its name.
func backend(t testing.TB, name string) (port int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

const testConfig = `global
    stats socket {{.Run}}/admin.sock mode 600 level admin expose-fd listeners
    noreuseport
    maxconn 500
defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s
frontend fe
    bind 127.0.0.1:{{.HTTP}}
    bind 127.0.0.1:{{.HTTPS}} ssl crt {{.Run}}/site.pem crt-list {{.Run}}/crt-list
    use_backend %[req.hdr(host),lower,map({{.Run}}/hosts.map)]
    default_backend be
backend be
    balance roundrobin
    tcp-request content reject if !{ src -f {{.Run}}/allow.acl }
    cookie SRV insert indirect nocache httponly dynamic
    dynamic-cookie-key initialkey
    server s0 127.0.0.1:{{.B0}} check inter 1s
    server nochk 127.0.0.1:{{.B0}} weight 0
backend be2
    server x 127.0.0.1:{{.B1}}
`

// rig is a running HAProxy with two backends.
type rig struct {
	Run, Cfg    string
	HTTP, HTTPS int
	B0, B1      int
	sup         *Supervisor
	proc        *Process
	rt          *Runtime
	log         *testutil.SyncBuffer
}

// newRig writes the test config into a short run dir and validates it.
func newRig(t testing.TB) *rig {
	t.Helper()
	bin := testutil.HAProxy(t)
	r := &rig{Run: testutil.ShortTempDir(t), HTTP: testutil.FreePort(t), HTTPS: testutil.FreePort(t),
		B0: backend(t, "b0"), B1: backend(t, "b1"), log: &testutil.SyncBuffer{}}
	r.Cfg = filepath.Join(r.Run, "haproxy.cfg")
	var cfg bytes.Buffer
	template.Must(template.New("cfg").Parse(testConfig)).Execute(&cfg, r)
	writeFile(t, r.Cfg, cfg.String())
	writeFile(t, filepath.Join(r.Run, "site.pem"), string(testutil.SelfSignedPEM(t, "localhost", 1)))
	writeFile(t, filepath.Join(r.Run, "hosts.map"), "a.example.com be\n")
	writeFile(t, filepath.Join(r.Run, "crt-list"), "")
	writeFile(t, filepath.Join(r.Run, "allow.acl"), "0.0.0.0/0\n::/0\n")
	sup, err := NewSupervisor(Options{
		Binary: bin, ConfigPath: r.Cfg, RunDir: r.Run,
		Logger:          slog.New(slog.NewTextHandler(r.log, nil)),
		SoftStopTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.sup = sup
	r.rt = NewRuntime(filepath.Join(r.Run, "admin.sock"))
	return r
}

// start starts HAProxy and stops it at cleanup.
func (r *rig) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	proc, err := r.sup.Start(ctx)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	r.proc = proc
	t.Cleanup(func() {
		if err := proc.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// version is the running HAProxy's version, from `show info`.
func (r *rig) version(t testing.TB) Version {
	t.Helper()
	in, err := NewInspector(r.sup.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	info, err := in.Info(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	v, err := ParseVersion(info.Version)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (r *rig) get(t testing.TB, host string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", r.HTTP), nil)
	if host != "" {
		req.Host = host
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET via haproxy: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, body)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// haproxyPIDs lists live (non-zombie) processes whose command line names
// cfg: what must be gone after a stop.
func haproxyPIDs(t testing.TB, cfg string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(cfg)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Field 3 (after "pid (comm) ") is the state; Z is a zombie,
		// which holds no resources.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func execOK(t testing.TB, rt *Runtime, cmds ...string) []Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resps, err := rt.Execute(ctx, cmds)
	if err != nil {
		t.Fatalf("execute %q: %v", cmds, err)
	}
	for _, r := range resps {
		if err := r.Err(); err != nil {
			t.Fatalf("runtime refused: %v", err)
		}
	}
	return resps
}

func modeOf(t testing.TB, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
