package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChangedByKey: the walk yields every route of either slice whose
// pointer is not the other's at the same key, paired by key, in key
// order, and passes over the shared ones; it stops when asked to.
func TestChangedByKey(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	key := func(i int) RouteKey { return RouteKey{Namespace: "ns", Name: fmt.Sprintf("r%03d", i)} }
	for step := range 200 {
		var olds, news []*AdmittedRoute
		type pair struct{ old, cur *AdmittedRoute }
		var want []pair
		for i := range 60 {
			r := &AdmittedRoute{Key: key(i)}
			switch rnd.IntN(5) {
			case 0: // only before
				olds = append(olds, r)
				want = append(want, pair{r, nil})
			case 1: // only after
				news = append(news, r)
				want = append(want, pair{nil, r})
			case 2: // both, another version
				r2 := &AdmittedRoute{Key: r.Key}
				olds, news = append(olds, r), append(news, r2)
				want = append(want, pair{r, r2})
			case 3: // shared
				olds, news = append(olds, r), append(news, r)
			}
		}
		var got []pair
		for old, cur := range ChangedByKey(olds, news, RouteKeyOf) {
			got = append(got, pair{old, cur})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: got %d pairs, want %d", step, len(got), len(want))
		}
		if len(want) > 1 {
			n := 0
			for range ChangedByKey(olds, news, RouteKeyOf) {
				if n++; n == 1 {
					break
				}
			}
			if n != 1 {
				t.Fatalf("step %d: the walk went on after break", step)
			}
		}
	}
}
