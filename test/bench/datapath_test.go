package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/testutil"
)

// Figure 13: the data path. haroute's HAProxy against what an operator
// would write by hand for the same routes (a host map to one backend per
// route, one server each, plain option forwardfor), both serving the same
// fast backend on the same machine, loaded with wrk in interleaved rounds.
// Both HAProxies run one thread on the same core when the machine has two
// or more; wrk and the backend take another.
func TestBenchDataPath(t *testing.T) {
	needBench(t)
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("data path figure: wrk is not installed (run.sh installs it when run as root: apt-get install -y wrk)")
	}
	backendPort, backendKind := startFastBackend(t)
	sizes := []int{1, 10000}
	if only := os.Getenv("HAROUTE_BENCH_DATAPATH_ROUTES"); only != "" {
		n, err := strconv.Atoi(only)
		if err != nil {
			t.Fatalf("HAROUTE_BENCH_DATAPATH_ROUTES=%q: %v", only, err)
		}
		sizes = []int{n} // one size, to look at it again
	}
	for _, routes := range sizes {
		t.Run(strconv.Itoa(routes), func(t *testing.T) {
			dataPath(t, wrk, routes, backendPort, backendKind)
		})
	}
}

// Load shape of each run: wrk's defaults for a keep-alive client, as a
// reverse proxy's figures are usually quoted.
const (
	dataPathConns  = 50
	dataPathRun    = 3 * time.Second
	dataPathRounds = 5
)

func dataPath(t *testing.T, wrk string, routes, backendPort int, backendKind string) {
	ep := endpoint{ip: "127.0.0.1", port: backendPort}
	r := newRouter(t)
	r.tuning = "    threadCount: 1\n"
	tr := newTree("bench", routes, func(int) []endpoint { return []endpoint{ep} })
	r.publish(tr)
	r.start(fmt.Sprintf("datapath%d", routes))
	host := hostName(routes / 2)
	waitAnswer(t, r.http, host)
	hand := startHandWritten(t, routes, backendPort)
	handOS := startHandWrittenOpenShift(t, routes, backendPort)

	// Pinned, when there is room: both HAProxies on the first core, the
	// load and the backend on the last.
	loadCPU := ""
	if runtime.NumCPU() >= 2 {
		if _, err := exec.LookPath("taskset"); err == nil {
			pin(t, r.showProc().Workers[0].PID, "0")
			pin(t, hand.Process.Pid, "0")
			pin(t, handOS.Process.Pid, "0")
			loadCPU = strconv.Itoa(runtime.NumCPU() - 1)
		}
	}

	// A browser keeps the sticky cookie haroute sets (OpenShift sets it
	// too) and sends it back, so haroute sends no new Set-Cookie: that is
	// the like-for-like run. A client that drops it (wrk's default, a
	// first visit every time) is shown beside it.
	cookie := stickyCookie(t, r.http, host)
	type config struct {
		name string
		port int
		hdr  []string
	}
	configs := []config{
		{"hand", hand.port, nil},
		{"hand-openshift", handOS.port, []string{"Cookie: " + stickyCookie(t, handOS.port, host)}},
		{"haroute", r.http, []string{"Cookie: " + cookie}},
		{"haroute-no-cookie", r.http, nil},
	}
	results := map[string][]wrkResult{}
	for round := range dataPathRounds {
		order := slices.Clone(configs)
		if round%2 == 1 {
			slices.Reverse(order) // neither always runs first
		}
		for _, c := range order {
			res := runWrk(t, wrk, loadCPU, c.port, host, c.hdr)
			results[c.name] = append(results[c.name], res)
			t.Logf("round %d, %s: %.0f req/s, p99 %s [load avg %s]", round+1, c.name, res.rps, ms(res.p99), loadAvg())
		}
	}

	ratio := func(name, to string) float64 {
		var rs []float64
		for i, res := range results[name] {
			rs = append(rs, res.rps/results[to][i].rps)
		}
		return median(rs)
	}
	h, k, nc := summarize(results["hand"]), summarize(results["haroute"]), summarize(results["haroute-no-cookie"])
	rk, rnc := ratio("haroute", "hand"), ratio("haroute-no-cookie", "hand")
	id := map[bool]string{true: "13a", false: "13b"}[routes == 1]
	record(t, figure{id, fmt.Sprintf("Data path, %d route(s): haroute's HAProxy vs a hand-written map-routed config (one thread each on the same core; wrk -c%d, %d interleaved rounds of %s; backend %s; a client that keeps the sticky cookie)",
		routes, dataPathConns, dataPathRounds, dataPathRun, backendKind),
		"≥ 0.95× req/s, p99 no worse",
		fmt.Sprintf("%.2f× (haroute %.0f req/s, p99 %s; hand-written %.0f req/s, p99 %s; median per-round ratio). Client without the cookie (Set-Cookie on every response): %.2f×, %.0f req/s, p99 %s",
			rk, k.rps, ms(k.p99), h.rps, ms(h.p99), rnc, nc.rps, ms(nc.p99)),
		verdict(rk >= 0.95 && k.p99 <= h.p99)})
	ho := summarize(results["hand-openshift"])
	record(t, figure{id + "-os", fmt.Sprintf("Data path, %d route(s): haroute's HAProxy vs a hand-written config that does to each request what OpenShift's template does (an empty Content-Length refused, the Proxy and X-SSL-* headers stripped, the Host lowercased, a sticky cookie, X-Forwarded-* and Forwarded headers; routed by the same host map; same runs as %s)",
		routes, id), "—",
		fmt.Sprintf("%.2f× (hand-written with OpenShift's headers %.0f req/s, p99 %s; it runs at %.2f× the plain hand-written config)",
			ratio("haroute", "hand-openshift"), ho.rps, ms(ho.p99), ratio("hand-openshift", "hand")), "—"})
}

