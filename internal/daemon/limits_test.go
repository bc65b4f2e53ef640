package daemon

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

func TestFitMaxConn(t *testing.T) {
	small := model.FDBudget{Listeners: 7, CheckedServers: 10, Threads: 2}
	big := model.FDBudget{Listeners: 7, CheckedServers: 10000, Threads: 2}
	// Fixed part: 10 + listeners + reserved checks + 100 (stats socket) + 10 (master CLI) + 1 + 3 per thread + 16 spare.
	tests := []struct {
		name    string
		want    int
		hard    uint64
		b       model.FDBudget
		fit     int
		lowered bool
	}{
		{"fits", 1000, 1 << 20, small, 1000, false},
		{"lowered to the limit", 50000, 20000, small, (20000 - (10 + 7 + 256 + 110 + 1 + 6 + 16)) / 2, true},
		{"10k checked servers take one each", 50000, 20000, big, (20000 - (10 + 7 + 10240 + 110 + 1 + 6 + 16)) / 2, true},
		{"unlimited", 50000, rlimInfinity, big, 50000, false},
		{"unknown", 50000, 0, big, 50000, false},
		{"no room at all", 50000, 100, small, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fit, lowered := fitMaxConn(tt.want, tt.hard, tt.b)
			if fit != tt.fit || lowered != tt.lowered {
				t.Fatalf("fitMaxConn(%d, %d, %+v) = %d, %v; want %d, %v", tt.want, tt.hard, tt.b, fit, lowered, tt.fit, tt.lowered)
			}
		})
	}
}

// Checked servers scaling within a step must not move maxconn: a moved
// maxconn is a config change, and scale events must not reload.
func TestFitMaxConnStableWhileScaling(t *testing.T) {
	b := model.FDBudget{Listeners: 7, Threads: 2}
	base, _ := fitMaxConn(50000, 20000, b)
	for b.CheckedServers = 0; b.CheckedServers < checkReserveStep; b.CheckedServers++ {
		if fit, _ := fitMaxConn(50000, 20000, b); fit != base {
			t.Fatalf("maxconn moved from %d to %d at %d checked servers", base, fit, b.CheckedServers)
		}
	}
}

// twoEndpointRoutes builds n routes of two active endpoints each: every
// server is checked.
func twoEndpointRoutes(n int) *model.Desired {
	d := &model.Desired{Router: model.DefaultSettings()}
	for i := range n {
		d.Routes = append(d.Routes, &model.AdmittedRoute{Services: []model.ServiceBackend{{Servers: []model.Server{
			{Name: model.ServerName(fmt.Sprint("a", i)), Weight: 1}, {Name: model.ServerName(fmt.Sprint("b", i)), Weight: 1}}}}})
	}
	return d
}

// 10k routes × 2 endpoints cannot run under a 20000 hard limit: HAProxy
// reserves one descriptor per checked server, 20000 already. The error
// names LimitNOFILE and the numbers, never a router at maxconn 1.
func TestFittedRefusesUnusableLimit(t *testing.T) {
	d := &Daemon{hardNOFILE: 20000, log: slog.New(slog.DiscardHandler)}
	desired := twoEndpointRoutes(10000)
	desired.Router.ThreadCount = 4
	_, err := d.fitted(desired)
	// 10 + 7 listeners + 20224 checks + 100 + 10 + 1 + 12 + 16 spare = 20380, +200 for 100 connections.
	for _, want := range []string{"LimitNOFILE", "hard limit 20000", "20000 checked servers", "at least 20580", "reserves 20380"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want it to name %q", err, want)
		}
	}
	desired.Routes = desired.Routes[:100]
	got, err := d.fitted(desired)
	if err != nil || got.Router.MaxConnections < minUsableConns {
		t.Fatalf("a small tree: %v, maxconn %d", err, got.Router.MaxConnections)
	}
}

// maxConnections -1 (OpenShift's "automatic") takes what the descriptor
// limit allows, at most OpenShift's bound, with no warning: an operator
// asked for exactly that.
func TestMaxConnectionsAutoFitsTheLimit(t *testing.T) {
	var logs bytes.Buffer
	d := &Daemon{hardNOFILE: 20000, log: slog.New(slog.NewTextHandler(&logs, nil))}
	desired := &model.Desired{Router: model.DefaultSettings()}
	desired.Router.MaxConnections, desired.Router.MaxConnectionsAuto = 2_000_000, true
	got, err := d.fitted(desired)
	if err != nil || got.Router.MaxConnections < 9000 || got.Router.MaxConnections >= 10000 {
		t.Fatalf("fitted = %v, %v; want about half of 20000 descriptors", got.Router.MaxConnections, err)
	}
	if strings.Contains(logs.String(), "WARN") {
		t.Errorf("warned for maxConnections -1: %s", logs.String())
	}
	if err := FDBudgetProblem(desired, 20000); err != nil {
		t.Errorf("check reports %v for maxConnections -1", err)
	}
	desired.Router.MaxConnectionsAuto = false
	if err := FDBudgetProblem(desired, 20000); err == nil {
		t.Error("check reports nothing for maxConnections 2000000 under 20000 descriptors")
	}
}

