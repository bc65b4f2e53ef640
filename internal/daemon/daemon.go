// Package daemon is the reconcile loop: it turns "the directory may have
// changed" into a consistent snapshot, a desired state and a bundle, and
// keeps one HAProxy in step with it — through the runtime API when the plan
// allows, through a validated, throttled reload when it must.
//
// One goroutine (Run) owns all mutable state; the watcher, HAProxy's exit
// and the timers only send it events.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/metrics"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/paths"
	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/status"
	"github.com/haroute/haroute/internal/watch"
)

// Where the daemon keeps its sockets and its state unless Options say
// otherwise: the directories the systemd unit makes writable.
const (
	DefaultRunDir   = paths.RunDir
	DefaultStateDir = paths.StateDir
	// StateLockFile, in the state dir, is locked while a haroute uses it.
	StateLockFile = "haroute.lock"
)

// Options configures a daemon. Zero values get the defaults noted.
type Options struct {
	ConfigDir string
	WatchMode snapshot.Mode // "" = auto
	// RunDir holds the master and admin sockets and the internal TLS hop
	// socket (mode 0700). Default /run/haroute.
	RunDir string
	// StateDir holds the live bundle, the candidate and the generated
	// default certificate. Default /var/lib/haroute.
	StateDir string
	HAProxy  string // haproxy binary; "" = from PATH
	// MetricsAddress serves /metrics, /healthz, /readyz and /status;
	// "" disables the listener.
	MetricsAddress string
	Resync         time.Duration // default 60s
	Debounce       time.Duration // plain mode, default 250ms
	// RuntimeTimeout bounds one runtime plan (commands and read-back) and
	// the checks set after a load; past it, the change goes through a
	// reload. Default 15s: a plan of thousands of servers takes seconds.
	RuntimeTimeout time.Duration
	// DeletionQuiet is how long the same routes must stay dropped before a
	// generation that drops all routes, or more than DeletionShare of
	// them, is applied (guard.go). Default 15s; negative disables the
	// guard.
	DeletionQuiet time.Duration
	// DeletionShare is the share of routes (0–1) a generation may drop
	// without waiting for DeletionQuiet. Default 0.5.
	DeletionShare float64
	// Handover, when set, is called at shutdown with the HAProxy master's
	// pid instead of stopping HAProxy: a restart then loses no
	// connection (the next haroute takes HAProxy over), and Handover
	// arranges for HAProxy to be stopped if none comes (the CLI starts
	// `haroute reap`). An error from it stops HAProxy as usual.
	Handover func(pid int) error
	// Trigger forces a resync (the CLI sends SIGHUP here).
	Trigger <-chan struct{}
	Logger  *slog.Logger
	Metrics *metrics.Metrics // default: a new registry
	Status  *status.Store    // default: a new store
	// OnApply, when set, is called from the loop after a state reaches
	// HAProxy (runtime or reload), with the snapshot it came from. Tests
	// use it to prove no torn snapshot is ever applied.
	OnApply func(Applied)
	// Now is the clock certificates are judged by: their expiry, and
	// when the generated default certificate is made anew. Default
	// time.Now; tests move it on by months.
	Now func() time.Time
}

// Applied describes one state that reached HAProxy.
type Applied struct {
	Generation uint64
	Snapshot   *snapshot.Snapshot
	Desired    *model.Desired
	Reload     bool
	Reasons    []string
}