// startFastBackend serves a small constant answer: Debian's nginx when
// installed (run.sh installs it when run as root), else the harness's own
// Go backend, which competes with the harness for the cores.
func startFastBackend(t *testing.T) (port int, kind string) {
	port = testutil.FreePort(t)
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		b := startBackend(t, "fast")
		return b.Port, "testenv Go backend (nginx not installed)"
	}
	dir := testutil.ShortTempDir(t)
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  client_body_temp_path %[1]s;
  proxy_temp_path %[1]s;
  fastcgi_temp_path %[1]s;
  uwsgi_temp_path %[1]s;
  scgi_temp_path %[1]s;
  server {
    listen 127.0.0.1:%[2]d;
    location / { return 200 'fast\n'; }
  }
}
`, dir, port)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{nginx, "-c", path}
	if cpu := runtime.NumCPU(); cpu >= 2 {
		if ts, err := exec.LookPath("taskset"); err == nil {
			args = append([]string{ts, "-c", strconv.Itoa(cpu - 1)}, args...)
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	// In a process group of its own, so that the cleanup takes nginx's
	// worker too: killing the master alone left the worker running, with
	// the port, after every run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	waitAnswer(t, port, "")
	return port, "nginx " + strings.TrimSpace(nginxVersion(nginx))
}

func nginxVersion(bin string) string {
	out, _ := exec.Command(bin, "-v").CombinedOutput()
	_, v, _ := strings.Cut(string(out), "nginx/")
	return v
}

// handWritten is an HAProxy running a hand-written config.
type handWritten struct {
	*exec.Cmd
	port int
	// dir holds haproxy.cfg and hosts.map; master is the master CLI
	// socket when it runs under a master (startHandWrittenMaster).
	dir, master string
}

// startHandWritten runs the config an operator would write for routes
// routes: a host map to one backend each, one server each, option
// forwardfor, and otherwise HAProxy's defaults; on one thread, as the
// data path figure runs haroute's HAProxy too.
func startHandWritten(t *testing.T, routes, backendPort int) *handWritten {
	return runHandWritten(t, routes, backendPort, hostName(0), handOptions{oneThread: true})
}

// startHandWrittenMaster is startHandWritten under a master process,
// which addRoute reloads as an operator would, on HAProxy's default
// threads (as haroute's HAProxy runs by default), returning once host
// answers.
func startHandWrittenMaster(t *testing.T, routes, backendPort int, host string) *handWritten {
	return runHandWritten(t, routes, backendPort, host, handOptions{master: true})
}

// startHandWrittenOpenShift is startHandWritten with what OpenShift's
// router does to every request, written by hand as its template writes
// its public frontend: an empty Content-Length refused, the Proxy and
// client certificate (X-SSL-*) headers stripped, the Host lowercased, a
// sticky cookie, and the X-Forwarded-* and Forwarded headers. haroute
// does the same; against this config the data path figure shows what
// haroute's own rendering costs, apart from the behaviour. (OpenShift
// routes by regular-expression maps, which cost more again; the host map
// here is the hand-written config's.)
func startHandWrittenOpenShift(t *testing.T, routes, backendPort int) *handWritten {
	return runHandWritten(t, routes, backendPort, hostName(0), handOptions{oneThread: true, openShift: true})
}

// handOptions say how a hand-written config runs: under a master process
// or not, on one thread or on HAProxy's default (one per core), and with
// OpenShift's per-request behaviour or without.
type handOptions struct{ master, oneThread, openShift bool }

// openShiftFrontend is what OpenShift's template does to every request in
// its public frontend, the mutual TLS header filter on (its default).
const openShiftFrontend = `  http-request deny if { hdr_len(content-length) 0 }
  http-request del-header Proxy
  http-request del-header X-SSL
  http-request del-header X-SSL-Client-CN
  http-request del-header X-SSL-Client-DER
  http-request del-header X-SSL-Client-DN
  http-request del-header X-SSL-Client-NotAfter
  http-request del-header X-SSL-Client-NotBefore
  http-request del-header X-SSL-Client-SHA1
  http-request del-header X-SSL-Client-Serial
  http-request del-header X-SSL-Client-Subject
  http-request del-header X-SSL-Client-Verify
  http-request del-header X-SSL-Client-Version
  http-request del-header X-SSL-Issuer
  http-request set-header Host %[req.hdr(Host),lower]
