package plan

import (
	"math/rand/v2"
	"testing"

	"github.com/haroute/haroute/internal/render"
)

// trimCommon keeps what the two lists do not share at their ends, so the
// entries only one side has (as a multiset, which entryDiff counts) are
// the same with and without it, whatever the lists.
func TestTrimCommonKeepsTheDifference(t *testing.T) {
	diff := func(a, b []render.MapEntry) (added, removed int) {
		n := map[render.MapEntry]int{}
		for _, e := range a {
			n[e]++
		}
		for _, e := range b {
			if n[e] > 0 {
				n[e]--
				continue
			}
			added++
		}
		for _, c := range n {
			removed += c
		}
		return added, removed
	}
	rng := rand.New(rand.NewPCG(1, 2))
	list := func() []render.MapEntry {
		out := make([]render.MapEntry, rng.IntN(8))
		for i := range out {
			out[i] = render.MapEntry{Key: string(rune('a' + rng.IntN(4))), Value: string(rune('x' + rng.IntN(2)))}
		}
		return out
	}
	for i := range 20000 {
		a := list()
		b := append([]render.MapEntry(nil), a...)
		switch i % 3 { // edits near each other, as a route change makes
		case 0:
			b = list()
		case 1:
			if len(b) > 0 {
				k := rng.IntN(len(b))
				b = append(b[:k], b[k+1:]...)
			}
		case 2:
			k := rng.IntN(len(b) + 1)
			b = append(b[:k], append([]render.MapEntry{{Key: "n", Value: "y"}}, b[k:]...)...)
		}
		ta, tb := trimCommon(a, b)
		wantAdd, wantRem := diff(a, b)
		if add, rem := diff(ta, tb); add != wantAdd || rem != wantRem {
			t.Fatalf("%v → %v: trimmed to %v → %v: +%d -%d, want +%d -%d", a, b, ta, tb, add, rem, wantAdd, wantRem)
		}
		if i%3 == 1 && len(a) > 0 && len(ta)+len(tb) > 1 {
			t.Fatalf("%v → %v: one removed entry left %v and %v", a, b, ta, tb)
		}
	}
}