// Daemon is a configured router; Run drives it.
type Daemon struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics.Metrics
	status  *status.Store
	// stopping is Run's context: once it is done, whatever fails in the
	// change in flight was cut short by the shutdown (see interrupted).
	stopping context.Context

	reader snapshot.Reader
	loader *model.Loader
	// renderCache keeps the rendered output of unchanged routes between
	// snapshots (for the live and the candidate dir alike).
	renderCache render.Cache
	live        *bundleDir
	cand        *bundleDir

	sup     *haproxy.Supervisor
	proc    *haproxy.Process
	runtime *haproxy.Runtime
	// inspector reads `show info` for the status page.
	inspector haproxy.Inspector

	// runLock, healing and sockets belong to heal.go; sockets names the
	// unix sockets the rendered config binds.
	runLock *haproxy.RunDirLock
	healing healState
	sockets render.Sockets

	// lastFiles keeps the last good content per path so an unreadable
	// file keeps its objects; goneFiles, those of files the directory
	// lost since a generation was last accepted whole (withLastGood);
	// lastHash is the last snapshot processed.
	lastFiles map[string]model.SourceFile
	goneFiles map[string]model.SourceFile
	lastHash  string
	// writeRetryAt is when a generation that did not reach the disk (a
	// full or read-only state dir) is tried again, zero when none waits:
	// space that returns should not wait for the next resync.
	// writeFailures counts the retries so far.
	writeRetryAt  time.Time
	writeFailures int
	// behindWrite is set while the directory's latest generation is
	// refused or not written, behindReload while the reload that loads
	// the accepted one fails or is skipped (haroute_directory_behind).
	behindWrite, behindReload bool
	// onDisk is set while HAProxy runs live files this daemon did not
	// write (startOnDisk), until a whole state has been written.
	onDisk bool
	// desiredFrom and appliedFrom are the snapshots behind desired and
	// applied: status names what HAProxy runs, never a refused candidate.
	desiredFrom, appliedFrom *snapshot.Snapshot
	// desiredWant and appliedWant are the maxConnections the RouterConfig
	// asked for behind desired and applied, before fitting (limits.go):
	// they tell a budget that moved from a setting that changed.
	desiredWant, appliedWant int
	// maxConnKept is set while the running maxconn was kept past its
	// fitted budget (keepingMaxConn): HAProxy would refuse the files on a
	// fresh start, so a restart after a crash renders them again first.
	maxConnKept bool
	// material is the TLS material last accepted, kept when a file the
	// RouterConfig names breaks.
	material *certgen.Material
	// materialErr is why the material named by the settings could not be
	// used, while the last good material serves.
	materialErr error
	// materialLogged is the material error last logged: while it stands,
	// each resync reads the files again without logging it again.
	materialLogged string
	// recordedHash is the snapshot whose unreadable files were last
	// recorded as errors (recordReadErrors).
	recordedHash string
	// refusedMaterial is file content HAProxy refused (refusedFile), by
	// RouterConfig field: while a file still holds it, its last good
	// content serves.
	refusedMaterial map[string]refusedContent
	// inputCounts are the input problems last published (reportInput);
	// readErrors, the files the last snapshot could not read.
	inputCounts inputCounts
	readErrors  int
	// readWarnings, what the last snapshot skipped with a warning (a
	// symlink to a directory): counted with the input's warnings, as
	// `check` counts them.
	readWarnings int
	// readErrorList is what they were, file: error, for status.
	readErrorList []string
	// store saves the last good state for restarts; anchors are the last
	// good content of each path (persist.go); restored is what was read
	// back at start, nil if nothing was. rcAnchor is the file of the
	// RouterConfig in force, saved apart (saveLastGood); rcAnchorBefore
	// the one before it, for a RouterConfig found unloadable after it
	// was accepted (unbindableNow).
	store    *lastGoodStore
	anchors  map[string]model.SourceFile
	restored *saved
	guard    deletionGuard
	// cutHeld are the files holdCutOff holds, or held until they were
	// applied; cutAt, when set, is when to read again to apply one.
	cutHeld    map[string]cutHold
	cutAt      time.Time
	cutWaiting []string // the files it holds now, sorted

	rcAnchor, rcAnchorBefore *model.SourceFile
	// materialStamp is materialStamp of the settings whose material was
	// last resolved.
	materialStamp string

	// inputClean is set while the accepted generation has no input
	// problem (clearErrorIfClean); readFailed while the last read of the
	// directory failed.
	inputClean, readFailed bool

	// served is what HAProxy runs, for the per-route metrics read on the
	// HTTP goroutine.
	served atomic.Pointer[model.Desired]
	// certs are when the certificates served expire (certexpiry.go),
	// checked for expired ones every certsEvery.
	certs          certExpiry
	certsCheckedAt time.Time
	// renewTriedAt is when the generated default certificate was last
	// asked to be made anew (renewDefaultCertificate).
	renewTriedAt time.Time
	// pool is the committed pool of spare backends (pool.go); lastSync is
	// when the last change arrived, lastRefill when the pool was last
	// topped up on its own.
	pool                 poolState
	servedSlots          map[model.BackendName]bool // spares that served a route since HAProxy loaded (see poolState.free)
	lastSync, lastRefill time.Time
	refill               bool
	// loggedDiags are the diagnostics already logged, by their text.
	loggedDiags map[string]bool

	// desired is what the directory asks for, written to disk (live);
	// applied is what HAProxy runs. They differ while a reload waits.
	desired plan.State
	applied plan.State
	pending map[model.BackendName]map[model.ServerName]string
	// lingering is when HAProxy first refused to delete a drained
	// server for its idle connections, by "backend/server".
	lingering map[string]time.Time
	// drainLooks are the last looks at pending servers, by
	// "backend/server" (see drainQuiet).
	drainLooks map[string]drainLook
	// drainWait puts off looking at backends whose drained servers
	// still have connections (deletePending).
	drainWait map[model.BackendName]drainWait

	throttle   throttle
	generation uint64
	restarts   int       // consecutive restarts, for the backoff
	startedAt  time.Time // when the current HAProxy started

	// unchecked is set when the live files were written by the runtime
	// path, without `haproxy -c`; a reload validates them first.
	unchecked bool
	// staging is how long the last stageLive took, for the write metric.
	staging time.Duration

	// gc collects garbage between changes rather than during them.
	gc *idleGC
	// unbound are the settings of a RouterConfig refused because HAProxy
	// could not bind its new listeners, retried once it can
	// (retryUnbound).
	unbound *model.Settings
	// housekeepAfter and housekeepBackoff pause housekeeping while
	// HAProxy's sockets do not answer.
	housekeepAfter   time.Time
	housekeepBackoff time.Duration

	hardNOFILE     uint64
	warnedMaxConn  bool
	lastMaxConnFit int
}

