package haproxy

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/haproxytech/client-native/v5/models"

	"github.com/haroute/haroute/internal/testutil"
)

const nativeTestConfig = `global
    stats socket {{.Run}}/admin.sock mode 600 level admin
    maxconn 321
    nbthread 2
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:{{.HTTP}}
    bind 127.0.0.1:{{.HTTPS}} ssl crt {{.Run}}/site.pem
    default_backend be
backend be
    server s0 127.0.0.1:{{.B0}}
`

// nativeRig is a running HAProxy with maxconn 321, nbthread 2 and one
// certificate, site.pem, whose leaf is returned as before.
type nativeRig struct {
	Run         string
	HTTP, HTTPS int
	B0          int
	bin         string
	proc        *Process
	before      *x509.Certificate
}

func startNativeRig(t *testing.T) *nativeRig {
	t.Helper()
	bin := testutil.HAProxy(t)
	r := &nativeRig{Run: testutil.ShortTempDir(t), HTTP: testutil.FreePort(t), HTTPS: testutil.FreePort(t), B0: backend(t, "b0"), bin: bin}
	var cfg bytes.Buffer
	template.Must(template.New("cfg").Parse(nativeTestConfig)).Execute(&cfg, r)
	cfgPath := filepath.Join(r.Run, "haproxy.cfg")
	writeFile(t, cfgPath, cfg.String())
	var sitePEM string
	sitePEM, r.before = nativeCert(t, "before.example", big.NewInt(1), time.Now().Add(24*time.Hour))
	writeFile(t, filepath.Join(r.Run, "site.pem"), sitePEM)

	logs := &testutil.SyncBuffer{}
	sup, err := NewSupervisor(Options{
		Binary: bin, ConfigPath: cfgPath, RunDir: r.Run,
		Logger:          slog.New(slog.NewTextHandler(logs, nil)),
		SoftStopTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	proc, err := sup.Start(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs)
	}
	r.proc = proc
	t.Cleanup(func() {
		if err := proc.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return r
}

func (r *nativeRig) inspector(t *testing.T) *NativeInspector {
	t.Helper()
	in, err := NewInspector(filepath.Join(r.Run, "admin.sock"))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// nativeCert returns a self-signed certificate (cert+key PEM, and the
// parsed leaf) for cn, with the given serial and notAfter.
func nativeCert(t testing.TB, cn string, serial *big.Int, notAfter time.Time) (string, *x509.Certificate) {
	c, k, leaf := testutil.SelfSignedCert(t, cn, serial, notAfter)
	return string(c) + string(k), leaf
}

// binaryVersion is the version `haproxy -v` prints:
// "HAProxy version 2.6.12-1+deb12u4 2023/… - https://haproxy.org/".
func binaryVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "-v").Output()
	if err != nil {
		t.Fatalf("%s -v: %v", bin, err)
	}
	f := strings.Fields(firstLine(string(out)))
	if len(f) < 3 || f[0] != "HAProxy" || f[1] != "version" {
		t.Fatalf("unexpected %s -v output %q", bin, out)
	}
	return f[2]
}

// openFilesLimit reads the soft "Max open files" limit of pid from /proc:
// the fd limit the kernel enforces, independent of what HAProxy reports.
func openFilesLimit(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			n, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatalf("limits line %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no Max open files in /proc/%d/limits", pid)
	return 0
}

// TestInspectorInfo checks each Info field against an independent source:
// the binary's -v, the master's show proc, the config, /proc, and
// connections the test holds open.
func TestInspectorInfo(t *testing.T) {
	r := startNativeRig(t)
	in := r.inspector(t)
	ctx := ctxT(t, 30*time.Second)

	info, err := in.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := binaryVersion(t, r.bin); info.Version != want {
		t.Errorf("Version = %q, want %q (haproxy -v)", info.Version, want)
	}
	procs, err := r.proc.Master().ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(procs.Workers) != 1 {
		t.Fatalf("show proc lists %d workers, want 1: %+v", len(procs.Workers), procs)
	}
	if info.PID != procs.Workers[0].PID {
		t.Errorf("PID = %d, want the worker's %d (show proc)", info.PID, procs.Workers[0].PID)
	}
	if info.MaxConn != 321 || info.HardMaxConn != 321 {
		t.Errorf("MaxConn, HardMaxConn = %d, %d; want 321, 321 (global maxconn)", info.MaxConn, info.HardMaxConn)
	}
	if info.Threads != 2 || info.Processes != 1 {
		t.Errorf("Threads, Processes = %d, %d; want 2, 1", info.Threads, info.Processes)
	}
	// HAProxy raises its soft limit to what it needs and never lowers it,
	// so the kernel's limit is at least UlimitN (2.6.12 here: 683 with a
	// soft limit of 20000).
	if limit := openFilesLimit(t, info.PID); limit < info.UlimitN {
		t.Errorf("UlimitN = %d above the worker's fd limit %d (/proc)", info.UlimitN, limit)
	}
	if info.UlimitN < 2*info.MaxConn || info.MaxSock != info.UlimitN {
		t.Errorf("UlimitN, MaxSock = %d, %d; want equal and ≥ 2×maxconn", info.UlimitN, info.MaxSock)
	}
	if info.CurrConns != 0 {
		t.Errorf("CurrConns = %d before any client, want 0", info.CurrConns)
	}

	// Three idle client connections show as CurrConns, then leave.
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.HTTP))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	var last Info
	currConns := func(want int) func() bool {
		return func() bool {
			last, err = in.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return last.CurrConns == want
		}
	}
	eventually(t, 5*time.Second, "CurrConns = 3", currConns(3))
	if last.CumConns < 3 {
		t.Errorf("CumConns = %d with 3 connections made, want ≥ 3", last.CumConns)
	}
	for _, c := range conns {
		c.Close()
	}
	eventually(t, 5*time.Second, "CurrConns = 0", currConns(0))

	eventually(t, 5*time.Second, "Uptime ≥ 1s", func() bool {
		info, err := in.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.Uptime >= time.Second
	})
}

