package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/paths"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/snapshot"
)

var nowFunc = time.Now

// defaultMetricsAddress is where `run` serves /metrics and /status and
// where `status` asks.
const defaultMetricsAddress = "127.0.0.1:9191"

// runFlags are the flags of `run`, shared with `service install`, which
// passes them through to the unit.
type runFlags struct {
	configDir, runDir, stateDir, haproxy, metricsAddr, watchMode string
	logFormat, logLevel                                          string
	resync, debounce, deletionQuiet, handoverGrace               time.Duration
	deletionShare                                                float64
}

func (f *runFlags) register(fs interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	Float64Var(*float64, string, float64, string)
}) {
	fs.StringVar(&f.configDir, "config-dir", "", "directory of Route, Endpoints and RouterConfig YAML (required)")
	fs.StringVar(&f.runDir, "run-dir", paths.RunDir, "directory for HAProxy's master and admin sockets (mode 0700)")
	fs.StringVar(&f.stateDir, "state-dir", paths.StateDir, "directory for the rendered bundle and the generated default certificate")
	fs.StringVar(&f.haproxy, "haproxy", "", "haproxy binary (default: haproxy from PATH, else /usr/local/sbin or /usr/sbin)")
	fs.StringVar(&f.metricsAddr, "metrics-address", defaultMetricsAddress, "address for /metrics, /healthz, /readyz and /status (empty disables)")
	fs.StringVar(&f.watchMode, "watch-mode", "auto", "directory layout: auto, atomic (..data), link (git-sync) or plain")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&f.resync, "resync", 60*time.Second, "periodic full resync, in case a change event was missed")
	fs.DurationVar(&f.debounce, "debounce", 250*time.Millisecond, "quiet period before reading a plain directory")
	fs.DurationVar(&f.deletionQuiet, "deletion-quiet", 15*time.Second,
		"deletion guard: how long the same routes must stay dropped before a generation dropping all routes, more than --deletion-share of them, or (plain mode) any route is applied; negative disables")
	fs.DurationVar(&f.handoverGrace, "handover-grace", 10*time.Second,
		"on stop, leave HAProxy serving this long for the next haroute to take over (a restart closes no port), then stop it; 0 stops it with haroute")
	fs.Float64Var(&f.deletionShare, "deletion-share", 0.5, "deletion guard: share of routes (0-1] a generation may drop without waiting for --deletion-quiet")
}

func runCmd(ctx context.Context, args []string, _, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	var f runFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if f.configDir == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: haroute run --config-dir DIR [flags]; see haroute run -h")
		return ExitUsage
	}
	log, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "haroute run: %v\n", err)
		return ExitUsage
	}
	mode, err := snapshot.ParseMode(f.watchMode)
	if err != nil {
		fmt.Fprintf(stderr, "haroute run: --watch-mode: %v\n", err)
		return ExitUsage
	}
	if !(f.deletionShare > 0 && f.deletionShare <= 1) {
		fmt.Fprintf(stderr, "haroute run: --deletion-share %v: a share of the routes, more than 0 and at most 1\n", f.deletionShare)
		return ExitUsage
	}
	// Absolute from here on: HAProxy's command line names them so, and
	// the reaper left behind at a stop finds HAProxy by them. Relative,
	// it found no HAProxy of that run dir and left it running for good.
	for _, dir := range []*string{&f.configDir, &f.runDir, &f.stateDir} {
		if *dir, err = filepath.Abs(*dir); err != nil {
			fmt.Fprintf(stderr, "haroute run: %v\n", err)
			return ExitUsage
		}
	}
	// haproxy.cfg names both: a path it cannot hold would have every
	// generation refused, and nothing ever served.
	for _, d := range []struct{ flag, dir string }{{"--run-dir", f.runDir}, {"--state-dir", f.stateDir}} {
		if err := render.CheckDir(d.flag, d.dir); err != nil {
			fmt.Fprintf(stderr, "haroute run: %v\n", err)
			return ExitUsage
		}
	}

	// A log pipe that breaks (`| head`, a log shipper restarting) must not
	// kill the router: Go exits on SIGPIPE from a write to stderr unless
	// the signal is handled, and that left HAProxy running with no
	// reaper. Ignored, the write fails and the log line is lost.
	signal.Ignore(syscall.SIGPIPE)

	// Signals become events here, at the edge: SIGTERM/SIGINT stop the
	// daemon (see serve), SIGHUP asks for a resync on a capacity-1 channel.
	stopSigs := make(chan os.Signal, 2) // room for an impatient second signal
	signal.Notify(stopSigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stopSigs)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	trigger := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				select {
				case trigger <- struct{}{}:
				default:
				}
			}
		}
	}()

	d, err := daemon.New(daemon.Options{
		ConfigDir:      f.configDir,
		WatchMode:      mode,
		RunDir:         f.runDir,
		StateDir:       f.stateDir,
		HAProxy:        f.haproxy,
		MetricsAddress: f.metricsAddr,
		Resync:         f.resync,
		Debounce:       f.debounce,
		DeletionQuiet:  f.deletionQuiet,
		DeletionShare:  f.deletionShare,
		Trigger:        trigger,
		Logger:         log,
		Handover:       handover(f.runDir, filepath.Join(f.stateDir, "live", "haproxy.cfg"), f.handoverGrace),
	})
	if err != nil {
		log.Error("cannot start", "err", err)
		return ExitInvalid
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	log.Info("haroute starting", "version", Version, "config_dir", f.configDir, "run_dir", f.runDir, "metrics", f.metricsAddr)
	return serve(ctx, d, stopSigs, log)
}

