package haproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// OpState is a server's operational state in `show servers state`.
type OpState int

const (
	OpStopped  OpState = 0 // down
	OpStarting OpState = 1
	OpRunning  OpState = 2 // up
	OpStopping OpState = 3
)

// AdminState holds the srv_admin_state bits of `show servers state`.
type AdminState int

const (
	AdminForcedMaint     AdminState = 0x01 // set server … state maint, or a server just added
	AdminInheritedMaint  AdminState = 0x02
	AdminConfigMaint     AdminState = 0x04 // `disabled` in the config
	AdminForcedDrain     AdminState = 0x08
	AdminInheritedDrain  AdminState = 0x10
	AdminResolutionMaint AdminState = 0x20
	AdminHostnameMaint   AdminState = 0x40
)

// Maint reports whether the server is in any kind of maintenance.
func (a AdminState) Maint() bool {
	return a&(AdminForcedMaint|AdminInheritedMaint|AdminConfigMaint|AdminResolutionMaint|AdminHostnameMaint) != 0
}

// CheckState holds the srv_check_state bits of `show servers state`.
type CheckState int

const (
	CheckConfigured CheckState = 0x02 // the server has `check`
	CheckEnabled    CheckState = 0x04 // and checks are running (enable health)
)

// ServerState is one server line of `show servers state <backend>`.
type ServerState struct {
	Backend       string
	Name          string
	Address       string
	Port          int
	OpState       OpState
	AdminState    AdminState
	Weight        int // current (user) weight
	InitialWeight int // weight from the config or add server
	CheckState    CheckState
}

// MapEntry is one line of a map: key, then value (which may contain
// spaces; `show map` prints it as the rest of the line).
type MapEntry struct {
	Key   string
	Value string
}

// ErrNotFound is returned when the runtime API does not know the backend,
// server or map asked about.
var ErrNotFound = errors.New("not found")

// ServersStates reads back the servers of many backends, over one
// connection: reading back a plan that touched a thousand backends costs
// one session instead of a thousand.
//
// The columns are looked up by their names in the "# be_id be_name …"
// header (format version 1, unchanged from 1.8 to 3.x), so added columns do
// not shift what is read.
func (r *Runtime) ServersStates(ctx context.Context, backends []string) (map[string][]ServerState, error) {
	cmds := make([]string, len(backends))
	for i, be := range backends {
		cmds[i] = "show servers state " + be
	}
	resps, err := r.Execute(ctx, cmds)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]ServerState, len(backends))
	for i, resp := range resps {
		if err := readErr(resp); err != nil {
			return nil, err
		}
		states, err := parseServersState(resp.Output)
		if err != nil {
			return nil, fmt.Errorf("show servers state %s: %w", backends[i], err)
		}
		out[backends[i]] = states
	}
	return out, nil
}

// one runs a single read command and turns an error-level reply into an
// error (see readErr).
func (r *Runtime) one(ctx context.Context, cmd string) (Response, error) {
	resps, err := r.Execute(ctx, []string{cmd})
	if err != nil {
		return Response{}, err
	}
	return resps[0], readErr(resps[0])
}

// readErr is the error of a read command's reply: "No such backend." /
// "Can't find backend." / "Unknown map identifier." become ErrNotFound.
func readErr(resp Response) error {
	err := resp.Err()
	if err != nil && (strings.HasPrefix(resp.Output, "No such") || strings.HasPrefix(resp.Output, "Can't find") ||
		strings.HasPrefix(resp.Output, "Unknown map identifier")) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

func parseServersState(out string) ([]ServerState, error) {
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "1" {
		return nil, fmt.Errorf("unsupported format version %q (want 1)", firstLine(out))
	}
	var col map[string]int
	var states []ServerState
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			col = map[string]int{}
			for i, name := range strings.Fields(strings.TrimPrefix(line, "#")) {
				col[name] = i
			}
			continue
		}
		if col == nil {
			return nil, fmt.Errorf("server line before the column header: %q", line)
		}
		f := strings.Fields(line)
		get := func(name string) (string, error) {
			i, ok := col[name]
			if !ok {
				return "", fmt.Errorf("no column %s", name)
			}
			if i >= len(f) {
				return "", fmt.Errorf("line %q has no column %s", line, name)
			}
			return f[i], nil
		}
		num := func(name string) (int, error) {
			v, err := get(name)
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("column %s: %w", name, err)
			}
			return n, nil
		}
		var s ServerState
		var errs []error
		var err error
		s.Backend, err = get("be_name")
		errs = append(errs, err)
		s.Name, err = get("srv_name")
		errs = append(errs, err)
		s.Address, err = get("srv_addr")
		errs = append(errs, err)
		s.Port, err = num("srv_port")
		errs = append(errs, err)
		var op, adm, chk int
		op, err = num("srv_op_state")
		errs = append(errs, err)
		adm, err = num("srv_admin_state")
		errs = append(errs, err)
		s.Weight, err = num("srv_uweight")
		errs = append(errs, err)
		s.InitialWeight, err = num("srv_iweight")
		errs = append(errs, err)
		chk, err = num("srv_check_state")
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		s.OpState, s.AdminState, s.CheckState = OpState(op), AdminState(adm), CheckState(chk)
		states = append(states, s)
	}
	return states, nil
}

