package daemon

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/status"
)

// sync reads the directory and moves HAProxy towards it. Problems with the
// input are reported and leave the last good state serving; the only error
// returned is a failure to start HAProxy the first time.
func (d *Daemon) sync(ctx context.Context, force bool) error {
	defer d.gc.changed()
	began := time.Now()
	snap, err := d.reader.Read(ctx, d.opts.ConfigDir, d.opts.WatchMode)
	if err != nil {
		d.metrics.SnapshotError()
		d.recordError(fmt.Errorf("read %s: %w", d.opts.ConfigDir, err))
		return nil
	}
	if snap.Hash == d.lastHash && !force && d.desired.Desired != nil {
		return nil
	}
	for _, fe := range snap.Errors {
		d.metrics.SnapshotError()
		d.recordError(fmt.Errorf("%w; its last good content stays in force", fe))
	}
	read := time.Now()
	res := d.loader.Load(d.withLastGood(snap))
	d.logDiagnostics(res.Diagnostics)
	if errs := countErrors(res.Diagnostics); errs > 0 {
		d.recordError(fmt.Errorf("%d problem(s) in %s; first: %s", errs, d.opts.ConfigDir, firstError(res.Diagnostics)))
	}
	loaded := time.Now()
	next, err := d.prepare(d.fitted(res.Desired), d.live.path)
	if err != nil {
		d.recordError(err)
		return nil
	}
	d.log.Debug("snapshot prepared", "files", len(snap.Files), "attempts", snap.Attempts,
		"read", read.Sub(began), "load", loaded.Sub(read), "render", time.Since(loaded))
	d.lastHash, d.lastSnap = snap.Hash, snap
	d.throttle.interval = next.Desired.Router.ReloadInterval

	if d.proc == nil {
		if d.applied.Desired == nil {
			return d.firstStart(ctx, next)
		}
		// HAProxy is down and restarting: the restart loads what is on disk.
		if err := d.writeChecked(ctx, next); err != nil {
			d.writeFailed(err)
			return nil
		}
		d.desired = next
		return nil
	}

	base := d.applied
	base.PendingDeletes = d.pending
	p := plan.Compute(base, next)
	if len(p.Changes) == 0 && !d.throttle.pending {
		d.desired = next
		return nil
	}
	for _, c := range p.Changes {
		d.log.Info("change", "mode", c.Mode.String(), "kind", string(c.Kind), "subject", c.Subject, "detail", c.Detail)
	}
	if p.Reload || d.throttle.pending {
		// A reload is needed (or already waiting): validate, write, and let
		// the throttle coalesce it with anything else that arrives.
		if err := d.writeChecked(ctx, next); err != nil {
			d.writeFailed(err)
			return nil
		}
		d.desired = next
		reasons := reasonStrings(p.Reasons)
		if len(reasons) == 0 {
			reasons = []string{"coalesced with a pending reload"}
		}
		d.throttle.request(reasons...)
		return nil
	}
	d.applyRuntime(ctx, p, next)
	return nil
}

// logDiagnostics logs the problems that were not in the previous snapshot,
// so a tree with a standing warning does not repeat it on every change.
func (d *Daemon) logDiagnostics(ds model.Diagnostics) {
	seen := make(map[string]bool, len(ds))
	for _, diag := range ds {
		line := diag.String()
		seen[line] = true
		if d.loggedDiags[line] {
			continue
		}
		switch diag.Severity {
		case model.SeverityError:
			d.log.Error("config", "diag", line)
		case model.SeverityWarning:
			d.log.Warn("config", "diag", line)
		}
	}
	d.loggedDiags = seen
}

// withLastGood adds, for every file the snapshot could not read, the last
// good content of that path, so a permission error or an oversized file
// does not take its routes down.
func (d *Daemon) withLastGood(snap *snapshot.Snapshot) []model.SourceFile {
	files := snap.Files
	if len(snap.Errors) > 0 {
		files = append([]model.SourceFile(nil), snap.Files...)
		for _, fe := range snap.Errors {
			files = append(files, d.lastGoodUnder(fe.Path)...)
		}
	}
	next := make(map[string]model.SourceFile, len(files))
	for _, f := range files {
		next[f.Path] = f
	}
	d.lastFiles = next
	return files
}