// gcPercent is the collector's target unless GOGC says otherwise. The
// daemon's heap is mostly the tree it serves, long-lived, and each change
// allocates a few megabytes that die with it; Go's default of 100 lets
// the heap grow to twice what is live. At 10k routes, 50 took the
// controller from 165–185 MB resident over 1000 changes to 127–136 MB,
// with change latency unchanged (the collections run between changes:
// daemon/gc.go). Since then the live heap shrank to about 55 MB, and 50
// held the controller at 100–101 MB over 1000 changes (bench figure 3j);
// 30 held it at 90 MB, change latency again unchanged (swap → served
// p50 10.1 ms, p99 19.9 ms, against 12.0 and 22.1 ms in the same run
// with 50). Then a change's garbage shrank from 2 MB to 0.7 (pooled
// parser scratch, a config of a few pieces): 20 collects as seldom as 30
// did before, and holds the controller at 84–89 MB (88–91 with 30 before
// that, 93–94 with 30 after), swap → served unchanged.
const gcPercent = 20

// stopGrace bounds how long run waits for the daemon after the first
// SIGTERM or SIGINT. The daemon hands HAProxy over (--handover-grace, 10 s
// by default) or, when it cannot, stops it in at most about 20 s (a 15 s
// soft stop, then SIGKILL and a 5 s wait); the unit's TimeoutStopSec is
// 60 s. A daemon stuck past this bound (a blocked system
// call, a bug) must not make the stop wait for systemd's SIGKILL, and an
// operator's second Ctrl-C must not be ignored. A variable so tests can
// shorten it.
var stopGrace = 25 * time.Second

// sameStop is how soon after the first a second stop signal is taken for
// the same stop, delivered twice: a terminal's Ctrl-C, `timeout` or a
// container runtime signal the whole process group, and a parent (a
// shell script's trap, make) passes the stop on as well. Taken for an
// impatient operator, it made haroute exit at once, before its HAProxy was
// stopped or handed over, which then served on with nobody supervising it.
// A person pressing Ctrl-C again takes longer. A variable so tests can
// change it.
var sameStop = time.Second

// daemonRunner is what serve drives: *daemon.Daemon, or a stand-in in tests.
type daemonRunner interface {
	Run(ctx context.Context) error
}

// serve runs d until it returns. The first stop signal (or the end of ctx)
// cancels d's context; if d has not returned stopGrace later, or when a
// second signal arrives (later than sameStop), serve returns a failure
// without waiting further, so a stop always stops.
func serve(ctx context.Context, d daemonRunner, stopSigs <-chan os.Signal, log *slog.Logger) int {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()

	parentDone := ctx.Done()
	var stopping bool
	var stoppedAt time.Time
	var giveUp <-chan time.Time
	stop := func(why string, args ...any) {
		stopping, stoppedAt = true, time.Now()
		parentDone = nil
		log.Info(why, args...)
		cancel()
		giveUp = time.After(stopGrace)
	}
	for {
		select {
		case err := <-done:
			if err != nil {
				log.Error("haroute stopped", "err", err)
				return ExitInvalid
			}
			log.Info("haroute stopped")
			return ExitOK
		case sig := <-stopSigs:
			if stopping && time.Since(stoppedAt) < sameStop {
				log.Info("a second stop signal this soon is the same stop, delivered twice; still stopping", "signal", sig.String())
				continue
			}
			if stopping {
				log.Error("haroute exiting without waiting for the daemon to stop: second signal", "signal", sig.String())
				return ExitInvalid
			}
			stop("stopping", "signal", sig.String(), "gives_up_after", stopGrace)
		case <-parentDone:
			stop("stopping", "reason", context.Cause(ctx).Error(), "gives_up_after", stopGrace)
		case <-giveUp:
			log.Error("haroute exiting without waiting for the daemon to stop: it did not stop in time", "gives_up_after", stopGrace)
			return ExitInvalid
		}
	}
}
