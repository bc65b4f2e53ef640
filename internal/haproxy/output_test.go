package haproxy

import (
	"bytes"
	"io"
	"log/slog"
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
	in := strings.Join([]string{
		"[NOTICE]   (25583) : CLI : 'server be/s1' : New server registered.",
		"[WARNING]  (25583) : Server be/s1 is UP/READY (leaving forced maintenance).",
		"[WARNING]  (25583) : Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left.",
		"Server be/s1 is UP/READY (leaving forced maintenance).",
		"Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left.",
		"backend be2 has no server available!",
		"[WARNING]  (25583) : Server be/s1 is DOWN.",
		"Server be/s1 is DOWN.",
		"Server be/s1 is DOWN.", // a second event, not a copy: nothing tagged precedes it
	}, "\n") + "\n"
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	o := newOutputLog(io.NopCloser(strings.NewReader(in)), log)
	o.waitEOF(10 * time.Second)
	want := strings.Join([]string{
		`level=INFO msg=haproxy line="[NOTICE] CLI : 'server be/s1' : New server registered."`,
		`level=WARN msg=haproxy line="[WARNING] Server be/s1 is UP/READY (leaving forced maintenance)."`,
		`level=WARN msg=haproxy line="[WARNING] Server be/s0 is going DOWN for maintenance. 1 active and 0 backup servers left."`,
		`level=INFO msg=haproxy line="backend be2 has no server available!"`,
		`level=WARN msg=haproxy line="[WARNING] Server be/s1 is DOWN."`,
		`level=INFO msg=haproxy line="Server be/s1 is DOWN."`,
	}, "\n") + "\n"
	if got := buf.String(); got != want {
		t.Errorf("logged:\n%s\nwant:\n%s", got, want)
	}
}
