package daemon

import (
	"slices"
	"time"

	"github.com/haroute/haroute/internal/plan"
)

// throttle decides when a requested reload may run (DESIGN §5): the first
// reload after a quiet period runs at once; later ones wait until interval
// has passed since the previous reload started; requests in between
// coalesce into one. It holds no clock: callers pass now.
type throttle struct {
	interval  time.Duration
	lastStart time.Time // zero: no reload yet
	pending   bool
	reasons   []plan.Reason
}

// request records that a reload is needed for reasons.
func (t *throttle) request(reasons ...plan.Reason) {
	t.pending = true
	for _, r := range reasons {
		if !slices.Contains(t.reasons, r) {
			t.reasons = append(t.reasons, r)
		}
	}
}

// due reports when the pending reload may start: now, a later time, or
// ok=false when nothing is pending.
func (t *throttle) due(now time.Time) (at time.Time, ok bool) {
	if !t.pending {
		return time.Time{}, false
	}
	if t.lastStart.IsZero() {
		return now, true
	}
	next := t.lastStart.Add(t.interval)
	if next.Before(now) {
		return now, true
	}
	return next, true
}

// start marks the pending reload as started at now and returns its reasons.
func (t *throttle) start(now time.Time) []plan.Reason {
	reasons := t.reasons
	t.pending, t.reasons, t.lastStart = false, nil, now
	return reasons
}

// clear drops a pending reload that became moot (HAProxy restarted and
// loaded the newest files anyway) without counting as a reload start.
func (t *throttle) clear() { t.pending, t.reasons = false, nil }
