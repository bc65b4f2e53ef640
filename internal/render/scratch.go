package render

import "sync"

// scratch lends buffers that a render needs only while it runs. At 10k
// routes the map entries and their sort keys are 700 kB a route change;
// made fresh each time, most of their cost was the page faults of
// touching new memory (the daemon's small heap gives what a change frees
// back to the OS). A buffer is cleared when returned, so it keeps no
// strings of the render that used it alive.
type scratch[T any] struct{ pool sync.Pool }

// get returns a buffer of length n.
func (s *scratch[T]) get(n int) []T {
	if p, ok := s.pool.Get().(*[]T); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]T, n)
}

// put returns b, which its borrower no longer uses.
func (s *scratch[T]) put(b []T) {
	clear(b[:cap(b)])
	b = b[:0]
	s.pool.Put(&b)
}

var (
	entryScratch scratch[MapEntry]
	keyScratch   scratch[sortKey]
)
