package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
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
	if err != nil && d.interrupted(err) {
		return nil // the read was cut short by the shutdown
	}
	readFailed := d.readFailed // the read before this one
	d.readFailed = err != nil
	d.metrics.SetUnreadable(d.readFailed)
	if err != nil {
		d.metrics.SnapshotError()
		consequence := "the last good state keeps serving"
		if d.proc == nil && d.applied.Desired == nil && d.restored == nil {
			// A first start: there is nothing to keep serving.
			consequence = "nothing is served until it can be read (there is no saved state to serve)"
		}
		d.recordError(fmt.Errorf("read %s: %w; %s", d.opts.ConfigDir, err, consequence))
		if d.proc == nil && d.applied.Desired == nil && d.restored != nil {
			// Nothing to read at start: serve what was last good.
			return d.serveRestored(ctx, "config dir unreadable at start")
		}
		return nil
	}
	// Material that could not be read is read again at every resync,
	// whatever its stamp: a directory above the file made readable
	// leaves the file's own stamp as it was (T48).
	if snap.Hash == d.lastHash && !force && d.desired.Desired != nil && d.materialErr == nil && materialStamp(d.desired.Desired.Router) == d.materialStamp {
		if readFailed && d.inputClean && len(snap.Errors) == 0 {
			// The directory reads again as it did when it was clean
			// (a ..data link pointed away and back): the read error
			// recorded meanwhile is over.
			d.clearError()
		}
		return nil
	}
	fresh := snap.Hash != d.recordedHash
	if fresh {
		d.recordReadErrors(snap)
		d.recordedHash = snap.Hash
	}
	if len(snap.Files) == 0 && d.proc == nil && d.applied.Desired == nil && d.restored == nil {
		// A first start on a directory with nothing to read: most likely
		// not the one meant (a git-sync root, whose link to the checkout
		// is a symlink to a directory, not followed; a ConfigMap not yet
		// populated; files it cannot read). Starting HAProxy would bind
		// the default ports on every address to serve nothing, with
		// status saying all is well.
		hint := ""
		if len(snap.Warnings) > 0 {
			hint = " (" + snap.Warnings[0].Error() + ")"
		}
		msg := fmt.Sprintf("config dir %s has no file to read%s: not starting HAProxy until it has", d.opts.ConfigDir, hint)
		d.recordError(errors.New(msg))
		d.setNotReady("config dir has no file to read")
		// An input error, for the alert on those (and status' list).
		d.metrics.SetInputProblems(1+len(snap.Errors), len(snap.Warnings), 0)
		d.status.Set(func(s *status.Status) {
			s.InputProblems = status.InputProblems{Errors: 1 + len(snap.Errors), Warnings: len(snap.Warnings),
				ErrorList: append([]string{msg}, d.readErrorList...)}
		})
		d.lastHash = ""
		return nil
	}
	if fresh {
		for _, fe := range snap.Warnings {
			d.log.Warn("config", "diag", fe.Error())
		}
	}
	snap = d.holdCutOff(snap)
	files := d.withLastGood(snap)
	read := time.Now()
	// A generation HAProxy refuses is split to find the routes responsible
	// (culprits.go); those are rejected alone and the rest goes again.
	for attempt := 0; ; attempt++ {
		res := d.loader.Evaluate(files)
		d.reportInput(res)
		if res.RouterUnsettled && d.desired.Desired == nil {
			// Never guess the ports: with no good RouterConfig yet, the
			// defaults (80/443/1936 on every address) are not what the
			// operator asked for.
			msg := "the RouterConfig cannot be used and none was good before (or the saved one no longer loads): not starting HAProxy until it is fixed"
			if pid := d.sup.Earlier(); pid != 0 {
				// Status says HAProxy is not running: say what serves.
				msg += fmt.Sprintf("; the HAProxy an earlier haroute left (pid %d) serves its last configuration meanwhile, and no change applies to it", pid)
			}
			d.recordError(errors.New(msg))
			d.setNotReady("RouterConfig invalid")
			d.lastHash = ""
			return nil
		}
		if problems := d.materialProblems(res); len(problems) > 0 && attempt < maxCulpritRounds && d.loader.RefuseRouterConfig(problems) {
			for _, p := range problems {
				d.log.Error("RouterConfig refused: a file it names cannot be used; the last good settings stay in force", "field", p.Field, "err", p.Message)
			}
			continue
		}
		loaded := time.Now()
		gen, err := d.generationOf(res, snap, files)
		if err != nil {
			// Tried again soon, as a write that failed is: a default
			// certificate that cannot be written at start (a full state
			// disk) waited for the resync, a minute, once space was back.
			d.writeFailed(err)
			return nil
		}
		d.log.Debug("snapshot prepared", "files", len(snap.Files), "attempts", snap.Attempts,
			"read", read.Sub(began), "load", loaded.Sub(read), "render", time.Since(loaded))
		d.lastHash = snap.Hash
		if len(d.cutWaiting) > 0 {
			// A held snapshot's hash is what is served, which the
			// directory reads as again once the held file is written
			// back whole: that read must not be passed over (T31), nor a
			// resync should the file's own timer be lost.
			d.lastHash = ""
		}
		if held := d.holdDeletion(snap, gen.state); held != holdNothing {
			d.lastHash = "" // read again when the guard's timer fires
			if d.applied.Desired == nil && d.restored != nil {
				// Held at start: serve the saved state meanwhile, then at
				// once what the directory changes besides the drops
				// (withoutDrops, against the saved state now served). A
				// held generation is never saved: a route added during
				// the hold waited for whatever read came next.
				if err := d.serveRestored(ctx, "the deletion guard holds the directory at start"); err != nil || d.applied.Desired == nil {
					return err
				}
				return d.sync(ctx, true)
			}
			g, ok := d.withoutDrops(gen)
			if !ok {
				return nil
			}
			gen = g
		}
		refused, err := d.advance(ctx, gen)
		if err != nil {
			return err
		}
		if len(refused) == 0 || attempt >= maxCulpritRounds {
			return nil
		}
		for _, c := range refused {
			if c.files != nil {
				continue // refused by refuseFiles: the files' last good content goes
			}
			if c.settings != nil {
				d.loader.RefuseRouterConfig(c.settings)
				for _, p := range c.settings {
					d.log.Error("RouterConfig refused (its listeners cannot be bound, or HAProxy refused it); the last good settings stay in force", "field", p.Field, "err", p.Message)
				}
				continue
			}
			d.loader.Refuse(c.key, c.msg)
			d.log.Error("route refused by haproxy", "route", c.key.String(), "err", c.msg)
		}
	}
}