// New checks the options and prepares directories; it starts nothing.
func New(opts Options) (*Daemon, error) {
	if opts.ConfigDir == "" {
		return nil, errors.New("config dir is required")
	}
	if opts.RunDir == "" {
		opts.RunDir = DefaultRunDir
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DeletionQuiet == 0 {
		opts.DeletionQuiet = 15 * time.Second
	}
	if opts.DeletionShare <= 0 || opts.DeletionShare > 1 {
		opts.DeletionShare = 0.5
	}
	if opts.RuntimeTimeout <= 0 {
		opts.RuntimeTimeout = 15 * time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.Status == nil {
		opts.Status = &status.Store{}
	}
	for _, p := range []*string{&opts.ConfigDir, &opts.RunDir, &opts.StateDir} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("path %s: %w", *p, err)
		}
		*p = abs
	}
	for _, d := range []struct{ flag, dir string }{{"--run-dir", opts.RunDir}, {"--state-dir", opts.StateDir}} {
		dir := d.dir
		// HAProxy reads these paths inside its configuration and command
		// line, where a ',' separates addresses and arguments (a state dir
		// with one made every start fail) and white space, quotes,
		// backslashes and '#' are syntax (a '#' left haroute running with
		// nothing rendered); render refuses such a directory for every
		// generation, so it is refused here, once.
		if err := render.CheckDir(d.flag, dir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("%s: create %s: %w", d.flag, dir, err)
		}
		// MkdirAll leaves an existing directory's mode alone; the sockets
		// and keys inside must not be reachable by others. A directory
		// that has the mode already is left alone: on a read-only state
		// disk a restart still takes HAProxy over on the files there.
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
			if err := os.Chmod(dir, 0o700); err != nil {
				return nil, fmt.Errorf("%s: chmod %s: %w", d.flag, dir, err)
			}
		}
	}
	live := filepath.Join(opts.StateDir, "live")
	sup, err := haproxy.NewSupervisor(haproxy.Options{
		Binary:     opts.HAProxy,
		ConfigPath: filepath.Join(live, render.ConfigFile),
		RunDir:     opts.RunDir,
		Logger:     opts.Logger.With("component", "haproxy"),
		Relocate:   hopRelocation(opts),

		SpareBackendPrefix: model.PoolSlotPrefix,
		// From the goroutine reading HAProxy's output: the metrics and
		// the status store take care of themselves.
		OnWorkerCrash: func(pid int, status string) {
			opts.Metrics.HAProxyWorkerCrashed()
			opts.Status.RecordError(time.Now(), fmt.Sprintf("an old haproxy worker (pid %d), draining connections after a reload, exited with %s: the connections it still served were cut", pid, status))
		},
	})
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		opts:        opts,
		log:         opts.Logger,
		metrics:     opts.Metrics,
		status:      opts.Status,
		loader:      model.NewLoader(),
		live:        newBundleDir(live),
		cand:        &bundleDir{path: filepath.Join(opts.StateDir, "candidate"), written: map[string]render.File{}, recheck: true},
		sup:         sup,
		lastFiles:   map[string]model.SourceFile{},
		pending:     map[model.BackendName]map[model.ServerName]string{},
		servedSlots: map[model.BackendName]bool{},
		lingering:   map[string]time.Time{},
		drainLooks:  map[string]drainLook{},
		drainWait:   map[model.BackendName]drainWait{},
		hardNOFILE:  nofileHardLimit(),
		gc:          newIdleGC(),
		store:       newLastGoodStore(opts.StateDir, opts.Logger),
		anchors:     map[string]model.SourceFile{},
	}
	// From the saver's goroutine: the status store takes care of itself.
	d.store.failed = func(err error) { d.status.RecordError(time.Now(), err.Error()) }
	if err := d.useSockets(initialSockets(opts)); err != nil {
		return nil, err
	}
	d.restore()
	d.status.Set(func(s *status.Status) { s.NotReadyReason = "no configuration applied yet" })
	d.metrics.RegisterRouteStats(d.routeStats)
	d.metrics.RegisterCertificates(func() ([]metrics.CertificateExpiry, time.Time) { return d.certs.routes(d.served.Load()) })
	return d, nil
}

