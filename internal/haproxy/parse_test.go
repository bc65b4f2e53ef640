package haproxy

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
)

func TestParseShowProc(t *testing.T) {
	tests := []struct {
		name, in string
		want     ProcInfo
		wantErr  string
	}{{
		name: "2.6.12 with old workers",
		in: "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
			"6590            master          4 [failed: 0]   0d00h00m11s     2.6.12-1+deb12u4\n" +
			"# workers\n" +
			"7192            worker          0               0d00h00m00s     2.6.12-1+deb12u4\n" +
			"# old workers\n" +
			"6655            worker          1               0d00h00m07s     2.6.12-1+deb12u4\n" +
			"# programs\n\n",
		want: ProcInfo{
			Master:        Proc{PID: 6590, Type: "master", Reloads: 4, Uptime: "0d00h00m11s", Version: "2.6.12-1+deb12u4"},
			FailedReloads: 0,
			Workers:       []Proc{{PID: 7192, Type: "worker", Reloads: 0, Uptime: "0d00h00m00s", Version: "2.6.12-1+deb12u4"}},
			OldWorkers:    []Proc{{PID: 6655, Type: "worker", Reloads: 1, Uptime: "0d00h00m07s", Version: "2.6.12-1+deb12u4"}},
		},
	}, {
		name: "2.6.12 after a failed reload",
		in: "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
			"6590            master          2 [failed: 1]   0d00h00m04s     2.6.12-1+deb12u4\n" +
			"# workers\n" +
			"6618            worker          1               0d00h00m02s     2.6.12-1+deb12u4\n" +
			"# programs\n",
		want: ProcInfo{
			Master:        Proc{PID: 6590, Type: "master", Reloads: 2, Uptime: "0d00h00m04s", Version: "2.6.12-1+deb12u4"},
			FailedReloads: 1,
			Workers:       []Proc{{PID: 6618, Type: "worker", Reloads: 1, Uptime: "0d00h00m02s", Version: "2.6.12-1+deb12u4"}},
		},
	}, {
		// 3.2.26 (Debian sid), as TestReload leaves it: the serving
		// worker stays marked as leaving, with the previous one.
		name: "3.2 after a failed reload: the youngest old worker serves",
		in: "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
			"19146           master          2 [failed: 1]   0d00h00m01s     3.2.26-1       \n" +
			"# workers\n" +
			"# old workers\n" +
			"19151           worker          1               0d00h00m00s     3.2.26-1       \n" +
			"19148           worker          2               0d00h00m01s     3.2.26-1       \n" +
			"# programs\n",
		want: ProcInfo{
			Master:        Proc{PID: 19146, Type: "master", Reloads: 2, Uptime: "0d00h00m01s", Version: "3.2.26-1"},
			FailedReloads: 1,
			Workers:       []Proc{{PID: 19151, Type: "worker", Reloads: 1, Uptime: "0d00h00m00s", Version: "3.2.26-1"}},
			OldWorkers:    []Proc{{PID: 19148, Type: "worker", Reloads: 2, Uptime: "0d00h00m01s", Version: "3.2.26-1"}},
		},
	}, {
		name: "2.4 layout: relative PID column, no failed counter",
		in: "#<PID>          <type>          <relative PID>  <reloads>       <uptime>        <version>\n" +
			"100             master          0               3               0d00h01m00s     2.4.22\n" +
			"# workers\n" +
			"200             worker          1               0               0d00h00m10s     2.4.22\n" +
			"# old workers\n" +
			"# programs\n",
		want: ProcInfo{
			Master:        Proc{PID: 100, Type: "master", Reloads: 3, Uptime: "0d00h01m00s", Version: "2.4.22"},
			FailedReloads: -1,
			Workers:       []Proc{{PID: 200, Type: "worker", Reloads: 0, Uptime: "0d00h00m10s", Version: "2.4.22"}},
		},
	}, {
		name:    "no master",
		in:      "#<PID> <type> <reloads> <uptime> <version>\n# workers\n",
		wantErr: "no master line",
	}, {
		name:    "no header",
		in:      "1 master 0 0d 2.6\n",
		wantErr: `process line before the column header: "1 master 0 0d 2.6"`,
	}, {
		name:    "bad pid",
		in:      "#<PID> <type> <reloads> <uptime> <version>\nabc master 0 0d 2.6\n",
		wantErr: `column PID: strconv.Atoi: parsing "abc": invalid syntax in "abc master 0 0d 2.6"`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseShowProc(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestResponseErr(t *testing.T) {
	tests := []struct {
		cmd, raw string
		payload  bool
		wantOut  string
		wantSev  int
		wantErr  string
	}{
		{"add server be/s1 1.2.3.4:80", "[6]: New server registered.\n", false, "New server registered.", 6, ""},
		{"add server be/s1 1.2.3.4:80", "[3]: No such backend.\n", false, "No such backend.", 3, "add server be/s1 1.2.3.4:80: No such backend."},
		{"set server be/s1 weight 5", "", false, "", -1, ""},
		{"set server be/s1 weight abc", "[3]: Empty weight string empty or preceded by garbage", false, "Empty weight string empty or preceded by garbage", 3, "set server be/s1 weight abc: Empty weight string empty or preceded by garbage"},
		{"set server be/s1 addr bad", "[4]: Invalid addr 'bad' by 'stats socket command'\n", false, "Invalid addr 'bad' by 'stats socket command'", 4, "set server be/s1 addr bad: Invalid addr 'bad' by 'stats socket command'"},
		{"set server be/s1 addr 10.0.0.2 port 80", "[4]: IP changed from '10.0.0.1' to '10.0.0.2' by 'stats socket command'\n", false, "IP changed from '10.0.0.1' to '10.0.0.2' by 'stats socket command'", 4, ""},
		{"enable health be/s1", "unexpected text\n", false, "unexpected text", -1, "enable health be/s1: unexpected text"},
		{"del server be/s1", "", false, "", -1, "del server be/s1: (empty reply)"},
		{"set ssl cert /c.pem <<\nPEM", "+ + + [5]: Transaction created for certificate /c.pem!\n", true, "Transaction created for certificate /c.pem!", 5, ""},
		{"commit ssl cert /c.pem", "Committing /c.pem.\nSuccess!\n", false, "Committing /c.pem.\nSuccess!", -1, ""},
		{"show servers state be", "1\n# be_id\n", false, "1\n# be_id", -1, ""},
		{"show servers state nobe", "[3]: Can't find backend.\n", false, "Can't find backend.", 3, "show servers state nobe: Can't find backend."},
	}
	for _, tc := range tests {
		r := newResponse(tc.cmd, tc.raw, tc.payload)
		gotErr := ""
		if err := r.Err(); err != nil {
			gotErr = err.Error()
		}
		if r.Output != tc.wantOut || r.Severity != tc.wantSev || gotErr != tc.wantErr {
			t.Errorf("%q → output %q sev %d err %q\nwant output %q sev %d err %q",
				tc.raw, r.Output, r.Severity, gotErr, tc.wantOut, tc.wantSev, tc.wantErr)
		}
	}
}

func TestFrameCommand(t *testing.T) {
	tests := []struct{ in, want, wantErr string }{
		{"show info", "show info\n", ""},
		{"  show info  ", "show info\n", ""},
		{"set ssl cert /a <<\nL1\nL2\n", "set ssl cert /a <<\nL1\nL2\n\n", ""},
		{"", "", "empty command"},
		{"show info; show stat", "", `"show info; show stat": ';' would split it into two commands`},
		{"set ssl cert /a <<", "", `"set ssl cert /a <<": payload marker without payload`},
		{"show info\nx", "", `"show info": a multi-line command must end its first line with " <<"`},
		{"set ssl cert /a <<\nL1\n\nL2", "", `"set ssl cert /a <<": payload contains an empty line, which would end it early`},
		{"set ssl cert /a <<\n\n", "", `"set ssl cert /a <<": empty payload`},
	}
	for _, tc := range tests {
		got, err := frameCommand(tc.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if string(got) != tc.want || gotErr != tc.wantErr {
			t.Errorf("frameCommand(%q) = %q, %q; want %q, %q", tc.in, got, gotErr, tc.want, tc.wantErr)
		}
	}
}

func TestParseServersState(t *testing.T) {
	in := "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n" +
		"3 be 1 s0 127.0.0.1 2 0 1 1 5 6 3 4 6 0 0 0 - 19999 - 0 0 - - 0\n" +
		"3 be 3 s2 127.0.0.1 0 1 1 1 0 1 0 0 0 0 0 0 - 19998 - 0 0 - - 0\n"
	got, err := parseServersState(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerState{
		{Backend: "be", Name: "s0", Address: "127.0.0.1", Port: 19999, OpState: OpRunning, Weight: 1, InitialWeight: 1, CheckState: CheckConfigured | CheckEnabled},
		{Backend: "be", Name: "s2", Address: "127.0.0.1", Port: 19998, OpState: OpStopped, AdminState: AdminForcedMaint, Weight: 1, InitialWeight: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if !got[1].AdminState.Maint() || got[0].AdminState.Maint() {
		t.Errorf("Maint() wrong for %+v", got)
	}
	for _, bad := range []struct{ in, wantErr string }{
		{"2\n", `unsupported format version "2" (want 1)`},
		{"1\n3 be 1 s0\n", `server line before the column header: "3 be 1 s0"`},
		{"1\n# be_name srv_name\nbe s0\n", "no column srv_addr\nno column srv_port\nno column srv_op_state\nno column srv_admin_state\nno column srv_uweight\nno column srv_iweight\nno column srv_check_state"},
	} {
		if _, err := parseServersState(bad.in); err == nil || err.Error() != bad.wantErr {
			t.Errorf("parseServersState(%q) err = %v, want %q", bad.in, err, bad.wantErr)
		}
	}
}

func TestParseMap(t *testing.T) {
	// As 2.6.12 prints them, including a key-only line and a value with
	// spaces.
	in := "0x562f1f4da760 a.example.com be\n0x562f1f4da7f0 lonely \n0x562f1f4da880 sp.example.com has space\n"
	got, err := parseMap(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []MapEntry{{"a.example.com", "be"}, {"lonely", ""}, {"sp.example.com", "has space"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := parseMap("garbage\n"); err == nil || err.Error() != `show map: malformed line "garbage"` {
		t.Errorf("malformed: err = %v", err)
	}
}

func TestCleanLine(t *testing.T) {
	for in, want := range map[string]string{
		"[ALERT]    (1234) : config : parsing [x.cfg:2] : unknown keyword": "[ALERT] config : parsing [x.cfg:2] : unknown keyword",
		"[NOTICE]   (8379) : New worker (8382) forked":                     "[NOTICE] New worker (8382) forked",
		"  plain line  ": "plain line",
	} {
		if got := cleanLine(in); got != want {
			t.Errorf("cleanLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// show stat rows are folded into backends, servers counted by state; the
// BACKEND row comes after its servers.
func TestParseBackendStats(t *testing.T) {
	out := "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,type,status,req_tot,hrsp_1xx,hrsp_2xx,hrsp_3xx,hrsp_4xx,hrsp_5xx,hrsp_other,weight\n" +
		"be_pool:http:3,ep_10.0.0.1_80,0,0,1,1,,5,100,200,2,UP,,0,0,0,0,0,0,256\n" +
		"be_pool:http:3,ep_10.0.0.2_80,0,0,0,0,,0,0,0,2,MAINT,,0,0,0,0,0,0,256\n" +
		"be_pool:http:3,ep_10.0.0.3_80,0,0,0,0,,0,0,0,2,DOWN 1/2,,0,0,0,0,0,0,256\n" +
		"be_pool:http:3,ep_10.0.0.4_80,0,0,0,0,,0,0,0,2,no check,,0,0,0,0,0,0,256\n" +
		// A service of weight 0: unchecked, and taking no request.
		"be_pool:http:3,ep_10.0.0.5_80,0,0,0,0,,0,0,0,2,no check,,0,0,0,0,0,0,0\n" +
		"be_pool:http:3,BACKEND,2,0,1,1,,5,100,200,1,UP,7,0,6,0,1,0,0,256\n"
	stats, err := parseBackendStats(out)
	if err != nil {
		t.Fatal(err)
	}
	want := BackendStat{Name: "be_pool:http:3", Sessions: 5, Requests: 7, BytesIn: 100, BytesOut: 200,
		Responses: [6]uint64{0, 6, 0, 1, 0, 0}, CurSessions: 1, Queued: 2, Up: 1, Down: 1, Maintenance: 2, Unchecked: 1}
	if len(stats) != 1 || stats[0] != want {
		t.Fatalf("got %+v\nwant %+v", stats, want)
	}
}

// The replies of `show map` and `get map` as HAProxy 2.6.12 and 3.0
// print them (captured from both).
func TestParseMapProbes(t *testing.T) {
	list := "# id (file) description\n" +
		"0 (/b/maps/http.map) pattern loaded from file '/b/maps/http.map' used by map at file '/b/haproxy.cfg' line 10. curr_ver=0 next_ver=0 entry_cnt=10003\n" +
		"1 (/b/maps/http.map.old) pattern loaded from file '/b/maps/http.map.old' used by map at file '/b/haproxy.cfg' line 11. curr_ver=0 next_ver=0 entry_cnt=2\n"
	if n, err := entryCount(list, "/b/maps/http.map"); n != 10003 || err != nil {
		t.Errorf("entryCount = %d, %v; want 10003", n, err)
	}
	if _, err := entryCount(list, "/b/maps/other.map"); !errors.Is(err, ErrNotFound) {
		t.Errorf("entryCount(unknown) err = %v, want not found", err)
	}
	if _, err := entryCount("0 (/b/x.map) pattern loaded\n", "/b/x.map"); err == nil {
		t.Error("entryCount without entry_cnt: no error")
	}

	tests := []struct {
		reply   string
		want    *MapEntry
		exprs   int
		wantErr bool
	}{
		{reply: `type=beg, case=sensitive, found=yes, idx=tree, key="a.test/x", value="be_http:ns:a b", type="str"` + "\n",
			want: &MapEntry{Key: "a.test/x", Value: "be_http:ns:a b"}, exprs: 1},
		{reply: `type=str, case=sensitive, found=yes, idx=tree, key="k1", value="", type="str"`, want: &MapEntry{Key: "k1"}, exprs: 1},
		{reply: "type=beg, case=sensitive, found=no\n", exprs: 1},
		{reply: "type=str, case=sensitive, found=yes, idx=tree, key=\"bx\", value=\"1500\", type=\"sint\"\ntype=str, case=sensitive, found=yes, idx=tree, key=\"bx\", value=\"1500\", type=\"str\"\n",
			want: &MapEntry{Key: "bx", Value: "1500"}, exprs: 2},
		{reply: "type=str, case=sensitive, found=yes, idx=tree, key=\"bx\", value=\"1500\", type=\"sint\"\ntype=str, case=sensitive, found=no\n", wantErr: true},
		{reply: "Unknown map identifier.\n", wantErr: true},
		{reply: `type=beg, found=yes, key="a"`, wantErr: true},
	}
	for _, tt := range tests {
		got, exprs, err := parseMapMatch(tt.reply)
		if (err != nil) != tt.wantErr || (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) || exprs != tt.exprs {
			t.Errorf("parseMapMatch(%q) = %+v, %d, %v; want %+v, %d (error %v)", tt.reply, got, exprs, err, tt.want, tt.exprs, tt.wantErr)
		}
	}
}

func TestLoadsInWorker(t *testing.T) {
	for v, want := range map[string]bool{
		"2.6.12-1+deb12u4": false, "2.8.5": false, "3.0.11-1+deb13u4": false,
		"3.1.0": true, "3.2.26-1": true, "3.3-dev5": true, "4.0.1": true,
		"": false, "dev": false, "3": false,
	} {
		if got := loadsInWorker(v); got != want {
			t.Errorf("loadsInWorker(%q) = %v, want %v", v, got, want)
		}
	}
}

// fakeMaster answers the master CLI as a 3.2 master does: one command a
// connection. Each reload is refused as busy until the busy count runs
// out; then it succeeds, and show proc lists the new worker.
func fakeMaster(t *testing.T, busy int) (path string, reloads *atomic.Int32) {
	t.Helper()
	path = filepath.Join(testutil.ShortTempDir(t), "master.sock")
	reloads = &atomic.Int32{}
	procs := func(n int32) string {
		return "#<PID>          <type>          <reloads>       <uptime>        <version>\n" +
			fmt.Sprintf("100             master          %d [failed: 0]   0d00h00m01s     3.2.26-1\n", n) +
			"# workers\n" + fmt.Sprintf("%d             worker          0               0d00h00m00s     3.2.26-1\n", 200+n)
	}
	testutil.ServeMasterCLI(t, path, func(cmd string) string {
		switch cmd {
		case "show proc":
			return procs(max(reloads.Load()-int32(busy), 0))
		case "reload":
			if reloads.Add(1) <= int32(busy) {
				return "Success=0\n--\nAnother reload is still in progress.\n"
			}
			return "Success=1\n--\n[NOTICE]   (100) : Loading success.\n"
		}
		return ""
	})
	return path, reloads
}

// From 3.1 a master whose worker still loads refuses a reload; it is
// asked again, within reloadBusyWait, and a master busy for longer is an
// error that is not a failed reload (nothing was refused).
func TestReloadAsksABusyMasterAgain(t *testing.T) {
	path, reloads := fakeMaster(t, 2)
	info, err := NewMaster(path).Reload(ctxT(t, 10*time.Second))
	if err != nil || reloads.Load() != 3 || len(info.Workers) != 1 || info.Workers[0].PID != 201 {
		t.Fatalf("Reload = %+v, %v after %d reloads sent; want the new worker 201 after 3", info, err, reloads.Load())
	}

	defer func(d time.Duration) { reloadBusyWait = d }(reloadBusyWait)
	reloadBusyWait = 300 * time.Millisecond
	path, _ = fakeMaster(t, 1000)
	_, err = NewMaster(path).Reload(ctxT(t, 10*time.Second))
	if err == nil || errors.Is(err, ErrReloadFailed) || !strings.Contains(err.Error(), "still loads an earlier reload") {
		t.Fatalf("Reload of a master busy for good = %v; want a busy error, not ErrReloadFailed", err)
	}
}

// A 3.2 master that cannot pass the reload's connection on to the next
// master re-executes all the same, and the connection dies unanswered:
// `show proc` then lists the new worker while it still loads. A worker
// that fails to load after that is a failed reload, not a confirmed one
// (the old worker keeps serving the old configuration).
func TestReloadWithItsAnswerLostWaitsForTheWorkerToLoad(t *testing.T) {
	path := filepath.Join(testutil.ShortTempDir(t), "master.sock")
	const header = "#<PID>          <type>          <reloads>       <uptime>        <version>\n"
	const before = header +
		"100             master          0 [failed: 0]   0d00h00m01s     3.2.26-1\n" +
		"# workers\n200             worker          0               0d00h00m01s     3.2.26-1\n"
	const loading = header +
		"100             master          1 [failed: 0]   0d00h00m01s     3.2.26-1\n" +
		"# workers\n201             worker          0               0d00h00m00s     3.2.26-1\n" +
		"# old workers\n200             worker          1               0d00h00m01s     3.2.26-1\n"
	const failed = header +
		"100             master          1 [failed: 1]   0d00h00m01s     3.2.26-1\n" +
		"# workers\n" +
		"# old workers\n200             worker          1               0d00h00m01s     3.2.26-1\n"
	var reloaded atomic.Bool
	var asked atomic.Int32 // `show proc`s since the reload
	testutil.ServeMasterCLI(t, path, func(cmd string) string {
		switch {
		case cmd == "show proc" && !reloaded.Load():
			return before
		case cmd == "show proc" && asked.Add(1) < 5:
			return loading
		case cmd == "show proc":
			return failed
		case cmd == "reload":
			reloaded.Store(true) // and no answer
		case strings.HasPrefix(cmd, "@!"):
			return "Can't find the target PID matching the prefix '" + strings.Fields(cmd)[0][2:] + "'\n"
		}
		return ""
	})
	known, err := parseShowProc(before)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	// The master is this process, which listens on its socket: Reload
	// watches it, and asks its socket's listener whether it is the
	// master.
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p := &Process{
		sup:    &Supervisor{opts: Options{RunDir: filepath.Dir(path)}, log: log},
		cmd:    &exec.Cmd{Process: self},
		master: NewMaster(path),
		out:    newOutputLog(io.NopCloser(strings.NewReader("")), log, "", &emptiedBackends{}, nil),
		log:    log,
		known:  known,
		done:   make(chan struct{}),
	}
	info, err := p.Reload(ctxT(t, 10*time.Second))
	if !errors.Is(err, ErrReloadFailed) {
		t.Fatalf("Reload = %+v, %v; want ErrReloadFailed: the new worker never loaded", info, err)
	}
}