// recordReadErrors records the files snap could not read: each an error,
// counted as a snapshot error, and those read again since, resolved. The
// same snapshot read again (a resync while the material the RouterConfig
// names cannot be read, a forced one, a write retried) records nothing
// again: its errors were counted and logged when it was new (T49, T51).
func (d *Daemon) recordReadErrors(snap *snapshot.Snapshot) {
	d.readErrors, d.readWarnings = len(snap.Errors), len(snap.Warnings)
	d.readErrorList = d.readErrorList[:0]
	failing := make(map[string]bool, len(snap.Errors))
	for _, fe := range snap.Errors {
		d.metrics.SnapshotError()
		consequence := keptConsequence
		if len(d.lastGoodUnder(fe.Path)) == 0 {
			// A file new in this generation: it never had any.
			consequence = newConsequence
		}
		d.recordError(fmt.Errorf("%w; %s", fe, consequence))
		d.readErrorList = append(d.readErrorList, fe.Error())
		failing[fe.Error()] = true
	}
	// A file read again is over, though others may still fail: its error
	// stood until the whole directory was clean.
	d.resolveErrors(func(msg string) bool {
		for _, c := range []string{keptConsequence, newConsequence} {
			if head, ok := strings.CutSuffix(msg, "; "+c); ok {
				return !failing[head]
			}
		}
		return false
	})
}

// materialProblems returns, as problems of the RouterConfig, the files
// that new settings newly name and cannot be used (certgen.CheckFiles).
// New settings go with their material or not at all: applied with the
// last good material, a clientTLS whose CA file was empty left render
// refusing every later change, and a port moved in the same edit as a
// broken certificate applied half a RouterConfig. A file that breaks
// under unchanged naming keeps its last good content (resolveMaterial),
// also when other settings change: judged again, a broken default
// certificate refused every later edit of the RouterConfig.
func (d *Daemon) materialProblems(res model.Result) []model.SettingsProblem {
	prev := d.loader.Settings()
	if prev == nil || res.Desired == nil || reflect.DeepEqual(*prev, res.Desired.Router) {
		return nil
	}
	var out []model.SettingsProblem
	for _, p := range certgen.CheckFiles(res.Desired.Router) {
		if certgen.Naming(*prev, p.Field) == certgen.Naming(res.Desired.Router, p.Field) {
			continue
		}
		out = append(out, model.SettingsProblem{Field: p.Field, Message: p.Err.Error()})
	}
	return out
}

// generationOf renders an evaluated snapshot: the TLS material it names
// (or the last good), the descriptor budget, the pool's bindings.
func (d *Daemon) generationOf(res model.Result, snap *snapshot.Snapshot, files []model.SourceFile) (generation, error) {
	material, err := d.resolveMaterial(res)
	if err != nil {
		return generation{}, err
	}
	desired, err := d.fitted(res.Desired)
	if err != nil {
		return generation{}, err
	}
	gen := generation{result: res, snap: snap, files: files, material: material, fitted: desired}
	kept := d.keepingMaxConn(desired, res.Desired)
	gen.maxConnKept = kept != desired
	return d.withPool(gen, kept, d.refill)
}

// withPool binds desired's new routes to the pool (topping it up with
// refill) and renders it as gen's state.
func (d *Daemon) withPool(gen generation, desired *model.Desired, refill bool) (generation, error) {
	env := renderEnv{material: gen.material}
	gen.pool = d.bindPool(desired, d.renderInput(desired, d.live.path, env), refill)
	env.spares = gen.pool.spares
	next, err := d.prepare(desired, d.live.path, env)
	if err != nil {
		return gen, err
	}
	gen.state = next
	return gen, nil
}

// maxCulpritRounds bounds how often one sync splits a refused generation:
// each round rejects at least one route, and a route refused on its own
// stays refused until its file changes.
const maxCulpritRounds = 3

// generation is one evaluated snapshot on its way to HAProxy.
type generation struct {
	state    plan.State
	result   model.Result
	snap     *snapshot.Snapshot
	files    []model.SourceFile
	material certgen.Material
	pool     poolState
	// fitted is the desired state with maxconn fitted to the descriptor
	// budget; state renders it with the running maxconn instead when
	// maxConnKept (keepingMaxConn).
	fitted      *model.Desired
	maxConnKept bool
	// held is set when the deletion guard kept routes the directory
	// drops (withoutDrops): what it serves is not the directory's, and
	// is not saved as the last good state. keep are those routes and
	// the rivals that wait on them, served as they were.
	held bool
	keep []model.RouteKey
	// saved is set on the saved last good state served at start
	// (serveRestored).
	saved bool
}