`

// openShiftRequest is what OpenShift's template adds to a route's backend
// for the default forwarded-headers policy and sticky cookie.
const openShiftRequest = `  cookie SRV insert indirect nocache httponly
  option forwardfor
  http-request add-header X-Forwarded-Host %[req.hdr(host)]
  http-request add-header X-Forwarded-Port %[dst_port]
  http-request add-header X-Forwarded-Proto http if !{ ssl_fc }
  http-request add-header X-Forwarded-Proto https if { ssl_fc }
  http-request add-header X-Forwarded-Proto-Version h2 if { ssl_fc_alpn -i h2 }
  http-request add-header Forwarded for=%[src];host=%[req.hdr(host)];proto=%[req.hdr(X-Forwarded-Proto)]
`

func runHandWritten(t *testing.T, routes, backendPort int, host string, o handOptions) *handWritten {
	dir := t.TempDir()
	port := testutil.FreePort(t)
	var cfg, hosts strings.Builder
	threads, strip, backend, srvCookie := "", "", "  option forwardfor\n", ""
	if o.oneThread {
		threads = "  nbthread 1\n"
	}
	if o.openShift {
		strip, backend, srvCookie = openShiftFrontend, openShiftRequest, " cookie s"
	}
	fmt.Fprintf(&cfg, `global
%s  maxconn 4096

defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s

frontend public
  bind 127.0.0.1:%d
