package daemon

import (
	"runtime/debug"
	"testing"
)

// Two daemons of one process starting together: the collector stays off
// until both are done, then the operator's settings come back, once.
func TestPauseGCForStartNests(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))

	first, second := pauseGCForStart(), pauseGCForStart()
	if got := debug.SetMemoryLimit(-1); got != startHeapLimit {
		t.Errorf("memory limit while paused = %d, want %d", got, startHeapLimit)
	}
	first()
	first() // a second call does nothing
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("collector back on (GOGC %d) while a daemon still starts", got)
	}
	second()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("GOGC after both resumed = %d, want 77", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("memory limit after both resumed = %d, want %d", got, int64(1<<40))
	}
}
