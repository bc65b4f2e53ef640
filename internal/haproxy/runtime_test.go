package haproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/plan"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/testutil"
)

// TestRuntimeReplies runs every command family haroute sends, succeeding
// and failing, in ONE batch against the real HAProxy, and checks how
// Response.Err reads each reply. The replies are 2.6.12's and 3.0.11's,
// verbatim.
func TestRuntimeReplies(t *testing.T) {
	r := newRig(t)
	r.start(t)
	cert := string(testutil.SelfSignedPEM(t, "localhost", 7))
	sitePEM := filepath.Join(r.Run, "site.pem")
	setCert := setCertCommand(sitePEM, cert)
	setUnknownCert := setCertCommand(filepath.Join(r.Run, "nope.pem"), cert)
	hostsMap := filepath.Join(r.Run, "hosts.map")
	newPEM, crtList := filepath.Join(r.Run, "new.pem"), filepath.Join(r.Run, "crt-list")
	caPEM, allowACL := filepath.Join(r.Run, "dest-ca.pem"), filepath.Join(r.Run, "allow.acl")
	addr := fmt.Sprintf("127.0.0.1:%d", r.B1)
	// `set server … addr` is worded differently from 3.0 on; the reader
	// (setServerOK) accepts both, and the binary must give the one of its
	// version.
	portChanged := fmt.Sprintf("no need to change the addr, port changed from '%d' to '%d' by 'stats socket command'", r.B1, r.B0)
	invalidAddrBy := " by 'stats socket command'"
	if r.version(t).AtLeast(3, 0) {
		portChanged = fmt.Sprintf("port changed from '%d' to '%d' by 'stats socket command'", r.B1, r.B0)
		invalidAddrBy = ""
	}
	tests := []struct {
		cmd     string
		wantErr string // "" = accepted
		wantOut string // checked when not "-"
	}{
		{"add server be/s1 " + addr + " weight 10 check inter 2s", "", "New server registered."},
		{"add server be/s1 " + addr, "add server be/s1 " + addr + ": Already exists a server with the same name in backend.", "-"},
		{"add server nobe/s1 " + addr, "add server nobe/s1 " + addr + ": No such backend.", "-"},
		{"add server be/s2 " + addr + " bogus", "add server be/s2 " + addr + " bogus: unknown keyword 'bogus'.", "-"},
		{"enable health be/s1", "", ""},
		{"enable health be/nochk", "enable health be/nochk: Health check was not configured on this server, cannot enable.", "-"},
		{"enable health be/nosuch", "enable health be/nosuch: No such server.", "-"},
		{"disable health be/s0", "", ""},
		{"enable server be/s1", "", ""},
		{"enable server be/nosuch", "enable server be/nosuch: No such server.", "-"},
		{"set server be/s1 weight 20", "", ""},
		{"set server be/s1 weight 300", "set server be/s1 weight 300: Absolute weight can only be between 0 and 256 inclusive.", "-"},
		{"set server be/nosuch weight 1", "set server be/nosuch weight 1: No such server.", "-"},
		{"set server be/s1 addr 127.0.0.1 port " + fmt.Sprint(r.B0), "", portChanged},
		{"set server be/s1 addr not-an-ip", "set server be/s1 addr not-an-ip: Invalid addr 'not-an-ip'" + invalidAddrBy, "-"},
		{"set server be/s1 state bogus", "set server be/s1 state bogus: 'set server <srv> state' expects 'ready', 'drain' and 'maint'.", "-"},
		{"del server be/s1", "del server be/s1: Only servers in maintenance mode can be deleted.", "-"},
		{"set server be/s1 state maint", "", ""},
		{"del server be/s1", "", "Server deleted."},
		{"del server be/s1", "del server be/s1: No such server.", "-"},
		{"set dynamic-cookie-key backend be k2", "", ""},
		{"set dynamic-cookie-key backend nobe k2", "set dynamic-cookie-key backend nobe k2: No such backend.", "-"},
		{"enable dynamic-cookie backend be", "", ""},
		{"enable dynamic-cookie backend nobe", "enable dynamic-cookie backend nobe: No such backend.", "-"},
		{"prepare map " + hostsMap, "", "New version created: 1"},
		{"add map @1 " + hostsMap + " b.example.com be2", "", ""},
		{"add map @9 " + hostsMap + " c.example.com be2", "add map @9 " + hostsMap + " c.example.com be2: Version number in the future, please use 'prepare map' before.", "-"},
		{"add map @1 /nope.map k v", "add map @1 /nope.map k v: Unknown map identifier. Please use #<id> or <file>.", "-"},
		{"commit map @1 " + hostsMap, "", ""},
		{"clear map @1 " + hostsMap, "", ""},
		{setCert, "", "Transaction created for certificate " + sitePEM + "!"},
		{"abort ssl cert " + sitePEM, "", "Transaction aborted for certificate '" + sitePEM + "'!"},
		{"abort ssl cert " + sitePEM, "abort ssl cert " + sitePEM + ": No ongoing transaction!", "-"},
		{"commit ssl cert " + sitePEM, "commit ssl cert " + sitePEM + ": No ongoing transaction! !\nCan't commit " + sitePEM + "!", "-"},
		{setUnknownCert, "set ssl cert " + filepath.Join(r.Run, "nope.pem") + " <<: Can't replace a certificate which is not referenced by the configuration!\nCan't update " + filepath.Join(r.Run, "nope.pem") + "!", "-"},
		{"new ssl cert " + newPEM, "", "New empty certificate store '" + newPEM + "'!"},
		{"new ssl cert " + newPEM, "new ssl cert " + newPEM + ": Certificate '" + newPEM + "' already exists!", "-"},
		{setCertCommand(newPEM, cert), "", "Transaction created for certificate " + newPEM + "!"},
		{"commit ssl cert " + newPEM, "", "-"},
		{"add ssl crt-list " + crtList + " <<\n" + newPEM + " [alpn h2,http/1.1] new.example.com\n", "", "Inserting certificate '" + newPEM + "' in crt-list '" + crtList + "'.\nSuccess!"},
		{"add ssl crt-list " + crtList + " " + newPEM, "", "-"},
		{"del ssl crt-list " + crtList + " " + newPEM, "del ssl crt-list " + crtList + " " + newPEM + ": Can't delete the entry: found the certificate '" + newPEM + "' in several entries, please specify a line number preceded by colons (1, 2)!", "-"},
		{"del ssl crt-list " + crtList + " " + newPEM + ":2", "", "Entry '" + newPEM + "' deleted in crtlist '" + crtList + "'!"},
		{"del ssl crt-list " + crtList + " " + newPEM, "", "-"},
		{"del ssl cert " + newPEM, "", "Certificate '" + newPEM + "' deleted!"},
		{"del ssl cert " + newPEM, "del ssl cert " + newPEM + ": Can't remove the certificate: certificate '" + newPEM + "' doesn't exist!", "-"},
		{"prepare acl " + allowACL, "", "New version created: 1"},
		{"add acl @1 " + allowACL + " 10.0.0.0/8", "", ""},
		{"add acl @1 " + allowACL + " not-an-ip", "add acl @1 " + allowACL + " not-an-ip: 'not-an-ip' is not a valid IPv4 or IPv6 address.", "-"},
		{"add acl @1 /nope.acl 10.0.0.0/8", "add acl @1 /nope.acl 10.0.0.0/8: Unknown ACL identifier. Please use #<id> or <file>.", "-"},
		{"add acl @1 " + allowACL + " 127.0.0.0/8", "", ""},
		{"commit acl @1 " + allowACL, "", ""},
		{"new ssl ca-file " + caPEM, "", "New CA file created '" + caPEM + "'!"},
		{"new ssl ca-file " + caPEM, "new ssl ca-file " + caPEM + ": CA file '" + caPEM + "' already exists!", "-"},
		{"set ssl ca-file " + caPEM + " <<\n" + strings.TrimSpace(testutil.NewCA(t, "dest CA").PEM) + "\n", "", "transaction created for CA " + caPEM + "!"},
		{"commit ssl ca-file " + caPEM, "", "-"},
		{"del ssl ca-file " + caPEM, "", "CA file '" + caPEM + "' deleted!"},
		{"del ssl ca-file " + caPEM, "del ssl ca-file " + caPEM + ": Can't remove the CA file: CA file '" + caPEM + "' doesn't exist!", "-"},
		{"show servers state nobe", "show servers state nobe: Can't find backend.", "-"},
		{"show map " + hostsMap, "", "-"},
		{"no such command", "", "-"},
	}
	cmds := make([]string, len(tests))
	for i, tc := range tests {
		cmds[i] = tc.cmd
	}
	resps, err := r.rt.Execute(ctxT(t, 20*time.Second), cmds)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if len(resps) != len(tests) {
		t.Fatalf("%d responses for %d commands", len(resps), len(tests))
	}
	for i, tc := range tests {
		resp := resps[i]
		gotErr := ""
		if err := resp.Err(); err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.wantErr {
			t.Errorf("%q: Err() = %q, want %q (severity %d)", firstLine(tc.cmd), gotErr, tc.wantErr, resp.Severity)
		}
		switch {
		case tc.wantOut == "-":
		case strings.HasSuffix(tc.wantOut, "… "):
			if !strings.HasPrefix(resp.Output, strings.TrimSuffix(tc.wantOut, "… ")) {
				t.Errorf("%q: output %q, want prefix %q", firstLine(tc.cmd), resp.Output, tc.wantOut)
			}
		case resp.Output != tc.wantOut:
			t.Errorf("%q: output %q, want %q", firstLine(tc.cmd), resp.Output, tc.wantOut)
		}
	}
	// An unknown command is not one of ours: HAProxy answers with its
	// help text untagged, so Err cannot tell; callers only send known ones.
	if !strings.Contains(resps[len(resps)-1].Output, "Unknown command") {
		t.Errorf("unknown command output = %q", resps[len(resps)-1].Output)
	}
}

