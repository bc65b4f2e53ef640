package daemon

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// A drained server HAProxy will not delete yet for its idle connections
// is retried quietly; only when that lasts a minute is it a warning, once
// a minute. Any other refusal is a warning at once.
func TestLingeringDrainedServerWarnsOnlyWhenItLasts(t *testing.T) {
	d := &Daemon{pending: map[model.BackendName]map[model.ServerName]string{}, lingering: map[string]time.Time{}, drainLooks: map[string]drainLook{}}
	be, s := model.BackendName("be_http:ns:a"), model.ServerName("ep_10.0.0.1_80")
	idle := errors.New("del server be_http:ns:a/ep_10.0.0.1_80: Server still has connections attached to it, cannot remove it.")
	t0 := time.Now()
	d.markPending(be, s, "")
	for _, step := range []struct {
		at   time.Duration
		err  error
		want slog.Level
	}{
		{0, idle, slog.LevelDebug},
		{30 * time.Second, idle, slog.LevelDebug},
		{61 * time.Second, idle, slog.LevelWarn},
		{62 * time.Second, idle, slog.LevelDebug}, // warned: the next minute starts
		{122 * time.Second, idle, slog.LevelWarn},
		{123 * time.Second, errors.New("del server: No such server."), slog.LevelWarn},
	} {
		if got := d.lingerLevel(be, s, step.err, t0.Add(step.at)); got != step.want {
			t.Errorf("at +%v (%v): level %v, want %v", step.at, step.err, got, step.want)
		}
	}
	d.unmarkPending(be, s)
	if len(d.lingering) != 0 {
		t.Errorf("a deleted server is still remembered: %v", d.lingering)
	}
}

// A backend whose drained servers still have connections is looked at
// again after a delay that doubles from a second to eight, and at once
// again when its servers are gone.
func TestDrainWaitBacksOff(t *testing.T) {
	d := &Daemon{pending: map[model.BackendName]map[model.ServerName]string{}, drainWait: map[model.BackendName]drainWait{}, drainLooks: map[string]drainLook{}}
	be, s := model.BackendName("be_http:ns:a"), model.ServerName("ep_10.0.0.1_80")
	d.markPending(be, s, "")
	t0 := time.Now()
	var got []time.Duration
	at := t0
	for range 5 {
		d.waitDrain(be, at)
		d.waitDrain(be, at) // a second reason in the same round
		got = append(got, d.drainWait[be].at.Sub(at))
		at = d.drainWait[be].at
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	d.unmarkPending(be, s)
	if _, ok := d.drainWait[be]; ok {
		t.Error("a backend with no server left to drain is still put off")
	}
}
