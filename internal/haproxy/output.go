package haproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
)

// tailLines is how many of HAProxy's last output lines are kept for error
// messages.
const tailLines = 64

// outputLog reads HAProxy's stdout/stderr, logs each line at the level its
// tag suggests, and keeps the last lines for error messages.
type outputLog struct {
	log  *slog.Logger
	eof  chan struct{}
	mu   sync.Mutex
	cond *sync.Cond
	seq  int      // number of lines read so far
	ring []string // the last tailLines lines, oldest first
	// stops counts the "Proxy … stopped" lines of the current burst
	// (see proxyStops); flush logs them as one line.
	stops proxyStops
	flush *time.Timer
	// spares starts the names of the backends haroute fills and empties
	// itself (Options.SpareBackendPrefix).
	spares string
	// emptied are the backends haroute's own commands took servers out
	// of lately (Supervisor.Emptying); nil for none.
	emptied *emptiedBackends
	// onCrash, if set, hears of an old worker's crash (Options.OnWorkerCrash).
	onCrash func(pid int, status string)
}

func newOutputLog(r io.ReadCloser, log *slog.Logger, spares string, emptied *emptiedBackends, onCrash func(int, string)) *outputLog {
	o := &outputLog{log: log, eof: make(chan struct{}), spares: spares, emptied: emptied, onCrash: onCrash}
	o.cond = sync.NewCond(&o.mu)
	go o.read(r)
	return o
}

func (o *outputLog) read(r io.ReadCloser) {
	defer close(o.eof)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	defer o.flushStops()
	var echoes recentTagged
	for sc.Scan() {
		line := cleanLine(sc.Text())
		if line == "" {
			continue
		}
		if o.countStop(line) {
			continue
		}
		if echoes.isCopy(line) {
			continue
		}
		o.flushStops()
		o.log.Log(context.Background(), lineLevel(line, o.spares, o.emptied.recent), "haproxy", "line", line)
		o.remember(line)
		if msg, tagged := untag(line); tagged && o.onCrash != nil {
			if pid, status, ok := workerCrash(msg); ok {
				o.onCrash(pid, status)
			}
		}
	}
}

func (o *outputLog) remember(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq++
	o.ring = append(o.ring, line)
	if len(o.ring) > tailLines {
		o.ring = o.ring[len(o.ring)-tailLines:]
	}
	o.cond.Broadcast()
}

// A worker that stops (after a reload, or at shutdown) prints "Proxy …
// stopped" for every frontend and backend, as a [WARNING] and again
// untagged through the log target: 22,000 lines at 10k routes. Logged one
// by one they bury everything else, and they exceed journald's default
// rate limit (10,000 messages in 30 s per unit), which then drops
// haroute's own messages too. A burst is logged as one line with the
// count, once another message comes or the burst has been quiet for
// stopsQuiet.
type proxyStops struct {
	tagged, untagged int
	first, last      string // proxy names
}

const stopsQuiet = time.Second

// proxyStopped matches the message of one stopping proxy, as 2.6 to 3.x
// print it ("CLI : " when the stop came through the master CLI).
var proxyStopped = regexp.MustCompile(`^(?:CLI : )?Proxy (\S+) stopped \(cumulated conns: FE: \d+, BE: \d+\)\.$`)

// countStop counts line if it reports a stopping proxy.
func (o *outputLog) countStop(line string) bool {
	msg, tagged := untag(line)
	m := proxyStopped.FindStringSubmatch(msg)
	if m == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &o.stops
	if tagged {
		st.tagged++
	} else {
		st.untagged++
	}
	if st.first == "" {
		st.first = m[1]
	}
	st.last = m[1]
	if o.flush == nil {
		o.flush = time.AfterFunc(stopsQuiet, o.flushStops)
	} else {
		o.flush.Reset(stopsQuiet)
	}
	return true
}