// model.FDBudget mirrors HAProxy's maxsock within its 16 spare
// descriptors: under a hard limit, HAProxy (2.6 and 3.0) starts with
// MaxConn and refuses MaxConn+9, 18 descriptors more ("Cannot raise FD
// limit"), with listeners, checked and unchecked servers and threads as
// haroute runs it (-W -S). From 3.1, whose worker loads the configuration,
// HAProxy needs fewer (3.2.26 takes MaxConn+9): the budget is then on the
// safe side, and only that is checked.
func TestFDBudgetMatchesHAProxy(t *testing.T) {
	bin := testutil.HAProxy(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		testutil.Skip(t, "prlimit not installed: %v", err)
	}
	version, err := haproxy.BinaryVersion(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	exact := !version.AtLeast(3, 1)
	const hard = 3000
	for _, tc := range []struct {
		binds, checked, unchecked, ported, threads int
	}{
		{binds: 5, checked: 0, unchecked: 3, threads: 1},
		{binds: 9, checked: 700, unchecked: 50, threads: 2},
		{binds: 3, checked: 1500, unchecked: 0, threads: 4},
		// Reencrypt servers name their check port: one descriptor each,
		// checked or not (T52).
		{binds: 5, checked: 300, unchecked: 0, ported: 600, threads: 1},
	} {
		// + stats socket, master socket; the first `ported` servers of the
		// checked and unchecked ones carry a port.
		b := model.FDBudget{Listeners: tc.binds + 2, CheckedServers: tc.checked, PortServers: tc.ported, Threads: tc.threads}
		fit := int(b.MaxConn(hard))
		name := fmt.Sprintf("%d binds %d checked %d with a port %d threads", tc.binds, tc.checked, tc.ported, tc.threads)
		if ok, out := startsUnder(t, bin, hard, fit, tc.binds, tc.checked, tc.unchecked, tc.ported, tc.threads); !ok {
			t.Errorf("%s: HAProxy refused maxconn %d (model.FDBudget.MaxConn) under %d:\n%s", name, fit, hard, out)
		}
		if !exact {
			continue
		}
		if ok, out := startsUnder(t, bin, hard, fit+9, tc.binds, tc.checked, tc.unchecked, tc.ported, tc.threads); ok || !strings.Contains(out, "Cannot raise FD limit") {
			t.Errorf("%s: HAProxy took maxconn %d, 9 more than model.FDBudget.MaxConn, under %d (started %v):\n%s", name, fit+9, hard, ok, out)
		}
	}
}

// startsUnder runs HAProxy as haroute does (master-worker, master CLI)
// under the hard limit, with a config of the given shape, and reports
// whether it loaded.
func startsUnder(t *testing.T, bin string, hard, maxconn, binds, checked, unchecked, ported, threads int) (bool, string) {
	t.Helper()
	dir := testutil.ShortTempDir(t)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global\n  stats socket %s/admin.sock mode 600 level admin\n  stats maxconn %d\n  maxconn %d\n  nbthread %d\n", dir, model.StatsSocketMaxConn, maxconn, threads)
	cfg.WriteString("defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n")
	cfg.WriteString("frontend f\n")
	for i := range binds {
		fmt.Fprintf(&cfg, "  bind unix@%s/l%d.sock\n", dir, i)
	}
	cfg.WriteString("  default_backend b\nbackend b\n")
	port := func(i int) string {
		if i < ported {
			return " port 9"
		}
		return ""
	}
	for i := range checked {
		fmt.Fprintf(&cfg, "  server c%d 127.0.0.1:9 check inter 1h%s\n", i, port(i))
	}
	for i := range unchecked + max(ported-checked, 0) {
		fmt.Fprintf(&cfg, "  server u%d 127.0.0.1:9%s\n", i, port(checked+i))
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	lim := fmt.Sprintf("--nofile=%d:%d", hard, hard)
	cmd := exec.Command("prlimit", lim, "--", bin, "-W", "-S", dir+"/master.sock", "-db", "-f", path)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// HAProxy either reports the load or exits; reading to EOF or to the
	// load line needs no clock.
	var seen strings.Builder
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "Loading success") {
			return true, seen.String()
		}
	}
	return false, seen.String()
}
