package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"syscall"

	"github.com/haroute/haroute/internal/model"
)

// rlimInfinity is RLIM_INFINITY as the kernel reports it in a uint64.
const rlimInfinity = ^uint64(0)

// checkReserveStep rounds the checked servers the budget reserves up to a
// step, with at least one step of headroom. HAProxy counts only the
// checked servers of its config; those `add server` gives a check between
// reloads open their check sockets within the same limit, out of what
// connections would use. The step also keeps maxconn — a line of the
// config — still while endpoints scale, so scale events do not reload.
const checkReserveStep = 256

// reservedChecks is the checked servers the budget makes room for.
func reservedChecks(checked int) int {
	return (checked/checkReserveStep + 1) * checkReserveStep
}

// fitMaxConn returns the largest maxconn HAProxy starts with under the
// hard file-descriptor limit (model.FDBudget, with reservedChecks), and
// whether want had to be lowered. HAProxy refuses to start rather than
// serve with fewer ("Cannot raise FD limit to 100044, limit is 20000");
// serving with a derived limit is better at 3 a.m.
func fitMaxConn(want int, hardLimit uint64, b model.FDBudget) (int, bool) {
	if hardLimit == rlimInfinity || hardLimit == 0 {
		return want, false
	}
	b.CheckedServers = reservedChecks(b.CheckedServers)
	fit := b.MaxConn(hardLimit)
	if int64(want) <= fit {
		return want, false
	}
	return int(max(fit, 0)), true
}

// nofileHardLimit reads RLIMIT_NOFILE's hard limit (0 when unknown).
func nofileHardLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Max
}

// haproxyThreads is the thread count HAProxy 2.6 runs: nbthread, else one
// per CPU it may run on (Go's NumCPU reads the same affinity mask), at
// most 64 (MAX_THREADS).
func haproxyThreads(s *model.Settings) int {
	if s.ThreadCount > 0 {
		return s.ThreadCount
	}
	return min(runtime.NumCPU(), 64)
}

// fitted returns desired with MaxConnections lowered to what the host's
// file-descriptor limit allows; desired itself is not modified. When the
// limit leaves fewer than minUsableConns, it is an error: a router that
// serves one connection at a time is down in all but name.
func (d *Daemon) fitted(desired *model.Desired) (*model.Desired, error) {
	out, b, err := fitToLimit(desired, d.hardNOFILE)
	if err != nil {
		return nil, fmt.Errorf("%w; the last good configuration keeps serving", err)
	}
	if out == desired {
		return desired, nil
	}
	if fit := out.Router.MaxConnections; !d.warnedMaxConn || d.lastMaxConnFit != fit {
		msg, level := "maxConnections lowered to fit the file-descriptor limit; raise LimitNOFILE to serve more", slog.LevelWarn
		if desired.Router.MaxConnectionsAuto {
			msg, level = "maxConnections -1: as many as the file-descriptor limit allows", slog.LevelInfo
		}
		d.log.Log(context.Background(), level, msg,
			"configured", desired.Router.MaxConnections, "used", fit, "nofile_hard_limit", d.hardNOFILE,
			"checked_servers", b.CheckedServers, "reencrypt_servers", b.PortServers)
		d.warnedMaxConn, d.lastMaxConnFit = true, fit
	}
	return out, nil
}

// FitToLimit returns desired as the router renders it under the hard
// file-descriptor limit: itself when its maxConnections fits, else a copy
// with it lowered; a *NoRoomError when fewer than minUsableConns fit.
func FitToLimit(desired *model.Desired, hardLimit uint64) (*model.Desired, error) {
	out, _, err := fitToLimit(desired, hardLimit)
	return out, err
}

func fitToLimit(desired *model.Desired, hardLimit uint64) (*model.Desired, model.FDBudget, error) {
	b := model.FDBudgetOf(desired, haproxyThreads(&desired.Router))
	fit, lowered := fitMaxConn(desired.Router.MaxConnections, hardLimit, b)
	switch {
	case !lowered:
		return desired, b, nil
	case fit < minUsableConns:
		return nil, b, fdBudgetError(hardLimit, fit, b, desired.Router.MaxConnections)
	}
	cp := *desired
	cp.Router.MaxConnections = fit
	return &cp, b, nil
}

// NoRoomError is a file-descriptor budget that leaves HAProxy no usable
// maxconn: the router refuses the configuration (Daemon.fitted), so
// `haroute check` fails on it.
type NoRoomError struct{ msg string }

