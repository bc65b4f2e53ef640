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
	// failures counts the reloads that failed in a row (failed): each
	// retry waits twice as long as the last, up to maxRetryWait. A failed
	// reload is not free: HAProxy pauses the serving worker's listeners
	// and retries a refused bind for about 2 s before giving up, so
	// retries at the reload interval kept every port closed most of the
	// time.
	failures int
}

// maxRetryWait bounds the wait before retrying a reload that failed.
const maxRetryWait = time.Minute

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
	wait := t.interval
	for range min(t.failures, 16) {
		wait = min(2*wait, maxRetryWait)
	}
	next := t.lastStart.Add(max(wait, t.interval))
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

// failed records that the reload just started failed; succeeded that one
// did.
func (t *throttle) failed()    { t.failures++ }
func (t *throttle) succeeded() { t.failures = 0 }

// clear drops a pending reload that became moot (HAProxy restarted and
// loaded the newest files anyway) without counting as a reload start.
func (t *throttle) clear() { t.pending, t.reasons = false, nil }
