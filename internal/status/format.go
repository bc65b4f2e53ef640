package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// Format writes the status for a person at a terminal: a summary, then one
// line per route with its warnings and rejection reasons indented below.
// Times are printed in UTC (RFC 3339) so output from different hosts
// compares directly. Write errors are ignored, as with fmt.Fprint to a
// terminal.
func (s Status) Format(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }

	if s.Ready {
		row("ready", "yes")
	} else {
		reason := s.NotReadyReason
		if reason == "" {
			reason = defaultNotReady
		}
		row("ready", "no ("+reason+")")
	}
	row("generation", strconv.FormatUint(s.Generation, 10))
	row("config hash", orDash(s.ConfigHash))
	row("applied", formatTime(s.AppliedAt))
	row("haproxy", formatHAProxy(s.HAProxy))
	row("reloads", fmt.Sprintf("%d (runtime updates %d, fallbacks %d)", s.Reloads, s.RuntimeUpdates, s.Fallbacks))
	row("last reload", formatReload(s.LastReload))
	if s.LastError != nil {
		row("last error", formatTime(s.LastError.Time)+" "+s.LastError.Message)
	} else {
		row("last error", "-")
	}
	row("routes", formatRouteCounts(s.Routes))
	tw.Flush()

	if len(s.Routes) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tHOST\tPATH\tSTATE")
	for _, r := range s.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Key, r.Host, orDash(r.Path), r.State)
	}
	tw.Flush()
	// Details go after the table so long messages do not widen its columns.
	for _, r := range s.Routes {
		for _, reason := range r.Reasons {
			fmt.Fprintf(w, "%s: rejected: %s\n", r.Key, reason)
		}
		for _, warning := range r.Warnings {
			fmt.Fprintf(w, "%s: warning: %s\n", r.Key, warning)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func formatHAProxy(h HAProxy) string {
	if h.PID == 0 {
		return "not running"
	}
	line := fmt.Sprintf("master pid %d, workers %s, old workers %s", h.PID, formatPIDs(h.Workers), formatPIDs(h.OldWorkers))
	if h.Version != "" {
		line += fmt.Sprintf("; %s, %d/%d connections", h.Version, h.CurrConns, h.MaxConn)
	}
	return line
}

func formatPIDs(pids []int) string {
	if len(pids) == 0 {
		return "none"
	}
	parts := make([]string, len(pids))
	for i, p := range pids {
		parts[i] = strconv.Itoa(p)
	}
	return strings.Join(parts, " ")
}

func formatReload(r *Reload) string {
	if r == nil {
		return "-"
	}
	outcome := "ok"
	if !r.OK {
		outcome = "FAILED"
	}
	out := fmt.Sprintf("%s %s in %s", formatTime(r.Time), outcome, r.Duration.Round(time.Millisecond))
	if len(r.Reasons) > 0 {
		out += " (" + strings.Join(r.Reasons, "; ") + ")"
	}
	if r.Error != "" {
		out += ": " + r.Error
	}
	return out
}

// formatRouteCounts summarises routes by state, in a fixed order.
func formatRouteCounts(routes []Route) string {
	counts := RouteCounts(routes)
	var parts []string
	for _, st := range []model.RouteState{model.RouteAdmitted, model.RouteAdmittedWithWarnings, model.RouteRejected} {
		if n := counts[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(routes), strings.Join(parts, ", "))
}