func TestRuntimeServerLifecycle(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := ctxT(t, 60*time.Second)
	addr := fmt.Sprintf("127.0.0.1:%d", r.B1)

	execOK(t, r.rt,
		"add server be/s1 "+addr+" weight 10 check inter 2s",
		"enable health be/s1",
		"enable server be/s1",
	)
	var s1 ServerState
	eventually(t, 10*time.Second, "s1 up", func() bool {
		states, err := r.rt.ServersState(ctx, "be")
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(states, func(s ServerState) bool { return s.Name == "s1" })
		if i < 0 {
			t.Fatalf("s1 not in servers state: %+v", states)
		}
		s1 = states[i]
		return s1.OpState == OpRunning
	})
	want := ServerState{Backend: "be", Name: "s1", Address: "127.0.0.1", Port: r.B1, OpState: OpRunning,
		Weight: 10, InitialWeight: 10, CheckState: CheckConfigured | CheckEnabled}
	if s1 != want {
		t.Errorf("s1 state = %+v\nwant %+v", s1, want)
	}
	// Traffic reaches the new server (roundrobin over s0 and s1; nochk
	// has weight 0).
	seen := map[string]int{}
	for range 6 {
		seen[r.get(t, "")]++
	}
	if seen["200 b1"] == 0 || seen["200 b0"] == 0 {
		t.Errorf("responses %v, want both b0 and b1", seen)
	}

	execOK(t, r.rt, "set server be/s1 weight 20", "disable health be/s0")
	states, err := r.rt.ServersState(ctx, "be")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		switch s.Name {
		case "s1":
			if s.Weight != 20 || s.InitialWeight != 10 {
				t.Errorf("s1 weight = %d (initial %d), want 20 (10)", s.Weight, s.InitialWeight)
			}
		case "s0":
			if s.CheckState != CheckConfigured {
				t.Errorf("s0 check state after disable health = %#x, want configured only", s.CheckState)
			}
		case "nochk":
			if s.CheckState != 0 {
				t.Errorf("nochk check state = %#x, want 0", s.CheckState)
			}
		}
	}

	// Removal: maintenance, wait for sessions to end, delete. A request
	// held open on s1 (backend answers after the client sends the whole
	// request) is simulated by a slow client on a raw connection pinned
	// to s1 through the dynamic cookie.
	execOK(t, r.rt, "set server be/s1 state maint")
	states, _ = r.rt.ServersState(ctx, "be")
	for _, s := range states {
		if s.Name == "s1" && !s.AdminState.Maint() {
			t.Errorf("s1 admin state = %#x, want maintenance", s.AdminState)
		}
	}
	conns, err := r.rt.ServerConns(ctx, "be", "s1")
	if err != nil || conns != 0 {
		t.Fatalf("ServerConns(s1) = %d, %v; want 0", conns, err)
	}
	execOK(t, r.rt, "del server be/s1")
	states, _ = r.rt.ServersState(ctx, "be")
	if slices.ContainsFunc(states, func(s ServerState) bool { return s.Name == "s1" }) {
		t.Errorf("s1 still listed after del server: %+v", states)
	}
	if _, err := r.rt.ServerConns(ctx, "be", "s1"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("ServerConns(deleted) err = %v, want not found", err)
	}
	if _, err := r.rt.ServersState(ctx, "nobe"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("ServersState(nobe) err = %v, want not found", err)
	}
}

