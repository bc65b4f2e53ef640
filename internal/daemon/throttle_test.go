package daemon

import (
	"reflect"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/plan"
)

// r is a reason whose text is s.
func r(s string) plan.Reason { return plan.Reason{Kind: plan.Kind(s)} }

func TestThrottle(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	th := throttle{interval: 5 * time.Second}

	if _, ok := th.due(t0); ok {
		t.Fatal("nothing pending, yet due")
	}
	// Leading edge: the first reload after a quiet period runs at once.
	th.request(r("route added: a/b"))
	if at, ok := th.due(t0); !ok || !at.Equal(t0) {
		t.Fatalf("first reload due at %v (%v), want now", at, ok)
	}
	if got := th.start(t0); !reflect.DeepEqual(got, []plan.Reason{r("route added: a/b")}) {
		t.Fatalf("reasons = %v", got)
	}
	// A burst inside the interval coalesces into one reload at t0+5s.
	th.request(r("route added: a/c"))
	th.request(r("route added: a/d"), r("route added: a/c"))
	at, ok := th.due(t0.Add(time.Second))
	if !ok || !at.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("second reload due at %v, want t0+5s", at)
	}
	if got := th.start(at); !reflect.DeepEqual(got, []plan.Reason{r("route added: a/c"), r("route added: a/d")}) {
		t.Fatalf("coalesced reasons = %v", got)
	}
	// After a quiet period longer than the interval, at once again.
	th.request(r("x"))
	later := t0.Add(time.Minute)
	if at, _ := th.due(later); !at.Equal(later) {
		t.Fatalf("after quiet period due at %v, want now", at)
	}
}
