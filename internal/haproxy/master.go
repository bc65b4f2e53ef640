package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Master talks to the master CLI (`-S <run>/master.sock`).
type Master struct {
	socketPath string
}

// NewMaster returns a client for the master CLI socket at socketPath.
func NewMaster(socketPath string) *Master { return &Master{socketPath: socketPath} }

// Proc is one process line of `show proc`.
type Proc struct {
	PID     int
	Type    string // master, worker, program
	Reloads int    // for a worker: reloads it has lived through
	Uptime  string
	Version string
}

// ProcInfo is the parsed output of `show proc`.
type ProcInfo struct {
	Master Proc
	// FailedReloads is the master's "[failed: N]" counter, or -1 when the
	// version does not print it. On 2.6.12 it counts failed reloads since
	// the last successful one (a success resets it to 0).
	FailedReloads int
	// Workers are the current workers; OldWorkers are those still draining
	// connections after a reload (the number to watch for memory growth).
	Workers    []Proc
	OldWorkers []Proc
}

// ShowProc runs `show proc` on the master CLI.
func (m *Master) ShowProc(ctx context.Context) (ProcInfo, error) {
	out, err := m.command(ctx, "show proc")
	if err != nil {
		return ProcInfo{}, err
	}
	info, err := parseShowProc(out)
	if err != nil {
		return ProcInfo{}, fmt.Errorf("show proc on %s: %w", m.socketPath, err)
	}
	return info, nil
}

// command sends one command in non-interactive mode.
func (m *Master) command(ctx context.Context, cmd string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", m.socketPath)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return "", fmt.Errorf("connect to master CLI %s: %w", m.socketPath, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
		return "", fmt.Errorf("master CLI %s: send %q: %w", m.socketPath, cmd, err)
	}
	// The master CLI of 2.6.12 keeps the connection open after answering
	// until the client closes its side: half-close so it replies and hangs
	// up, and the reply is everything up to EOF.
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		return "", fmt.Errorf("master CLI %s: half-close after %q: %w", m.socketPath, cmd, err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return string(out), fmt.Errorf("master CLI %s: read reply to %q: %w", m.socketPath, cmd, err)
	}
	return string(out), nil
}

var (
	failedCounter = regexp.MustCompile(`\[failed:\s*(\d+)\]`)
	columnName    = regexp.MustCompile(`<([^>]+)>`)
)

// parseShowProc reads `show proc`. On 2.6.12 it looks like:
//
//	#<PID>          <type>          <reloads>       <uptime>        <version>
//	6590            master          4 [failed: 0]   0d00h00m11s     2.6.12-1+deb12u4
//	# workers
//	7192            worker          0               0d00h00m00s     2.6.12-1+deb12u4
//	# old workers
//	6655            worker          1               0d00h00m07s     2.6.12-1+deb12u4
//	# programs
//
// Columns are taken from the header by name, so the "<relative PID>"
// column of 2.0–2.4 is skipped, and the "[failed: N]" counter (printed
// inside the master's reloads cell since 2.5) is read when present.
func parseShowProc(out string) (ProcInfo, error) {
	info := ProcInfo{FailedReloads: -1}
	var cols []string
	section := "master"
	seenMaster := false
	for _, line := range strings.Split(out, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			continue
		case strings.HasPrefix(trimmed, "#<") || strings.HasPrefix(trimmed, "# <"):
			for _, m := range columnName.FindAllStringSubmatch(trimmed, -1) {
				cols = append(cols, m[1])
			}
			continue
		case strings.HasPrefix(trimmed, "#"):
			section = strings.TrimSpace(strings.TrimPrefix(trimmed, "#"))
			continue
		}
		if cols == nil {
			return ProcInfo{}, fmt.Errorf("process line before the column header: %q", trimmed)
		}
		failed := -1
		if m := failedCounter.FindStringSubmatch(trimmed); m != nil {
			failed, _ = strconv.Atoi(m[1])
			trimmed = strings.Replace(trimmed, m[0], "", 1)
		}
		p, err := parseProcLine(cols, strings.Fields(trimmed))
		if err != nil {
			return ProcInfo{}, fmt.Errorf("%w in %q", err, line)
		}
		switch {
		case p.Type == "master":
			info.Master, seenMaster = p, true
			info.FailedReloads = failed
		case section == "workers" && p.Type == "worker":
			info.Workers = append(info.Workers, p)
		case section == "old workers" && p.Type == "worker":
			info.OldWorkers = append(info.OldWorkers, p)
		}
		// Programs (and old programs) are not haroute's concern.
	}
	if !seenMaster {
		return ProcInfo{}, errors.New("no master line")
	}
	if loadsInWorker(info.Master.Version) && info.FailedReloads > 0 && len(info.Workers) == 0 && len(info.OldWorkers) > 0 {
		// From 3.1 a reload marks the current worker as leaving before
		// the new one loads, and a failure leaves it so: the worker that
		// serves on is listed among the old ones: the youngest.
		serving := youngest(info.OldWorkers)
		info.Workers = []Proc{serving}
		info.OldWorkers = slices.DeleteFunc(slices.Clone(info.OldWorkers), func(w Proc) bool { return w.PID == serving.PID })
	}
	return info, nil
}

