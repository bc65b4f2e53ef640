package bench

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/testutil"
)

// withNOFILE lowers this process's RLIMIT_NOFILE (soft and hard) for the
// test: the daemon reads the hard limit when it starts, and HAProxy
// inherits it, as under a unit's LimitNOFILE. Restoring a raised hard
// limit needs privileges; without them the figure says so.
func withNOFILE(t *testing.T, limit uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		// Raising the hard limit takes privileges this host may not give.
		record(t, figure{"14c", fmt.Sprintf("not measured: hard RLIMIT_NOFILE %d here, %d needed (%v)", old.Max, limit, err), "—", "—", "—"})
		t.Skipf("hard RLIMIT_NOFILE %d, cannot set %d: %v", old.Max, limit, err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Errorf("restore RLIMIT_NOFILE: %v", err)
		}
	})
}

// haproxyMaxconn is the Maxconn HAProxy reports (`show info`).
func haproxyMaxconn(t *testing.T, runDir string) int {
	t.Helper()
	out, err := testutil.AdminCommand(runDir, "show info")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Maxconn: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("show info has no Maxconn:\n%s", out)
	return 0
}

// Figure 14: 10k routes under a 20000-descriptor hard limit. One endpoint
// each (no checks): HAProxy starts with the maxconn haroute derives and
// serves. Two endpoints each: 20000 checked servers take one descriptor
// each before any connection (README, File descriptors), so haroute
// refuses, naming LimitNOFILE and the limit needed; under that limit plus
// room for 1000 connections the same tree starts and serves.
func TestBenchFDs(t *testing.T) {
	needBench(t)
	const routes, hard = 10000, 20000
	a, b := startBackend(t, "a"), startBackend(t, "b")

	t.Run("one endpoint", func(t *testing.T) {
		withNOFILE(t, hard)
		r := newRouter(t)
		r.publish(newTree("bench", routes, func(int) []endpoint { return []endpoint{endpointOf(a)} }))
		r.start("fds-1")
		if _, err := r.untilServed(hostName(routes-1), "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		maxconn := haproxyMaxconn(t, r.runDir)
		record(t, figure{"14a", fmt.Sprintf("%d routes × 1 endpoint under LimitNOFILE %d: starts and serves, maxconn", routes, hard),
			"starts", strconv.Itoa(maxconn), verdict(maxconn >= 100)})
	})

	two := newTree("bench", routes, func(int) []endpoint { return []endpoint{endpointOf(a), endpointOf(b)} })
	res, _, err := loadRender(two.sourceFiles(), defaultCert(t))
	if err != nil {
		t.Fatal(err)
	}
	res.Desired.Router.BindAddress = "127.0.0.1" // as the harness RouterConfig
	refusal := daemon.FDBudgetProblem(res.Desired, hard)
	if refusal == nil || !strings.Contains(refusal.Error(), "LimitNOFILE") || !strings.Contains(refusal.Error(), "20000 checked servers") {
		t.Fatalf("10k × 2 under %d: %v, want a refusal naming LimitNOFILE and 20000 checked servers", hard, refusal)
	}
	record(t, figure{"14b", fmt.Sprintf("%d routes × 2 endpoints under LimitNOFILE %d", routes, hard),
		"starts", "impossible: " + refusal.Error(), "NO (HAProxy reserves one fd per checked server)"})

	t.Run("two endpoints with the limit raised", func(t *testing.T) {
		// The smallest limit that serves 1000 connections: what the
		// refusal names for 100, plus 1800.
		var need uint64
		for f := range strings.FieldsSeq(refusal.Error()) {
			if n, err := strconv.ParseUint(f, 10, 64); err == nil && strings.Contains(refusal.Error(), "at least "+f+" ") {
				need = n
			}
		}
		if need == 0 {
			t.Fatalf("no needed limit in %q", refusal)
		}
		limit := need + 1800
		withNOFILE(t, limit)
		r := newRouter(t)
		r.publish(two)
		r.start("fds-2")
		if _, err := r.untilServed(hostName(routes-1), "a", time.Minute); err != nil {
			t.Fatal(err)
		}
		maxconn := haproxyMaxconn(t, r.runDir)
		record(t, figure{"14c", fmt.Sprintf("%d routes × 2 endpoints under LimitNOFILE %d (the needed %d + 1800): starts and serves, maxconn", routes, limit, need),
			"1000", strconv.Itoa(maxconn), verdict(maxconn == 1000)})
		if maxconn != 1000 {
			t.Errorf("maxconn %d, want 1000 (100 + 1800/2)", maxconn)
		}
	})
}
