package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/systemd"
)

// standIn is a daemon whose Run reports the context it got and then does
// what stop says once that context ends: return its error, or hang (until
// the test ends) like a daemon stuck in a system call.
type standIn struct {
	started chan context.Context
	hang    bool
	err     error
	release chan struct{}
}

func newStandIn(t *testing.T, hang bool, err error) *standIn {
	d := &standIn{started: make(chan context.Context, 1), hang: hang, err: err, release: make(chan struct{})}
	t.Cleanup(func() { close(d.release) })
	return d
}

func (d *standIn) Run(ctx context.Context) error {
	d.started <- ctx
	<-ctx.Done()
	if d.hang {
		<-d.release
	}
	return d.err
}

// serveWith runs serve against d with the given grace, sending sigs one by
// one once d runs; it returns the exit code and the log.
func serveWith(t *testing.T, d *standIn, grace time.Duration, sigs ...os.Signal) (int, string) {
	t.Helper()
	old := stopGrace
	stopGrace = grace
	t.Cleanup(func() { stopGrace = old })
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	ch := make(chan os.Signal, len(sigs))
	code := make(chan int, 1)
	go func() { code <- serve(context.Background(), d, ch, log) }()
	ctx := <-d.started
	for i, sig := range sigs {
		ch <- sig
		if i == 0 {
			<-ctx.Done() // the first signal is handled before the next is sent
		}
	}
	select {
	case c := <-code:
		return c, logBuf.String()
	case <-time.After(time.Minute): // a hang guard, not a time bound
		t.Fatal("serve did not return")
		return 0, ""
	}
}

func TestServeStopsOnSignal(t *testing.T) {
	code, log := serveWith(t, newStandIn(t, false, nil), time.Hour, syscall.SIGTERM)
	if code != ExitOK || !strings.Contains(log, "msg=stopping signal=terminated") || !strings.Contains(log, `msg="haroute stopped"`) {
		t.Errorf("exit %d, log:\n%s", code, log)
	}
}

func TestServeReportsDaemonError(t *testing.T) {
	code, log := serveWith(t, newStandIn(t, false, errors.New("stop haproxy: boom")), time.Hour, os.Interrupt)
	if code != ExitInvalid || !strings.Contains(log, `err="stop haproxy: boom"`) {
		t.Errorf("exit %d, log:\n%s", code, log)
	}
}

// TestServeGivesUpOnStuckDaemon: a daemon that does not return after the
// stop signal is left behind once the grace is over; run fails, saying why.
func TestServeGivesUpOnStuckDaemon(t *testing.T) {
	code, log := serveWith(t, newStandIn(t, true, nil), time.Millisecond, syscall.SIGTERM)
	if code != ExitInvalid || !strings.Contains(log, "it did not stop in time") {
		t.Errorf("exit %d, log:\n%s", code, log)
	}
}

// TestServeSecondSignalExits: a second signal ends the wait at once, however
// long the grace.
func TestServeSecondSignalExits(t *testing.T) {
	withSameStop(t, 0)
	code, log := serveWith(t, newStandIn(t, true, nil), time.Hour, os.Interrupt, syscall.SIGTERM)
	if code != ExitInvalid || !strings.Contains(log, "second signal") || !strings.Contains(log, "signal=terminated") {
		t.Errorf("exit %d, log:\n%s", code, log)
	}
}

// TestServeSameStopTwiceWaits: a second signal right after the first (a
// terminal's Ctrl-C reaches the whole process group, and `make run`'s
// script passes the stop on too) is the same stop: serve still waits for
// the daemon, which would otherwise leave HAProxy running unsupervised.
func TestServeSameStopTwiceWaits(t *testing.T) {
	withSameStop(t, time.Hour)
	code, log := serveWith(t, newStandIn(t, true, nil), 200*time.Millisecond, os.Interrupt, syscall.SIGTERM)
	if code != ExitInvalid || strings.Contains(log, "second signal") || !strings.Contains(log, "the same stop") || !strings.Contains(log, "it did not stop in time") {
		t.Errorf("exit %d, log:\n%s", code, log)
	}
}

func withSameStop(t *testing.T, d time.Duration) {
	old := sameStop
	sameStop = d
	t.Cleanup(func() { sameStop = old })
}

// TestStopGraceBelowUnitTimeout: run gives up on a stuck daemon before
// systemd would SIGKILL it, so the exit (and its log line) is haroute's own.
func TestStopGraceBelowUnitTimeout(t *testing.T) {
	unit, err := systemd.UnitWithCommand("/usr/bin/haroute", []string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	var timeout time.Duration
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "TimeoutStopSec="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("TimeoutStopSec=%s: %v", v, err)
			}
			timeout = d
		}
	}
	if timeout == 0 {
		t.Fatal("the unit sets no TimeoutStopSec=")
	}
	if stopGrace >= timeout {
		t.Errorf("stopGrace %s, want below the unit's TimeoutStopSec %s", stopGrace, timeout)
	}
}