func parseProcLine(cols, f []string) (Proc, error) {
	var p Proc
	for i, name := range cols {
		if i >= len(f) {
			return Proc{}, fmt.Errorf("missing column %s", name)
		}
		v := f[i]
		var err error
		switch name {
		case "PID":
			p.PID, err = strconv.Atoi(v)
		case "type":
			p.Type = v
		case "reloads":
			p.Reloads, err = strconv.Atoi(v)
		case "uptime":
			p.Uptime = v
		case "version":
			// Last column: keep anything after it (a version with spaces).
			p.Version = strings.Join(f[i:], " ")
		}
		if err != nil {
			return Proc{}, fmt.Errorf("column %s: %w", name, err)
		}
	}
	if p.PID == 0 || p.Type == "" {
		return Proc{}, errors.New("no PID or type")
	}
	return p, nil
}

// loadsInWorker reports whether HAProxy version v, as `show proc` prints
// it ("3.2.26-1", "3.3-dev5"), loads its configuration in the worker.
// From 3.1 the master reads only the global section and forks the worker,
// which parses the rest and binds; `show proc` lists the worker from the
// fork, so a worker listed is not yet one that loaded, nor one that will.
// Earlier masters load the configuration and bind before they fork. A
// version that does not parse is taken for an earlier one.
func loadsInWorker(v string) bool {
	ver, err := ParseVersion(v)
	return err == nil && ver.AtLeast(3, 1)
}

// workerLoaded reports whether worker pid answers `show info` through
// the master CLI (`@!<pid>`). From 3.1 a worker is listed while it loads
// the configuration (loadsInWorker), and the master forwards a command to
// it once it runs its loop, that is, once it loaded: the answer says so
// whatever became of the admin socket's file. It waits a second at most.
func (m *Master) workerLoaded(ctx context.Context, pid int) bool {
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	out, err := m.command(qctx, fmt.Sprintf("@!%d show info", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Pid: "); ok {
			got, err := strconv.Atoi(strings.TrimSpace(v))
			return err == nil && got == pid
		}
	}
	return false
}

// loaded reports whether the master info describes has loaded its
// configuration: up to 3.0 a master that answers has, from 3.1 its newest
// worker must answer too (workerLoaded).
func (m *Master) loaded(ctx context.Context, info ProcInfo) bool {
	if !loadsInWorker(info.Master.Version) {
		return true
	}
	return len(info.Workers) > 0 && m.workerLoaded(ctx, youngest(info.Workers).PID)
}

// youngest is the worker that lived through the fewest reloads: the
// newest of several listed.
func youngest(workers []Proc) Proc {
	y := workers[0]
	for _, w := range workers[1:] {
		if w.Reloads < y.Reloads {
			y = w
		}
	}
	return y
}

// ErrReloadFailed is wrapped by Reload's error when HAProxy reports that the
// reload did not produce a new worker (the old one keeps serving).
var ErrReloadFailed = errors.New("reload failed")

// reloadPoll is how often Reload polls `show proc` while waiting.
const reloadPoll = 50 * time.Millisecond