// lastGoodUnder returns the last good files at path or, when path is a
// directory that could not be listed, below it.
func (d *Daemon) lastGoodUnder(path string) []model.SourceFile {
	if f, ok := d.lastFiles[path]; ok {
		return []model.SourceFile{f}
	}
	var out []model.SourceFile
	prefix := strings.TrimSuffix(path, "/") + "/"
	for p, f := range d.lastFiles {
		if strings.HasPrefix(p, prefix) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// prepare renders desired for the bundle directory dir.
func (d *Daemon) prepare(desired *model.Desired, dir string) (plan.State, error) {
	in, err := d.input(desired, dir)
	if err != nil {
		return plan.State{}, err
	}
	b, err := render.Render(in)
	if err != nil {
		return plan.State{}, fmt.Errorf("render: %w", err)
	}
	return plan.State{Desired: desired, Bundle: b, Input: in}, nil
}

func (d *Daemon) input(desired *model.Desired, dir string) (render.Input, error) {
	m, err := certgen.Resolve(desired.Router, d.opts.StateDir, time.Now)
	if err != nil {
		return render.Input{}, err
	}
	return render.Input{
		Desired: desired, Dir: dir, RunDir: d.opts.RunDir,
		DefaultCertificate: m.DefaultCertificate, DefaultDestinationCA: m.DefaultDestinationCA,
		StatsCredentials: m.StatsCredentials,
		Cache:            &d.renderCache,
	}, nil
}

// writeChecked validates next with `haproxy -c` in the candidate directory
// and only then writes it to the live directory. A failing candidate never
// reaches the live files.
func (d *Daemon) writeChecked(ctx context.Context, next plan.State) error {
	cand, err := d.prepare(next.Desired, d.cand.path)
	if err != nil {
		return rejected{err}
	}
	if _, err := d.cand.write(cand.Bundle); err != nil {
		return fmt.Errorf("write candidate: %w", err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := haproxy.Check(checkCtx, d.sup.Binary(), d.cand.path+"/"+render.ConfigFile); err != nil {
		err = fmt.Errorf("candidate rejected, last good config keeps serving: %w", err)
		if checkCtx.Err() != nil {
			return err // timed out: not a verdict on the content
		}
		return rejected{err}
	}
	if err := d.writeLive(next); err != nil {
		return err
	}
	d.unchecked = false // the whole bundle on disk was just validated
	return nil
}

// rejected marks a generation refused for its content (render or
// `haproxy -c`): the same content would be refused again.
type rejected struct{ err error }

func (e rejected) Error() string { return e.err.Error() }
func (e rejected) Unwrap() error { return e.err }

// writeFailed reports a generation that did not reach the disk. Unless
// its content was rejected, the snapshot is forgotten, so the next event
// or resync tries it again: a full disk must not lose a change.
func (d *Daemon) writeFailed(err error) {
	d.recordError(err)
	if !errors.As(err, new(rejected)) {
		d.lastHash = ""
	}
}

func (d *Daemon) writeLive(next plan.State) error {
	start := time.Now()
	if _, err := d.live.write(next.Bundle); err != nil {
		return fmt.Errorf("write live bundle: %w", err)
	}
	d.metrics.ObserveWrite(time.Since(start))
	return nil
}

func (d *Daemon) firstStart(ctx context.Context, next plan.State) error {
	if err := d.writeChecked(ctx, next); err != nil {
		d.writeFailed(err)
		return nil // wait for a better generation
	}
	d.desired = next
	if err := d.start(ctx); err != nil {
		return err
	}
	return nil
}

// start launches HAProxy on the live files, which equal d.desired.
func (d *Daemon) start(ctx context.Context) error {
	proc, err := d.sup.Start(ctx)
	if err != nil {
		return fmt.Errorf("start haproxy: %w", err)
	}
	d.proc = proc
	d.startedAt = time.Now()
	d.throttle.clear() // a fresh HAProxy loaded the newest files
	d.metrics.ObserveStart(time.Now())
	d.unchecked = false
	d.loaded(ctx, []string{"haproxy started"}, false, 0)
	return nil
}

// reload runs the pending reload now.
func (d *Daemon) reload(ctx context.Context) {
	if d.proc == nil || !d.throttle.pending {
		return
	}
	now := time.Now()
	reasons := d.throttle.start(now)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if d.unchecked {
		// The runtime path writes without `haproxy -c` (it would cost more
		// than the change); a fallback reload validates before it loads.
		if err := haproxy.Check(rctx, d.sup.Binary(), d.live.path+"/"+render.ConfigFile); err != nil {
			d.recordError(fmt.Errorf("reload skipped, live config rejected; HAProxy keeps its current state: %w", err))
			d.metrics.ObserveReload(0, reasons, false, time.Now())
			return
		}
		d.unchecked = false
	}
	d.log.Info("reloading haproxy", "reasons", reasons)
	_, err := d.proc.Reload(rctx)
	elapsed := time.Since(now)
	d.metrics.ObserveReload(elapsed, reasons, err == nil, time.Now())
	if err != nil {
		d.recordError(fmt.Errorf("reload failed (will retry): %w", err))
		d.status.Set(func(s *status.Status) {
			s.LastReload = &status.Reload{Time: now, Duration: elapsed, Reasons: reasons, OK: false, Error: err.Error()}
		})
		d.throttle.request(reasons...)
		return
	}
	d.loaded(ctx, reasons, true, elapsed)
}

// loaded records that HAProxy now runs d.desired (after a start or a
// reload), and brings runtime-only state in line with it: servers of routes
// with fewer than two active endpoints have their checks disabled.
func (d *Daemon) loaded(ctx context.Context, reasons []string, reload bool, elapsed time.Duration) {
	d.applied = d.desired
	d.pending = map[model.BackendName]map[model.ServerName]bool{}
	d.housekeepAfter, d.housekeepBackoff = time.Time{}, 0 // a new worker: ask again
	var cmds []string
	for be, servers := range render.UncheckedServers(d.applied.Desired) {
		for _, s := range servers {
			cmds = append(cmds, plan.DisableHealth{Backend: be, Server: s}.Commands()...)
		}
	}
	if len(cmds) > 0 {
		fctx, cancel := context.WithTimeout(ctx, d.opts.RuntimeTimeout)
		resps, err := d.runtime.Execute(fctx, cmds)
		cancel()
		if err == nil {
			err = haproxy.FirstError(resps)
		}
		if err != nil {
			d.recordError(fmt.Errorf("disable health checks after load: %w", err))
		}
	}
	d.published(reasons, reload, elapsed)
}

func (d *Daemon) published(reasons []string, reload bool, elapsed time.Duration) {
	d.generation++
	now := time.Now()
	hash := d.lastHash
	d.metrics.SetConfig(hash, d.generation)
	routes := status.RoutesFrom(d.applied.Desired.Statuses)
	d.metrics.SetRoutes(status.RouteCounts(routes))
	d.status.Set(func(s *status.Status) {
		s.Ready, s.NotReadyReason = true, ""
		s.Generation, s.ConfigHash, s.AppliedAt = d.generation, hash, now
		s.Routes = routes
		if reload {
			s.Reloads++
			s.LastReload = &status.Reload{Time: now, Duration: elapsed, Reasons: reasons, OK: true}
		}
		if d.proc != nil {
			s.HAProxy.PID = d.proc.PID()
		}
	})
	if reload {
		d.log.Info("haproxy loaded", "generation", d.generation, "reasons", reasons, "took", elapsed)
	}
	if d.opts.OnApply != nil {
		d.opts.OnApply(Applied{Generation: d.generation, Snapshot: d.lastSnap, Desired: d.applied.Desired, Reload: reload, Reasons: reasons})
	}
}

func (d *Daemon) recordError(err error) {
	d.log.Error("error", "err", err)
	now := time.Now()
	d.status.Set(func(s *status.Status) { s.LastError = &status.Error{Time: now, Message: err.Error()} })
}

func (d *Daemon) setNotReady(reason string) {
	d.status.Set(func(s *status.Status) { s.Ready, s.NotReadyReason = false, reason })
}

func reasonStrings(rs []plan.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func countErrors(ds model.Diagnostics) int {
	n := 0
	for _, d := range ds {
		if d.Severity == model.SeverityError {
			n++
		}
	}
	return n
}

func firstError(ds model.Diagnostics) string {
	for _, d := range ds {
		if d.Severity == model.SeverityError {
			return d.String()
		}
	}
	return ""
}