// TestInspectorCert swaps site.pem through Runtime.Execute (`set ssl cert`,
// then `commit ssl cert`) and reads it back at each step.
func TestInspectorCert(t *testing.T) {
	r := startNativeRig(t)
	in := r.inspector(t)
	ctx := ctxT(t, 30*time.Second)
	rt := NewRuntime(filepath.Join(r.Run, "admin.sock"))
	site := filepath.Join(r.Run, "site.pem")

	got, err := in.Cert(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	checkCert(t, "before the swap", got, site, true, r.before)

	// A serial whose top bit is set (DER pads it with a zero byte) and
	// wider than 64 bits, so the hex must be read as a big number.
	serial, _ := new(big.Int).SetString("C0FFEE0123456789ABCD", 16)
	notAfter := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	afterPEM, after := nativeCert(t, "after.example", serial, notAfter)
	execOK(t, rt, setCertCommand(site, afterPEM))

	// Until the commit, the path still shows the certificate in use and
	// "*<path>" the one in the transaction, not yet used.
	got, err = in.Cert(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	checkCert(t, "before the commit", got, site, true, r.before)
	got, err = in.Cert(ctx, "*"+site)
	if err != nil {
		t.Fatal(err)
	}
	checkCert(t, "in the transaction", got, "*"+site, false, after)
	paths, err := in.CertPaths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{site}; !slices.Equal(paths, want) {
		t.Errorf("CertPaths during the transaction = %q, want %q", paths, want)
	}

	execOK(t, rt, "commit ssl cert "+site)
	got, err = in.Cert(ctx, site)
	if err != nil {
		t.Fatal(err)
	}
	checkCert(t, "after the commit", got, site, true, after)
	if got.Serial.Cmp(serial) != 0 || !got.NotAfter.Equal(notAfter) {
		t.Errorf("Serial, NotAfter = %X, %s; want %X, %s", got.Serial, got.NotAfter, serial, notAfter)
	}
	if got.Is(r.before) {
		t.Error("Is(old certificate) = true after the commit")
	}

	// A certificate created at runtime and referenced by no bind line.
	spare := filepath.Join(r.Run, "spare.pem")
	sparePEM, spareCert := nativeCert(t, "spare.example", big.NewInt(77), notAfter)
	execOK(t, rt, "new ssl cert "+spare, setCertCommand(spare, sparePEM), "commit ssl cert "+spare)
	got, err = in.Cert(ctx, spare)
	if err != nil {
		t.Fatal(err)
	}
	checkCert(t, "spare", got, spare, false, spareCert)
	paths, err = in.CertPaths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	if want := []string{site, spare}; !slices.Equal(paths, want) {
		t.Errorf("CertPaths = %q, want %q", paths, want)
	}

	nope := filepath.Join(r.Run, "nope.pem")
	_, err = in.Cert(ctx, nope)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("Cert(unknown) error = %v, want ErrNotFound", err)
	}
	if want := "show ssl cert " + nope + ": not found"; err == nil || err.Error() != want {
		t.Errorf("Cert(unknown) error = %v, want %q", err, want)
	}
}

// checkCert compares what HAProxy reports with the certificate itself.
func checkCert(t *testing.T, when string, got CertInfo, path string, used bool, want *x509.Certificate) {
	t.Helper()
	subject := "/CN=" + want.Subject.CommonName
	if got.Path != path || got.Used != used || got.Subject != subject || got.Issuer != subject ||
		got.SANs != "DNS:"+want.DNSNames[0] || got.Serial == nil || got.Serial.Cmp(want.SerialNumber) != 0 ||
		!got.NotBefore.Equal(want.NotBefore) || !got.NotAfter.Equal(want.NotAfter) || !got.Is(want) {
		t.Errorf("%s: got %+v (serial %X)\nwant path %s, used %v, subject %s, serial %X, notBefore %s, notAfter %s, sha1 of %s",
			when, got, got.Serial, path, used, subject, want.SerialNumber, want.NotBefore, want.NotAfter, want.Subject)
	}
}

// TestInspectorErrors covers what fails before or without HAProxy: bad
// paths, a dead socket (not "not found", unlike client-native's own
// error), an ended context, and a socket that never answers.
func TestInspectorErrors(t *testing.T) {
	dir := testutil.ShortTempDir(t)
	dead := filepath.Join(dir, "dead.sock")
	in, err := NewInspector(dead)
	if err != nil {
		t.Fatalf("NewInspector must not connect: %v", err)
	}
	ctx := ctxT(t, 30*time.Second)

	for _, tc := range []struct {
		path, want string
	}{
		{"", "show ssl cert: empty path"},
		{"/a b.pem", `show ssl cert "/a b.pem": path contains white space or ';'`},
		{"/a.pem;shutdown frontend fe", `show ssl cert "/a.pem;shutdown frontend fe": path contains white space or ';'`},
		{"/a.pem\nshutdown frontend fe", `show ssl cert "/a.pem\nshutdown frontend fe": path contains white space or ';'`},
		{"/etc/site.pem", "show ssl cert /etc/site.pem: dial unix " + dead + ": connect: no such file or directory [show ssl cert /etc/site.pem]"},
	} {
		_, err := in.Cert(ctx, tc.path)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Cert(%q) error = %v, want %q", tc.path, err, tc.want)
		}
		if errors.Is(err, ErrNotFound) {
			t.Errorf("Cert(%q) error %v must not be ErrNotFound", tc.path, err)
		}
	}

	_, err = in.Info(ctx)
	if want := "show info on " + dead + ": dial unix " + dead + ": connect: no such file or directory [show info typed]"; err == nil || err.Error() != want {
		t.Errorf("Info on a dead socket: error = %v, want %q", err, want)
	}
	_, err = in.CertPaths(ctx)
	if err == nil || !strings.HasPrefix(err.Error(), "show ssl cert on "+dead+": dial unix ") {
		t.Errorf("CertPaths on a dead socket: error = %v", err)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := in.Info(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Info(cancelled) error = %v, want context.Canceled", err)
	}

	// A socket that accepts and never replies: client-native would wait
	// its fixed 30 s; the context must cut that short.
	mute := filepath.Join(dir, "mute.sock")
	l, err := net.Listen("unix", mute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				// The listener closed at cleanup: let the abandoned
				// client-native call end too.
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c)
		}
	}()
	muteIn, err := NewInspector(mute)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	start := time.Now()
	_, err = muteIn.Info(short)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Info on a mute socket: error = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Info on a mute socket returned after %s, want about 200ms", d)
	}
}

