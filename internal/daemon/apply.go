package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/metrics"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/status"
)

// applyRuntime applies a runtime plan: the commands, then a read-back. Any
// error or disagreement falls back to a reload, which restores the on-disk
// truth.
//
// The caller has accepted next and either written it to the live
// directory or staged it there (stageLive): every start or reload commits
// it before HAProxy loads it.
func (d *Daemon) applyRuntime(ctx context.Context, p plan.Plan, next plan.State) {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, d.opts.RuntimeTimeout)
	defer cancel()
	if d.proc != nil {
		var stop func()
		rctx, stop = d.proc.Watch(rctx)
		defer stop()
	}
	if err := d.execute(rctx, p.Ops); err != nil {
		d.fallback(metrics.FallbackCommandFailed, err)
		return
	}
	d.log.Debug("runtime ops sent", "took", time.Since(start))
	if err := d.verify(rctx, p, next); err != nil {
		d.fallback(metrics.FallbackReadBack, err)
		return
	}
	d.applied, d.appliedFrom, d.appliedWant = next, d.desiredFrom, d.desiredWant
	counts := map[string]int{}
	for _, op := range p.Ops {
		counts[opName(op)]++
	}
	for op, n := range counts {
		d.metrics.RuntimeUpdate(op, n)
	}
	d.status.Set(func(s *status.Status) { s.RuntimeUpdates += uint64(len(p.Ops)) })
	d.log.Info("applied at runtime", "ops", len(p.Ops), "took", time.Since(start))
	d.published(nil, false, 0)
}

// execute sends the ops in order, batching plain commands over one
// connection; an op whose last commands need HAProxy's answer (a map
// replacement's version from `prepare map`, a crt-list line's number)
// sends what comes before, asks, and then sends them.
func (d *Daemon) execute(ctx context.Context, ops []plan.Op) error {
	var emptying []string
	for _, op := range ops {
		if r, ok := op.(plan.RemoveServer); ok {
			emptying = append(emptying, string(r.Backend))
		}
	}
	if len(emptying) > 0 {
		d.sup.Emptying(emptying)
	}
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := d.runtime.Apply(ctx, batch)
		batch = batch[:0]
		return err
	}
	for _, op := range ops {
		if q, ok := plan.Queried(op); ok {
			batch = append(batch, q.Before()...)
			if err := flush(); err != nil {
				return err
			}
			resps, err := d.runtime.Apply(ctx, []string{q.Query()})
			if err != nil {
				return fmt.Errorf("%s: %w", q.Query(), err)
			}
			after, err := q.After(resps[0].Output)
			if err != nil {
				return err
			}
			batch = append(batch, after...)
			if err := flush(); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
		} else if c, ok := op.(plan.CommandOp); ok {
			batch = append(batch, c.Commands()...)
		} else {
			return fmt.Errorf("unknown runtime op %T", op)
		}
		switch o := op.(type) {
		case plan.RemoveServer:
			d.markPending(o.Backend, o.Server, o.Options)
		case plan.ReenableServer:
			d.unmarkPending(o.Backend, o.Server)
		}
	}
	return flush()
}

// markPending notes server s of backend be as drained, with the options
// it keeps meanwhile.
func (d *Daemon) markPending(be model.BackendName, s model.ServerName, options string) {
	if d.pending[be] == nil {
		d.pending[be] = map[model.ServerName]string{}
	}
	d.pending[be][s] = options
	d.drainLooks[serverKey(be, s)] = drainLook{quietSince: time.Now(), failed: -1}
}

// serverKey is "backend/server", how lingering and drainLooks name a
// server.
func serverKey(be model.BackendName, s model.ServerName) string { return string(be) + "/" + string(s) }

// unmarkPending notes server s of backend be as back, or gone.
func (d *Daemon) unmarkPending(be model.BackendName, s model.ServerName) {
	delete(d.pending[be], s)
	delete(d.lingering, serverKey(be, s))
	delete(d.drainLooks, serverKey(be, s))
	if len(d.pending[be]) == 0 {
		delete(d.drainWait, be)
		delete(d.pending, be)
	}
}

