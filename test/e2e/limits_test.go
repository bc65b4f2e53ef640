package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// Under a LimitNOFILE that lowers maxConnections, endpoints scaling from
// one to two make their servers checked, which moves the fitted maxconn
// (checks are reserved in steps of 256). That must not reload: the
// running maxconn stays, in HAProxy and in haproxy.cfg, until a reload
// happens for its own reason and fits it afresh.
func TestScalingUnderTightFDLimitDoesNotReload(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max > 200000 {
		testutil.Skip(t, "the hard RLIMIT_NOFILE (%d) lowers no maxConnections here", lim.Max)
	}
	const routes = 150
	r := newRouter(t)
	r.breaksHAProxy = true
	a, b := startBackend(t, "a"), startBackend(t, "b")
	gen := func(eps []*backend, extra string) map[string][]byte {
		var rs, es []string
		for i := range routes {
			name := fmt.Sprintf("s%03d", i)
			rs = append(rs, routeYAML(name, name+".e2e.test", "", name))
			es = append(es, endpointsYAML(name, eps...))
		}
		if extra != "" {
			rs = append(rs, extra)
		}
		return files("router.yaml", r.routerConfig(""), "routes.yaml", join(rs...), "endpoints.yaml", join(es...))
	}
	maxconn := func() int {
		cfg, err := os.ReadFile(filepath.Join(r.stateDir, "live", "haproxy.cfg"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^  maxconn (\d+)$`).FindSubmatch(cfg)
		if m == nil {
			t.Fatal("no global maxconn in haproxy.cfg")
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen([]*backend{a}, "")))
	r.start("atomic")
	r.serves("s149.e2e.test", "/", "a")
	before, running := r.reloads(), maxconn()

	// 150 routes × 2 endpoints: 300 checked servers, past the first step.
	must(t, w.Publish(gen([]*backend{a, b}, "")))
	seen := map[string]bool{}
	r.eventually(20*time.Second, "s149 served by both endpoints", func() error {
		got, err := r.get("s149.e2e.test", "/")
		if err != nil {
			return err
		}
		if seen[got] = true; !seen["a"] || !seen["b"] {
			return fmt.Errorf("answered so far by %v", seen)
		}
		return nil
	})
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("scaling 150 routes to two endpoints caused %d reloads, want 0", got)
	}
	if got := maxconn(); got != running {
		t.Fatalf("haproxy.cfg says maxconn %d, HAProxy runs with %d", got, running)
	}

	// Those files would not start a fresh HAProxy (300 checked servers
	// need 44 descriptors more than the running maxconn leaves): after a
	// crash, the daemon fits them afresh before the restart.
	master := testenv.ShowProc(t, r.runDir).Master.PID
	must(t, syscall.Kill(master, syscall.SIGKILL))
	r.eventually(30*time.Second, "HAProxy restarted after the crash", func() error {
		if pid := testenv.ShowProc(t, r.runDir).Master.PID; pid == master {
			return fmt.Errorf("master %d still listed", pid)
		}
		_, err := r.get("s149.e2e.test", "/")
		return err
	})
	refit := maxconn()
	if refit >= running {
		t.Fatalf("restarted with maxconn %d, want below %d with 300 more checked servers", refit, running)
	}
	running = refit

	// A reload for its own reason keeps the fresh fit.
	before = r.reloads()
	must(t, w.Publish(gen([]*backend{a, b}, reloadingRouteYAML("slow", "slow.e2e.test", "s000"))))
	r.eventually(20*time.Second, "slow.e2e.test served", func() error {
		_, err := r.get("slow.e2e.test", "/")
		return err
	})
	if r.reloads() == before {
		t.Fatal("a route no spare fits was added without a reload")
	}
	if got := maxconn(); got != running {
		t.Fatalf("maxconn %d after the reload, want the fit %d", got, running)
	}
}
