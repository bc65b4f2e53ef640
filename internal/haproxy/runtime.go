package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRuntimeTimeout bounds a runtime batch when the caller's context
// has no deadline: a stuck socket must not stall the reconcile loop.
const DefaultRuntimeTimeout = 30 * time.Second

// Runtime talks to HAProxy's runtime API on the admin socket
// (`stats socket <run>/admin.sock mode 600 level admin`).
type Runtime struct {
	// socketPath holds a string. SetSocket changes it while calls may run
	// on other goroutines (the metrics scrape reads stats).
	socketPath atomic.Value
}

// NewRuntime returns a client for the admin socket at socketPath. It does
// not connect: every call opens its own connection.
func NewRuntime(socketPath string) *Runtime {
	r := &Runtime{}
	r.SetSocket(socketPath)
	return r
}

// SetSocket points later calls at the admin socket at socketPath (it was
// renamed after a loss, see sockets.go); calls under way finish on the
// old one.
func (r *Runtime) SetSocket(socketPath string) { r.socketPath.Store(socketPath) }

// Response is HAProxy's reply to one runtime command.
type Response struct {
	// Command is the command as given to Execute (payload included).
	Command string
	// Output is the reply without the severity tag and trailing newlines.
	// Commands that succeed silently (set server … weight) reply "".
	Output string
	// Severity is the syslog level HAProxy tagged the reply with
	// ("[3]: No such server." → 3), or -1 when the reply was untagged, as
	// show output and silent successes are.
	Severity int
}

// Execute sends cmds over ONE connection and returns one Response per
// command, in order. It returns an error only when the exchange itself
// fails (dial, timeout, connection closed mid-batch, a command that cannot
// be framed); then the responses received so far are returned with it.
// HAProxy's refusals are not errors of Execute: check each Response.Err.
//
// Framing: the connection is switched to interactive mode with `prompt`,
// after which HAProxy ends every reply with "\n> ". Each command is sent
// and its reply read up to that prompt before the next is sent. The
// alternative, one line of `;`-separated commands, was rejected: replies
// come back concatenated with nothing to tell where one ends (silent
// successes reply nothing at all), and the request line is limited to
// tune.bufsize. A prompt per command costs one round trip on a local unix
// socket (see BenchmarkExecuteBatch1000) and keeps replies unambiguous.
// `set severity-output number` makes HAProxy tag its messages with their
// severity, which Response.Err uses with the reply text.
//
// A command is one line. Payload commands (`set ssl cert <path> <<`,
// `add map @<ver> <map> <<`) carry their payload after the first newline;
// the payload must not contain empty lines (an empty line ends it) and must
// fit in HAProxy's buffer (tune.bufsize, 16 KiB by default; 2.6.12 drops
// the connection on a larger one): the plan package builds them within
// plan.MaxPayload. `;` is refused outside payloads, since HAProxy would split
// the command in two and the replies would no longer line up.
func (r *Runtime) Execute(ctx context.Context, cmds []string) ([]Response, error) {
	return r.execute(ctx, cmds, false)
}

// Apply is Execute for commands that build on each other: it stops at the
// first command HAProxy refuses and returns that refusal as the error, so
// that `enable server` after a refused `add server` does not act on
// whatever server already had the name.
func (r *Runtime) Apply(ctx context.Context, cmds []string) ([]Response, error) {
	resps, err := r.execute(ctx, cmds, true)
	if err == nil {
		err = FirstError(resps)
	}
	return resps, err
}

func (r *Runtime) execute(ctx context.Context, cmds []string, stopOnRefusal bool) ([]Response, error) {
	wire := make([][]byte, len(cmds))
	for i, c := range cmds {
		w, err := frameCommand(c)
		if err != nil {
			return nil, fmt.Errorf("runtime command %d: %w", i, err)
		}
		wire[i] = w
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRuntimeTimeout)
		defer cancel()
	}
	s, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer s.close()

	resps := make([]Response, 0, len(cmds))
	for i, c := range cmds {
		out, err := s.roundTrip(wire[i])
		// Another session holds the certificate lock for a moment (an
		// operator's `show ssl cert`, a monitoring scrape): the command
		// did nothing, and goes again once it is free. Taken as a
		// refusal, it cost a reload (audit T19).
		for wait := certsLockedWait; err == nil && strings.Contains(out, certsLocked) && wait <= maxCertsLockedWait && sleep(ctx, wait); wait *= 2 {
			out, err = s.roundTrip(wire[i])
		}
		if err != nil {
			return resps, fmt.Errorf("runtime command %d %q: %w", i, firstLine(c), s.cause(err))
		}
		resps = append(resps, newResponse(c, out, isPayload(c)))
		if stopOnRefusal && resps[i].Err() != nil {
			break
		}
	}
	return resps, nil
}