// TestDelServerWaitsForSessions is the background removal: a server in
// maintenance with a request in flight cannot be deleted; once
// ServerConns reaches zero it can.
func TestDelServerWaitsForSessions(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := ctxT(t, 30*time.Second)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "slow")
	}))
	defer slow.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()

	execOK(t, r.rt,
		"add server be2/slow "+slow.Listener.Addr().String(),
		"enable server be2/slow",
		"set server be2/x state maint",
		"add map "+filepath.Join(r.Run, "hosts.map")+" slow.example.com be2",
	)
	got := make(chan string, 1)
	go func() { got <- r.get(t, "slow.example.com") }()
	<-arrived

	// The session and its server connection: 2 on 2.6.
	n, err := r.rt.ServerConns(ctx, "be2", "slow")
	if err != nil || n < 1 {
		t.Fatalf("ServerConns(slow) with a request in flight = %d, %v; want at least 1", n, err)
	}
	execOK(t, r.rt, "set server be2/slow state maint")
	resps, err := r.rt.Execute(ctx, []string{"del server be2/slow"})
	if err != nil {
		t.Fatal(err)
	}
	wantErr := "del server be2/slow: Server still has connections attached to it, cannot remove it."
	if err := resps[0].Err(); err == nil || err.Error() != wantErr {
		t.Errorf("del server with a session = %v, want %q", err, wantErr)
	}

	// The long request completes: maintenance does not cut it.
	unblock()
	if body := <-got; body != "200 slow" {
		t.Errorf("in-flight request = %q, want it served", body)
	}
	eventually(t, 5*time.Second, "sessions drained", func() bool {
		n, err := r.rt.ServerConns(ctx, "be2", "slow")
		return err == nil && n == 0
	})
	execOK(t, r.rt, "del server be2/slow")
}