// Reload asks the master to reload and waits until `show proc` confirms it.
//
// On 2.6 the master CLI `reload` is asynchronous: the master re-executes
// itself and drops the connection without a reply. The outcome is read
// from `show proc`, which the re-executed master only answers once it has
// parsed the configuration and forked (or failed to fork) the new worker:
//   - success: the reload counter rose and a worker PID not seen before is
//     listed among the current workers;
//   - failure: the counter rose and [failed: N] rose (2.6.12 shows
//     "2 [failed: 1]" and keeps the old worker), or, where no failed
//     counter is printed, the counter rose but no new worker appears.
//
// Newer versions (2.9+; 3.0.11 checked by the tests) reply synchronously
// with "Success=0|1" followed by "--" and the master's startup messages; a
// "Success=0" is reported at once, with those messages and `show proc`,
// anything else is confirmed the same way.
//
// From 3.1 a master whose last worker is still loading refuses another
// reload ("Another reload is still in progress."): it is asked again
// until it takes it, for up to reloadBusyWait; a worker loading longer
// than that is not waited for here (the caller's loop would be held): the
// error, which is not ErrReloadFailed, says so, and the caller retries.
// Reload waits until ctx is done; give it a deadline.
func (m *Master) Reload(ctx context.Context) (ProcInfo, error) {
	busySince := time.Now()
	for {
		before, err := m.ShowProc(ctx)
		if err != nil {
			return ProcInfo{}, fmt.Errorf("reload: %w", err)
		}
		out, err := m.command(ctx, "reload")
		if err != nil && ctx.Err() != nil {
			return ProcInfo{}, fmt.Errorf("reload: %w", err)
		}
		// A read error after the command was sent is expected on 2.6: the
		// master re-executes and the connection dies with it.
		if !strings.HasPrefix(strings.TrimSpace(out), "Success=0") {
			return m.confirmReload(ctx, before)
		}
		if strings.Contains(out, reloadInProgress) {
			if time.Since(busySince) > reloadBusyWait {
				return ProcInfo{}, fmt.Errorf("reload: the master still loads an earlier reload after %s: %s", reloadBusyWait, strings.TrimSpace(out))
			}
			select {
			case <-ctx.Done():
				return ProcInfo{}, fmt.Errorf("reload: %w: %s", context.Cause(ctx), strings.TrimSpace(out))
			case <-time.After(reloadPoll):
			}
			continue
		}
		// The master answers once it gave up on the new configuration, so
		// `show proc` already counts the failed reload, as on 2.6.
		after, err := m.ShowProc(ctx)
		if err != nil {
			after = ProcInfo{}
		}
		return after, fmt.Errorf("%w: %s", ErrReloadFailed, strings.TrimSpace(out))
	}
}

// reloadInProgress is how a 3.1+ master refuses a reload while its last
// worker still loads.
const reloadInProgress = "Another reload is still in progress"

// reloadBusyWait bounds how long Reload asks again a master that is busy
// with an earlier reload: a worker loads 10k routes in about a second.
var reloadBusyWait = 10 * time.Second

func (m *Master) confirmReload(ctx context.Context, before ProcInfo) (ProcInfo, error) {
	oldPIDs := make([]int, 0, len(before.Workers)+len(before.OldWorkers))
	for _, p := range append(slices.Clone(before.Workers), before.OldWorkers...) {
		oldPIDs = append(oldPIDs, p.PID)
	}
	var lastErr error
	// Without a failed counter, "counter rose, no new worker" is given a
	// short grace before it counts as a failure.
	var noNewWorkerSince time.Time
	tick := time.NewTicker(reloadPoll)
	defer tick.Stop()
	for {
		after, err := m.ShowProc(ctx)
		switch {
		case err != nil:
			lastErr = err // the master is re-executing; try again
		case before.Master.PID != 0 && after.Master.PID != before.Master.PID:
			// Another master holds the socket's path (see
			// SocketsError.MasterHeldBy) until this one, executing itself
			// again, binds it anew.
			lastErr = fmt.Errorf("master socket answered by pid %d, not %d", after.Master.PID, before.Master.PID)
		case after.Master.Reloads > before.Master.Reloads:
			for _, w := range after.Workers {
				if !slices.Contains(oldPIDs, w.PID) {
					return after, nil
				}
			}
			if after.FailedReloads >= 0 {
				// 2.6 to 3.0 count failed reloads since the last load
				// that succeeded (ProcInfo); from 3.1 the re-executed
				// master starts at 0 and counts its one worker's
				// failure: two failures in a row read 1, then 1.
				failed := after.FailedReloads > before.FailedReloads
				if loadsInWorker(after.Master.Version) {
					failed = after.FailedReloads > 0
				}
				if failed {
					return after, fmt.Errorf("%w: master reports %d failed reload(s) and no new worker; the previous worker keeps serving", ErrReloadFailed, after.FailedReloads)
				}
			} else if noNewWorkerSince.IsZero() {
				noNewWorkerSince = time.Now()
			} else if time.Since(noNewWorkerSince) > time.Second {
				return after, fmt.Errorf("%w: reload counter rose to %d but no new worker appeared", ErrReloadFailed, after.Master.Reloads)
			}
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return ProcInfo{}, fmt.Errorf("reload not confirmed: %w (last error: %v)", context.Cause(ctx), lastErr)
			}
			return ProcInfo{}, fmt.Errorf("reload not confirmed: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}