// advance moves HAProxy towards gen. When `haproxy -c` refuses gen, it
// returns the routes responsible, if routes are.
func (d *Daemon) advance(ctx context.Context, gen generation) ([]culprit, error) {
	next := gen.state
	if d.proc == nil && d.applied.Desired == nil {
		return d.coldStart(ctx, gen)
	}
	if d.proc == nil {
		if err := d.writeChecked(ctx, next); err != nil {
			return d.refusedBy(ctx, next, err), nil
		}
		d.accept(gen)
		// HAProxy is down and restarting: the restart loads what is on disk.
		return nil, nil
	}

	base := d.applied
	base.PendingDeletes = d.pending
	p := plan.Compute(base, next)
	if d.refill && p.Reload {
		// A reload of its own (refillPool): the new spares are why.
		p.Reasons = append([]plan.Reason{{Kind: plan.KindPoolRefill}}, p.Reasons...)
	}
	if d.onDisk {
		// HAProxy runs files haroute did not render from what it knows
		// (startOnDisk): a change is written whole and loaded by a
		// reload, never applied as a difference at runtime.
		p.Reload = true
		p.Reasons = append(p.Reasons, plan.Reason{Kind: plan.KindHeal, Subject: "haproxy runs the files left on disk"})
	}
	// Only a reload asks whether the pool is low: counting 10k routes by
	// class is not for every runtime change.
	refill := p.Reload && (gen.pool.low(next.Desired) || gen.pool.hasRetired() || gen.pool.hasKept())
	if p.Reload && (refill || gen.maxConnKept) {
		// A reload anyway: it loads a fresh descriptor fit, tops the
		// pool up and drops the backends of deleted routes.
		if g, err := d.withPool(gen, gen.fitted, refill || d.refill); err == nil {
			g.maxConnKept = false
			gen, next = g, g.state
			p = plan.Compute(base, next)
		}
	}
	if p.Reload && d.applied.Desired != nil {
		// Before anything is written: a reload HAProxy cannot bind
		// would fail, and each failure closes every port for seconds.
		problems, moves := unbindable(&d.applied.Desired.Router, &next.Desired.Router, d.sup.OwnListeners)
		if len(problems) > 0 {
			d.unbound = &next.Desired.Router
			return []culprit{{settings: problems}}, nil
		}
		if len(moves) > 0 {
			d.log.Warn("listeners move to another address of the same port: haproxy pauses the old ones while the reload binds the new, and refuses connections for that moment", "listeners", moves)
		}
	}
	if len(p.Changes) == 0 && !d.throttle.pending && !d.onDisk {
		// Nothing for HAProxy to do, but the generation may still differ
		// in what status shows: a route rejected or gone stale. The same
		// tree read again (SIGHUP, a resync) is no new generation: the
		// one HAProxy runs stays, as dashboards and alerts key on it.
		same := d.applied.Desired != nil && d.appliedFrom != nil && gen.snap != nil &&
			gen.snap.Hash == d.appliedFrom.Hash && sameStatuses(next.Desired.Statuses, d.applied.Desired.Statuses)
		d.accept(gen)
		d.applied, d.appliedFrom, d.appliedWant = next, d.desiredFrom, d.desiredWant
		if !same {
			d.published(nil, false, 0)
		}
		return nil, nil
	}
	// mode is what the change alone would take; via is how it is to go
	// in: a runtime change in a plan that reloads goes in by the reload
	// (its commands are not sent first). Logged as planned: the outcome
	// ("applied at runtime", "reloading haproxy", or the error) follows.
	via := "runtime"
	if p.Reload {
		via = "reload"
	}
	for i, c := range p.Changes {
		level := slog.LevelInfo
		if i >= maxChangesLogged {
			level = slog.LevelDebug
		}
		d.log.Log(ctx, level, "change planned", "mode", c.Mode.String(), "via", via, "kind", string(c.Kind), "subject", c.Subject, "detail", c.Detail)
	}
	if n := len(p.Changes) - maxChangesLogged; n > 0 {
		// A tree's worth of changes (a namespace deleted, a first sync
		// at 10k routes) ran into journald's rate limit, taking the
		// lines that matter after it along.
		d.log.Info("more changes planned, listed at debug level", "more", n, "of", len(p.Changes))
	}
	if p.Reload || d.throttle.pending || touchesCertificates(p) {
		// A reload is needed (or already waiting): validate, write, and let
		// the throttle coalesce it with anything else that arrives. New
		// certificate files are validated too, so the live directory never
		// holds what `haproxy -c` refuses.
		if err := d.writeChecked(ctx, next); err != nil {
			return d.refusedBy(ctx, next, err), nil
		}
		d.accept(gen)
		if !p.Reload && !d.throttle.pending {
			d.applyRuntime(ctx, p, next)
			return nil, nil
		}
		reasons := p.Reasons
		if len(reasons) == 0 {
			reasons = []plan.Reason{{Kind: plan.KindCoalesced}}
		}
		d.throttle.request(reasons...)
		d.applyWhatDoesNotWait(ctx, &p)
		return nil, nil
	}
	// Servers, weights, map entries: the files are staged before the
	// commands and committed after them (stageLive), so a change costs
	// about what the runtime API does.
	if err := d.stageLive(next); err != nil {
		d.writeFailed(err)
		return nil, nil
	}
	d.accept(gen)
	d.applyRuntime(ctx, p, next)
	return nil, nil
}

// stageLive makes temporary files for next's changed files in the live
// directory, their space reserved (bundleDir.stage); flushLive writes,
// syncs and renames them into place, after the runtime commands.
//
// DESIGN §5: the files on disk equal what runtime built whenever HAProxy
// loads them. HAProxy loads them only when this daemon starts or reloads
// it, on the same goroutine as every change, and each of those flushes
// first (start, reload, shutdown; heal and the reload path go through
// writeChecked, which writes the newest state whole). The writing and
// fsync of a multi-megabyte haproxy.cfg and its rename thus leave the
// path of the change, while what can refuse a write (a full disk, a
// read-only or unwritable directory) still shows in the staging, before
// anything is applied: such a change is not applied and is retried, as before. Until
// the commit the directory holds the previous state, whole, so a crash of
// the machine in between leaves a consistent (older) config, which the
// next start brings up to date. The main loop commits once no other change
// waits.
//
// Why not a server-state-file or per-backend files: HAProxy 2.6's
// load-server-state-from-file only restores the state of servers that the
// configuration declares (servers made by `add server` are not created
// from it), and a backend cannot be split over several files. The
// rendered haproxy.cfg has to name the servers anyway; only when it lands
// can move.
func (d *Daemon) stageLive(next plan.State) error {
	start := time.Now()
	if err := d.live.stage(next.Bundle); err != nil {
		return fmt.Errorf("write live bundle: %w", err)
	}
	d.staging = time.Since(start)
	d.log.Debug("live files staged", "took", d.staging)
	d.unchecked = true // written without `haproxy -c`: a reload checks first
	return nil
}

// flushLive commits the live bundle that stageLive staged, if any. On
// failure it reports the error and the bundle stays staged: the next
// flush tries again.
func (d *Daemon) flushLive() error {
	if !d.live.pending() {
		return nil
	}
	start := time.Now()
	if _, err := d.live.commit(); err != nil {
		err = fmt.Errorf("write live bundle: %w; HAProxy runs the new state, the files on disk are behind", err)
		d.recordError(err)
		return err
	}
	d.metrics.ObserveWrite(d.staging + time.Since(start))
	d.log.Debug("live files committed", "took", time.Since(start))
	return nil
}

// flushForLoad makes the live directory hold d.desired whole before
// HAProxy loads it: what is staged is committed, and files changed behind
// haroute's back (bundleDir.forgetDrift) are written again.
func (d *Daemon) flushForLoad() error {
	if err := d.flushLive(); err != nil {
		return err
	}
	if d.desired.Bundle == nil || !d.live.forgetDrift() {
		return nil
	}
	d.log.Warn("live files were changed or removed behind haroute's back; writing them again", "dir", d.live.path)
	if err := d.writeLive(d.desired); err != nil {
		d.recordError(err)
		return err
	}
	return nil
}

// touchesCertificates reports whether a runtime plan installs certificate
// or CA files, or crt-list lines.
func touchesCertificates(p plan.Plan) bool {
	for _, op := range p.Ops {
		switch op.(type) {
		case plan.SetCert, plan.AddCert, plan.AddCrtListLine, plan.ReplaceCrtListLine, plan.RehostCert, plan.AddCAFile:
			return true
		}
	}
	return false
}

