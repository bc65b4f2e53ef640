package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// CheckError is a configuration HAProxy refused. Lines holds HAProxy's own
// messages, the [ALERT] lines when there are any, without the process-id
// noise, so an operator can act on them.
type CheckError struct {
	ConfigPath string
	Lines      []string
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("haproxy rejected %s: %s", e.ConfigPath, strings.Join(e.Lines, "; "))
}

// Check runs `haproxy -c -f cfgPath` and returns nil when HAProxy accepts
// the file, a *CheckError carrying its messages when it does not, or
// another error when there is no verdict: the binary cannot run, or the
// check was killed.
func Check(ctx context.Context, binary, cfgPath string) error {
	bin, err := resolveBinary(binary)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "-c", "-f", cfgPath)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("check %s: %w", cfgPath, ctxErr)
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return fmt.Errorf("run %s -c: %w", bin, err)
	}
	if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		// Killed (the OOM killer, a timeout elsewhere): no verdict on
		// the file, which the same check may pass when run again. A
		// crash (SIGSEGV, SIGABRT) is one: the same file crashes it
		// again, and the search for the routes to blame must run.
		return fmt.Errorf("%s -c on %s was killed by %v", bin, cfgPath, ws.Signal())
	}
	return &CheckError{ConfigPath: cfgPath, Lines: alertLines(out)}
}

// Binary returns the haproxy executable binary names ("" = haproxy from
// PATH), or why there is none.
func Binary(binary string) (string, error) { return resolveBinary(binary) }

// resolveBinary finds the haproxy executable; a missing one is an error
// naming the path tried, the first thing an operator needs to know.
func resolveBinary(binary string) (string, error) {
	if binary == "" {
		binary = "haproxy"
	}
	if strings.ContainsRune(binary, os.PathSeparator) {
		fi, err := os.Stat(binary)
		if err != nil {
			return "", fmt.Errorf("haproxy binary %s: %w", binary, err)
		}
		// Else every `haproxy -c` failed to run, and the refusal was
		// pinned on the RouterConfig while nothing started.
		if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("haproxy binary %s is not an executable file (mode %s)", binary, fi.Mode())
		}
		return binary, nil
	}
	path, err := exec.LookPath(binary)
	if err == nil {
		return path, nil
	}
	if binary == "haproxy" {
		// Debian and RHEL install it in /usr/sbin, which a user's PATH
		// often lacks (make run as a user found no haproxy).
		for _, dir := range sbinDirs {
			p := filepath.Join(dir, binary)
			if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return "", fmt.Errorf("haproxy binary %q not found in PATH nor in %s: %w", binary, strings.Join(sbinDirs, ", "), err)
	}
	return "", fmt.Errorf("haproxy binary %q not found in PATH: %w", binary, err)
}

// sbinDirs are where packages install haproxy, tried after PATH.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin"}

// logPrefix matches the "[ALERT]    (1234) : " HAProxy puts before each
// message it prints on stderr.
var logPrefix = regexp.MustCompile(`^\[([A-Z]+)\]\s+\(\d+\)\s+:\s+`)

// cleanLine turns "[ALERT]    (1234) : config : parsing …" into
// "[ALERT] config : parsing …": the pid changes on every run and helps no
// one reading a check error.
func cleanLine(line string) string {
	line = strings.TrimSpace(line)
	if m := logPrefix.FindStringSubmatch(line); m != nil {
		return "[" + m[1] + "] " + line[len(m[0]):]
	}
	return line
}

// alertLines picks the [ALERT] messages of HAProxy's output, or every
// non-empty line when there is none (a crash, a usage message).
//
// 3.0 continues a message on indented lines: "[ALERT] … 'bind …' in
// section 'frontend' : " and then "  'crt-list' : error processing line 2
// … inconsistencies between private key and certificate loaded '…'."
// (2.6 prints it on one line). A continuation is joined to its message,
// so the message names what HAProxy refused on either version.
func alertLines(out []byte) []string {
	var alerts, all []string
	lastWasAlert := false
	for _, raw := range bytes.Split(out, []byte("\n")) {
		continued := len(raw) > 0 && (raw[0] == ' ' || raw[0] == '\t')
		line := cleanLine(string(raw))
		if line == "" {
			continue
		}
		if continued && len(all) > 0 {
			all[len(all)-1] = joinContinuation(all[len(all)-1], line)
			if lastWasAlert {
				alerts[len(alerts)-1] = all[len(all)-1]
			}
			continue
		}
		all = append(all, line)
		lastWasAlert = strings.HasPrefix(line, "[ALERT]")
		if lastWasAlert {
			alerts = append(alerts, line)
		}
	}
	if len(alerts) > 0 {
		return alerts
	}
	if len(all) == 0 {
		return []string{"no output"}
	}
	return all
}

// joinContinuation appends a continuation line to its message: "… : " +
// "'crt-list' : …" reads "… : 'crt-list' : …".
func joinContinuation(msg, cont string) string {
	return strings.TrimRight(msg, " ") + " " + cont
}