// statusRetry is how often a metrics address that cannot be opened is
// tried again.
const statusRetry = 5 * time.Second

// serveStatus serves the status and metrics address until ctx ends. One
// that is taken (another process on the port, an earlier haroute still
// closing) is tried again every statusRetry, with an error each time it
// fails anew: the routes do not depend on it. Returning an error from Run
// instead, on a restart, made the reaper stop the HAProxy this haroute
// was to take over, and every route was down until the port was freed.
func (d *Daemon) serveStatus(ctx context.Context) {
	logged := ""
	for {
		ln, err := status.Listen(d.opts.MetricsAddress)
		if err == nil {
			if logged != "" {
				d.log.Info("metrics address open", "address", d.opts.MetricsAddress)
			}
			if err := status.ServeListener(ctx, ln, status.Handler(d.status, d.metrics.Handler(), d.routeServers)); err != nil {
				d.log.Error("status and metrics stopped; opening them again", "err", err)
			}
		} else if err.Error() != logged {
			d.log.Error("cannot open the metrics address; /readyz, /metrics and haroute status are unavailable until it can, routing goes on", "err", err, "retry", statusRetry)
			logged = err.Error()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(statusRetry):
		}
	}
}

// Run serves until ctx ends, then stops HAProxy gracefully. It returns an
// error only for failures an operator must fix at start-up (HAProxy missing,
// a port in use).
func (d *Daemon) Run(ctx context.Context) error {
	// Everything started here stops when Run returns, error or not.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.stopping = ctx
	if err := d.lockRunDir(ctx); err != nil {
		return err
	}
	defer d.runLock.Close()
	// The state dir too: two routers sharing one took each other's
	// HAProxy over (its -f names the live config there) and overwrote
	// each other's bundle and last good state.
	stateLock, err := d.lockStateDir(ctx)
	if err != nil {
		return err
	}
	defer stateLock.Close()
	if d.opts.MetricsAddress != "" {
		go d.serveStatus(ctx)
	}

	storeCtx, stopStore := context.WithCancel(context.Background())
	go d.store.run(storeCtx)
	defer func() { stopStore(); <-d.store.done }()

	// The collector rests until the first sync is done (startgc.go).
	resumeGC := pauseGCForStart()
	defer resumeGC()
	changes := make(chan struct{}, 1)
	changes <- struct{}{} // the first sync
	// settling is set by the watcher while a plain-mode burst of writes
	// settles; forceNext makes the read that ends it a forced resync.
	var settling atomic.Bool
	forceNext := false
	go func() {
		// Without a watcher nothing triggers again, not even the resync:
		// one that fails (its event streams closed under it) is started
		// again, which also triggers a sync.
		for {
			err := watch.Watch(ctx, watch.Options{
				Dir: d.opts.ConfigDir, Mode: d.opts.WatchMode,
				Debounce: d.opts.Debounce, Resync: d.opts.Resync,
				Logger: d.log.With("component", "watch"), OnEvent: d.metrics.WatchEvent,
				Settling: &settling,
			}, changes)
			if err == nil || ctx.Err() != nil {
				return
			}
			d.log.Error("watcher stopped; starting it again", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()

	reloadTimer := time.NewTimer(time.Hour)
	reloadTimer.Stop()
	guardTimer := time.NewTimer(time.Hour)
	guardTimer.Stop()
	var restartAt <-chan time.Time
	drain := time.NewTicker(time.Second)
	defer drain.Stop()
	for {
		d.status.Beat()
		var exited <-chan struct{}
		if d.proc != nil {
			exited = d.proc.Done()
		}
		select {
		case <-ctx.Done():
			return d.shutdown()
		case <-changes:
			err := d.sync(ctx, forceNext)
			forceNext = false
			resumeGC()
			if err != nil {
				return err
			}
		case <-d.opts.Trigger:
			if settling.Load() {
				// Files are being written in plain mode: the burst's own
				// trigger reads them once their writers are done.
				d.log.Info("resync requested; it follows the change being written")
				forceNext = true
				break
			}
			d.log.Info("resync requested")
			if err := d.sync(ctx, true); err != nil {
				return err
			}
		case <-reloadTimer.C:
			d.reload(ctx)
		case <-guardTimer.C:
			// The deletion guard's second read.
			if err := d.sync(ctx, true); err != nil {
				return err
			}
		case <-exited:
			if time.Since(d.startedAt) > stableAfter {
				d.restarts = 0 // it ran fine for a while: not a crash loop
			}
			// An error in status and a counter, not only a log line:
			// restarts that succeed fast were invisible to dashboards,
			// a crash loop included. The next start resolves the error
			// (started).
			d.recordError(fmt.Errorf("%s (%v); restarting it (exit %d in a row)", haproxyExited, d.proc.Err(), d.restarts+1))
			d.metrics.HAProxyExited()
			d.proc = nil
			d.setNotReady("haproxy exited")
			d.forgetProcs()
			wait := backoff(d.restarts)
			if wait > keepListenersAcross {
				// HAProxy keeps dying: connections are refused until
				// it is back, rather than wait in a queue for it.
				d.sup.ReleaseListeners()
			}
			restartAt = time.After(wait)
			d.restarts++
		case <-restartAt:
			restartAt = nil
			if d.maxConnKept {
				// The files hold a maxconn only the running HAProxy
				// could keep: with HAProxy down, a sync writes them
				// fitted afresh (and checked) before it starts again.
				d.log.Info("refitting maxconn to the descriptor budget before restarting haproxy")
				if err := d.sync(ctx, true); err != nil {
					return err
				}
			}
			if err := d.start(ctx); err != nil {
				d.recordError(err)
				restartAt = time.After(backoff(d.restarts))
				d.restarts++
			}
		case <-drain.C:
			if d.renewDefaultCertificate() {
				if err := d.sync(ctx, true); err != nil {
					return err
				}
			}
			if !d.writeRetryAt.IsZero() && time.Now().After(d.writeRetryAt) {
				d.writeRetryAt = time.Time{}
				d.writeFailures++ // reset when the directory's state is accepted
				if err := d.sync(ctx, true); err != nil {
					return err
				}
			}
			d.heal(ctx)
			d.housekeep(ctx)
			d.checkCertificates(d.now())
			if err := d.retryUnbound(ctx); err != nil {
				return err
			}
			if err := d.refillPool(ctx); err != nil {
				return err
			}
		}
		if d.live.pending() && (len(changes) == 0 || d.live.behindFor(time.Now()) > maxBehind) {
			// The files of the last runtime changes, once no other change
			// waits (see stageLive); a failure is retried each tick.
			_ = d.flushLive()
		}
		if at, ok := d.throttle.due(time.Now()); ok && d.proc != nil {
			resetTimer(reloadTimer, time.Until(at))
		}
		if at := earliest(d.guard.at, d.cutAt); !at.IsZero() {
			resetTimer(guardTimer, time.Until(at))
			d.guard.at, d.cutAt = time.Time{}, time.Time{}
		}
	}
}

// maxBehind bounds how long endless churn keeps the live files behind
// the runtime state: commits coalesce over a burst, not for ever.
const maxBehind = time.Second

// stableAfter is how long HAProxy must run before an exit no longer counts
// towards the restart backoff. A HAProxy that ran this long loaded and
// served: its death came from outside (the OOM killer, a watchdog, a
// hand), and waiting to restart it only lengthens the outage. At 30 s,
// HAProxy killed every 10 s in an audit left every route refused for 2 s
// from the fourth kill on, then 4, 8, 16 and 30 s. A crash loop of a
// HAProxy that dies within 5 s of its start still backs off; one that
// dies later each time is restarted at once each time.
const stableAfter = 5 * time.Second

// keepListenersAcross is the longest restart wait across which HAProxy's
// listening sockets are kept open (haproxy.Supervisor): connections made
// meanwhile wait for the next HAProxy. Past it (the fourth crash in a
// row), they are refused, so that clients and load balancers in front
// fail over instead of waiting.
const keepListenersAcross = time.Second

// haproxyExited starts the error an exit of HAProxy records, which its
// next start resolves.
const haproxyExited = "haproxy exited"

// The first restart after a crash is immediate: every moment HAProxy is
// down refuses connections. Repeated crashes back off.
func backoff(n int) time.Duration {
	if n == 0 {
		return 0
	}
	d := 500 * time.Millisecond << min(n-1, 6)
	return min(d, 30*time.Second)
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	t.Reset(max(d, 0))
}

func (d *Daemon) shutdown() error {
	// The next haroute, or the next HAProxy, loads what is on disk.
	_ = d.flushLive()
	if d.proc == nil {
		return d.shutdownEarlier()
	}
	if d.handOver(d.proc.PID()) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	d.log.Info("stopping haproxy")
	if err := d.proc.Stop(ctx); err != nil {
		return fmt.Errorf("stop haproxy: %w", err)
	}
	return nil
}

// shutdownEarlier deals, at a stop, with the HAProxy an earlier haroute
// left serving that this one never took over (it waited for a
// RouterConfig it can use): handed over like its own, or stopped. The
// earlier haroute's reaper saw this one hold the run dir and left it
// alone, so a stop in that state left it serving unsupervised for good.
func (d *Daemon) shutdownEarlier() error {
	pid := d.sup.Earlier()
	if pid == 0 || d.handOver(pid) {
		return nil
	}
	d.log.Info("stopping the haproxy an earlier haroute left running", "pid", pid)
	if err := d.sup.StopEarlier(pid, 10*time.Second); err != nil {
		return fmt.Errorf("stop haproxy: %w", err)
	}
	return nil
}

// handOver leaves HAProxy master pid serving for the next haroute (a
// restart), which takes it over without closing a port, when haroute runs
// with a hand-over grace. It reports false when HAProxy is to be stopped
// instead.
func (d *Daemon) handOver(pid int) bool {
	if d.opts.Handover == nil {
		return false
	}
	if err := d.opts.Handover(pid); err != nil {
		d.log.Warn("cannot hand haproxy over; stopping it", "err", err)
		return false
	}
	d.log.Info("leaving haproxy running for the next haroute to take over; a reaper stops it if none has by the hand-over grace", "pid", pid)
	return true
}

// routeServers reads the servers of each route HAProxy serves, for the
// status: per-route health, which `haroute status` shows beside each
// route.
func (d *Daemon) routeServers(ctx context.Context) (map[string]status.Servers, error) {
	stats, err := d.routeStats(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]status.Servers, len(stats))
	for _, s := range stats {
		out[s.Namespace+"/"+s.Route] = status.Servers{Up: s.Up, Down: s.Down, Maint: s.Maintenance, Unchecked: s.Unchecked}
	}
	return out, nil
}

// routeStats reads HAProxy's per-backend traffic and names it by route,
// whatever backend (its own or a spare of the pool) serves the route.
func (d *Daemon) routeStats(ctx context.Context) ([]metrics.RouteStat, error) {
	desired := d.served.Load()
	if desired == nil {
		return nil, nil
	}
	stats, err := d.runtime.BackendStats(ctx)
	if err != nil {
		return nil, err
	}
	byBackend := make(map[string]int, len(stats))
	for i, s := range stats {
		byBackend[s.Name] = i
	}
	out := make([]metrics.RouteStat, 0, len(desired.Routes))
	for i := range desired.Routes {
		r := desired.Routes[i]
		k, ok := byBackend[string(r.BackendName())]
		if !ok {
			continue
		}
		s := stats[k]
		out = append(out, metrics.RouteStat{Namespace: r.Key.Namespace, Route: r.Key.Name,
			Sessions: s.Sessions, Requests: s.Requests, BytesIn: s.BytesIn, BytesOut: s.BytesOut, Responses: s.Responses,
			CurSessions: s.CurSessions, Queued: s.Queued, Up: s.Up, Down: s.Down, Maintenance: s.Maintenance, Unchecked: s.Unchecked})
	}
	return out, nil
}
