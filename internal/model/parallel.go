package model

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// forEach calls fn(i) for every i in [0, n), spread over all cores in runs
// of grain indexes. fn must only write what belongs to i; whatever order
// the calls run in, the caller sees the same result.
func forEach(n, grain int, fn func(i int)) {
	parts := (n + grain - 1) / grain
	workers := min(runtime.GOMAXPROCS(0), parts)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				p := int(next.Add(1) - 1)
				if p >= parts {
					return
				}
				for i := p * grain; i < min((p+1)*grain, n); i++ {
					fn(i)
				}
			}
		})
	}
	wg.Wait()
}