// ShowMap reads back the entries of the map file loaded from path.
func (r *Runtime) ShowMap(ctx context.Context, path string) ([]MapEntry, error) {
	resp, err := r.one(ctx, "show map "+path)
	if err != nil {
		return nil, err
	}
	return parseMap(resp.Output)
}

// parseMap reads "<id> <key> <value>" lines. The value is the rest of the
// line and may be empty or contain spaces (a map line holding only a key
// shows as "0x… key " on 2.6.12).
func parseMap(out string) ([]MapEntry, error) {
	var entries []MapEntry
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("show map: malformed line %q", line)
		}
		key, value, _ := strings.Cut(rest, " ")
		if key == "" {
			return nil, fmt.Errorf("show map: malformed line %q", line)
		}
		entries = append(entries, MapEntry{Key: key, Value: value})
	}
	return entries, nil
}

// ServerUse is what a server carries: its connections in use, and how
// often connecting to it failed so far: its failed connections, retries
// and redispatches (show stat's econ, wretr and wredis).
type ServerUse struct {
	Conns, Failed int
}

// BackendsConns returns the use of every server of each backend. Its
// connections in use are its current sessions, and the server
// connections in use (show stat's used_conn_cur, 2.2 on); zero means no
// request is on the server, but for requests waiting the second between
// a failed connection and its retry, which no count shows. Failed grows
// with most failures, but not with one whose request is to be sent to
// another server: only its redispatch, a second later, counts. Idle
// keep-alive connections are not counted: 3.x closes them when the
// server is deleted, while 2.6 refuses the deletion ("still has
// connections attached") until they time out, which the caller retries.
// From one `show stat` per backend, all over one connection: draining
// servers in many backends costs one session, not one per backend or
// server. A backend HAProxy does not know is left out.
func (r *Runtime) BackendsConns(ctx context.Context, backends []string) (map[string]map[string]ServerUse, error) {
	cmds := make([]string, len(backends))
	for i, be := range backends {
		cmds[i] = "show stat " + be + " 4 -1"
	}
	resps, err := r.Execute(ctx, cmds)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]ServerUse, len(backends))
	for i, resp := range resps {
		if err := readErr(resp); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			return nil, err
		}
		conns, err := parseBackendSessions(resp.Output, backends[i])
		if err != nil {
			return nil, fmt.Errorf("show stat %s: %w", backends[i], err)
		}
		if len(conns) > 0 {
			out[backends[i]] = conns
		}
	}
	return out, nil
}

func parseBackendSessions(out, backend string) (map[string]ServerUse, error) {
	lines := strings.Split(out, "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "# ") {
		return nil, fmt.Errorf("no CSV header in %q", truncate(out, 80))
	}
	// usedCol is the server connections in use (2.2 on); an older
	// HAProxy without it counts sessions only.
	pxCol, svCol, scurCol, usedCol := -1, -1, -1, -1
	failCols := []int{-1, -1, -1} // econ, wretr, wredis
	for i, name := range strings.Split(strings.TrimPrefix(lines[0], "# "), ",") {
		switch name {
		case "pxname":
			pxCol = i
		case "svname":
			svCol = i
		case "scur":
			scurCol = i
		case "econ":
			failCols[0] = i
		case "wretr":
			failCols[1] = i
		case "wredis":
			failCols[2] = i
		case "used_conn_cur":
			usedCol = i
		}
	}
	if pxCol < 0 || svCol < 0 || scurCol < 0 || slices.Min(failCols) < 0 {
		return nil, fmt.Errorf("CSV header lacks pxname, svname, scur, econ, wretr or wredis")
	}
	use := map[string]ServerUse{}
	for _, line := range lines[1:] {
		f := strings.Split(line, ",")
		if len(f) <= max(scurCol, slices.Max(failCols)) || f[pxCol] != backend {
			continue
		}
		var u ServerUse
		var err error
		if u.Conns, err = strconv.Atoi(f[scurCol]); err == nil && usedCol >= 0 && usedCol < len(f) && f[usedCol] != "" { // empty on the BACKEND row
			var used int
			used, err = strconv.Atoi(f[usedCol])
			u.Conns += used
		}
		for _, c := range failCols {
			if err == nil && f[c] != "" { // empty on the FRONTEND row
				var n int
				n, err = strconv.Atoi(f[c])
				u.Failed += n
			}
		}
		if err != nil {
			return nil, fmt.Errorf("connections of %s/%s: %w", backend, f[svCol], err)
		}
		use[f[svCol]] = u
	}
	return use, nil
}