func TestMapTransaction(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := ctxT(t, 20*time.Second)
	hostsMap := filepath.Join(r.Run, "hosts.map")
	if got := r.get(t, "b.example.com"); got != "200 b0" {
		t.Fatalf("before: GET b.example.com = %q (default backend)", got)
	}
	resps := execOK(t, r.rt, "prepare map "+hostsMap)
	ver, err := plan.ParsePrepareReply(resps[0].Output)
	if err != nil {
		t.Fatal(err)
	}
	// The commands the daemon sends: payloads, then the commit.
	want := []MapEntry{{"a.example.com", "be"}, {"b.example.com", "be2"}}
	entries := []render.MapEntry{{Key: "a.example.com", Value: "be"}, {Key: "b.example.com", Value: "be2"}}
	for i := range 1500 { // large enough to need several payloads
		want = append(want, MapEntry{fmt.Sprintf("h%04d.example.com", i), "be2"})
		entries = append(entries, render.MapEntry{Key: fmt.Sprintf("h%04d.example.com", i), Value: "be2"})
	}
	cmds := plan.MapReplace{Path: hostsMap, Entries: entries}.Commands(ver)
	if len(cmds) < 3 {
		t.Fatalf("%d map commands, want the payload split", len(cmds))
	}
	execOK(t, r.rt, cmds...)

	got, err := r.rt.ShowMap(ctx, hostsMap)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("show map: %d entries, want %d; first %v", len(got), len(want), got[:min(3, len(got))])
	}
	if got := r.get(t, "b.example.com"); got != "200 b1" {
		t.Errorf("after commit: GET b.example.com = %q, want b1 via be2", got)
	}
	if _, err := r.rt.ShowMap(ctx, "/nope.map"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("ShowMap(unknown) err = %v, want not found", err)
	}
}