// flushStops logs the burst of stopping proxies counted so far, if any.
func (o *outputLog) flushStops() {
	o.mu.Lock()
	st := o.stops
	o.stops = proxyStops{}
	if o.flush != nil {
		o.flush.Stop()
	}
	o.mu.Unlock()
	// Each stop comes tagged, untagged or both: the larger count is the
	// number of proxies.
	n := max(st.tagged, st.untagged)
	if n == 0 {
		return
	}
	line := fmt.Sprintf("%d proxies stopped (%s … %s); their one line each is not logged", n, st.first, st.last)
	if n == 1 {
		line = "proxy " + st.first + " stopped"
	}
	o.log.Info("haproxy", "line", line)
	o.remember(line)
}

// recentTagged remembers the last few tagged messages HAProxy printed, to
// recognize the copy that follows them. HAProxy reports an administrative
// event (a server going UP or DOWN, a proxy stopping) twice: on stderr
// with its level ("[WARNING] Server be/s1 is UP"), and through the `log
// stderr format raw` target of the rendered config, untagged ("Server
// be/s1 is UP"). The tagged one is kept, at HAProxy's level; a message
// only the log target carries is still logged. Several threads may log
// at once, so the copy need not follow its original directly.
type recentTagged struct {
	msgs [8]string
	next int
}

// isCopy reports whether line is the untagged copy of a recent tagged
// message (and forgets that message: each is copied once), and
// remembers line when it is tagged.
func (r *recentTagged) isCopy(line string) bool {
	if msg, tagged := untag(line); tagged {
		r.msgs[r.next] = asLogged(msg)
		r.next = (r.next + 1) % len(r.msgs)
		return false
	}
	for i, m := range r.msgs {
		if m != "" && m == line {
			r.msgs[i] = ""
			return true
		}
	}
	return false
}

// workerCrash parses the master's "Former worker (PID) exited with code
// N (STATUS)" about an old worker, draining connections after a reload,
// that exited otherwise than cleanly or by the SIGTERM or SIGINT a stop
// sends: a crash (HAProxy 2.6.12 segfaulted so after heavy runtime-API
// use, audit T21), or the OOM killer. The connections it still served
// were cut, and the master only warned. status is "code N (STATUS)".
func workerCrash(msg string) (pid int, status string, ok bool) {
	rest, found := strings.CutPrefix(msg, "Former worker (")
	if !found {
		return 0, "", false
	}
	var code int
	if n, err := fmt.Sscanf(rest, "%d) exited with code %d", &pid, &code); n != 2 || err != nil {
		return 0, "", false
	}
	switch code {
	case 0, 128 + 2, 128 + 15: // clean; SIGINT, SIGTERM
		return 0, "", false
	}
	_, status, _ = strings.Cut(rest, "exited with ")
	return pid, status, true
}

func isCrash(msg string) bool {
	_, _, ok := workerCrash(msg)
	return ok
}

// asLogged is a tagged message as the log target prints the same event.
// 2.6 prefixes stderr's copy of an event a runtime command caused with
// "CLI : ", and quotes the backend in "backend 'be' has no server
// available!"; the log target does neither (3.x drops both on stderr).
func asLogged(msg string) string {
	msg, _ = strings.CutPrefix(msg, cliPrefix)
	if be, ok := strings.CutPrefix(msg, "backend '"); ok {
		if name, ok := strings.CutSuffix(be, "' has no server available!"); ok {
			return "backend " + name + " has no server available!"
		}
	}
	return msg
}

// cliPrefix starts, on 2.6, whatever a thread says after it ran a
// command of the runtime API (`add server`), whether the command caused
// it or not (lineLevel).
const cliPrefix = "CLI : "

// untag splits "[WARNING] message" into the message and true.
func untag(line string) (string, bool) {
	if !strings.HasPrefix(line, "[") {
		return line, false
	}
	end := strings.Index(line, "] ")
	if end < 0 {
		return line, false
	}
	return line[end+2:], true
}

