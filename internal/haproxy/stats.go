package haproxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// BackendStat is one backend's traffic as `show stat` reports it, with
// its servers counted by state.
type BackendStat struct {
	Name                string
	Sessions, Requests  uint64 // stot, req_tot (HTTP backends; 0 for TCP)
	BytesIn, BytesOut   uint64
	Responses           [6]uint64 // hrsp_1xx … hrsp_5xx, hrsp_other
	CurSessions, Queued int
	// Servers by state. Unchecked ones ("no check": a route's only
	// endpoint, which haroute does not health-check) are not known to be
	// up, and were counted as up: a dead one read as healthy.
	Up, Down, Maintenance, Unchecked int
}

// BackendStats reads every backend and its servers with one `show stat`
// (backends and servers, every proxy) over one connection. It is made
// for metrics scrapes: at 10k routes the reply is a few MB.
func (r *Runtime) BackendStats(ctx context.Context) ([]BackendStat, error) {
	resp, err := r.one(ctx, "show stat -1 6 -1")
	if err != nil {
		return nil, err
	}
	if err := readErr(resp); err != nil {
		return nil, err
	}
	return parseBackendStats(resp.Output)
}

func parseBackendStats(out string) ([]BackendStat, error) {
	header, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(header, "# ") {
		return nil, fmt.Errorf("show stat: no CSV header in %q", truncate(out, 80))
	}
	col := map[string]int{}
	for i, name := range strings.Split(strings.TrimPrefix(header, "# "), ",") {
		col[name] = i
	}
	for _, need := range []string{"pxname", "svname", "type", "scur", "qcur", "stot", "bin", "bout", "status"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("show stat: no %s column", need)
		}
	}
	byName := map[string]int{}
	var stats []BackendStat
	num := func(f []string, name string) uint64 {
		i, ok := col[name]
		if !ok || i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseUint(f[i], 10, 64)
		return n
	}
	for _, line := range strings.Split(rest, "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) <= col["status"] {
			continue
		}
		px := f[col["pxname"]]
		switch f[col["type"]] {
		case "1": // backend
			s := BackendStat{Name: px, Sessions: num(f, "stot"), Requests: num(f, "req_tot"),
				BytesIn: num(f, "bin"), BytesOut: num(f, "bout"),
				CurSessions: int(num(f, "scur")), Queued: int(num(f, "qcur"))}
			for k, name := range []string{"hrsp_1xx", "hrsp_2xx", "hrsp_3xx", "hrsp_4xx", "hrsp_5xx", "hrsp_other"} {
				s.Responses[k] = num(f, name)
			}
			if i, ok := byName[px]; ok {
				s.Up, s.Down, s.Maintenance, s.Unchecked = stats[i].Up, stats[i].Down, stats[i].Maintenance, stats[i].Unchecked
				stats[i] = s
				continue
			}
			byName[px] = len(stats)
			stats = append(stats, s)
		case "2": // server: counted into its backend
			i, ok := byName[px]
			if !ok {
				i = len(stats)
				byName[px] = i
				stats = append(stats, BackendStat{Name: px})
			}
			// A server of weight 0 takes no request: HAProxy says DRAIN
			// of a checked one, but "no check" of an unchecked one (a
			// service of weight 0), which read as one that may answer.
			_, weighed := col["weight"]
			switch st := f[col["status"]]; {
			case strings.HasPrefix(st, "MAINT"), strings.HasPrefix(st, "DRAIN"), weighed && num(f, "weight") == 0:
				stats[i].Maintenance++
			case st == "no check":
				stats[i].Unchecked++
			case strings.HasPrefix(st, "UP"), strings.HasPrefix(st, "NOLB"):
				stats[i].Up++
			default:
				stats[i].Down++
			}
		}
	}
	return stats, nil
}
