// Package service installs and controls haroute as a system service
// (`haroute service install|uninstall|start|stop|status`).
//
// On systemd hosts it installs haroute's own hardened unit (package
// systemd) rather than the generic unit kardianos/service would generate,
// which has no sandboxing at all: same file as the .deb/.rpm ship, with only
// ExecStart= rewritten to the flags given to install. Other init systems
// (SysV, OpenRC, upstart, launchd, Windows) go through kardianos/service,
// which also answers start/stop/status everywhere.
package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"

	kservice "github.com/kardianos/service"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/paths"
	"github.com/haroute/haroute/systemd"
)

// Name is the service name on every platform.
const Name = "haroute"

// Defaults the unit runs with when install is not given the flag: they
// match the directories the unit makes writable or readable
// (ConfigurationDirectory=, RuntimeDirectory=), so the sandbox and the
// daemon agree.
const (
	DefaultConfigDir = paths.ConfigDir
	DefaultRunDir    = paths.RunDir
)

// User is the account the systemd unit runs as.
const User = "haroute"

// State is what Status reports.
type State string

const (
	StateRunning      State = "running"
	StateStopped      State = "stopped"
	StateNotInstalled State = "not installed"
)

// ErrNotInstalled is returned by Uninstall when there is nothing to remove.
var ErrNotInstalled = errors.New("haroute service is not installed")

// Options configure a Manager.
type Options struct {
	// Executable is the haroute binary the service runs. Default: the
	// running executable, symlinks resolved.
	Executable string
	Logger     *slog.Logger
}

// controller is the part of kardianos/service the Manager uses.
type controller interface {
	Install() error
	Uninstall() error
	Start() error
	Stop() error
	Status() (kservice.Status, error)
	// Platform names the init system kardianos chose: "linux-systemd",
	// "unix-systemv", "linux-openrc", "linux-upstart", …
	Platform() string
}

// Manager installs and controls the service. Its fields other than exe and
// log are seams for tests; New fills them with the real thing.
type Manager struct {
	exe string
	log *slog.Logger

	euid          func() int
	systemdBooted bool
	// unitDir is where install writes the unit; vendorUnitDirs are where a
	// package puts it (uninstall leaves those to the package manager).
	unitDir        string
	vendorUnitDirs []string
	// initScript is where System V init keeps the service's script
	// (kardianos installs it there).
	initScript    string
	run           func(ctx context.Context, name string, args ...string) error
	userExists    func(name string) (bool, error)
	groupExists   func(name string) (bool, error)
	newController func(cfg *kservice.Config) (controller, error)
}

// New returns a Manager for this host.
func New(opts Options) (*Manager, error) {
	exe := opts.Executable
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find haroute executable: %w", err)
		}
		exe = self
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	abs, err := filepath.Abs(exe)
	if err != nil {
		return nil, fmt.Errorf("find haroute executable: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		exe:            abs,
		log:            log,
		euid:           os.Geteuid,
		systemdBooted:  systemdBooted(),
		unitDir:        "/etc/systemd/system",
		vendorUnitDirs: []string{"/lib/systemd/system", "/usr/lib/systemd/system"},
		initScript:     "/etc/init.d/" + Name,
		run:            runCommand,
		userExists:     userExists,
		groupExists:    groupExists,
		newController:  newKardianos,
	}, nil
}

// systemdBooted is sd_booted(3): systemd is the init system when this
// directory exists.
func systemdBooted() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

