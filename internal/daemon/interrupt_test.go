package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/metrics"
)

// A change cut short by the shutdown is not a fault: it is neither
// reported as the last error nor turned into a fallback reload. A failure
// while running still is both, and so is a failure while stopping that
// the shutdown did not cause (the last write of the live files).
func TestShutdownInterruptsWithoutErrors(t *testing.T) {
	dir := t.TempDir()
	d, err := New(Options{ConfigDir: dir, RunDir: filepath.Join(dir, "run"), StateDir: filepath.Join(dir, "state"), HAProxy: "haproxy"})
	if err != nil {
		t.Fatal(err)
	}
	running, stop := context.WithCancel(context.Background())
	d.stopping = running
	cut := fmt.Errorf("start runtime session: %w (read: i/o timeout)", context.Canceled)

	stop()
	d.fallback(metrics.FallbackCommandFailed, cut)
	d.recordError(cut)
	if st := d.status.Get(); st.LastError != nil || st.Fallbacks != 0 {
		t.Fatalf("while stopping: last error %+v, fallbacks %d; want none", st.LastError, st.Fallbacks)
	}
	if d.throttle.pending {
		t.Fatal("while stopping: a fallback reload was requested")
	}
	d.recordError(errors.New("write live bundle: no space left on device"))
	if st := d.status.Get(); st.LastError == nil {
		t.Fatal("while stopping: a failed write of the live files was not reported")
	}
	d.status.ClearError(time.Now())

	d.stopping = context.Background()
	d.fallback(metrics.FallbackCommandFailed, cut)
	if st := d.status.Get(); st.LastError == nil || st.Fallbacks != 1 || !d.throttle.pending {
		t.Fatalf("while running: last error %+v, fallbacks %d, reload requested %v; want all three", st.LastError, st.Fallbacks, d.throttle.pending)
	}
}