// certsLocked is what HAProxy answers a certificate, crt-list or CA file
// command while another session holds the lock on them; the command is
// tried again after certsLockedWait, doubled each time up to
// maxCertsLockedWait (about 1.3 s in all).
const (
	certsLocked        = "Operations on certificates are currently locked!"
	certsLockedWait    = 5 * time.Millisecond
	maxCertsLockedWait = 640 * time.Millisecond
)

// sleep waits d, or less if ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// session is one interactive connection to the admin socket.
type session struct {
	ctx  context.Context
	conn net.Conn
	stop func() bool
	buf  *[]byte
	acc  []byte
}

func (r *Runtime) dial(ctx context.Context) (*session, error) {
	var d net.Dialer
	path := r.socketPath.Load().(string)
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return nil, fmt.Errorf("connect to runtime API %s: %w", path, err)
	}
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, fmt.Errorf("set deadline on runtime API %s: %w", path, err)
	}
	// A cancelled context interrupts a blocked read or write.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	s := &session{ctx: ctx, conn: conn, stop: stop, buf: readBufs.Get().(*[]byte)}
	for _, setup := range []string{"prompt\n", "set severity-output number\n"} {
		out, err := s.roundTrip([]byte(setup))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("start runtime session on %s: %w", path, s.cause(err))
		}
		if out != "" {
			s.close()
			return nil, fmt.Errorf("start runtime session on %s: %q replied %q", path, strings.TrimSpace(setup), out)
		}
	}
	return s, nil
}

func (s *session) close() {
	s.stop()
	// Polite goodbye; HAProxy closes its side either way.
	_, _ = s.conn.Write([]byte("quit\n"))
	_ = s.conn.Close()
	if s.buf != nil {
		readBufs.Put(s.buf)
		s.buf = nil
	}
}

// readBufs are the sessions' read buffers. A change opens two or three
// sessions (commands, read-back), and a fresh 64 KiB each was a tenth of
// what an endpoint change allocated at 10k routes (heap profile of
// TestBenchLeanChange10k), all of it for the collector.
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, 64<<10)
	return &b
}}

// cause prefers the context's error over the i/o timeout it provoked.
func (s *session) cause(err error) error {
	if ctxErr := s.ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return err
}

// promptSuffix ends every reply in interactive mode.
var promptSuffix = []byte("\n> ")

// roundTrip writes one framed command and reads its reply up to the prompt.
// A reply containing "\n> " itself could end the read early only if a read
// happened to stop right there; none of the replies haroute uses (messages,
// server and map listings with its own map values) contain it.
func (s *session) roundTrip(wire []byte) (string, error) {
	if _, err := s.conn.Write(wire); err != nil {
		return "", fmt.Errorf("write: %w", err)
	}
	s.acc = s.acc[:0]
	for {
		n, err := s.conn.Read(*s.buf)
		s.acc = append(s.acc, (*s.buf)[:n]...)
		if bytes.HasSuffix(s.acc, promptSuffix) {
			return string(s.acc[:len(s.acc)-len(promptSuffix)]), nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", fmt.Errorf("connection closed by haproxy after %q", truncate(string(s.acc), 200))
			}
			return "", fmt.Errorf("read: %w", err)
		}
	}
}

// frameCommand checks a command and returns its bytes on the wire.
func frameCommand(c string) ([]byte, error) {
	head, payload, hasPayload := strings.Cut(c, "\n")
	head = strings.TrimSpace(head)
	if head == "" {
		return nil, errors.New("empty command")
	}
	if strings.Contains(head, ";") {
		return nil, fmt.Errorf("%q: ';' would split it into two commands", head)
	}
	if !hasPayload {
		if strings.HasSuffix(head, "<<") {
			return nil, fmt.Errorf("%q: payload marker without payload", head)
		}
		return []byte(head + "\n"), nil
	}
	if !strings.HasSuffix(head, " <<") {
		return nil, fmt.Errorf("%q: a multi-line command must end its first line with \" <<\"", head)
	}
	payload = strings.TrimRight(payload, "\n")
	if payload == "" {
		return nil, fmt.Errorf("%q: empty payload", head)
	}
	if strings.Contains(payload, "\n\n") {
		return nil, fmt.Errorf("%q: payload contains an empty line, which would end it early", head)
	}
	return []byte(head + "\n" + payload + "\n\n"), nil
}

func isPayload(c string) bool { return strings.Contains(c, "\n") }

// newResponse splits HAProxy's raw reply into output and severity.
func newResponse(cmd, raw string, payload bool) Response {
	if payload {
		// In interactive mode HAProxy answers each payload line with a
		// "+ " continuation prompt before the reply proper (seen on 2.6.12).
		for strings.HasPrefix(raw, "+ ") {
			raw = raw[2:]
		}
	}
	sev := -1
	if len(raw) >= 5 && raw[0] == '[' && raw[1] >= '0' && raw[1] <= '7' && raw[2:5] == "]: " {
		sev = int(raw[1] - '0')
		raw = raw[5:]
	}
	return Response{Command: cmd, Output: strings.TrimRight(raw, "\n"), Severity: sev}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