// MapProbe is what reading back a map edited in place saw: its entry
// count, and for each key asked about (at least one per map) the entry a
// lookup of that key matches (nil when none does).
type MapProbe struct {
	Entries int
	Matches []*MapEntry
}

// ProbeMaps reads back maps edited in place without listing them: one
// `show map` gives every map's entry count, and one `get map` per key
// gives the entry HAProxy's own lookup matches, exactly what traffic to
// that key gets. Listing a 10k-entry map to check a one-entry edit cost
// about 8 ms per change; the lookups cost microseconds. All commands go
// over one connection.
func (r *Runtime) ProbeMaps(ctx context.Context, keys map[string][]string) (map[string]MapProbe, error) {
	paths := make([]string, 0, len(keys))
	cmds := []string{"show map"}
	for path, ks := range keys {
		paths = append(paths, path)
		for _, k := range ks {
			cmds = append(cmds, "get map "+path+" "+k)
		}
	}
	resps, err := r.Execute(ctx, cmds)
	if err != nil {
		return nil, err
	}
	if err := readErr(resps[0]); err != nil {
		return nil, err
	}
	out := make(map[string]MapProbe, len(keys))
	next := 1
	for _, path := range paths {
		n, err := entryCount(resps[0].Output, path)
		if err != nil {
			return nil, err
		}
		p := MapProbe{Matches: make([]*MapEntry, len(keys[path]))}
		exprs := 0
		for i, k := range keys[path] {
			resp := resps[next]
			next++
			if err := readErr(resp); err != nil {
				return nil, fmt.Errorf("get map %s %s: %w", path, k, err)
			}
			if p.Matches[i], exprs, err = parseMapMatch(resp.Output); err != nil {
				return nil, fmt.Errorf("get map %s %s: %w", path, k, err)
			}
		}
		// entry_cnt counts each entry once per pattern expression, and
		// `get map` printed one line per expression: the line above for
		// t.map is one entry under two. But 2.6.12 takes a `del map` off
		// entry_cnt once, whatever the expressions (add two entries under
		// two, delete one: 3), so render keeps one expression per map it
		// edits at runtime. A count that does not divide is an error, so
		// a count gone wrong reloads rather than passing.
		if exprs == 0 || n%exprs != 0 {
			return nil, fmt.Errorf("show map: entry_cnt %d of %s is not a count of entries under %d pattern expressions", n, path, exprs)
		}
		p.Entries = n / exprs
		out[path] = p
	}
	return out, nil
}

// entryCount finds path's line in the list `show map` prints,
//
//	0 (/b/maps/t.map) pattern loaded from file '/b/maps/t.map' used by map at file '/b/haproxy.cfg' line 12, by map at file '/b/haproxy.cfg' line 12. curr_ver=0 next_ver=0 entry_cnt=2
//
// and returns its entry_cnt (printed since 2.4, still in 3.x).
func entryCount(list, path string) (int, error) {
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " ("+path+") ") {
			continue
		}
		i := strings.LastIndex(line, " entry_cnt=")
		if i < 0 {
			return 0, fmt.Errorf("show map: no entry_cnt in %q", line)
		}
		n, err := strconv.Atoi(strings.TrimSpace(line[i+len(" entry_cnt="):]))
		if err != nil {
			return 0, fmt.Errorf("show map: entry_cnt in %q: %w", line, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: map %s not in show map", ErrNotFound, path)
}

// parseMapMatch reads a `get map` reply, one line per pattern expression
// of the map (converters of different types, map_str_int and map_str,
// each index the file apart):
//
//	type=beg, case=sensitive, found=yes, idx=tree, key="a.test/x", value="b1", type="str"
//	type=beg, case=sensitive, found=no
//
// Every line must name the same match; exprs is the number of lines.
// Map keys and values never hold a double quote (validation refuses
// them), so the quoted fields end at the next `", `.
func parseMapMatch(out string) (match *MapEntry, exprs int, err error) {
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m *MapEntry
		switch {
		case strings.Contains(line, "found=no"):
		case !strings.Contains(line, "found=yes"):
			return nil, 0, fmt.Errorf("malformed reply %q", line)
		default:
			key, ok1 := quotedField(line, "key")
			value, ok2 := quotedField(line, "value")
			if !ok1 || !ok2 {
				return nil, 0, fmt.Errorf("malformed reply %q", line)
			}
			m = &MapEntry{Key: key, Value: value}
		}
		if exprs > 0 && (m == nil) != (match == nil) || m != nil && match != nil && *m != *match {
			return nil, 0, fmt.Errorf("the map's pattern expressions disagree: %q", out)
		}
		match = m
		exprs++
	}
	return match, exprs, nil
}

// quotedField returns the value of name="…" in a `get map` reply.
func quotedField(line, name string) (string, bool) {
	_, rest, ok := strings.Cut(line, ", "+name+"=\"")
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, "\", ")
	if !ok {
		v, ok = strings.CutSuffix(rest, "\"")
	}
	return v, ok
}
