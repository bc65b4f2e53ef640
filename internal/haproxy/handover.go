package haproxy

import (
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A graceful restart of haroute (a package upgrade, `systemctl restart`)
// must not close the ports: the stopping haroute leaves its HAProxy
// running, and the next haroute takes it over as it does one left by a
// killed haroute (-x, -sf; owner.go). If no haroute comes, the HAProxy
// must not run on unsupervised: StopOrphan, run from a small process the
// stopping haroute leaves behind, stops it gracefully once the grace has
// passed and nobody has taken the run dir.

// StopOrphan soft-stops the HAProxy master pid, after checking that it is
// the HAProxy of runDir (or of configPath), escalating to SIGTERM and
// SIGKILL after softTTL as a takeover does. A pid that is gone is not an
// error.
func StopOrphan(pid int, runDir, configPath string, softTTL time.Duration, log *slog.Logger) error {
	s := &Supervisor{opts: Options{RunDir: runDir, ConfigPath: configPath}, log: log}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil // gone
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !s.isOurs(cmdline) {
		unix.Close(fd)
		if err != nil {
			return nil // gone meanwhile
		}
		return fmt.Errorf("pid %d is not the haproxy of %s; leaving it alone", pid, runDir)
	}
	// Only the run dir's current master is left to stop. One a later
	// haroute took over (and stopped in turn) was soft-stopped by it and
	// drains its connections on its own: stopped here, they were cut.
	if cur := s.pidFileMaster(); cur != 0 && cur != pid {
		// Soft-stopped once more, in case the takeover's signal came while
		// it re-executed and was lost (harmless to one that stops): it
		// must not go on accepting beside the current master.
		_ = unix.PidfdSendSignal(fd, syscall.SIGUSR1, nil, 0)
		unix.Close(fd)
		log.Info("haproxy was taken over since; it finishes its connections on its own", "pid", pid, "current", cur)
		return nil
	}
	log.Info("no haroute took over haproxy; stopping it", "pid", pid)
	if err := unix.PidfdSendSignal(fd, syscall.SIGUSR1, nil, 0); err != nil {
		unix.Close(fd)
		return nil
	}
	retire(&previous{pid: pid, pidfd: fd}, softTTL, log)
	return nil
}
