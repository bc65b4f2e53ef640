package haproxy

import (
	"bytes"
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
		`level=WARN msg=haproxy line="[WARNING] Server be/s1 is UP/READY (leaving forced maintenance)."`,
		`level=WARN msg=haproxy line="[WARNING] Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left."`,
		`level=INFO msg=haproxy line="backend be2 has no server available!"`,
		`level=WARN msg=haproxy line="[WARNING] Server be/s1 is DOWN."`,
		`level=INFO msg=haproxy line="Server be/s1 is DOWN."`,
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
		"[WARNING]  (9) : CLI : We generated two equal cookies for two different servers.",
		"Please change the secret key for 'be_http:ns:a'.",
		"[WARNING]  (9) : Proxy stats stopped (cumulated conns: FE: 1, BE: 0).",
	})
	want := []string{
		`level=INFO msg=haproxy line="3 proxies stopped (public … be_pool:http:1); their one line each is not logged"`,
		`level=WARN msg=haproxy line="[WARNING] Former worker (8) exited with code 0 (Exit)"`,
		`level=INFO msg=haproxy line="proxy stats stopped"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tail := o.lines(); len(tail) != 5 || !strings.HasPrefix(tail[0], "3 proxies stopped") || tail[4] != "proxy stats stopped" {
		t.Errorf("kept for error messages: %q", tail)
	}
}

// feedOutput runs lines, as HAProxy printed them, through an outputLog
// and returns what it logged (without timestamps), line by line.
func feedOutput(lines []string) ([]string, *outputLog) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	o := newOutputLog(io.NopCloser(strings.NewReader(strings.Join(lines, "\n")+"\n")), log)
	o.waitEOF(10 * time.Second)
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"), o
}