func TestSSLCertUpdate(t *testing.T) {
	r := newRig(t)
	r.start(t)
	serial := func() int64 {
		t.Helper()
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTPS), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed test cert
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != 1 {
		t.Fatalf("initial serial = %d, want 1", got)
	}
	site := filepath.Join(r.Run, "site.pem")
	resps := execOK(t, r.rt, plan.SetCert{Path: site, PEM: testutil.SelfSignedPEM(t, "localhost", 42)}.Commands()...)
	if !strings.HasSuffix(resps[1].Output, "Success!") {
		t.Errorf("commit reply = %q", resps[1].Output)
	}
	if got := serial(); got != 42 {
		t.Errorf("serial after set/commit ssl cert = %d, want 42", got)
	}
}

func TestDynamicCookieKey(t *testing.T) {
	r := newRig(t)
	r.start(t)
	cookie := func() string {
		t.Helper()
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", r.HTTP))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == "SRV" {
				return c.Value
			}
		}
		t.Fatalf("no SRV cookie in %v", resp.Header)
		return ""
	}
	before := cookie()
	execOK(t, r.rt, "set dynamic-cookie-key backend be otherkey", "enable dynamic-cookie backend be")
	after := cookie()
	if before == "" || after == before {
		t.Errorf("cookie before %q, after key change %q: want a different non-empty value", before, after)
	}
}

func TestExecuteContextCancel(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.rt.Execute(ctx, []string{"show info"}); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("Execute(cancelled ctx) = %v, want context canceled", err)
	}
}

// Apply stops at the first refusal: the commands after it, which build on
// the refused one, are not sent.
func TestApplyStopsAtRefusal(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := context.Background()
	addr := fmt.Sprintf("127.0.0.1:%d", r.B1)
	resps, err := r.rt.Apply(ctx, []string{
		"add server be/a1 " + addr,
		"add server be/a1 " + addr, // refused: the name is taken
		"set server be/a1 weight 7",
	})
	if err == nil || !strings.Contains(err.Error(), "Already exists a server with the same name") {
		t.Fatalf("Apply error = %v, want the refusal of the second add", err)
	}
	if len(resps) != 2 {
		t.Fatalf("%d responses, want 2 (nothing sent after the refusal)", len(resps))
	}
	state, err := r.rt.ServersState(ctx, "be")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range state {
		if s.Name == "a1" && s.Weight == 7 {
			t.Fatalf("the command after the refusal ran: a1 has weight 7")
		}
	}
	if _, err := r.rt.Apply(ctx, []string{"set server be/a1 weight 7"}); err != nil {
		t.Fatalf("Apply of one good command: %v", err)
	}
}