func (e *NoRoomError) Error() string { return e.msg }

// fdBudgetError names LimitNOFILE and the numbers: what the limit is, what
// HAProxy reserves besides connections, and the limit that would serve
// minUsableConns and the configured maxConnections.
func fdBudgetError(hard uint64, fit int, b model.FDBudget, want int) error {
	r := b
	r.CheckedServers = reservedChecks(b.CheckedServers)
	lower := ""
	if uint64(r.NeededLimit(minUsableConns)) <= hard {
		// Fewer connections would fit; when not even the fewest usable
		// do, lowering maxConnections cannot help.
		lower = " or lower spec.tuningOptions.maxConnections"
	}
	ports := ""
	if b.PortServers > 0 {
		ports = fmt.Sprintf("; %d reencrypt servers, one each for their check port", b.PortServers)
	}
	return &NoRoomError{fmt.Sprintf("the file-descriptor hard limit %d leaves room for only %d connections: HAProxy reserves %d descriptors "+
		"besides connections (%d checked servers, one each, plus %d reserved for checks added at runtime%s; %d listeners; %d threads) and 2 per connection: "+
		"raise LimitNOFILE to at least %d (%d for maxConnections %d)%s",
		hard, fit, r.Fixed(), b.CheckedServers, r.CheckedServers-b.CheckedServers, ports, b.Listeners, b.Threads,
		r.NeededLimit(minUsableConns), r.NeededLimit(want), want, lower)}
}

// minUsableConns is the fewest connections a router may be left with.
const minUsableConns = 100

// UnitNOFILE is LimitNOFILE in the packaged systemd unit: what `haroute
// check` assumes the router runs under unless told otherwise.
const UnitNOFILE = 1048576

// FDBudgetProblem is what `haroute check` says before the router starts:
// nil when HAProxy can run desired's maxConnections under the hard
// file-descriptor limit, else what the router would do about it — lower
// maxconn (a warning) or refuse (a *NoRoomError).
func FDBudgetProblem(desired *model.Desired, hardLimit uint64) error {
	b := model.FDBudgetOf(desired, haproxyThreads(&desired.Router))
	fit, lowered := fitMaxConn(desired.Router.MaxConnections, hardLimit, b)
	switch {
	case !lowered:
		return nil
	case fit < minUsableConns:
		return fdBudgetError(hardLimit, fit, b, desired.Router.MaxConnections)
	case desired.Router.MaxConnectionsAuto:
		return nil // -1 asks for what the limit allows
	default:
		r := b
		r.CheckedServers = reservedChecks(b.CheckedServers)
		return fmt.Errorf("maxConnections %d will be lowered to %d to fit the file-descriptor hard limit %d "+
			"(%d checked servers, %d reencrypt servers): raise LimitNOFILE to %d to serve %d",
			desired.Router.MaxConnections, fit, hardLimit, b.CheckedServers, b.PortServers, r.NeededLimit(desired.Router.MaxConnections), desired.Router.MaxConnections)
	}
}

// keepingMaxConn returns fitted with the running maxconn instead of the
// one fitted to its descriptor budget, when HAProxy runs and no reload is
// due; else fitted itself. Endpoints that scale between one and two
// change how many servers are checked, hence the fitted maxconn (checks
// are reserved in steps of 256), and a maxconn line that differs is a
// reload: under a tight LimitNOFILE, endpoint churn would reload every
// few hundred changes. HAProxy reserved its descriptors when it started
// and does not count servers added at runtime, so the running maxconn
// stays valid until the next reload, which fits it afresh (advance
// renders the fitted state when the plan reloads anyway); a restart after
// a crash renders the files again first (maxConnKept). A maxConnections
// the RouterConfig changed (want) is not kept.
//
// Deciding before the first render keeps the common change at one render
// and one plan: deciding after a plan that reloads on maxconn alone cost
// a second of each on every change once the fit had moved.
func (d *Daemon) keepingMaxConn(fitted, want *model.Desired) *model.Desired {
	// With a reload pending, the next reload loads these files: they must
	// hold a fresh fit.
	if d.proc == nil || d.applied.Desired == nil || want.Router.MaxConnections != d.appliedWant || d.throttle.pending {
		return fitted
	}
	running := d.applied.Desired.Router.MaxConnections
	if fitted.Router.MaxConnections == running {
		return fitted
	}
	kept := *fitted
	kept.Router.MaxConnections = running
	return &kept
}
