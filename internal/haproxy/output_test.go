package haproxy

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each message HAProxy prints is logged once, at HAProxy's level: the
// untagged copy its `log stderr format raw` target prints after a tagged
// one is dropped (recorded from 3.0.11; 2.6.12 prints the same pairs),
// while a message only the log target carries is kept.
func TestOutputLogLogsEachMessageOnce(t *testing.T) {
	// As HAProxy writes them, pids included.
	got, _ := feedOutput([]string{
		"[NOTICE]   (25583) : CLI : 'server be/s1' : New server registered.",
		"[WARNING]  (25583) : Server be/s1 is UP/READY (leaving forced maintenance).",
		"[WARNING]  (25583) : Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left.",
		"Server be/s1 is UP/READY (leaving forced maintenance).",
		"Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left.",
		"backend be2 has no server available!",
		"[WARNING]  (25583) : Server be/s1 is DOWN.",
		"Server be/s1 is DOWN.",
		"Server be/s1 is DOWN.", // a second event, not a copy: nothing tagged precedes it
	})
	want := []string{
		`level=INFO msg=haproxy line="[NOTICE] CLI : 'server be/s1' : New server registered."`,
		`level=INFO msg=haproxy line="[WARNING] Server be/s1 is UP/READY (leaving forced maintenance)."`,
		`level=INFO msg=haproxy line="[WARNING] Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left."`,
		`level=INFO msg=haproxy line="backend be2 has no server available!"`,
		`level=WARN msg=haproxy line="[WARNING] Server be/s1 is DOWN."`,
		`level=INFO msg=haproxy line="Server be/s1 is DOWN."`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// 2.6.12 marks what a runtime command caused with "CLI : " on stderr, and
// its log target does not: each event is still logged once. haroute's
// own changes (a server in or out of maintenance, a spare backend filled
// or emptied) are not warnings or errors; a health check's verdict and
// an alert HAProxy raised by itself keep their level. Recorded from a
// route bound to a spare and unbound again at 10k routes.
func TestOutputLogRuntimeCommandsAreNotAlarms(t *testing.T) {
	got, _ := feedOutput([]string{
		"[NOTICE]   (14277) : CLI : 'server be_pool:http:2/ep_127.0.0.1_37461' : New server registered.",
		"[WARNING]  (14277) : CLI : Server be_pool:http:2/ep_127.0.0.1_37461 is UP/READY (leaving forced maintenance).",
		"Server be_pool:http:2/ep_127.0.0.1_37461 is UP/READY (leaving forced maintenance).",
		"[WARNING]  (14277) : CLI : Server be_pool:http:2/ep_127.0.0.1_37461 is going DOWN for maintenance. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
		"Server be_pool:http:2/ep_127.0.0.1_37461 is going DOWN for maintenance. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
		"[ALERT]    (14277) : CLI : backend 'be_pool:http:2' has no server available!",
		"backend be_pool:http:2 has no server available!",
		"[WARNING]  (14277) : CLI : Server be_http:ns:a/ep_10.0.0.1_80 is going DOWN for maintenance. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
		"[ALERT]    (14277) : CLI : backend 'be_http:ns:a' has no server available!",
		"backend be_http:ns:a has no server available!",
		"[WARNING]  (14277) : Server be_pool:http:3/ck_10.0.0.2_80 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
		"[ALERT]    (14277) : backend 'be_http:ns:b' has no server available!",
		// The thread that ran an `add server` prefixes what it says next
		// with "CLI : ", a health check's verdict too (T42).
		"[WARNING]  (14277) : CLI : Server be_http:ns:c/ck_10.0.0.3_80 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.",
		"[ALERT]    (14277) : CLI : backend 'be_http:ns:c' has no server available!",
	})
	want := []string{
		`level=INFO msg=haproxy line="[WARNING] CLI : Server be_http:ns:a/ep_10.0.0.1_80 is going DOWN for maintenance. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."`,
		// Not marked emptied by haroute (TestOutputLogAlertOfABackendHarouteEmptied).
		`level=ERROR msg=haproxy line="[ALERT] CLI : backend 'be_http:ns:a' has no server available!"`,
		`level=WARN msg=haproxy line="[WARNING] Server be_pool:http:3/ck_10.0.0.2_80 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."`,
		`level=ERROR msg=haproxy line="[ALERT] backend 'be_http:ns:b' has no server available!"`,
		`level=WARN msg=haproxy line="[WARNING] CLI : Server be_http:ns:c/ck_10.0.0.3_80 is DOWN, reason: Layer4 connection problem, info: \"Connection refused\", check duration: 0ms. 0 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue."`,
		`level=ERROR msg=haproxy line="[ALERT] CLI : backend 'be_http:ns:c' has no server available!"`,
	}
	// feedOutput logs at info: what is routine is at debug, not shown.
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A backend haroute took servers out of (a route deleted or gone to no
// endpoints) has no server left as a consequence haroute logs itself:
// HAProxy's alert is information, on 2.6 ("CLI : ") and on 3.x, which
// does not say that the runtime API caused it (it was an error there,
// paging for every route deleted). A backend a health check emptied keeps
// its alert.
func TestOutputLogAlertOfABackendHarouteEmptied(t *testing.T) {
	got, _ := feedOutputEmptied([]string{
		"[ALERT]    (14277) : CLI : backend 'be_http:ns:a' has no server available!",
		"[ALERT]    (14277) : backend 'be_edge_http:ns:c' has no server available!",
		"[ALERT]    (14277) : backend 'be_http:ns:b' has no server available!",
	}, []string{"be_http:ns:a", "be_edge_http:ns:c"})
	want := []string{
		`level=INFO msg=haproxy line="[ALERT] CLI : backend 'be_http:ns:a' has no server available!"`,
		`level=INFO msg=haproxy line="[ALERT] backend 'be_edge_http:ns:c' has no server available!"`,
		`level=ERROR msg=haproxy line="[ALERT] backend 'be_http:ns:b' has no server available!"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A stopping worker's "Proxy … stopped" lines (one per proxy, tagged and
// copied: 22,000 at 10k routes) are logged as one line per burst, and the
// cookie warnings of a server's checked twin are debug only.
func TestOutputLogSummarizesProxyStops(t *testing.T) {
	got, o := feedOutput([]string{
		"[WARNING]  (7) : Proxy public stopped (cumulated conns: FE: 12, BE: 0).",
		"[WARNING]  (7) : Proxy be_http:ns:a stopped (cumulated conns: FE: 0, BE: 3).",
		"Proxy public stopped (cumulated conns: FE: 12, BE: 0).",
		"[WARNING]  (7) : CLI : Proxy be_pool:http:1 stopped (cumulated conns: FE: 0, BE: 0).",
		"Proxy be_http:ns:a stopped (cumulated conns: FE: 0, BE: 3).",
		"Proxy be_pool:http:1 stopped (cumulated conns: FE: 0, BE: 0).",
		"[WARNING]  (7) : Former worker (8) exited with code 0 (Exit)",
		"[WARNING]  (7) : Former worker (10) exited with code 139 (Segmentation fault)",
		"[WARNING]  (9) : CLI : We generated two equal cookies for two different servers.",
		"Please change the secret key for 'be_http:ns:a'.",
		"[WARNING]  (9) : Proxy stats stopped (cumulated conns: FE: 1, BE: 0).",
	})
	want := []string{
		`level=INFO msg=haproxy line="3 proxies stopped (public … be_pool:http:1); their one line each is not logged"`,
		// What every reload ends with is not a warning; a crash is an error.
		`level=INFO msg=haproxy line="[WARNING] Former worker (8) exited with code 0 (Exit)"`,
		`level=ERROR msg=haproxy line="[WARNING] Former worker (10) exited with code 139 (Segmentation fault)"`,
		`level=INFO msg=haproxy line="proxy stats stopped"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tail := o.lines(); len(tail) != 6 || !strings.HasPrefix(tail[0], "3 proxies stopped") || tail[5] != "proxy stats stopped" {
		t.Errorf("kept for error messages: %q", tail)
	}
}

// feedOutput runs lines, as HAProxy printed them, through an outputLog
// and returns what it logged (without timestamps), line by line.
func feedOutput(lines []string) ([]string, *outputLog) { return feedOutputEmptied(lines, nil) }

// feedOutputEmptied is feedOutput with the backends haroute emptied.
func feedOutputEmptied(lines []string, emptied []string) ([]string, *outputLog) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	e := &emptiedBackends{}
	e.mark(emptied, time.Now())
	o := newOutputLog(io.NopCloser(strings.NewReader(strings.Join(lines, "\n")+"\n")), log, "be_pool:", e, nil)
	o.waitEOF(10 * time.Second)
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"), o
}

// A master that stops cleanly, with its worker, says so in warnings that
// every stop and restart of haroute printed: logged as information. A
// worker that exits otherwise stays a warning.
func TestCleanStopIsNotAWarning(t *testing.T) {
	got, _ := feedOutput([]string{
		"[WARNING]  (7) : Exiting Master process...",
		"[WARNING]  (7) : Current worker (8) exited with code 0 (Exit)",
		"[WARNING]  (7) : All workers exited. Exiting... (0)",
		"[WARNING]  (7) : Current worker (9) exited with code 137 (Killed)",
		"[WARNING]  (7) : All workers exited. Exiting... (137)",
	})
	want := []string{
		`level=INFO msg=haproxy line="[WARNING] Exiting Master process..."`,
		`level=INFO msg=haproxy line="[WARNING] Current worker (8) exited with code 0 (Exit)"`,
		`level=INFO msg=haproxy line="[WARNING] All workers exited. Exiting... (0)"`,
		`level=WARN msg=haproxy line="[WARNING] Current worker (9) exited with code 137 (Killed)"`,
		`level=WARN msg=haproxy line="[WARNING] All workers exited. Exiting... (137)"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An old worker that crashed or was killed while it drained connections
// after a reload cut them; the master only warned, and haroute counted
// nothing (audit T21: a segfault at soft stop). It is reported; a clean
// exit, the SIGTERM or SIGINT a stop sends, and the current worker (whose
// master's exit haroute reports itself) are not.
func TestOutputLogReportsAnOldWorkerCrash(t *testing.T) {
	var crashes []string
	o := newOutputLog(io.NopCloser(strings.NewReader(strings.Join([]string{
		"[WARNING]  (7) : Former worker (8) exited with code 0 (Exit)",
		"[WARNING]  (7) : Former worker (10) exited with code 139 (Segmentation fault)",
		"[WARNING]  (7) : Former worker (11) exited with code 143 (Terminated)",
		"[WARNING]  (7) : Former worker (12) exited with code 137 (Killed)",
		"[WARNING]  (7) : Current worker (13) exited with code 139 (Segmentation fault)",
		"Former worker (10) exited with code 139 (Segmentation fault)",
	}, "\n")+"\n")), slog.New(slog.DiscardHandler), "be_pool:", &emptiedBackends{}, func(pid int, status string) {
		crashes = append(crashes, fmt.Sprintf("%d %s", pid, status))
	})
	o.waitEOF(10 * time.Second)
	want := []string{"10 code 139 (Segmentation fault)", "12 code 137 (Killed)"}
	if !slices.Equal(crashes, want) {
		t.Errorf("crashes reported %q, want %q", crashes, want)
	}
}

// An HAProxy that went down is quoted by what says why: a worker killed,
// not the alerts haroute's own commands caused before (T32 quoted "backend
// … has no server available!" as the last words of a kill -9), nor the
// clean exit of a worker a reload retired (T35). As 2.6.12 prints them.
func TestLastWordsSayWhyHAProxyStopped(t *testing.T) {
	_, o := feedOutput([]string{
		"[WARNING]  (14277) : Former worker (14288) exited with code 0 (Exit)",
		"[ALERT]    (14277) : CLI : backend 'be_http:soak:r8253' has no server available!",
		"[WARNING]  (14277) : Server be_http:soak:r1/ep_10.0.0.1_8080 is going DOWN for maintenance.",
		"[ALERT]    (14277) : backend 'be_http:soak:r9' has no server available!",
		"[WARNING]  (14277) : Current worker (14301) exited with code 137 (Killed)",
		"[ALERT]    (14277) : exit-on-failure: killing every processes with SIGTERM",
	})
	want := "; haproxy said: [WARNING] Current worker (14301) exited with code 137 (Killed); [ALERT] exit-on-failure: killing every processes with SIGTERM"
	if got := o.tailSuffix(true); got != want {
		t.Errorf("tailSuffix() = %q\nwant %q", got, want)
	}
	// The serving worker's exit says why even with code 0 (T37).
	_, o = feedOutput([]string{
		"[ALERT]    (7) : config : something earlier",
		"[WARNING]  (7) : Current worker (9) exited with code 0 (Exit)",
	})
	want = "; haproxy said: [ALERT] config : something earlier; [WARNING] Current worker (9) exited with code 0 (Exit)"
	if got := o.tailSuffix(true); got != want {
		t.Errorf("tailSuffix() = %q\nwant %q", got, want)
	}
	// What came before the last load's outcome is not why it went: a
	// master killed after it loaded (T42), or after a reload that failed
	// (T39), said nothing of it.
	for _, lines := range [][]string{
		{"[NOTICE]   (7) : New worker (9) forked", "[NOTICE]   (7) : Loading success."},
		{"[ALERT]    (7) : config : parsing [/x/haproxy.cfg:9] : unknown keyword", "[WARNING]  (7) : Failed to load worker (17380) exited with code 137 (Killed)"},
		{"[ALERT]    (7) : config : parsing [/x/haproxy.cfg:9] : unknown keyword", "[WARNING]  (7) : Loading failure!"},
	} {
		if _, o = feedOutput(lines); o.tailSuffix(true) != "" {
			t.Errorf("tailSuffix() after %q = %q, want nothing", lines, o.tailSuffix(true))
		}
	}
	// At a start they are why it went (3.1+: the worker fails to load).
	_, o = feedOutput([]string{
		"[ALERT]    (7) : config : parsing [/x/haproxy.cfg:9] : unknown keyword",
		"[WARNING]  (7) : Failed to load worker!",
	})
	if want = "; haproxy said: [ALERT] config : parsing [/x/haproxy.cfg:9] : unknown keyword"; o.tailSuffix(false) != want {
		t.Errorf("tailSuffix(false) = %q\nwant %q", o.tailSuffix(false), want)
	}
	// A worker that died once loaded is quoted (T39's takeover).
	_, o = feedOutput([]string{
		"[NOTICE]   (7) : Loading success.",
		"[ALERT]    (7) : Current worker (9) exited with code 137 (Killed)",
	})
	if want = "; haproxy said: [ALERT] Current worker (9) exited with code 137 (Killed)"; o.tailSuffix(true) != want {
		t.Errorf("tailSuffix() = %q\nwant %q", o.tailSuffix(true), want)
	}
}
