package model

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Conflicts decided from the last decision (conflictsFromLast) must be
// exactly those a fresh decision makes: random routes are added, deleted
// and moved between a few shared hosts, paths, namespaces, ages and
// terminations, and after every change the losers and their messages are
// compared with a decision from empty scratch. Both the incremental path
// and the fallback to a full decision must be exercised.
func TestConflictsFromLastMatchFullDecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type route struct {
		ns, host, path string
		age            int
		passthrough    bool
		wildcard       bool
	}
	routes := map[RouteKey]route{}
	randomRoute := func() route {
		r := route{
			ns:   fmt.Sprintf("ns%d", rng.IntN(3)),
			host: fmt.Sprintf("h%d.example.com", rng.IntN(60)),
			age:  rng.IntN(5),
		}
		if rng.IntN(4) == 0 {
			r.path = []string{"/a", "/b"}[rng.IntN(2)]
		}
		r.passthrough = rng.IntN(10) == 0
		r.wildcard = rng.IntN(80) == 0
		return r
	}
	for i := range 40 {
		routes[RouteKey{Namespace: "ns0", Name: fmt.Sprintf("r%03d", i)}] = randomRoute()
	}
	candidates := func() []*candidate {
		keys := slices.SortedFunc(maps.Keys(routes), RouteKey.Compare)
		out := make([]*candidate, len(keys))
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, k := range keys {
			r := routes[k]
			k.Namespace = r.ns
			c := &candidate{check: &routeCheck{}, owned: true, admitted: &AdmittedRoute{
				Key: k, CreationTimestamp: base.Add(time.Duration(r.age) * time.Hour),
				Host: r.host, Path: r.path, Wildcard: r.wildcard,
			}}
			if r.passthrough {
				c.admitted.Termination = TerminationPassthrough
			}
			out[i] = c
		}
		// Keys in RouteKey order, as validateSorted hands them over.
		slices.SortFunc(out, func(a, b *candidate) int { return a.admitted.Key.Compare(b.admitted.Key) })
		return out
	}
	losers := func(cands []*candidate) []string {
		var out []string
		for _, c := range cands {
			for _, d := range c.check.diags {
				out = append(out, c.admitted.Key.String()+": "+d.Message)
			}
		}
		return out
	}

	kept := &admitScratch{}
	decideConflicts(candidates(), kept, false, nil)
	incremental, full, lost := 0, 0, 0
	for step := range 3000 {
		// Sorted: map order would make the seeded walk differ from run
		// to run, and with it how often each path is taken.
		keys := slices.SortedFunc(maps.Keys(routes), RouteKey.Compare)
		switch op := rng.IntN(4); {
		case op == 0 || len(keys) < 10:
			routes[RouteKey{Namespace: "ns0", Name: fmt.Sprintf("r%03d", rng.IntN(400))}] = randomRoute()
		case op == 1:
			delete(routes, keys[rng.IntN(len(keys))])
		default:
			k := keys[rng.IntN(len(keys))]
			r := routes[k]
			n := randomRoute()
			switch rng.IntN(3) {
			case 0:
				r.host = n.host
			case 1:
				r.path = n.path
			default:
				r.age, r.passthrough = n.age, n.passthrough
			}
			routes[k] = r
		}

		got := candidates()
		// Would the last decision serve? Asked of a copy, since a hit
		// updates the host counts.
		probe := *kept
		probe.claimants = maps.Clone(kept.claimants)
		if _, ok := probe.conflictsFromLast(conflictKeysOf(got), false); ok {
			incremental++
		} else {
			full++
		}
		decideConflicts(got, kept, false, nil)
		want := candidates()
		decideConflicts(want, &admitScratch{}, false, nil)
		if g, w := losers(got), losers(want); !slices.Equal(g, w) {
			t.Fatalf("step %d: from the last decision:\n  %q\nfrom scratch:\n  %q", step, g, w)
		}
		lost += len(losers(want))
	}
	if incremental < 500 || full < 100 || lost == 0 {
		t.Errorf("%d decisions from the last, %d in full, %d losses in all: the test no longer exercises both paths", incremental, full, lost)
	}
	t.Logf("%d decisions from the last, %d in full", incremental, full)
}

// conflictKeysOf is the keys decideConflicts builds from the valid
// candidates.
func conflictKeysOf(cands []*candidate) []conflictKey {
	var keys []conflictKey
	for _, c := range cands {
		if !c.check.bad {
			keys = append(keys, conflictKey{key: c.admitted.Key, created: c.admitted.CreationTimestamp,
				host: c.claimHost(), path: c.admitted.Path, passthrough: c.admitted.Termination == TerminationPassthrough})
		}
	}
	return keys
}