func int64p(v int64) *int64 { return &v }

// TestInfoFromNative covers the checks on client-native's result that make
// up for its swallowed read errors.
func TestInfoFromNative(t *testing.T) {
	tests := []struct {
		name    string
		in      models.ProcessInfo
		want    Info
		wantErr string
	}{
		{"error", models.ProcessInfo{Error: "[3] Permission denied [show info typed]"}, Info{}, "[3] Permission denied [show info typed]"},
		{"no info", models.ProcessInfo{}, Info{}, "reply has no Version: cut short or not show info"},
		{"cut short", models.ProcessInfo{Info: &models.ProcessInfoItem{Pid: int64p(9)}}, Info{}, "reply has no Version: cut short or not show info"},
		{"full", models.ProcessInfo{Info: &models.ProcessInfoItem{
			Version: "2.6.12", Pid: int64p(9), Uptime: int64p(61), Nbthread: int64p(2), Processes: int64p(1),
			MaxConn: int64p(321), HardMaxConn: int64p(321), Ulimitn: int64p(684), MaxSock: int64p(684),
			CurrConns: int64p(3), CumConns: int64p(40), CumReq: int64p(50), CurrSslConns: int64p(1),
		}}, Info{
			Version: "2.6.12", PID: 9, Uptime: 61 * time.Second, Threads: 2, Processes: 1,
			MaxConn: 321, HardMaxConn: 321, UlimitN: 684, MaxSock: 684,
			CurrConns: 3, CumConns: 40, CumReq: 50, CurrSSLConns: 1,
		}, ""},
		{"fields absent", models.ProcessInfo{Info: &models.ProcessInfoItem{Version: "3.0.0"}}, Info{Version: "3.0.0"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := infoFromNative(tc.in)
			if gotErr := fmt.Sprint(err); (tc.wantErr == "" && err != nil) || (tc.wantErr != "" && gotErr != tc.wantErr) {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCertFromNative(t *testing.T) {
	notAfter := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	dt := func(tm time.Time) *strfmt.DateTime { d := strfmt.DateTime(tm); return &d }
	tests := []struct {
		name    string
		in      *models.SslCertificate
		wantErr string
	}{
		{"nil", nil, "no certificate in reply"},
		{"no serial", &models.SslCertificate{NotAfter: dt(notAfter)}, `serial "" is not hex: reply cut short?`},
		{"bad serial", &models.SslCertificate{Serial: "XYZ", NotAfter: dt(notAfter)}, `serial "XYZ" is not hex: reply cut short?`},
		{"no notAfter", &models.SslCertificate{Serial: "01"}, "no readable notAfter in reply"},
		{"unparsed notAfter", &models.SslCertificate{Serial: "01", NotAfter: dt(time.Time{})}, "no readable notAfter in reply"},
		{"ok", &models.SslCertificate{StorageName: "/c.pem", Status: "Used", Serial: "00C0FFEE", NotAfter: dt(notAfter)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := certFromNative(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Path != "/c.pem" || !got.Used || got.Serial.Cmp(big.NewInt(0xC0FFEE)) != 0 || !got.NotAfter.Equal(notAfter) {
				t.Errorf("got %+v", got)
			}
		})
	}
}

// TestClientNativeConfined enforces the brief: only internal/haproxy
// imports client-native.
func TestClientNativeConfined(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	own := filepath.Join(root, "internal", "haproxy")
	var offenders []string
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || filepath.Dir(path) == own {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return nil // a file mid-edit elsewhere is not this test's concern
		}
		checked++
		for _, imp := range f.Imports {
			if strings.HasPrefix(strings.Trim(imp.Path.Value, `"`), "github.com/haproxytech/client-native") {
				offenders = append(offenders, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no Go files checked outside internal/haproxy")
	}
	if len(offenders) > 0 {
		t.Errorf("client-native imported outside internal/haproxy: %q", offenders)
	}
}
