package daemon

import (
	"runtime"
	"testing"
	"time"
)

// A change that leaves the heap near the point where the runtime would
// start a collection gets one now, in the background; a change that
// leaves plenty of room does not.
func TestIdleGC(t *testing.T) {
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	g := newIdleGC()
	idle := func() {
		deadline := time.Now().Add(10 * time.Second)
		for g.running.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	g.changed() // the first cycle counts everything since the start
	idle()
	runtime.GC()

	before := numGC()
	g.changed() // next to nothing allocated in this cycle
	idle()
	if numGC() != before {
		t.Fatalf("collected after a cycle that allocated %d bytes", g.perCycle)
	}

	// A cycle that allocated half the way to the trigger: the runtime
	// does not collect yet, but two more such cycles would get there. A
	// collection the runtime starts meanwhile spoils the attempt; retry.
	for attempt := 1; ; attempt++ {
		runtime.GC()
		g.changed()
		idle()
		before = numGC()
		_, heap, trigger := g.read()
		garbage := make([][]byte, 0, 16)
		for chunk := (trigger - heap) / 32; chunk > 0 && len(garbage) < 16; {
			garbage = append(garbage, make([]byte, chunk))
		}
		garbage = nil
		if numGC() != before {
			if attempt == 5 {
				t.Fatal("the runtime collected while the test allocated, 5 times in a row")
			}
			continue
		}
		g.changed()
		idle()
		if numGC() == before {
			t.Fatalf("no collection after a cycle that allocated %d bytes toward a trigger %d bytes away", g.perCycle, trigger-heap)
		}
		return
	}
}