func runCommand(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func userExists(name string) (bool, error) {
	_, err := user.Lookup(name)
	var unknown user.UnknownUserError
	if errors.As(err, &unknown) {
		return false, nil
	}
	return err == nil, err
}

func groupExists(name string) (bool, error) {
	_, err := user.LookupGroup(name)
	var unknown user.UnknownGroupError
	if errors.As(err, &unknown) {
		return false, nil
	}
	return err == nil, err
}

// program satisfies kardianos' Interface, which New demands although the
// Manager only controls the service and never runs it: `haroute run` is
// what the service manager starts.
type program struct{}

func (program) Start(kservice.Service) error { return nil }
func (program) Stop(kservice.Service) error  { return nil }

func newKardianos(cfg *kservice.Config) (controller, error) {
	s, err := kservice.New(program{}, cfg)
	if err != nil {
		return nil, fmt.Errorf("service manager: %w", err)
	}
	return s, nil
}

// RunArgs builds the arguments the service runs haroute with: `run`
// followed by the flags given to install, plus --config-dir and --run-dir
// with their defaults when not given. A leading "run" is accepted and not
// doubled.
func RunArgs(flags []string) []string {
	if len(flags) > 0 && flags[0] == "run" {
		flags = flags[1:]
	}
	out := append([]string{"run"}, flags...)
	if !hasFlag(flags, "config-dir") {
		out = append(out, "--config-dir", DefaultConfigDir)
	}
	if !hasFlag(flags, "run-dir") {
		out = append(out, "--run-dir", DefaultRunDir)
	}
	return out
}

// hasFlag reports whether flags set -name or --name (with or without
// "=value"), in the style of Go's flag package, which stops at "--".
func hasFlag(flags []string, name string) bool {
	for _, f := range flags {
		if f == "--" {
			return false
		}
		f = strings.TrimPrefix(strings.TrimPrefix(f, "-"), "-")
		if f == name || strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

// hiddenPrefixes are trees the hardened unit does not let the service see
// (ProtectHome=yes, PrivateTmp=yes): a binary there could not be started.
var hiddenPrefixes = []string{"/home/", "/root/", "/run/user/", "/tmp/", "/var/tmp/"}

// sandboxedDirs refuses directories the hardened unit keeps from the
// service, which would install a service that fails at start: a config
// dir it cannot see (ProtectHome=, PrivateTmp=), and a state or run dir
// other than the ones it may write (StateDirectory=, RuntimeDirectory=;
// ProtectSystem=strict makes the rest of the file system read-only).
func sandboxedDirs(args []string) error {
	for _, flag := range []string{"config-dir", "state-dir", "run-dir"} {
		if dir := flagValue(args, flag); dir != "" && !filepath.IsAbs(dir) {
			// The service starts in /, not where install ran.
			return fmt.Errorf("--%s %s: give the service an absolute path", flag, dir)
		}
	}
	if dir := flagValue(args, "config-dir"); dir != "" {
		for _, p := range append(hiddenPrefixes, "/dev/") {
			if strings.HasPrefix(filepath.Clean(dir)+"/", p) {
				return fmt.Errorf("--config-dir %s is under %s, which the hardened unit hides from the service (ProtectHome=, PrivateTmp=, PrivateDevices=); use a directory such as %s", dir, strings.TrimSuffix(p, "/"), DefaultConfigDir)
			}
		}
	}
	for _, w := range []struct{ flag, want, unitKey string }{
		{"state-dir", paths.StateDir, "StateDirectory="},
		{"run-dir", DefaultRunDir, "RuntimeDirectory="},
	} {
		given := flagValue(args, w.flag)
		if given == "" {
			continue
		}
		// /var/run is a link to /run on every systemd host.
		dir := filepath.Clean(given)
		if rest, ok := strings.CutPrefix(dir, "/var/run/"); ok {
			dir = "/run/" + rest
		}
		if dir == w.want || strings.HasPrefix(dir, w.want+"/") {
			continue
		}
		return fmt.Errorf("--%s %s: the hardened unit lets the service write only %s (%s, with ProtectSystem=strict); leave --%s out, or give it a directory under %s",
			w.flag, given, w.want, w.unitKey, w.flag, w.want)
	}
	return nil
}

// flagValue returns the value flags give -name or --name ("--name v" or
// "--name=v"; the last one counts, as in Go's flag package), or "".
func flagValue(flags []string, name string) string {
	v := ""
	for i, f := range flags {
		if f == "--" {
			break
		}
		f = strings.TrimPrefix(strings.TrimPrefix(f, "-"), "-")
		switch {
		case f == name && i+1 < len(flags):
			v = flags[i+1]
		case strings.HasPrefix(f, name+"="):
			v = strings.TrimPrefix(f, name+"=")
		}
	}
	return v
}

// Install installs the service to run `haroute run` with flags, and
// enables it (it is not started: `haroute service start` does that).
func (m *Manager) Install(flags []string) error {
	if err := m.requireRoot("install", flags); err != nil {
		return err
	}
	args := RunArgs(flags)
	if !m.systemdBooted {
		c, err := m.newController(m.config(args))
		if err != nil {
			return err
		}
		if err := c.Install(); err != nil {
			return fmt.Errorf("install service: %w", err)
		}
		m.log.Info("installed service", "exe", m.exe, "args", strings.Join(args, " "))
		return nil
	}

	for _, p := range hiddenPrefixes {
		if strings.HasPrefix(m.exe, p) {
			return fmt.Errorf("install service: %s is under %s, which the hardened unit hides from the service (ProtectHome=, PrivateTmp=); copy it to /usr/local/bin first", m.exe, strings.TrimSuffix(p, "/"))
		}
	}
	if err := sandboxedDirs(args); err != nil {
		return fmt.Errorf("install service: %w", err)
	}
	unit, err := systemd.UnitWithCommand(m.exe, args)
	if err != nil {
		return fmt.Errorf("install service: %w", err)
	}
	ctx := context.Background()
	if err := m.ensureUser(ctx); err != nil {
		return fmt.Errorf("install service: %w", err)
	}
	path := filepath.Join(m.unitDir, systemd.UnitName)
	if _, err := os.Stat(path); err == nil {
		m.log.Info("replacing unit", "path", path)
	}
	if err := fsutil.WriteFileAtomic(path, []byte(unit), 0o644); err != nil { // systemd never reads half a unit
		return fmt.Errorf("install service: %w", err)
	}
	if err := m.run(ctx, "systemctl", "daemon-reload"); err != nil {
		return fmt.Errorf("install service: %w", err)
	}
	if err := m.run(ctx, "systemctl", "enable", systemd.UnitName); err != nil {
		return fmt.Errorf("install service: %w", err)
	}
	m.log.Info("installed unit", "path", path, "exec", m.exe+" "+strings.Join(args, " "))
	return nil
}

// ensureUser creates the unprivileged account the unit runs as, the same
// way the package's postinst does.
func (m *Manager) ensureUser(ctx context.Context) error {
	ok, err := m.groupExists(User)
	if err != nil {
		return fmt.Errorf("look up group %s: %w", User, err)
	}
	if !ok {
		if err := m.run(ctx, "groupadd", "--system", User); err != nil {
			return fmt.Errorf("create group: %w", err)
		}
		m.log.Info("created group", "group", User)
	}
	ok, err = m.userExists(User)
	if err != nil {
		return fmt.Errorf("look up user %s: %w", User, err)
	}
	if !ok {
		if err := m.run(ctx, "useradd", "--system", "--gid", User, "--no-create-home",
			"--home-dir", paths.StateDir, "--shell", "/usr/sbin/nologin", User); err != nil {
			return fmt.Errorf("create user: %w", err)
		}
		m.log.Info("created user", "user", User)
	}
	return nil
}

// Uninstall stops and disables the service and removes what Install
// wrote. A unit that came with the package is left to the package manager.
func (m *Manager) Uninstall() error {
	if err := m.requireRoot("uninstall", nil); err != nil {
		return err
	}
	if !m.systemdBooted {
		c, err := m.newController(m.config(nil))
		if err != nil {
			return err
		}
		if err := c.Uninstall(); err != nil {
			return fmt.Errorf("uninstall service: %w", err)
		}
		return nil
	}

	path := filepath.Join(m.unitDir, systemd.UnitName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		for _, dir := range m.vendorUnitDirs {
			vendor := filepath.Join(dir, systemd.UnitName)
			if _, err := os.Stat(vendor); err == nil {
				return fmt.Errorf("uninstall service: %s belongs to the haroute package; remove the package instead (apt remove haroute, or dnf remove haroute)", vendor)
			}
		}
		return fmt.Errorf("uninstall service: %w (no %s)", ErrNotInstalled, path)
	}
	ctx := context.Background()
	if err := m.run(ctx, "systemctl", "disable", "--now", systemd.UnitName); err != nil {
		return fmt.Errorf("uninstall service: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("uninstall service: %w", err)
	}
	if err := m.run(ctx, "systemctl", "daemon-reload"); err != nil {
		return fmt.Errorf("uninstall service: %w", err)
	}
	m.log.Info("removed unit", "path", path)
	return nil
}

// Start starts the installed service.
func (m *Manager) Start() error {
	return m.control("start", controller.Start)
}

// Stop stops the service.
func (m *Manager) Stop() error {
	return m.control("stop", controller.Stop)
}

func (m *Manager) control(action string, f func(controller) error) error {
	if err := m.requireRoot(action, nil); err != nil {
		return err
	}
	c, err := m.newController(m.config(nil))
	if err != nil {
		return err
	}
	if err := f(c); err != nil {
		return fmt.Errorf("%s service: %w", action, err)
	}
	return nil
}

// Status reports whether the service is installed and running. It needs no
// privileges.
func (m *Manager) Status() (State, error) {
	c, err := m.newController(m.config(nil))
	if err != nil {
		return "", err
	}
	if !m.systemdBooted && c.Platform() == "unix-systemv" {
		// `service haroute status` exits 1 without a word when there is
		// no such script, which is all kardianos passes on.
		if _, err := os.Lstat(m.initScript); errors.Is(err, fs.ErrNotExist) {
			return StateNotInstalled, nil
		}
	}
	st, err := c.Status()
	switch {
	case errors.Is(err, kservice.ErrNotInstalled):
		return StateNotInstalled, nil
	case err != nil && !m.systemdBooted:
		return "", fmt.Errorf("service status: systemd is not running here (no /run/systemd/system); the %s service manager answered: %w", c.Platform(), err)
	case err != nil:
		return "", fmt.Errorf("service status: %w", err)
	case st == kservice.StatusRunning:
		return StateRunning, nil
	case st == kservice.StatusStopped:
		return StateStopped, nil
	default:
		return "", errors.New("service status: unknown")
	}
}

// config describes the service to kardianos. On systemd only Name matters
// (start/stop/status by unit name); elsewhere it is what gets installed.
// Other init systems run the service as root: they have no equivalent of
// AmbientCapabilities= to bind :80 and :443 otherwise.
func (m *Manager) config(args []string) *kservice.Config {
	return &kservice.Config{
		Name:        Name,
		DisplayName: "haroute",
		Description: "declarative, file-driven HAProxy router",
		Executable:  m.exe,
		Arguments:   args,
		Option:      kservice.KeyValue{"Restart": "on-failure", "LimitNOFILE": 1048576},
	}
}

// requireRoot fails with a hint to rerun under sudo. On platforms without
// user IDs (euid -1) the service manager itself reports missing rights.
func (m *Manager) requireRoot(action string, flags []string) error {
	if uid := m.euid(); uid == 0 || uid == -1 {
		return nil
	}
	hint := append([]string{"sudo", "haroute", "service", action}, flags...)
	return fmt.Errorf("service %s needs root (try: %s)", action, shellJoin(hint))
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellJoin quotes words for a POSIX shell, so the hint can be pasted.
func shellJoin(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		if shellSafe.MatchString(w) {
			quoted[i] = w
			continue
		}
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