// emptiedBackends remembers, for emptiedFor, the backends haroute took
// servers out of: HAProxy's alert that such a backend has no server left
// is the consequence of a change haroute logs itself (a route deleted, an
// endpoint gone), not an alarm. 3.x does not say that the runtime API
// caused it, and logged at error level, it paged operators for every
// route deleted (audits T16, T19).
type emptiedBackends struct {
	mu sync.Mutex
	at map[string]time.Time
}

// emptiedFor is how long a backend counts as emptied by haroute: the
// alert follows the command within milliseconds. One a failing health
// check empties within it is logged as routine too.
const emptiedFor = 30 * time.Second

func (e *emptiedBackends) mark(names []string, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.at == nil {
		e.at = map[string]time.Time{}
	}
	for name, at := range e.at {
		if now.Sub(at) > emptiedFor {
			delete(e.at, name)
		}
	}
	for _, name := range names {
		e.at[name] = now
	}
}

// recent reports whether backend was emptied by haroute within
// emptiedFor; a nil e knows of none.
func (e *emptiedBackends) recent(backend string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.at[backend]
	return ok && time.Since(at) <= emptiedFor
}

// noServerBackend returns the backend of HAProxy's "backend … has no
// server available!" alert, in any of the forms asLogged reads.
func noServerBackend(msg string) (string, bool) {
	rest, ok := strings.CutPrefix(asLogged(msg), "backend ")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, " has no server available!")
}

func lineLevel(line, spares string, emptied func(backend string) bool) slog.Level {
	msg, _ := untag(line)
	emptiedBackend, noServer := noServerBackend(msg)
	// Caused by haroute's own runtime commands: only an administrative
	// action puts a server in or out of maintenance, and only `add
	// server` and `del server` say those two things. 2.6's "CLI : " does
	// not tell: it prefixes whatever the thread that ran an `add server`
	// says next, health checks' verdicts included, and those of servers
	// added at runtime were logged a level or two low (T42).
	byCLI := strings.Contains(msg, " maintenance") ||
		strings.HasSuffix(msg, "New server registered.") || strings.HasSuffix(msg, "Server deleted.")
	switch {
	case strings.HasSuffix(msg, "We generated two equal cookies for two different servers."),
		strings.HasPrefix(msg, "Please change the secret key for "):
		// An endpoint that becomes health-checked is added as a second
		// server (ck_) beside the unchecked one (ep_), which drains: the
		// same address, so the same dynamic cookie, until ep_ is
		// deleted. Expected, harmless, and three pairs of lines per such
		// change: not a warning for the operator.
		return slog.LevelDebug
	case spares != "" && strings.Contains(msg, spares) && (byCLI || strings.HasSuffix(msg, "has no server available!")):
		// A spare backend filled or emptied as a route is bound to it or
		// unbound: "backend 'be_pool:http:2' has no server available!"
		// is an ALERT to HAProxy, and routine here (haroute logs the
		// route's change itself).
		return slog.LevelDebug
	case noServer && emptied(emptiedBackend):
		// Servers haroute took out: it logs the change itself.
		return slog.LevelInfo
	case strings.HasPrefix(line, "[ALERT]"), strings.HasPrefix(line, "[EMERG]"):
		if byCLI {
			// The last server of a route's backend deleted by haroute
			// because its endpoints went: the route answers 503, which
			// the operator asked for; a warning, not an error.
			return slog.LevelWarn
		}
		return slog.LevelError
	case isCrash(msg):
		return slog.LevelError
	case strings.HasPrefix(msg, "Former worker (") && strings.HasSuffix(msg, "exited with code 0 (Exit)"),
		msg == "Exiting Master process...",
		strings.HasPrefix(msg, "Current worker (") && strings.HasSuffix(msg, "exited with code 0 (Exit)"),
		msg == "All workers exited. Exiting... (0)":
		// An old worker that finished its connections after a reload,
		// and a master that stops with its workers, cleanly: HAProxy's
		// warnings for what every reload and every stop ends with. A
		// stop haroute did not ask for is its own error ("haproxy
		// exited"); a worker that crashed exits otherwise than with 0.
		return slog.LevelInfo
	case strings.HasPrefix(line, "[WARNING]"):
		if byCLI {
			// A server put in or out of maintenance by haroute's own
			// command (an endpoint added or removed), which it logs as
			// a change.
			return slog.LevelInfo
		}
		return slog.LevelWarn
	default:
		return slog.LevelInfo
	}
}

