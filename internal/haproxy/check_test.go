package haproxy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// alertLines reads both versions' `haproxy -c` output (recorded from
// 2.6.12 and 3.0.11 on the same crt-list with a mismatched key) into the
// same messages: 3.0 continues one message on indented lines.
func TestAlertLinesJoinsContinuations(t *testing.T) {
	v26 := `[NOTICE]   (23991) : haproxy version is 2.6.12-1+deb12u4
[NOTICE]   (23991) : path to executable is /usr/sbin/haproxy
[ALERT]    (23991) : config : parsing [c.cfg:7] : 'bind 127.0.0.1:29998' in section 'frontend' : 'crt-list' : inconsistencies between private key and certificate loaded '/tmp/h3x/bad.pem'.
[ALERT]    (23991) : config : Error(s) found in configuration file : c.cfg
[ALERT]    (23991) : config : Fatal errors found in configuration.
`
	v30 := `[NOTICE]   (23993) : haproxy version is 3.0.11-1+deb13u4
[NOTICE]   (23993) : path to executable is /usr/sbin/haproxy
[ALERT]    (23993) : config : parsing [c.cfg:7] : 'bind 127.0.0.1:29998' in section 'frontend' : 
  'crt-list' : error processing line 2 in file '/tmp/h3x/list' : inconsistencies between private key and certificate loaded '/tmp/h3x/bad.pem'.
  unable to load SSL private key into SSL Context '/tmp/h3x/bad.pem': passed a null parameter.
[ALERT]    (23993) : config : Error(s) found in configuration file : c.cfg
[ALERT]    (23993) : config : Fatal errors found in configuration.
`
	want26 := []string{
		"[ALERT] config : parsing [c.cfg:7] : 'bind 127.0.0.1:29998' in section 'frontend' : 'crt-list' : inconsistencies between private key and certificate loaded '/tmp/h3x/bad.pem'.",
		"[ALERT] config : Error(s) found in configuration file : c.cfg",
		"[ALERT] config : Fatal errors found in configuration.",
	}
	want30 := []string{
		"[ALERT] config : parsing [c.cfg:7] : 'bind 127.0.0.1:29998' in section 'frontend' : 'crt-list' : error processing line 2 in file '/tmp/h3x/list' : inconsistencies between private key and certificate loaded '/tmp/h3x/bad.pem'. unable to load SSL private key into SSL Context '/tmp/h3x/bad.pem': passed a null parameter.",
		want26[1], want26[2],
	}
	for _, tc := range []struct {
		name, out string
		want      []string
	}{{"2.6", v26, want26}, {"3.0", v30, want30}} {
		if got := alertLines([]byte(tc.out)); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: alertLines =\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	// Without an alert, every line is kept, continuations joined too.
	got := alertLines([]byte("Usage : haproxy\n  -v displays version\n"))
	if len(got) != 1 || got[0] != "Usage : haproxy -v displays version" {
		t.Errorf("no alerts: %q", got)
	}
}

// A check killed before its verdict (the OOM killer) is not a refusal of
// the file: a *CheckError would have it blamed on the content.
func TestCheckKilledIsNoVerdict(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "haproxy")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nkill -9 $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Check(context.Background(), bin, "/nonexistent.cfg")
	if err == nil || errors.As(err, new(*CheckError)) {
		t.Fatalf("Check = %v, want an error that is not a *CheckError", err)
	}
	if !strings.Contains(err.Error(), "killed") {
		t.Errorf("Check = %v, want it to say the check was killed", err)
	}
}

// A check that crashes (SIGSEGV, SIGABRT) is a verdict: the same file
// crashes it again, and the routes responsible must be found.
func TestCheckCrashIsAVerdict(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "haproxy")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nkill -SEGV $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check(context.Background(), bin, "/nonexistent.cfg"); !errors.As(err, new(*CheckError)) {
		t.Fatalf("Check = %v, want a *CheckError", err)
	}
}
