package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Every index runs exactly once, whatever the grain and core count.
func TestForCoversEveryIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 7, 1000} {
			for _, grain := range []int{0, 1, 3, 64, 5000} {
				hits := make([]atomic.Int32, n)
				For(n, grain, func(i int) { hits[i].Add(1) })
				for i := range hits {
					if got := hits[i].Load(); got != 1 {
						t.Fatalf("procs %d n %d grain %d: index %d ran %d times", procs, n, grain, i, got)
					}
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// Each worker gets its own state; no state is shared between workers.
func TestForWithStatePerWorker(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	var made atomic.Int32
	owner := make([]*int, 500)
	ForWith(len(owner), func() *int { made.Add(1); return new(int) }, func(i int, s *int) {
		*s++ // no race: s belongs to one worker (run with -race)
		owner[i] = s
	})
	total := 0
	seen := map[*int]bool{}
	for _, s := range owner {
		if !seen[s] {
			seen[s] = true
			total += *s
		}
	}
	// A worker may make its state and find no work left: used ≤ made ≤ 4.
	if total != len(owner) || len(seen) > int(made.Load()) || made.Load() > 4 {
		t.Fatalf("calls %d (want %d), states made %d, states used %d", total, len(owner), made.Load(), len(seen))
	}
}
