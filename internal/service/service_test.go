package service

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kservice "github.com/kardianos/service"

	"github.com/haroute/haroute/systemd"
)

// fakeController records calls in place of kardianos/service.
type fakeController struct {
	calls     *[]string
	platform  string
	status    kservice.Status
	statusErr error
	err       error
}

func (f fakeController) Install() error   { *f.calls = append(*f.calls, "install"); return f.err }
func (f fakeController) Uninstall() error { *f.calls = append(*f.calls, "uninstall"); return f.err }
func (f fakeController) Start() error     { *f.calls = append(*f.calls, "start"); return f.err }
func (f fakeController) Stop() error      { *f.calls = append(*f.calls, "stop"); return f.err }
func (f fakeController) Platform() string { return f.platform }
func (f fakeController) Status() (kservice.Status, error) {
	*f.calls = append(*f.calls, "status")
	return f.status, f.statusErr
}

type fixture struct {
	m        *Manager
	commands []string
	calls    []string
	configs  []*kservice.Config
	ctrl     fakeController
	unitDir  string
	vendor   string
	haveUser bool
}

func newFixture(t *testing.T, systemdBooted bool) *fixture {
	t.Helper()
	f := &fixture{unitDir: t.TempDir(), vendor: t.TempDir(), haveUser: true}
	f.ctrl = fakeController{calls: &f.calls, platform: "linux-systemd"}
	f.m = &Manager{
		exe:            "/usr/bin/haroute",
		log:            slog.New(slog.DiscardHandler),
		euid:           func() int { return 0 },
		systemdBooted:  systemdBooted,
		unitDir:        f.unitDir,
		vendorUnitDirs: []string{f.vendor},
		initScript:     filepath.Join(t.TempDir(), "haroute"),
		run: func(_ context.Context, name string, args ...string) error {
			f.commands = append(f.commands, name+" "+strings.Join(args, " "))
			return nil
		},
		userExists:  func(string) (bool, error) { return f.haveUser, nil },
		groupExists: func(string) (bool, error) { return f.haveUser, nil },
		newController: func(cfg *kservice.Config) (controller, error) {
			f.configs = append(f.configs, cfg)
			return f.ctrl, nil
		},
	}
	return f
}

