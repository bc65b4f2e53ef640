package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/haroute/haroute/internal/haproxy"
)

// A stopping haroute leaves its HAProxy serving for the next haroute
// (daemon.Options.Handover), so a restart closes no port. `haroute reap`,
// which it starts detached, stops that HAProxy gracefully if no haroute
// has taken the run dir once the grace has passed: a plain stop still
// stops everything. It is not in the usage: only haroute starts it.

// handover returns the daemon's Handover for run: it starts the reaper.
func handover(runDir, configPath string, grace time.Duration) func(pid int) error {
	if grace <= 0 {
		return nil // stop HAProxy with haroute
	}
	return func(pid int) error {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(self, "reap", "--pid", strconv.Itoa(pid), "--run-dir", runDir,
			"--config", configPath, "--after", grace.String())
		// Its own session: the stop that ends haroute must not end it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start haroute reap: %w", err)
		}
		return cmd.Process.Release()
	}
}

func reapCmd(_ context.Context, args []string, _, stderr io.Writer) int {
	fs := newFlags("reap", stderr)
	pid := fs.Int("pid", 0, "HAProxy master to stop if no haroute takes it over")
	runDir := fs.String("run-dir", "", "its run dir")
	config := fs.String("config", "", "its haproxy.cfg")
	after := fs.Duration("after", 10*time.Second, "how long the next haroute has to take over")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if *pid <= 1 || *runDir == "" {
		fmt.Fprintln(stderr, "usage: haroute reap --pid PID --run-dir DIR [--config FILE] [--after D]")
		return ExitUsage
	}
	log, _ := newLogger(stderr, "text", "info")
	time.Sleep(*after)
	// A haroute holding the run dir has taken HAProxy over (or will). So
	// may another reaper, of a haroute that took this HAProxy over and
	// stopped in turn: its lock says nothing of a haroute, so wait for it.
	lock, err := haproxy.LockRunDir(*runDir)
	for i := 0; errors.Is(err, haproxy.ErrRunDirInUse) && haproxy.ReaperHolding(*runDir) > 0 && i < 60; i++ {
		time.Sleep(time.Second)
		lock, err = haproxy.LockRunDir(*runDir)
	}
	if errors.Is(err, haproxy.ErrRunDirInUse) {
		return ExitOK
	}
	if err != nil {
		log.Error("reap: lock run dir", "err", err)
	} else {
		defer lock.Close()
	}
	if err := haproxy.StopOrphan(*pid, filepath.Clean(*runDir), *config, 10*time.Second, log); err != nil {
		log.Error("reap", "err", err)
		return ExitInvalid
	}
	return ExitOK
}