%s  use_backend %%[req.hdr(host),field(1,:),lower,map(%s/hosts.map)]
`, threads, port, strip, dir)
	for i := range routes {
		fmt.Fprintf(&hosts, "%s be%d\n", hostName(i), i)
		fmt.Fprintf(&cfg, "\nbackend be%d\n%s  server s 127.0.0.1:%d%s\n", i, backend, backendPort, srvCookie)
	}
	for name, data := range map[string]string{"haproxy.cfg": cfg.String(), "hosts.map": hosts.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := &handWritten{port: port, dir: dir}
	args := []string{"-db", "-f", filepath.Join(dir, "haproxy.cfg")}
	if o.master {
		h.master = filepath.Join(testutil.ShortTempDir(t), "master.sock")
		args = append([]string{"-W", "-S", h.master}, args...)
	}
	h.Cmd = exec.Command(testutil.HAProxy(t), args...)
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.Process.Kill()
		_ = h.Wait()
	})
	waitAnswer(t, port, host)
	return h
}

// stop stops h and its workers (a master stops its own on SIGTERM) and
// waits for it, so the next HAProxy starts on a quiet machine.
func (h *handWritten) stop() { terminate(h.Cmd, 10*time.Second) }

// terminate sends cmd SIGTERM and waits for it, killing it after grace.
func terminate(cmd *exec.Cmd, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// addRoute adds route i as an operator would: a backend appended to
// haproxy.cfg, its host to the map, then a reload through the master
// CLI. It returns how long the route took to answer from the edit on.
func (h *handWritten) addRoute(t *testing.T, i, backendPort int) time.Duration {
	t.Helper()
	t0 := time.Now()
	appendFile(t, filepath.Join(h.dir, "haproxy.cfg"), fmt.Sprintf("\nbackend be%d\n  option forwardfor\n  server s 127.0.0.1:%d\n", i, backendPort))
	appendFile(t, filepath.Join(h.dir, "hosts.map"), fmt.Sprintf("%s be%d\n", hostName(i), i))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reloaded := make(chan error, 1)
	go func() {
		_, err := haproxy.NewMaster(h.master).Reload(ctx)
		reloaded <- err
	}()
	cl := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for ctx.Err() == nil {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", h.port), nil)
		req.Host = hostName(i)
		if resp, err := cl.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	served := time.Since(t0)
	if err := <-reloaded; err != nil {
		t.Fatalf("hand-written reload: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("hand-written route %d not served within a minute", i)
	}
	return served
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// waitAnswer waits until 127.0.0.1:port answers 200 for host.
func waitAnswer(t *testing.T, port int, host string) {
	t.Helper()
	cl := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
		if host != "" {
			req.Host = host
		}
		resp, err := cl.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("127.0.0.1:%d does not answer 200 for %q: %v", port, host, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pin moves every thread of pid to cpus.
func pin(t *testing.T, pid int, cpus string) {
	if out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("taskset %d: %v: %s", pid, err, out)
	}
}

// stickyCookie is the name=value of the sticky cookie haroute sets for host.
func stickyCookie(t *testing.T, port int, host string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
	req.Host = host
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("haroute set %d cookies for %s, want its sticky cookie", len(cs), host)
	}
	return cs[0].Name + "=" + cs[0].Value
}

// wrkResult is one wrk run.
type wrkResult struct {
	rps float64
	p99 time.Duration
}

var (
	wrkRPS = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkP99 = regexp.MustCompile(`\n\s+99%\s+([0-9.]+)(us|ms|s)\b`)
)

// runWrk loads http://127.0.0.1:port/ for host with wrk, on cpu when set.
// Any answer but 2xx or 3xx fails the test: a figure from errors would
// mean nothing.
func runWrk(t *testing.T, wrk, cpu string, port int, host string, hdr []string) wrkResult {
	t.Helper()
	args := []string{wrk, "-t1", fmt.Sprintf("-c%d", dataPathConns), fmt.Sprintf("-d%ds", int(dataPathRun.Seconds())), "--latency",
		"-H", "Host: " + host}
	for _, h := range hdr {
		args = append(args, "-H", h)
	}
	args = append(args, fmt.Sprintf("http://127.0.0.1:%d/", port))
	if cpu != "" {
		args = append([]string{"taskset", "-c", cpu}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	s := string(out)
	if strings.Contains(s, "Non-2xx or 3xx responses") || strings.Contains(s, "Socket errors") {
		t.Fatalf("wrk on port %d met errors:\n%s", port, s)
	}
	m, l := wrkRPS.FindStringSubmatch(s), wrkP99.FindStringSubmatch(s)
	if m == nil || l == nil {
		t.Fatalf("unexpected wrk output:\n%s", s)
	}
	rps, _ := strconv.ParseFloat(m[1], 64)
	v, _ := strconv.ParseFloat(l[1], 64)
	unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[l[2]]
	return wrkResult{rps: rps, p99: time.Duration(v * float64(unit))}
}

// wrkSummary is the median of each measure over the rounds.
type wrkSummary struct {
	rps float64
	p99 time.Duration
}

func summarize(rs []wrkResult) wrkSummary {
	var rps []float64
	var p99 []time.Duration
	for _, r := range rs {
		rps = append(rps, r.rps)
		p99 = append(p99, r.p99)
	}
	return wrkSummary{rps: median(rps), p99: percentile(p99, 50)}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