// verify reads back every backend and map the plan touched.
func (d *Daemon) verify(ctx context.Context, p plan.Plan, next plan.State) error {
	exp := plan.Expect(withPending(next, d.pending), p)
	names := make([]string, 0, len(exp.Servers))
	for be := range exp.Servers {
		names = append(names, string(be))
	}
	slices.Sort(names)
	states, err := d.runtime.ServersStates(ctx, names)
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	observed := make(map[model.BackendName][]plan.ObservedServer, len(exp.Servers))
	for name, states := range states {
		be := model.BackendName(name)
		for _, s := range states {
			admin := plan.AdminReady
			if s.AdminState.Maint() {
				admin = plan.AdminMaint
			}
			observed[be] = append(observed[be], plan.ObservedServer{
				Name: model.ServerName(s.Name), Addr: s.Address, Port: s.Port, Weight: s.Weight,
				Admin: admin, Checked: s.CheckState&haproxy.CheckEnabled != 0,
			})
		}
	}
	observedMaps := make(map[string][]render.MapEntry, len(exp.Maps))
	for path := range exp.Maps {
		entries, err := d.runtime.ShowMap(ctx, path)
		if err != nil {
			return fmt.Errorf("read back %s: %w", path, err)
		}
		for _, e := range entries {
			observedMaps[path] = append(observedMaps[path], render.MapEntry{Key: e.Key, Value: e.Value})
		}
	}
	var edited map[string]plan.ObservedMap
	if len(exp.Edited) > 0 {
		keys := make(map[string][]string, len(exp.Edited))
		for path, e := range exp.Edited {
			keys[path] = e.Keys()
		}
		probes, err := d.runtime.ProbeMaps(ctx, keys)
		if err != nil {
			return fmt.Errorf("read back: %w", err)
		}
		edited = make(map[string]plan.ObservedMap, len(probes))
		for path, p := range probes {
			o := plan.ObservedMap{Entries: p.Entries, Matches: make([]*render.MapEntry, len(p.Matches))}
			for i, m := range p.Matches {
				if m != nil {
					o.Matches[i] = &render.MapEntry{Key: m.Key, Value: m.Value}
				}
			}
			edited[path] = o
		}
	}
	return plan.Verify(exp, observed, observedMaps, edited)
}

func withPending(s plan.State, pending map[model.BackendName]map[model.ServerName]string) plan.State {
	s.PendingDeletes = pending
	return s
}

// fallback converges through a reload when the runtime path failed. The
// files on disk already hold the desired state.
// kind is the metrics label (metrics.Fallback*); the reload's reason keeps
// its typed kind, runtime-fallback, with the error as its subject.
func (d *Daemon) fallback(kind string, err error) {
	if d.interrupted(err) {
		d.log.Info("runtime update interrupted by shutdown; the files on disk hold it", "err", err)
		return
	}
	reason := plan.Reason{Kind: plan.KindRuntimeFallback, Subject: err.Error()}
	d.log.Warn("runtime update failed; falling back to a reload", "reason", reason.String())
	d.metrics.RuntimeFallback(kind)
	d.status.Set(func(s *status.Status) { s.Fallbacks++ })
	d.recordError(fmt.Errorf("%s", reason))
	d.throttle.request(reason)
}

// housekeepBudget bounds one round of housekeeping, which runs on the main
// loop: a healthy HAProxy answers in milliseconds.
const housekeepBudget = time.Second

// housekeep deletes drained servers and refreshes the process counts,
// once a second. When HAProxy's sockets do not answer, it backs off
// (doubling up to a minute), so changes are not stuck behind a hung
// socket a second at a time; any answer resets the back-off.
func (d *Daemon) housekeep(ctx context.Context) {
	now := time.Now()
	if d.proc == nil || now.Before(d.housekeepAfter) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, housekeepBudget)
	defer cancel()
	deleted := d.deletePending(cctx)
	observed := d.observeProcs(cctx)
	if deleted && observed {
		d.housekeepBackoff = 0
		return
	}
	if pids := d.proc.ResumeStopped(); len(pids) > 0 {
		// Stopped, not hung: it answers again once it runs.
		d.log.Warn("haproxy processes were stopped (SIGSTOP); resumed them", "pids", pids)
		return
	}
	d.housekeepBackoff = min(max(2*d.housekeepBackoff, time.Second), time.Minute)
	d.housekeepAfter = now.Add(d.housekeepBackoff)
	d.log.Warn("haproxy sockets did not answer housekeeping; backing off", "for", d.housekeepBackoff)
}

