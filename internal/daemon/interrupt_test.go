package daemon

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/haroute/haroute/internal/metrics"
)

// A change cut short by the shutdown is not a fault: it is neither
// reported as the last error nor turned into a fallback reload. A failure
// while running still is both.
func TestShutdownInterruptsWithoutErrors(t *testing.T) {
	dir := t.TempDir()
	d, err := New(Options{ConfigDir: dir, RunDir: filepath.Join(dir, "run"), StateDir: filepath.Join(dir, "state"), HAProxy: "haproxy"})
	if err != nil {
		t.Fatal(err)
	}
	running, stop := context.WithCancel(context.Background())
	d.stopping = running
	cut := errors.New("start runtime session: context canceled")

	stop()
	d.fallback(metrics.FallbackCommandFailed, cut)
	d.recordError(cut)
	if st := d.status.Get(); st.LastError != nil || st.Fallbacks != 0 {
		t.Fatalf("while stopping: last error %+v, fallbacks %d; want none", st.LastError, st.Fallbacks)
	}
	if d.throttle.pending {
		t.Fatal("while stopping: a fallback reload was requested")
	}

	d.stopping = context.Background()
	d.fallback(metrics.FallbackCommandFailed, cut)
	if st := d.status.Get(); st.LastError == nil || st.Fallbacks != 1 || !d.throttle.pending {
		t.Fatalf("while running: last error %+v, fallbacks %d, reload requested %v; want all three", st.LastError, st.Fallbacks, d.throttle.pending)
	}
}