// ServersStates reads many backends over one connection, each as
// ServersState reads it alone; an unknown backend is ErrNotFound.
func TestServersStatesBatch(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := context.Background()
	got, err := r.rt.ServersStates(ctx, []string{"be", "be2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, be := range []string{"be", "be2"} {
		alone, err := r.rt.ServersState(ctx, be)
		if err != nil {
			t.Fatal(err)
		}
		// Names, addresses and weights: the operational state may move
		// between the two reads as checks run.
		key := func(ss []ServerState) []string {
			var out []string
			for _, s := range ss {
				out = append(out, fmt.Sprintf("%s/%s %s:%d w%d", s.Backend, s.Name, s.Address, s.Port, s.Weight))
			}
			return out
		}
		if len(alone) == 0 || !slices.Equal(key(got[be]), key(alone)) {
			t.Errorf("%s: batch read %+v, alone %+v", be, got[be], alone)
		}
	}
	if _, err := r.rt.ServersStates(ctx, []string{"be", "nope"}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown backend: error = %v, want ErrNotFound naming it", err)
	}
}

// BackendsConns reads the sessions of several backends at once; a backend
// HAProxy does not know is left out rather than failing the others.
func TestBackendsConns(t *testing.T) {
	r := newRig(t)
	r.start(t)
	got, err := r.rt.BackendsConns(context.Background(), []string{"be", "nope", "be2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["nope"]; ok || len(got) != 2 {
		t.Fatalf("backends read: %v, want be and be2 only", got)
	}
	if u, ok := got["be"]["s0"]; !ok || u != (ServerUse{}) {
		t.Errorf("be/s0 = %+v, %v; want no connection and no failure on an idle HAProxy", u, ok)
	}
	if _, ok := got["be2"]["x"]; !ok {
		t.Errorf("be2/x missing: %v", got["be2"])
	}
}

// setCertCommand is the `set ssl cert` command the daemon sends.
func setCertCommand(path, pem string) string {
	return plan.SetCert{Path: path, PEM: []byte(pem)}.Commands()[0]
}

// A drained server's connections in use are its sessions and the server
// connections in use; idle ones are not counted (3.x closes them when the
// server is deleted; 2.6 refuses the deletion, and the daemon retries).
// Columns are found by name.
func TestBackendSessionsCountEveryConnection(t *testing.T) {
	out := "# pxname,svname,qcur,scur,econ,wretr,wredis,idle_conn_cur,safe_conn_cur,used_conn_cur\n" +
		"be,quiet,0,0,0,0,0,0,0,0\n" +
		"be,idle,0,0,0,0,0,1,0,0\n" +
		"be,safe,0,0,0,0,0,0,2,0\n" +
		"be,used,0,0,0,0,0,0,0,1\n" +
		"be,busy,0,3,0,0,0,0,0,3\n" +
		"be,refusing,0,0,7,2,1,0,0,0\n" +
		"be,BACKEND,0,3,7,2,1,,,\n" +
		"other,s,0,9,9,9,9,9,9,9\n"
	got, err := parseBackendSessions(out, "be")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ServerUse{"quiet": {}, "idle": {}, "safe": {}, "used": {Conns: 1}, "busy": {Conns: 6},
		"refusing": {Failed: 10}, "BACKEND": {Conns: 3, Failed: 10}}
	if !maps.Equal(got, want) {
		t.Errorf("connections %v, want %v", got, want)
	}
	// Before 2.2 only sessions are reported.
	got, err = parseBackendSessions("# pxname,svname,scur,econ,wretr,wredis\nbe,s,2,1,0,0\n", "be")
	if err != nil || got["s"] != (ServerUse{Conns: 2, Failed: 1}) {
		t.Errorf("sessions only: %v, %v", got, err)
	}
}

// A certificate command refused because another session holds the lock
// on certificates (HAProxy's reply, from an admin socket standing in for
// it: the lock is held only for the moment of another command) goes
// again once it is free; one that stays locked is refused in the end.
func TestCertificateCommandWaitsForTheLock(t *testing.T) {
	const locked = "[3]: Can't update the certificate!\nOperations on certificates are currently locked!\n"
	for _, tt := range []struct {
		name     string
		lockedN  int
		wantSent int
		wantErr  bool
	}{
		{"free after two tries", 2, 3, false},
		{"never free", 1000, 9, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(testutil.ShortTempDir(t), "admin.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var sent atomic.Int32
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				in := bufio.NewReader(conn)
				for {
					line, err := in.ReadString('\n')
					if err != nil {
						return
					}
					reply := ""
					if strings.HasPrefix(line, "set ssl cert ") {
						for payload, _ := in.ReadString('\n'); payload != "\n" && payload != ""; payload, _ = in.ReadString('\n') {
						}
						reply = "Transaction created for certificate /x.pem!\n"
						if int(sent.Add(1)) <= tt.lockedN {
							reply = locked
						}
					}
					if _, err := conn.Write([]byte(reply + "\n> ")); err != nil {
						return
					}
				}
			}()
			resps, err := NewRuntime(sock).Execute(context.Background(), []string{"set ssl cert /x.pem <<\n-----BEGIN CERTIFICATE-----"})
			if err != nil {
				t.Fatal(err)
			}
			if got := int(sent.Load()); got != tt.wantSent {
				t.Errorf("sent %d times, want %d", got, tt.wantSent)
			}
			if gotErr := resps[0].Err() != nil; gotErr != tt.wantErr {
				t.Errorf("reply %+v: error %v, want %v", resps[0], resps[0].Err(), tt.wantErr)
			}
		})
	}
}