// deletePending deletes drained servers once they carry no connections, so
// long-lived connections are never cut to tidy up, and have been quiet
// (drainQuiet). It reports false when HAProxy did not answer.
func (d *Daemon) deletePending(ctx context.Context) bool {
	if len(d.pending) == 0 {
		return true
	}
	now := time.Now()
	backends := make([]string, 0, len(d.pending))
	for be := range d.pending {
		if w, ok := d.drainWait[be]; ok && now.Before(w.at) {
			continue
		}
		backends = append(backends, string(be))
	}
	if len(backends) == 0 {
		return true
	}
	slices.Sort(backends)
	conns, err := d.runtime.BackendsConns(ctx, backends)
	if err != nil {
		return false
	}
	type drained struct {
		be model.BackendName
		s  model.ServerName
	}
	var cmds []string
	var gone []drained
	for _, name := range backends {
		be := model.BackendName(name)
		busy := false
		for s := range d.pending[be] {
			u, ok := conns[name][string(s)]
			key := serverKey(be, s)
			switch look := d.drainLooks[key]; {
			case !ok:
				// Gone already (a reload dropped it); the next reload
				// clears the list anyway.
				d.unmarkPending(be, s)
			case u.Conns > 0 || u.Failed != look.failed:
				d.drainLooks[key] = drainLook{quietSince: now, failed: u.Failed}
				busy = true
			case now.Sub(look.quietSince) < d.drainQuiet(u.Failed):
				busy = true // a request may wait to retry on it
			default:
				cmds = append(cmds, plan.DeleteServerCommand(be, s))
				gone = append(gone, drained{be, s})
			}
		}
		if busy {
			d.waitDrain(be, now)
		}
	}
	if len(cmds) == 0 {
		return true
	}
	// Independent commands: one refused does not stop the others.
	resps, err := d.runtime.Execute(ctx, cmds)
	for i, resp := range resps {
		if rerr := resp.Err(); rerr != nil {
			d.log.Log(ctx, d.lingerLevel(gone[i].be, gone[i].s, rerr, time.Now()), "delete drained server",
				"backend", gone[i].be, "server", gone[i].s, "err", rerr)
			d.waitDrain(gone[i].be, now)
			continue
		}
		d.unmarkPending(gone[i].be, gone[i].s)
		d.metrics.RuntimeUpdate("del-server", 1)
	}
	return err == nil || len(resps) > 0
}

// drainQuiet is how long a drained server must carry no connection, and
// see no connection to it fail, before it is deleted. A request whose
// connection to it failed (a pod gone, refusing) waits a second before
// its retry, holding the server while no count shows it, and HAProxy 2.6
// deleted the server under it: the request then used it freed, and the
// worker crashed (an audit: 6 crashes in 50 s, every connection of every
// route cut; HAProxy 2.9 refuses such a deletion). Most failures count
// (ServerUse.Failed), but one whose request goes to another server
// counts only at that redispatch, after the second; and the retry before
// it may be one more connection attempt, seen only by a look during it.
// So a server that ever failed must be quiet for a connect timeout and
// two such seconds. One that never did can be held only by a connection
// it was making when drained: in its sessions at the first look, or
// failed before it and redispatched, which counts, within the second
// after; a look 1.5 s after the first sees it.
func (d *Daemon) drainQuiet(failed int) time.Duration {
	if failed == 0 {
		return 1500 * time.Millisecond
	}
	connect := model.DefaultConnectTimeout
	if r := d.applied.Desired; r != nil && r.Router.ConnectTimeout > 0 {
		connect = r.Router.ConnectTimeout
	}
	return connect + 3*time.Second
}

// drainLook is what the last look at a drained server saw.
type drainLook struct {
	quietSince time.Time // since when it carried nothing and nothing changed
	failed     int       // its failures then (ServerUse.Failed); -1 before a look
}

// drainWait is when a backend whose drained servers still had
// connections in use, or whose deletion HAProxy refused (2.6 keeps idle
// keep-alive connections to a drained server, and refuses to delete it
// until they time out), is looked at again, and the delay that set it.
// Each look is a `show stat` on the main loop; with a hundred servers
// draining (a burst of endpoint changes under keep-alive traffic)
// looking at all of them every second held changes up by 50–100 ms. The
// delay doubles from the housekeeping tick to maxDrainWait while the
// connections last.
type drainWait struct {
	at    time.Time
	delay time.Duration
}

