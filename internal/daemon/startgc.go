package daemon

import (
	"runtime/debug"
	"sync"
)

// The first generation is read, loaded and rendered in one go, about 100
// MB of allocation at 10k routes, almost all of it garbage once
// haproxy.cfg is written; HAProxy then parses that file for a few hundred
// milliseconds on one of the cores. Collections during all this only
// slow it down: they mark a heap that is growing towards its final size,
// and the last one runs beside HAProxy's parse. Measured with `haroute
// run` at 10k routes on 2 cores (4 starts each, start → first answer,
// median): GOGC 50 (haroute's default then) 646 ms, GOGC 400 640 ms, the
// collector off 528 ms, at a peak of 96 MB resident instead of 85.
//
// So the collector is off from the daemon's start until its first sync
// is done (HAProxy serving, or the attempt over), under a memory limit
// that bounds a much larger tree, and one collection that returns the
// garbage to the system follows. Daemons of one process (tests) share the
// collector: the first to pause saves the settings, the last to resume
// restores them.

// startHeapLimit bounds the heap while the collector is paused: a tree
// far beyond 10k routes is collected when it reaches it, as the memory
// limit makes the runtime do, rather than grown unbounded.
const startHeapLimit = 512 << 20

var startGC struct {
	sync.Mutex
	paused  int
	percent int
	limit   int64
}

// pauseGCForStart turns the collector off for a cold start. The returned
// resume restores it; calling it again does nothing.
func pauseGCForStart() (resume func()) {
	startGC.Lock()
	if startGC.paused == 0 {
		startGC.percent = debug.SetGCPercent(-1)
		startGC.limit = debug.SetMemoryLimit(-1) // reads it
		debug.SetMemoryLimit(min(startGC.limit, startHeapLimit))
	}
	startGC.paused++
	startGC.Unlock()
	return sync.OnceFunc(func() {
		startGC.Lock()
		defer startGC.Unlock()
		startGC.paused--
		if startGC.paused > 0 {
			return
		}
		debug.SetGCPercent(startGC.percent)
		debug.SetMemoryLimit(startGC.limit)
		go debug.FreeOSMemory()
	})
}