func (o *outputLog) waitEOF(limit time.Duration) {
	select {
	case <-o.eof:
	case <-time.After(limit):
	}
}

// lines returns the last lines read.
func (o *outputLog) lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ring...)
}

// mark returns the number of lines read so far.
func (o *outputLog) mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seq
}

// since returns the lines read after mark that are still in the ring.
func (o *outputLog) since(mark int) []string {
	n := o.seq - mark
	if n > len(o.ring) {
		n = len(o.ring)
	}
	return append([]string(nil), o.ring[len(o.ring)-n:]...)
}

// seenSince reports whether a line containing s was read after mark.
func (o *outputLog) seenSince(mark int, s string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.since(mark) {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// alertsSince waits up to limit for a line containing one of until to
// arrive after mark, then returns the [ALERT] lines read after mark.
func (o *outputLog) alertsSince(mark int, limit time.Duration, until ...string) []string {
	deadline := time.Now().Add(limit)
	wake := time.AfterFunc(limit, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer wake.Stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		lines := o.since(mark)
		found := false
		for _, l := range lines {
			for _, u := range until {
				found = found || strings.Contains(l, u)
			}
		}
		if found || !time.Now().Before(deadline) {
			var alerts []string
			for _, l := range lines {
				if strings.HasPrefix(l, "[ALERT]") {
					alerts = append(alerts, l)
				}
			}
			return alerts
		}
		o.cond.Wait()
	}
}

// exitedFailing reports whether msg is a process's exit other than a
// worker's a reload retired ("Former worker (8) exited with code 0"),
// which every reload prints: "Current worker (9) exited with code 137
// (Killed)", or with code 0 too, says why HAProxy went.
func exitedFailing(msg string) bool {
	_, code, ok := strings.Cut(msg, " exited with code ")
	return ok && (!strings.HasPrefix(code, "0 ") || !strings.HasPrefix(msg, "Former worker"))
}

// tailSuffix formats the last lines for an error: the [ALERT] lines when
// there are any (they say what went wrong), else the last few lines. Of
// a HAProxy that served (afterStart), only what came after the last
// load's outcome counts: a failed reload's alerts were its own error, and
// one that loaded and then was killed said nothing about it ("Loading
// success." is not why it went: T39, T42).
func (o *outputLog) tailSuffix(afterStart bool) string {
	o.mu.Lock()
	lines := append([]string(nil), o.ring...)
	o.mu.Unlock()
	loaded := false
	for i := len(lines) - 1; afterStart && i >= 0; i-- {
		if msg, _ := untag(lines[i]); strings.HasPrefix(msg, "Loading success") ||
			strings.HasPrefix(msg, "Loading failure") || strings.HasPrefix(msg, "Failed to load worker") {
			lines, loaded = lines[i+1:], true
			break
		}
	}
	// A route's backend left without servers never says why HAProxy
	// went down: quoted as its last words, such alerts hid the worker's
	// exit (T32).
	var alerts []string
	for _, l := range lines {
		msg, _ := untag(l)
		if _, noServer := noServerBackend(msg); noServer {
			continue
		}
		if strings.HasPrefix(l, "[ALERT]") || exitedFailing(msg) {
			alerts = append(alerts, l)
		}
	}
	pick := alerts
	if len(pick) == 0 && !loaded {
		pick = lines
	}
	if len(pick) > 8 {
		pick = pick[len(pick)-8:]
	}
	if len(pick) == 0 {
		return ""
	}
	return "; haproxy said: " + strings.Join(pick, "; ")
}