const maxDrainWait = 8 * time.Second

// waitDrain puts off the next look at be's drained servers, once per
// look.
func (d *Daemon) waitDrain(be model.BackendName, now time.Time) {
	w := d.drainWait[be]
	if w.at.After(now) {
		return // put off already in this round
	}
	w.delay = min(max(2*w.delay, time.Second), maxDrainWait)
	w.at = now.Add(w.delay)
	d.drainWait[be] = w
}

// lingerWarn is how long a drained server may keep idle connections
// before its refused deletion is a warning.
const lingerWarn = time.Minute

// lingerLevel is the level to log a refused deletion of a drained server
// at. Idle keep-alive connections to it, which show in no session count,
// make HAProxy refuse ("still has connections attached"); it closes them
// within its pool-purge-delay (5 s by default) or when the client side
// ends, and the next round deletes the server: routine, unless it lasts
// lingerWarn, and then a warning once per lingerWarn.
func (d *Daemon) lingerLevel(be model.BackendName, s model.ServerName, err error, now time.Time) slog.Level {
	if !strings.Contains(err.Error(), "still has connections attached") {
		return slog.LevelWarn
	}
	key := serverKey(be, s)
	first, ok := d.lingering[key]
	if !ok || now.Sub(first) >= lingerWarn {
		d.lingering[key] = now
	}
	if ok && now.Sub(first) >= lingerWarn {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// observeProcs publishes how many HAProxy workers run, old ones included:
// the number that grows when reloads pile up. It reports false when a
// socket did not answer in time (not when a reply could not be read).
func (d *Daemon) observeProcs(ctx context.Context) bool {
	info, err := d.proc.Master().ShowProc(ctx)
	if err != nil {
		return false
	}
	d.metrics.SetProcesses(len(info.Workers), len(info.OldWorkers))
	hinfo, infoErr := d.inspector.Info(ctx)
	d.status.Set(func(s *status.Status) {
		s.HAProxy.PID = info.Master.PID
		s.HAProxy.Workers = pids(info.Workers)
		s.HAProxy.OldWorkers = pids(info.OldWorkers)
		if infoErr == nil {
			s.HAProxy.Version, s.HAProxy.MaxConn, s.HAProxy.CurrConns = hinfo.Version, hinfo.MaxConn, hinfo.CurrConns
		}
	})
	return infoErr == nil || ctx.Err() == nil
}

// forgetProcs clears what observeProcs published once HAProxy has exited:
// status and metrics went on naming the dead master and its worker while
// a restart failed.
func (d *Daemon) forgetProcs() {
	d.metrics.SetProcesses(0, 0)
	d.status.Set(func(s *status.Status) { s.HAProxy = status.HAProxy{} })
}

func pids(ps []haproxy.Proc) []int {
	out := make([]int, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.PID)
	}
	return out
}

// opName is the metrics label of an op kind.
func opName(op plan.Op) string {
	switch op.(type) {
	case plan.AddServer:
		return "add-server"
	case plan.RemoveServer:
		return "drain-server"
	case plan.ReenableServer:
		return "reenable-server"
	case plan.SetWeight:
		return "set-weight"
	case plan.MapReplace:
		return "map-replace"
	case plan.ACLReplace:
		return "acl-replace"
	case plan.MapEdit:
		return "map-edit"
	case plan.SetCert:
		return "set-cert"
	case plan.RehostCert:
		return "rehost-cert"
	case plan.AddCert:
		return "add-cert"
	case plan.DeleteCert:
		return "delete-cert"
	case plan.AddCrtListLine:
		return "add-crt-list-line"
	case plan.AddCAFile:
		return "add-ca-file"
	case plan.DeleteCAFile:
		return "delete-ca-file"
	case plan.DeleteCrtListLine:
		return "delete-crt-list-line"
	case plan.ReplaceCrtListLine:
		return "replace-crt-list-line"
	case plan.SetDynamicCookieKey:
		return "set-cookie-key"
	default:
		return "other"
	}
}
