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

// Format writes the status for a person at a terminal: a summary, one line
// per route, the reasons of rejected and stale routes and the warnings
// (each at file:line:col where the input has one), then the recent errors
// with when they started and were resolved.
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
		row("last error", "since "+formatTime(s.LastError.Time)+" "+s.LastError.Message)
	} else {
		row("last error", "-")
	}
	row("input problems", formatProblems(s.InputProblems))
	for _, e := range s.InputProblems.ErrorList {
		fmt.Fprintf(tw, "\t%s\n", e)
	}
	if n := len(s.InputProblems.ErrorList); n > 0 && s.InputProblems.Errors > n {
		fmt.Fprintf(tw, "\t… and %d more: haroute check on the directory lists them\n", s.InputProblems.Errors-n)
	}
	row("deletion guard", formatGuard(s.DeletionGuard))
	if len(s.HeldFiles) > 0 {
		row("held files", strings.Join(s.HeldFiles, ", ")+" (changed without a final newline: the served version stays until each reads the same for the quiet period)")
	}
	row("routes", formatRouteCounts(s.Routes))
	if len(s.Routes) > 0 {
		row("servers", formatServerSummary(s))
	}
	tw.Flush()

	if len(s.Routes) > 0 {
		fmt.Fprintln(w)
		formatRoutes(w, s.Routes)
	}
	if len(s.StaleObjects) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "STALE OBJECTS")
		for _, o := range s.StaleObjects {
			fmt.Fprintln(w, o)
		}
	}
	if len(s.RecentErrors) > 0 {
		fmt.Fprintln(w)
		formatRecentErrors(w, s.RecentErrors)
	}
}

func formatRoutes(w io.Writer, routes []Route) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tHOST\tPATH\tSTATE\tSERVERS\tSOURCE")
	for _, r := range routes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Key, r.Host, orDash(r.Path), r.State, formatServers(r.Servers), orDash(r.Source))
	}
	tw.Flush()
	// Details go after the table so long messages do not widen its columns.
	for _, r := range routes {
		label := "rejected"
		switch r.State {
		case model.RouteStale:
			label = "stale, serving its last good version"
		case model.RouteHeld:
			label = "held, still served"
		}
		for _, reason := range r.Reasons {
			fmt.Fprintf(w, "%s: %s: %s\n", r.Key, label, reason)
		}
		for _, warning := range r.Warnings {
			fmt.Fprintf(w, "%s: warning: %s\n", r.Key, warning)
		}
		for _, note := range r.Notes {
			fmt.Fprintf(w, "%s: note: %s\n", r.Key, note)
		}
	}
}

// formatRecentErrors lists the history oldest first, as it is kept, so the
// last line is the newest.
func formatRecentErrors(w io.Writer, errs []Error) {
	fmt.Fprintln(w, "RECENT ERRORS")
	for _, e := range errs {
		when := formatTime(e.Time)
		if !e.LastSeen.IsZero() {
			when += " (last " + formatTime(e.LastSeen) + ")"
		}
		state := "standing"
		if !e.Standing() {
			state = "resolved " + formatTime(e.Resolved)
		}
		fmt.Fprintf(w, "%s, %s: %s\n", when, state, e.Message)
	}
}

func formatProblems(p InputProblems) string {
	if p.Errors == 0 && p.Warnings == 0 && p.Notes == 0 {
		return "none"
	}
	return fmt.Sprintf("%s, %s, %s", count(p.Errors, "error"), count(p.Warnings, "warning"), count(p.Notes, "note"))
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func formatGuard(g *Guard) string {
	if g == nil {
		return "-"
	}
	out := fmt.Sprintf("holding a generation since %s that drops %d of %d routes", formatTime(g.Since), g.Dropped, g.Of)
	if g.Reason != "" {
		out += " (" + g.Reason + ")"
	}
	return out
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

// formatServers is a route's SERVERS column: its servers by state, "none"
// for a route without any (it answers 503), "-" when not read.
func formatServers(s *Servers) string {
	if s == nil {
		return "-"
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{s.Up, "up"}, {s.Down, "down"}, {s.Maint, "maint"}, {s.Unchecked, "unchecked"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// maxNamed bounds how many routes a summary line names.
const maxNamed = 5

// formatServerSummary names the served routes no server can answer: the
// ones that answer 503 now (a passthrough route closes the connection),
// whatever their files say.
func formatServerSummary(s Status) string {
	if s.ServersError != "" {
		return "not read (" + s.ServersError + ")"
	}
	var read int
	var silent []string
	for _, r := range s.Routes {
		if r.Servers == nil {
			continue
		}
		read++
		if !r.Servers.Answers() {
			silent = append(silent, r.Key)
		}
	}
	switch {
	case read == 0:
		return "-"
	case len(silent) == 0:
		return "every route has a server up or unchecked"
	}
	named := strings.Join(silent[:min(len(silent), maxNamed)], ", ")
	if len(silent) > maxNamed {
		named += fmt.Sprintf(" and %d more", len(silent)-maxNamed)
	}
	return fmt.Sprintf("%d of %d routes have no server up or unchecked (503; a passthrough route closes the connection): %s", len(silent), read, named)
}

// formatRouteCounts summarises routes by state, in a fixed order.
func formatRouteCounts(routes []Route) string {
	counts := make(map[string]int)
	for _, r := range routes {
		counts[string(r.State)]++
	}
	var parts []string
	for _, st := range []model.RouteState{model.RouteAdmitted, model.RouteAdmittedWithWarnings, model.RouteStale, model.RouteHeld, model.RouteRejected} {
		if n := counts[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(routes), strings.Join(parts, ", "))
}
