// Package parallel spreads independent pieces of work over all cores.
// Work is handed out by index and results are written by index, so what a
// caller builds does not depend on scheduling: the pure stages (decode,
// admit, render) stay deterministic while using both cores.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls fn(i) for every i in [0, n), in runs of grain indexes spread
// over GOMAXPROCS workers. fn must only write what belongs to i.
func For(n, grain int, fn func(i int)) {
	grain = max(grain, 1)
	parts := (n + grain - 1) / grain
	ForWith(parts, func() struct{} { return struct{}{} }, func(p int, _ struct{}) {
		for i := p * grain; i < min((p+1)*grain, n); i++ {
			fn(i)
		}
	})
}

// ForWith is For with a grain of one, where each worker owns a value made
// by newState — a scratch buffer it reuses across the calls it runs.
func ForWith[S any](n int, newState func() S, fn func(i int, s S)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		s := newState()
		for i := range n {
			fn(i, s)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := newState()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i, s)
			}
		})
	}
	wg.Wait()
}