// refusedBy handles a generation that did not reach the disk: it reports
// err and, when `haproxy -c` refused the content, looks for the routes
// responsible.
func (d *Daemon) refusedBy(ctx context.Context, next plan.State, err error) []culprit {
	d.writeFailed(err)
	var rej rejected
	var whole *haproxy.CheckError
	if !errors.As(err, &rej) || !rej.checked || !errors.As(err, &whole) {
		return nil
	}
	cs, cerr := d.culprits(ctx, next, whole.Error())
	if cerr != nil {
		d.recordError(fmt.Errorf("looking for the routes haproxy refuses: %w", cerr))
		d.retryLater()
		return nil
	}
	if len(cs) > 0 {
		for _, c := range cs {
			if c.files != nil {
				d.refuseFiles(next, c)
			}
		}
		d.lastHash = "" // the same snapshot goes again without them
		return cs
	}
	// Refused, and neither a route nor the settings are to blame: the
	// cause is outside the directory (a file changed behind haroute's
	// back, the binary). Left as it was, the generation waited for the
	// next change of the directory, however long, with nothing retrying.
	d.retryLater()
	return nil
}

// accept records gen as what the directory asks for and what is on disk:
// the loader remembers its objects as last good, the throttle takes its
// reload interval, and the last good state is saved for restarts. Files
// written with the running maxconn (gen.maxConnKept) stay marked until a
// start or reload loads a fresh fit.
func (d *Daemon) accept(gen generation) {
	if !gen.saved {
		d.writeFailures = 0 // the directory's own state reached the disk
		d.behindWrite = false
		d.showBehind()
	}
	d.maxConnKept = d.maxConnKept || gen.maxConnKept
	d.desired = gen.state
	d.desiredFrom = gen.snap
	d.desiredWant = gen.result.Desired.Router.MaxConnections
	d.pool = gen.pool
	d.lastSync = time.Now()
	d.material = &gen.material
	d.throttle.interval = gen.state.Desired.Router.ReloadInterval
	if gen.held {
		// What serves is not the directory's: the routes it drops are
		// kept, and a rival of one waits on its served version. Those
		// keep their last good versions, and their files are set aside
		// (withLastGood); the rest of the result is last good. A
		// restart while the guard holds keeps the saved state that
		// still has the routes as its baseline.
		kept := d.loader.CommitHeld(gen.result, gen.keep)
		maps.DeleteFunc(d.goneFiles, func(path string, _ model.SourceFile) bool { return !kept[path] })
	} else {
		d.loader.Commit(gen.result)
		d.goneFiles = nil
		d.saveLastGood(gen)
	}
	d.clearErrorIfClean(gen.result)
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
		default:
			// Why a route answers 503 (no endpoints) or is not served
			// at all (another router's namespace): once, when it appears.
			d.log.Info("config", "diag", line)
		}
	}
	d.loggedDiags = seen
}

// withLastGood adds, for every file the snapshot could not read, the last
// good content of that path, so a permission error or an oversized file
// does not take its routes down.
func (d *Daemon) withLastGood(snap *snapshot.Snapshot) []model.SourceFile {
	files := snap.Files
	var unread map[string]string
	if len(snap.Errors) > 0 {
		files = append([]model.SourceFile(nil), snap.Files...)
		unread = map[string]string{}
		for _, fe := range snap.Errors {
			for _, f := range d.lastGoodUnder(fe.Path) {
				files = append(files, f)
				unread[f.Path] = fe.Error()
			}
		}
	}
	d.loader.Unread(unread)
	next := make(map[string]model.SourceFile, len(files))
	for _, f := range files {
		next[f.Path] = f
		delete(d.goneFiles, f.Path)
	}
	for p, f := range d.lastFiles {
		if _, ok := next[p]; !ok {
			// Set aside until a generation without it is accepted
			// whole: a file whose deletion the guard holds, back but
			// unreadable, still has its last good content.
			if d.goneFiles == nil {
				d.goneFiles = map[string]model.SourceFile{}
			}
			d.goneFiles[p] = f
		}
	}
	d.lastFiles = next
	return files
}