func TestRunArgs(t *testing.T) {
	tests := []struct {
		in   []string
		want []string
	}{
		{nil, []string{"run", "--config-dir", "/etc/haroute/config", "--run-dir", "/run/haroute"}},
		{[]string{"run"}, []string{"run", "--config-dir", "/etc/haroute/config", "--run-dir", "/run/haroute"}},
		{[]string{"--config-dir", "/var/lib/git-sync/config"}, []string{"run", "--config-dir", "/var/lib/git-sync/config", "--run-dir", "/run/haroute"}},
		{[]string{"-config-dir=/srv/c", "--run-dir=/run/x", "--metrics-address", ":9191"}, []string{"run", "-config-dir=/srv/c", "--run-dir=/run/x", "--metrics-address", ":9191"}},
		{[]string{"--watch-mode", "link"}, []string{"run", "--watch-mode", "link", "--config-dir", "/etc/haroute/config", "--run-dir", "/run/haroute"}},
		// After "--" nothing is a flag.
		{[]string{"--", "--run-dir"}, []string{"run", "--", "--run-dir", "--config-dir", "/etc/haroute/config", "--run-dir", "/run/haroute"}},
	}
	for _, tt := range tests {
		if got := RunArgs(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("RunArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNeedsRoot(t *testing.T) {
	f := newFixture(t, true)
	f.m.euid = func() int { return 1000 }
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"install", func() error { return f.m.Install([]string{"--config-dir", "/srv/my config"}) },
			"service install needs root (try: sudo haroute service install --config-dir '/srv/my config')"},
		{"install without flags", func() error { return f.m.Install(nil) },
			"service install needs root (try: sudo haroute service install)"},
		{"uninstall", f.m.Uninstall, "service uninstall needs root (try: sudo haroute service uninstall)"},
		{"start", f.m.Start, "service start needs root (try: sudo haroute service start)"},
		{"stop", f.m.Stop, "service stop needs root (try: sudo haroute service stop)"},
	}
	for _, tt := range tests {
		err := tt.call()
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
	if len(f.commands) != 0 || len(f.calls) != 0 {
		t.Errorf("acted without root: commands %q, calls %q", f.commands, f.calls)
	}
	// Status needs no root.
	f.ctrl.status = kservice.StatusStopped
	if st, err := f.m.Status(); err != nil || st != StateStopped {
		t.Errorf("Status as non-root = %q, %v; want stopped", st, err)
	}
}

func TestInstallSystemd(t *testing.T) {
	f := newFixture(t, true)
	f.haveUser = false
	if err := f.m.Install([]string{"--config-dir", "/var/lib/git-sync/config", "--metrics-address", "127.0.0.1:9191"}); err != nil {
		t.Fatal(err)
	}
	wantCommands := []string{
		"groupadd --system haroute",
		"useradd --system --gid haroute --no-create-home --home-dir /var/lib/haroute --shell /usr/sbin/nologin haroute",
		"systemctl daemon-reload",
		"systemctl enable haroute.service",
	}
	if !reflect.DeepEqual(f.commands, wantCommands) {
		t.Errorf("commands:\n%q\nwant\n%q", f.commands, wantCommands)
	}
	if len(f.calls) != 0 {
		t.Errorf("kardianos used on systemd install: %q", f.calls)
	}
	path := filepath.Join(f.unitDir, "haroute.service")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := systemd.UnitWithCommand("/usr/bin/haroute", []string{"run", "--config-dir", "/var/lib/git-sync/config", "--metrics-address", "127.0.0.1:9191", "--run-dir", "/run/haroute"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("unit written:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(string(got), "\nExecStart=/usr/bin/haroute run --config-dir /var/lib/git-sync/config --metrics-address 127.0.0.1:9191 --run-dir /run/haroute\n") {
		t.Errorf("unit has the wrong ExecStart")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode = %v, %v; want 0644", fi.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(f.unitDir)
	if len(entries) != 1 {
		t.Errorf("unit dir holds %d entries, want just the unit (temp file left?)", len(entries))
	}

	// Installing again replaces the unit and does not recreate the user.
	f.commands = nil
	f.haveUser = true
	if err := f.m.Install(nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.commands, []string{"systemctl daemon-reload", "systemctl enable haroute.service"}) {
		t.Errorf("reinstall commands: %q", f.commands)
	}
	got, _ = os.ReadFile(path)
	if string(got) != shippedUnit(t) {
		t.Errorf("install without flags should write the shipped unit unchanged")
	}
}

func TestInstallRejectsHiddenExecutable(t *testing.T) {
	f := newFixture(t, true)
	f.m.exe = "/home/alice/go/bin/haroute"
	err := f.m.Install(nil)
	want := "install service: /home/alice/go/bin/haroute is under /home, which the hardened unit hides from the service (ProtectHome=, PrivateTmp=); copy it to /usr/local/bin first"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if len(f.commands) != 0 {
		t.Errorf("ran %q", f.commands)
	}
}

// Directories the hardened unit keeps from the service are refused at
// install, where they would make a service that fails at start: a config
// dir it cannot see, a state or run dir it cannot write.
func TestInstallRejectsDirectoriesTheUnitHides(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  string // in the error; "" = installs
	}{
		{[]string{"--config-dir", "/home/alice/routes"}, "--config-dir /home/alice/routes is under /home, which the hardened unit hides"},
		{[]string{"--config-dir=/tmp/cfg"}, "--config-dir /tmp/cfg is under /tmp"},
		{[]string{"--state-dir", "/srv/haroute"}, "--state-dir /srv/haroute: the hardened unit lets the service write only /var/lib/haroute"},
		{[]string{"--run-dir", "/var/run/x"}, "--run-dir /var/run/x: the hardened unit lets the service write only /run/haroute"},
		{[]string{"--config-dir", "/dev/shm/x"}, "--config-dir /dev/shm/x is under /dev"},
		{[]string{"--config-dir", "routes"}, "--config-dir routes: give the service an absolute path"},
		{[]string{"--config-dir", "/srv/routes", "--state-dir", "/var/lib/haroute/", "--run-dir", "/run/haroute"}, ""},
		{[]string{"--run-dir", "/var/run/haroute"}, ""},
	} {
		f := newFixture(t, true)
		err := f.m.Install(c.flags)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want installed", c.flags, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: err = %v, want one saying %q", c.flags, err, c.want)
		case c.want != "" && len(f.commands) != 0:
			t.Errorf("%q: refused, yet ran %q", c.flags, f.commands)
		}
	}
}

func TestInstallOtherInit(t *testing.T) {
	f := newFixture(t, false)
	if err := f.m.Install([]string{"--metrics-address", ":9191"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.calls, []string{"install"}) {
		t.Errorf("calls = %q", f.calls)
	}
	cfg := f.configs[0]
	if cfg.Name != "haroute" || cfg.Executable != "/usr/bin/haroute" {
		t.Errorf("config name %q exe %q", cfg.Name, cfg.Executable)
	}
	wantArgs := []string{"run", "--metrics-address", ":9191", "--config-dir", "/etc/haroute/config", "--run-dir", "/run/haroute"}
	if !reflect.DeepEqual(cfg.Arguments, wantArgs) {
		t.Errorf("args = %q, want %q", cfg.Arguments, wantArgs)
	}
	if len(f.commands) != 0 {
		t.Errorf("systemd commands run on a non-systemd host: %q", f.commands)
	}

	f.ctrl.err = errors.New("Init already exists: /etc/init.d/haroute")
	err := f.m.Install(nil)
	if err == nil || err.Error() != "install service: Init already exists: /etc/init.d/haroute" {
		t.Errorf("err = %v", err)
	}
}

func TestUninstallSystemd(t *testing.T) {
	f := newFixture(t, true)

	err := f.m.Uninstall()
	want := "uninstall service: haroute service is not installed (no " + filepath.Join(f.unitDir, "haroute.service") + ")"
	if err == nil || err.Error() != want || !errors.Is(err, ErrNotInstalled) {
		t.Errorf("nothing installed: err = %v, want %q", err, want)
	}

	vendor := filepath.Join(f.vendor, "haroute.service")
	if err := os.WriteFile(vendor, []byte(shippedUnit(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = f.m.Uninstall()
	want = "uninstall service: " + vendor + " belongs to the haroute package; remove the package instead (apt remove haroute, or dnf remove haroute)"
	if err == nil || err.Error() != want {
		t.Errorf("package unit: err = %v, want %q", err, want)
	}
	if _, err := os.Stat(vendor); err != nil {
		t.Errorf("package unit touched: %v", err)
	}
	if len(f.commands) != 0 {
		t.Errorf("ran %q", f.commands)
	}

	if err := f.m.Install(nil); err != nil {
		t.Fatal(err)
	}
	f.commands = nil
	if err := f.m.Uninstall(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.commands, []string{"systemctl disable --now haroute.service", "systemctl daemon-reload"}) {
		t.Errorf("commands: %q", f.commands)
	}
	if _, err := os.Stat(filepath.Join(f.unitDir, "haroute.service")); !os.IsNotExist(err) {
		t.Errorf("unit still there: %v", err)
	}
}

func TestStartStopStatus(t *testing.T) {
	f := newFixture(t, true)
	if err := f.m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := f.m.Stop(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.calls, []string{"start", "stop"}) {
		t.Errorf("calls = %q", f.calls)
	}

	tests := []struct {
		status  kservice.Status
		err     error
		want    State
		wantErr string
	}{
		{kservice.StatusRunning, nil, StateRunning, ""},
		{kservice.StatusStopped, nil, StateStopped, ""},
		{kservice.StatusUnknown, kservice.ErrNotInstalled, StateNotInstalled, ""},
		{kservice.StatusUnknown, errors.New("service in failed state"), "", "service status: service in failed state"},
		{kservice.StatusUnknown, nil, "", "service status: unknown"},
	}
	for _, tt := range tests {
		f.ctrl.status, f.ctrl.statusErr = tt.status, tt.err
		got, err := f.m.Status()
		if got != tt.want {
			t.Errorf("status %v/%v: got %q, want %q", tt.status, tt.err, got, tt.want)
		}
		if (err == nil) != (tt.wantErr == "") || err != nil && err.Error() != tt.wantErr {
			t.Errorf("status %v/%v: err %v, want %q", tt.status, tt.err, err, tt.wantErr)
		}
	}

	f.ctrl.err = errors.New("exit status 5")
	if err := f.m.Start(); err == nil || err.Error() != "start service: exit status 5" {
		t.Errorf("start failure: %v", err)
	}
}

// Without systemd, a missing init script is "not installed" (System V's
// `service haroute status` says only "exit status 1"), and any other
// failure says which service manager was asked.
func TestStatusWithoutSystemd(t *testing.T) {
	f := newFixture(t, false)
	f.ctrl.platform = "unix-systemv"
	f.ctrl.statusErr = errors.New("exit status 1")
	if st, err := f.m.Status(); err != nil || st != StateNotInstalled {
		t.Errorf("no init script: Status = %q, %v; want %q", st, err, StateNotInstalled)
	}
	if len(f.calls) != 0 {
		t.Errorf("asked the service manager about a missing script: %q", f.calls)
	}
	if err := os.WriteFile(f.m.initScript, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := f.m.Status()
	want := "service status: systemd is not running here (no /run/systemd/system); the unix-systemv service manager answered: exit status 1"
	if err == nil || err.Error() != want {
		t.Errorf("script present, status fails: err %v, want %q", err, want)
	}
	f.ctrl.statusErr, f.ctrl.status = nil, kservice.StatusRunning
	if st, err := f.m.Status(); err != nil || st != StateRunning {
		t.Errorf("script present and running: Status = %q, %v", st, err)
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"sudo", "haroute", "--x=a b", "it's", "/ok/path:1", ""})
	want := `sudo haroute '--x=a b' 'it'\''s' /ok/path:1 ''`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

func TestNewResolvesExecutable(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "haroute-real")
	if err := os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "haroute")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Executable: link})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.EvalSymlinks(real); m.exe != want {
		t.Errorf("exe = %q, want %q", m.exe, want)
	}
}

// shippedUnit is the unit file as packaging installs it.
func shippedUnit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "systemd", systemd.UnitName))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
