package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
)

// The run dir is haroute's own: one haroute holds it (a lock file), and
// what lives in it — the master and admin sockets, the TLS hop socket —
// is checked every housekeeping tick and brought back when something
// deleted it (a tmpfiles cleaner, an operator's rm -rf): without the hop
// socket every TLS route fails, without the admin socket every change
// falls back to a reload. While it is broken, /readyz says so.

// healState is what heal remembers between ticks.
type healState struct {
	broken string // the reason last found; "" when all is well
	// after and backoff space out replacements that fail (up to a
	// minute), so a HAProxy that cannot start is not retried every tick.
	after   time.Time
	backoff time.Duration
}

// lockRunDir takes the run dir's lock for as long as the daemon runs: a
// second haroute on the same run dir fails here, before it touches
// anything.
func (d *Daemon) lockRunDir() error {
	lock, err := haproxy.LockRunDir(d.opts.RunDir)
	if err != nil {
		return err
	}
	d.runLock = lock
	return nil
}

// heal checks the run dir and HAProxy's sockets, and brings back what is
// missing: the run dir (0700) and its lock first; then a master socket
// alone comes back with a reload (signalled: the master CLI is what is
// missing), anything else with a new HAProxy taking over from the running
// one, since a reload's worker inherits listening unix sockets whose path
// is gone.
func (d *Daemon) heal(ctx context.Context) {
	if d.proc == nil {
		return
	}
	broken := d.proc.Sockets()
	if broken == nil {
		if d.healing.broken != "" {
			d.log.Info("haproxy sockets healed")
		}
		d.healing = healState{}
		return
	}
	reason := "haproxy sockets " + broken.Error()
	d.setNotReady(reason)
	if reason != d.healing.broken {
		d.recordError(fmt.Errorf("%s; healing", reason))
		d.healing.broken = reason
	}
	if time.Now().Before(d.healing.after) {
		return
	}
	// The lock file went with a deleted run dir; Refresh recreates both.
	if err := d.runLock.Refresh(); err != nil {
		d.healFailed(fmt.Errorf("heal run dir: %w", err))
		return
	}
	var se *haproxy.SocketsError
	if errors.As(broken, &se) && se.MasterOnly {
		if !d.throttle.pending {
			d.throttle.request(plan.Reason{Kind: plan.KindHeal, Subject: reason})
		}
		return
	}
	d.replace(ctx, "heal: "+reason)
}

// replace starts a new HAProxy on the live files that takes over from the
// running one. On failure the running one keeps serving, and the next
// tick tries again.
func (d *Daemon) replace(ctx context.Context, reason string) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if d.unchecked {
		// As for a reload: the runtime path wrote without `haproxy -c`.
		if err := haproxy.Check(rctx, d.sup.Binary(), d.live.path+"/"+render.ConfigFile); err != nil {
			d.recordError(fmt.Errorf("heal skipped, live config rejected: %w", err))
			return
		}
		d.unchecked = false
	}
	d.log.Warn("replacing haproxy", "reason", reason, "pid", d.proc.PID())
	proc, err := d.sup.Replace(rctx, d.proc)
	if err != nil {
		d.healFailed(fmt.Errorf("heal: replace haproxy: %w", err))
		return
	}
	d.proc = proc
	d.startedAt = time.Now()
	d.throttle.clear() // the new HAProxy loaded the newest files
	d.metrics.ObserveStart(time.Now())
	d.loaded(ctx, []string{reason}, false, 0)
}

// healFailed records a failed heal and spaces out the next try.
func (d *Daemon) healFailed(err error) {
	d.healing.backoff = min(max(2*d.healing.backoff, time.Second), time.Minute)
	d.healing.after = time.Now().Add(d.healing.backoff)
	d.recordError(fmt.Errorf("%w (next try in %v)", err, d.healing.backoff))
}