// lastGoodUnder returns the last good files at path or, when path is a
// directory that could not be listed, below it.
func (d *Daemon) lastGoodUnder(path string) []model.SourceFile {
	for _, files := range []map[string]model.SourceFile{d.lastFiles, d.goneFiles} {
		if f, ok := files[path]; ok {
			return []model.SourceFile{f}
		}
	}
	var out []model.SourceFile
	prefix := strings.TrimSuffix(path, "/") + "/"
	for _, files := range []map[string]model.SourceFile{d.lastFiles, d.goneFiles} {
		for p, f := range files {
			if strings.HasPrefix(p, prefix) {
				out = append(out, f)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// renderEnv is what a render takes besides the desired state.
type renderEnv struct {
	material certgen.Material
	spares   []model.AdmittedRoute
}

// envOf is the environment a rendered state was made in.
func envOf(s plan.State) renderEnv {
	return renderEnv{material: materialOf(s), spares: s.Input.Spares}
}

// renderInput is the render input for desired in the bundle directory dir.
// Only the live directory's renders are cached. The candidate directory is
// rendered for `haproxy -c` before reloads and certificate installs, rare
// next to changes, and a cache table of its own would keep a second copy
// of every route's output: about 30 MB of heap at 10k routes, for a cold
// render of about 50 ms of CPU where `haproxy -c` takes several times that.
func (d *Daemon) renderInput(desired *model.Desired, dir string, env renderEnv) render.Input {
	m := env.material
	var cache *render.Cache
	if dir == d.live.path {
		cache = &d.renderCache
	}
	return render.Input{
		Desired: desired, Dir: dir, RunDir: d.opts.RunDir, Sockets: d.sockets,
		DefaultCertificate: m.DefaultCertificate, DefaultDestinationCA: m.DefaultDestinationCA,
		StatsCredentials: m.StatsCredentials, Spares: env.spares,
		ClientCA: m.ClientCA, ErrorPages: m.ErrorPages,
		Cache: cache,
	}
}

// prepare renders desired for the bundle directory dir.
func (d *Daemon) prepare(desired *model.Desired, dir string, env renderEnv) (plan.State, error) {
	in := d.renderInput(desired, dir, env)
	b, err := render.Render(in)
	if err != nil {
		return plan.State{}, fmt.Errorf("render: %w", err)
	}
	return plan.State{Desired: desired, Bundle: b, Input: in}, nil
}

// refillPool tops a low pool up with a reload of its own, once changes
// have been quiet for a while, at most once a minute.
func (d *Daemon) refillPool(ctx context.Context) error {
	d.pool = d.pool.drained(d.pending)
	now := time.Now()
	if d.proc == nil || d.applied.Desired == nil || d.throttle.pending || now.Sub(d.lastSync) < poolQuiet ||
		now.Sub(d.lastRefill) < time.Minute || !d.pool.low(d.desired.Desired) {
		return nil
	}
	d.lastRefill = now
	d.log.Info("pool of spare backends low; topping it up")
	d.refill = true
	defer func() { d.refill = false }()
	return d.sync(ctx, true)
}

// resolveMaterial reads the TLS material res's settings name. When a file
// it names is broken, the last good material keeps serving (stale): a
// bad certificate file must not block every other change. That counts
// as an input error and a stale object, reported at the field naming
// the file, as `haroute check` reports it: a failed rotation of the
// default certificate raised none of the alerts on those.
func (d *Daemon) resolveMaterial(res model.Result) (certgen.Material, error) {
	s := res.Desired.Router
	d.materialStamp = materialStamp(s)
	m, err := certgen.ResolveOver(s, d.opts.StateDir, d.now, d.material)
	if d.material != nil && len(d.refusedMaterial) > 0 {
		err = errors.Join(err, d.withoutRefusedFiles(&m))
	}
	d.materialErr = err
	if err == nil {
		d.materialOver("")
		return m, nil
	}
	pos := materialPos(res) // reads the files again: only on this path
	for _, f := range materialFields {
		if _, ok := d.refusedMaterial[f.field]; ok && pos == "" {
			pos = fieldPos(res, f.field) // the file reads well: HAProxy refused it
		}
	}
	err = fmt.Errorf("%sRouterConfig: %w", pos, err)
	if d.material == nil {
		return m, err
	}
	if msg := fmt.Sprintf("%v; the last good certificate material keeps serving", err); msg != d.materialLogged {
		d.materialOver(msg)
		d.recordError(errors.New(msg))
	} else {
		// Read again at each resync while it fails (sync): the error
		// stands, logged once.
		d.status.RecordError(time.Now(), msg)
	}
	c := d.inputCounts
	d.metrics.SetInputProblems(c.errors+1, c.warnings, c.notes)
	d.metrics.SetStale(c.stale + 1)
	stale := pos + "RouterConfig: the last good content of the file it names serves"
	d.status.Set(func(st *status.Status) {
		st.InputProblems.Errors = c.errors + 1
		st.StaleObjects = append(slices.Clone(st.StaleObjects), stale)
	})
	return m, nil
}

// materialOver resolves the material error last logged, when next (the
// one standing now, "" for none) is another: fixed, moved to another
// line of the RouterConfig, or worded otherwise. It stood until the
// whole input was clean, beside its successor (T51).
func (d *Daemon) materialOver(next string) {
	if last := d.materialLogged; last != "" && last != next {
		d.resolveErrors(func(msg string) bool { return msg == last })
	}
	d.materialLogged = next
}

// refusedContent is content HAProxy refused, by its hash, with why.
type refusedContent struct{ hash, why string }

// materialFields are the items of Material a file may hold whose content
// reaches haproxy.cfg, by the RouterConfig field naming them.
var materialFields = []struct {
	field string
	of    func(*certgen.Material) *[]byte
}{
	{certgen.FieldDefaultCertificate, func(m *certgen.Material) *[]byte { return &m.DefaultCertificate }},
	{certgen.FieldDefaultDestinationCA, func(m *certgen.Material) *[]byte { return &m.DefaultDestinationCA }},
	{certgen.FieldClientCA, func(m *certgen.Material) *[]byte { return &m.ClientCA }},
}

// refuseFiles records the content of the files of c (a culprit found in
// next) as refused until they change: a rotated default certificate that
// Go takes and OpenSSL does not. Their last good content serves
// meanwhile, as for a file that cannot be read (withoutRefusedFiles);
// without this, every later change was refused with the file.
func (d *Daemon) refuseFiles(next plan.State, c culprit) {
	now := materialOf(next)
	if d.refusedMaterial == nil {
		d.refusedMaterial = map[string]refusedContent{}
	}
	for _, f := range materialFields {
		if slices.Contains(c.files, f.field) {
			d.refusedMaterial[f.field] = refusedContent{hash: contentHash(*f.of(&now)), why: c.msg}
			d.log.Error("a file the RouterConfig names was refused by haproxy; its last good content keeps serving", "field", f.field, "err", c.msg)
		}
	}
}

// withoutRefusedFiles puts the last good content in m in place of content
// HAProxy refused (refuseFiles), and says so, or returns nil.
func (d *Daemon) withoutRefusedFiles(m *certgen.Material) error {
	var errs []error
	for _, f := range materialFields {
		r, ok := d.refusedMaterial[f.field]
		if !ok {
			continue
		}
		content := f.of(m)
		if contentHash(*content) != r.hash {
			delete(d.refusedMaterial, f.field) // the file changed: judged afresh
			continue
		}
		*content = *f.of(d.material)
		errs = append(errs, fmt.Errorf("%s: HAProxy refused the file's content: %s", f.field, r.why))
	}
	return errors.Join(errs...)
}

// materialPos is "file:line:col: " of the RouterConfig field naming the
// first file its settings name that cannot be used, "" when none is
// found.
func materialPos(res model.Result) string {
	ps := certgen.CheckFiles(res.Desired.Router)
	if len(ps) == 0 {
		return ""
	}
	return fieldPos(res, ps[0].Field)
}

// fieldPos is "file:line:col: " of field in res's RouterConfig, "" when
// it has none.
func fieldPos(res model.Result, field string) string {
	if len(res.Objects.RouterConfigs) == 0 {
		return ""
	}
	src := res.Objects.RouterConfigs[0].Source
	pos, ok := src.Lookup(field)
	if !ok {
		pos = src.Pos
	}
	return pos.String() + ": "
}

// materialStamp identifies the files s names (certificates, CAs, stats
// credentials, error pages) by path, inode, size, modification and change
// time. They live outside the config dir, so no event announces a
// rotation: the periodic resync compares stamps, and reads them again
// when one moved. The change time moves with a chmod or chown too: a
// rotated certificate installed unreadable and then made readable was
// otherwise never read again (T48).
func materialStamp(s model.Settings) string {
	paths := []string{s.DefaultCertificateFile, s.DefaultDestinationCAFile, s.StatsCredentialsFile}
	if s.ClientTLS != nil {
		paths = append(paths, s.ClientTLS.CAFile)
	}
	if s.ErrorPagesDir != "" {
		for _, name := range model.ErrorPageFiles {
			paths = append(paths, filepath.Join(s.ErrorPagesDir, name))
		}
		sort.Strings(paths[len(paths)-len(model.ErrorPageFiles):])
	}
	var b strings.Builder
	for _, p := range paths {
		if p == "" {
			continue
		}
		b.WriteString(p)
		if fi, err := os.Stat(p); err == nil {
			var ino uint64
			var ctime syscall.Timespec
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				ino, ctime = st.Ino, st.Ctim
			}
			fmt.Fprintf(&b, " %d %d %d %d.%d", ino, fi.Size(), fi.ModTime().UnixNano(), ctime.Sec, ctime.Nsec)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// writeChecked validates next with `haproxy -c` in the candidate directory
// and only then writes it to the live directory. A failing candidate never
// reaches the live files.
func (d *Daemon) writeChecked(ctx context.Context, next plan.State) error {
	cand, err := d.prepare(next.Desired, d.cand.path, envOf(next))
	if err != nil {
		return rejected{err: err}
	}
	if _, err := d.cand.write(cand.Bundle); err != nil {
		return fmt.Errorf("write candidate: %w", err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := haproxy.Check(checkCtx, d.sup.Binary(), d.cand.path+"/"+render.ConfigFile); err != nil {
		if !errors.As(err, new(*haproxy.CheckError)) {
			// Timed out, killed, or the binary gone (a package upgrade
			// renames a new one over it): no verdict on the content,
			// which is tried again (writeFailed) rather than refused
			// until it changes.
			return fmt.Errorf("candidate not checked, last good config keeps serving: %w", err)
		}
		return rejected{err: fmt.Errorf("candidate rejected, last good config keeps serving: %w", err), checked: true}
	}
	if err := d.writeLive(next); err != nil {
		return err
	}
	d.unchecked = false // the whole bundle on disk was just validated
	d.onDisk = false    // and is what the next start or reload loads
	return nil
}

// rejected marks a generation refused for its content (render or
// `haproxy -c`): the same content would be refused again.
type rejected struct {
	err     error
	checked bool // `haproxy -c` refused it
}

func (e rejected) Error() string { return e.err.Error() }
func (e rejected) Unwrap() error { return e.err }

// writeFailed reports a generation that did not reach the disk. Unless
// its content was rejected, the snapshot is forgotten, so the next event
// or resync tries it again: a full disk must not lose a change.
func (d *Daemon) writeFailed(err error) {
	d.recordError(err)
	d.behindWrite = true
	d.showBehind()
	if !errors.As(err, new(rejected)) {
		d.retryLater()
	}
}

// showBehind publishes whether HAProxy is behind the directory: its
// latest generation refused or not written (behindWrite), or a reload
// that would load it failing or skipped (behindReload).
func (d *Daemon) showBehind() { d.metrics.SetBehind(d.behindWrite || d.behindReload) }

// retryLater forgets the snapshot, so that it is read and tried again
// soon: 5 s, doubling with each retry that fails, up to the resync. A
// disk that stays full is not retried (and logged) every few seconds for
// hours. Changes that fail meanwhile neither put the retry off nor
// lengthen the wait.
func (d *Daemon) retryLater() {
	d.lastHash = ""
	wait := min(writeRetry<<min(d.writeFailures, 10), max(d.opts.Resync, writeRetry))
	if at := time.Now().Add(wait); d.writeRetryAt.IsZero() || at.Before(d.writeRetryAt) {
		d.writeRetryAt = at
	}
}

// writeRetry is how soon a generation that could not be written is first
// tried again.
const writeRetry = 5 * time.Second

func (d *Daemon) writeLive(next plan.State) error {
	start := time.Now()
	if _, err := d.live.write(next.Bundle); err != nil {
		return fmt.Errorf("write live bundle: %w", err)
	}
	d.metrics.ObserveWrite(time.Since(start))
	return nil
}

// coldStart brings HAProxy up on gen when it has never run under this
// daemon. HAProxy validates the files as it loads them, so they are not
// checked with `haproxy -c` first: that parsed the same configuration
// twice, about a third of the start at 10k routes. Nothing serves yet (or
// an earlier haroute's HAProxy, which keeps serving until a start
// succeeds), so a refused start loses nothing. Only then is the candidate
// checked, to tell refused content, whose routes are found and rejected
// so that the rest starts, from a start that failed for another reason (a
// port taken), which is returned as before. gen becomes last good only
// once HAProxy loaded it.
func (d *Daemon) coldStart(ctx context.Context, gen generation) ([]culprit, error) {
	// Restored settings are what an HAProxy left running holds, and a
	// start takes that HAProxy over: listeners the new settings add are
	// bound here first. A takeover that failed to bind had already
	// replaced the master socket, and the start then waited 30 s for an
	// earlier master it could no longer reach.
	if prev := d.loader.Settings(); prev != nil {
		if problems, _ := unbindable(prev, &gen.state.Desired.Router, d.sup.OwnListeners); len(problems) > 0 {
			d.unbound = &gen.state.Desired.Router
			return []culprit{{settings: problems}}, nil
		}
	}
	if err := d.writeLive(gen.state); err != nil {
		d.writeFailed(err)
		if d.restored != nil && !gen.saved {
			// The saved last good state's files are on disk already (an
			// earlier run wrote them, and stage writes nothing that is
			// there): starting on them takes an earlier haroute's
			// HAProxy over, where waiting for space left it serving
			// unsupervised, or reaped after a stop, every route down.
			serr := d.serveRestored(ctx, "the new state cannot be written at start")
			d.recordError(err) // accepting the saved state cleared it
			return nil, serr
		}
		d.startOnDisk(ctx, gen, err)
		return nil, nil
	}
	proc, err := d.sup.TryStart(ctx)
	if err != nil {
		if cerr := d.writeChecked(ctx, gen.state); cerr != nil {
			d.sup.ReleaseListeners()
			return d.refusedBy(ctx, gen.state, cerr), nil
		}
		if ctx.Err() == nil && !cannotBind(err) {
			// Neither the files nor the ports: a worker killed as it
			// started (the OOM killer, say). Blamed on the RouterConfig,
			// valid settings were refused until their file changed; as
			// a fatal error, it left an earlier HAProxy unsupervised
			// (T39). Tried once more first, on the listening sockets
			// held meanwhile.
			d.log.Warn("haproxy did not start, for no fault found in its files or ports; starting it once more", "err", err)
			proc, err = d.sup.TryStart(ctx)
		}
	}
	if err != nil {
		d.sup.ReleaseListeners()
		if ctx.Err() == nil {
			if c := d.startRefusedSettings(gen, err); c != nil {
				return []culprit{*c}, nil
			}
			// Nothing to fall back on: say which field names what could
			// not be bound, as a running router does, beside HAProxy's
			// message, which names only a line of haproxy.cfg. A port
			// this router's HAProxy holds (one being taken over) is not
			// the reason.
			if problems, _ := unbindable(nil, &gen.state.Desired.Router, d.sup.OwnListeners); len(problems) > 0 {
				return nil, fmt.Errorf("start haproxy: %s%s: %w", fieldPos(gen.result, problems[0].Field), problems[0].Field, err)
			}
		}
		return nil, fmt.Errorf("start haproxy: %w", err)
	}
	d.accept(gen)
	d.started(proc)
	return nil, nil
}

// startOnDisk starts HAProxy on the live files as they are, when neither
// gen nor the saved last good state can be written there (a full or
// read-only state disk, and no saved state, or one that is stale or
// unreadable, so that its files are not those on disk). Those files are
// the last a haroute wrote and HAProxy loaded: starting on them takes an
// earlier haroute's HAProxy over rather than leave it serving
// unsupervised (or reaped after a stop: every route down). What they hold
// is not known, so gen stands for it, and every change goes through a
// whole write and a reload (d.onDisk) until one has been written.
func (d *Daemon) startOnDisk(ctx context.Context, gen generation, werr error) {
	if _, err := os.Stat(filepath.Join(d.live.path, render.ConfigFile)); err != nil {
		return // nothing on disk to start on
	}
	d.log.Warn("the state cannot be written at start; starting haproxy on the files left on disk", "dir", d.live.path)
	proc, err := d.sup.Start(ctx)
	if err != nil {
		d.recordError(fmt.Errorf("start haproxy on the files left on disk: %w", err))
		return
	}
	failures := d.writeFailures
	d.accept(gen)
	// Not written: still behind, and the write's backoff goes on.
	d.writeFailures, d.behindWrite = failures, true
	d.showBehind()
	d.onDisk = true
	d.started(proc)
	d.recordError(werr) // accepting gen cleared it
}

// startRefusedSettings pins on the RouterConfig a start that `haproxy -c`
// would have passed (a port another process holds, an address the host
// lacks) when its settings differ from the last good ones, restored from
// the state dir: the restart then comes up on those, as a running router
// would have kept them, rather than not at all. It returns nil when there
// are no other settings to fall back on.
func (d *Daemon) startRefusedSettings(gen generation, err error) *culprit {
	prev := d.loader.Settings()
	if prev == nil || reflect.DeepEqual(*prev, gen.state.Desired.Router) {
		return nil
	}
	field := "spec"
	if cannotBind(err) {
		field = "spec.bindOptions"
		d.unbound = &gen.state.Desired.Router
	}
	return &culprit{settings: []model.SettingsProblem{{Field: field,
		Message: "HAProxy could not start with these settings; the last good settings stay in force: " + err.Error()}}}
}

// cannotBind reports whether HAProxy failed to bind a listener: a port
// another process holds, an address the host lacks.
func cannotBind(err error) bool { return strings.Contains(err.Error(), "cannot bind") }

// start launches HAProxy on the live files, which equal d.desired.
func (d *Daemon) start(ctx context.Context) error {
	// HAProxy loads the files: they must hold what runtime built. Were
	// the disk failing, a stale start still beats no HAProxy; the error is
	// reported and the write retried.
	_ = d.flushForLoad()
	proc, err := d.sup.Start(ctx)
	if err != nil {
		return fmt.Errorf("start haproxy: %w", err)
	}
	d.started(proc)
	return nil
}

// started records that proc runs d.desired.
func (d *Daemon) started(proc *haproxy.Process) {
	d.proc = proc
	d.startedAt = time.Now()
	d.maxConnKept = false // HAProxy loaded files it accepted whole
	d.throttle.clear()    // a fresh HAProxy loaded the newest files
	d.throttle.succeeded()
	d.metrics.ObserveStart(time.Now())
	d.unchecked = false
	// Whatever else stands (an error in the directory keeps loaded from
	// clearing the last error), an exit is over once HAProxy runs again.
	d.resolveErrors(func(msg string) bool { return strings.HasPrefix(msg, haproxyExited) })
	d.loaded([]string{"haproxy started"}, false, 0)
}

// reload runs the pending reload now.
func (d *Daemon) reload(ctx context.Context) {
	if d.proc == nil || !d.throttle.pending {
		return
	}
	now := time.Now()
	if err := d.flushForLoad(); err != nil {
		// A reload would load files that lack what runtime built: wait,
		// spaced like any reload, until they are written.
		d.throttle.request(d.throttle.start(now)...)
		return
	}
	if d.unbindableNow(ctx) {
		return
	}
	reasons := d.throttle.start(now)
	kinds := reasonKinds(reasons)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if d.unchecked {
		// The runtime path writes without `haproxy -c` (it would cost more
		// than the change); a fallback reload validates before it loads.
		if err := haproxy.Check(rctx, d.sup.Binary(), d.live.path+"/"+render.ConfigFile); err != nil {
			// Asked again, spaced by the failure backoff: a check can fail
			// for a while (an OOM-killed or timed-out `haproxy -c`, the
			// binary replaced by an upgrade), and dropping the reload here
			// left HAProxy behind the directory until an unrelated change.
			err = fmt.Errorf(reloadSkipped+", live config rejected (will retry); HAProxy keeps its current state: %w", err)
			d.status.Set(func(s *status.Status) {
				s.LastReload = &status.Reload{Time: now, Reasons: reasonStrings(reasons), OK: false, Error: err.Error()}
			})
			d.recordError(err)
			d.metrics.ObserveReload(0, kinds, false, time.Now())
			d.behindReload = true
			d.showBehind()
			d.throttle.failed()
			d.throttle.request(reasons...)
			return
		}
		d.unchecked = false
	}
	texts := reasonStrings(reasons)
	d.log.Info("reloading haproxy", "reasons", texts)
	_, err := d.proc.Reload(rctx)
	elapsed := time.Since(now)
	d.metrics.ObserveReload(elapsed, kinds, err == nil, time.Now())
	if err != nil {
		d.recordError(fmt.Errorf(reloadFailed+" (will retry): %w", err))
		d.behindReload = true
		d.showBehind()
		d.status.Set(func(s *status.Status) {
			s.LastReload = &status.Reload{Time: now, Duration: elapsed, Reasons: texts, OK: false, Error: err.Error()}
		})
		d.throttle.failed()
		d.throttle.request(reasons...)
		d.applyWhatDoesNotWait(ctx, nil)
		return
	}
	d.throttle.succeeded()
	d.maxConnKept = false // the reload rendered a fresh fit
	d.loaded(texts, true, elapsed)
}

// How the errors of a reload that failed, or was skipped, begin: one that
// succeeds resolves them (loaded).
const (
	reloadFailed  = "reload failed"
	reloadSkipped = "reload skipped"
)

// unbindableNow checks, as the reload is about to run, the listeners the
// pending settings add: the check when the change was planned can be a
// reload interval old, and a port taken since made the reload fail, and
// every retry close every port for seconds. When one cannot be bound, the
// RouterConfig is refused at its field, the live files go back to what
// runs, and the directory is read again with the refusal in force.
func (d *Daemon) unbindableNow(ctx context.Context) bool {
	if d.applied.Desired == nil || d.desired.Desired == nil {
		return false
	}
	problems, _ := unbindable(&d.applied.Desired.Router, &d.desired.Desired.Router, d.sup.OwnListeners)
	if len(problems) == 0 || !d.loader.RefuseRouterConfig(problems) {
		return false
	}
	d.unbound = &d.desired.Desired.Router
	// Accepted, so committed as last good: back to what HAProxy runs.
	d.loader.RestoreSettings(d.applied.Desired.Router)
	d.rcAnchor = d.rcAnchorBefore
	for _, p := range problems {
		d.log.Error("RouterConfig refused: haproxy cannot bind it; the last good settings stay in force", "field", p.Field, "err", p.Message)
	}
	d.throttle.clear()
	// The reload is dropped, not behind: back to what runs.
	d.behindReload = false
	d.showBehind()
	if err := d.writeLive(d.applied); err != nil {
		d.recordError(err)
	} else {
		d.desired = d.applied
	}
	d.lastHash = ""
	if err := d.sync(ctx, true); err != nil {
		d.recordError(err)
	}
	return true
}

// loaded records that HAProxy now runs d.desired (after a start or a
// reload). Nothing runtime-only is left to set: servers carry `check` only
// where checks run (render.ServerArgs).
func (d *Daemon) loaded(reasons []string, reload bool, elapsed time.Duration) {
	d.applied, d.appliedFrom, d.appliedWant = d.desired, d.desiredFrom, d.desiredWant
	d.behindReload = false
	d.showBehind()
	clear(d.servedSlots) // a new worker counts from zero
	d.pending = map[model.BackendName]map[model.ServerName]string{}
	clear(d.lingering)
	clear(d.drainLooks)
	clear(d.drainWait)
	d.housekeepAfter, d.housekeepBackoff = time.Time{}, 0 // a new worker: ask again
	// A reload or heal that failed before is over now, whatever else
	// stands (an error in the directory keeps the rest below from
	// clearing anything).
	d.resolveErrors(func(msg string) bool {
		return strings.HasPrefix(msg, reloadFailed) || strings.HasPrefix(msg, reloadSkipped) || strings.HasPrefix(msg, "heal")
	})
	if d.inputClean && d.writeRetryAt.IsZero() && !d.live.pending() && d.unbound == nil {
		// HAProxy runs the accepted state, and nothing else stands: a
		// start or reload that failed before is over. It stood as the
		// last error until the next change.
		d.clearError()
	}
	d.published(reasons, reload, elapsed)
}

func (d *Daemon) published(reasons []string, reload bool, elapsed time.Duration) {
	d.generation++
	d.served.Store(d.applied.Desired)
	if d.material != nil {
		d.certs.setDefault(d.material.DefaultCertificate)
	}
	d.certsCheckedAt = time.Time{} // a new generation: check its certificates at the next tick
	now := time.Now()
	var hash string
	if d.appliedFrom != nil {
		hash = d.appliedFrom.Hash
	}
	d.metrics.SetGeneration(d.generation)
	statuses := d.applied.Desired.Statuses
	d.metrics.SetRoutes(status.RouteCounts(statuses))
	d.status.SetRoutes(statuses)
	d.status.Set(func(s *status.Status) {
		s.Ready, s.NotReadyReason = true, ""
		s.Generation, s.ConfigHash, s.AppliedAt = d.generation, hash, now
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
		d.opts.OnApply(Applied{Generation: d.generation, Snapshot: d.appliedFrom, Desired: d.applied.Desired, Reload: reload, Reasons: reasons})
	}
}

// What a file that cannot be read leaves in force, in its error.
const (
	keptConsequence = "its last good content stays in force"
	newConsequence  = "it contributes nothing until it can be read"
)

// resolveErrors marks the standing errors gone says are over as
// resolved, in status and in the log: an ERROR followed by silence left
// the operator reading the journal to wonder whether it still stood.
func (d *Daemon) resolveErrors(gone func(msg string) bool) {
	d.logResolved(d.status.ResolveErrors(time.Now(), gone))
}

// clearError marks every standing error resolved.
func (d *Daemon) clearError() {
	d.logResolved(d.status.ClearError(time.Now()))
}

func (d *Daemon) logResolved(msgs []string) {
	for _, m := range msgs {
		d.log.Info("resolved", "was", m)
	}
}

func (d *Daemon) recordError(err error) {
	if d.interrupted(err) {
		d.log.Info("change interrupted by shutdown", "err", err)
		return
	}
	d.log.Error("error", "err", err)
	d.status.RecordError(time.Now(), err.Error())
}

// interrupted reports whether err is the shutdown cancelling the change
// in flight (a command, read or check cut short), not a fault of the
// input or of HAProxy. It is not an error to report: the files on disk
// hold every accepted change, and the next haroute's HAProxy loads them
// whole. Anything else that fails while stopping (the last write of the
// live files, say) still is.
func (d *Daemon) interrupted(err error) bool {
	return d.stopping != nil && d.stopping.Err() != nil && errors.Is(err, context.Canceled)
}

func (d *Daemon) setNotReady(reason string) {
	d.status.Set(func(s *status.Status) { s.Ready, s.NotReadyReason = false, reason })
}

// reasonKinds are the kinds of reasons, what metrics count reloads by.
func reasonKinds(rs []plan.Reason) []plan.Kind {
	out := make([]plan.Kind, len(rs))
	for i, r := range rs {
		out[i] = r.Kind
	}
	return out
}

func reasonStrings(rs []plan.Reason) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func firstError(ds model.Diagnostics) string {
	for _, d := range ds {
		if d.Severity == model.SeverityError {
			return d.String()
		}
	}
	return ""
}

// sameStatuses reports whether two generations' route statuses read the
// same. Admission hands out the very same slice, or the same status
// pointers, while nothing changed (model.admitOnce).
func sameStatuses(a, b []*model.RouteStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !a[i].Same(b[i]) {
			return false
		}
	}
	return true
}

// maxChangesLogged is how many changes of one plan are logged at info.
const maxChangesLogged = 20
