package testutil

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Ready says when a process that Process.Start started (HAProxy, say)
// serves: every field set must hold, in this order.
type Ready struct {
	// AdminSocket is dialled until it accepts.
	AdminSocket string
	// URL is polled until it answers 200 (the stats port's /healthz).
	URL string
	// Settle is waited once the rest holds, for what nothing announces:
	// the first health checks, so that every checked server is up.
	Settle time.Duration
}

// StartHAProxy runs bin with args (ending in "-f", the config) and returns
// once ready holds, failing the test if HAProxy exits first or is not ready
// within 10 s. HAProxy is stopped, and its output logged if the test
// failed, when the test ends.
func StartHAProxy(t testing.TB, bin string, args []string, ready Ready) *exec.Cmd {
	t.Helper()
	return Process{Name: "haproxy", Ready: ready, Within: 10 * time.Second, Grace: 5 * time.Second}.Start(t, bin, args)
}

// Process says how Start runs a long-running command for a test.
type Process struct {
	Name   string // in messages
	Ready  Ready
	Within time.Duration // for Ready to hold
	// Grace is how long the command has to exit after SIGTERM when the
	// test ends, before SIGKILL.
	Grace time.Duration
	// Output, when set, receives the command's output as well.
	Output io.Writer
}

// Start runs bin with args and returns once p.Ready holds, failing the
// test if the command exits first or is not ready within p.Within. The
// command is stopped, and its output logged if the test failed, when the
// test ends.
func (p Process) Start(t testing.TB, bin string, args []string) *exec.Cmd {
	t.Helper()
	out := &SyncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if p.Output != nil {
		w := io.MultiWriter(out, p.Output)
		cmd.Stdout, cmd.Stderr = w, w
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// done is closed when the command has exited; waitErr is then its
	// status.
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(p.Grace):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", p.Name, out)
		}
	})
	deadline := time.Now().Add(p.Within)
	wait := func(what string, ok func() error) {
		t.Helper()
		for {
			select {
			case <-done:
				t.Fatalf("%s exited: %v\n%s", p.Name, waitErr, out)
			default:
			}
			err := ok()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not ready after %v: %s: %v\n%s", p.Name, p.Within, what, err, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if p.Ready.AdminSocket != "" {
		wait("admin socket", func() error {
			c, err := net.Dial("unix", p.Ready.AdminSocket)
			if err == nil {
				c.Close()
			}
			return err
		})
	}
	if p.Ready.URL != "" {
		wait(p.Ready.URL, func() error {
			resp, err := http.Get(p.Ready.URL)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
	}
	time.Sleep(p.Ready.Settle)
	return cmd
}

// SyncBuffer is output written from other goroutines (HAProxy's, copied
// by exec or by a log reader) while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// AdminCommand sends one command to the HAProxy admin socket
// <runDir>/admin.sock, behind haroute's back as an operator would, and
// returns the answer.
func AdminCommand(runDir, cmd string) (string, error) {
	conn, err := net.DialTimeout("unix", filepath.Join(runDir, "admin.sock"), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "%s\n", cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// MustAdminCommand is AdminCommand failing the test on an error, for a
// test that drives HAProxy step by step rather than polling it.
func MustAdminCommand(t testing.TB, runDir, cmd string) string {
	t.Helper()
	out, err := AdminCommand(runDir, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return out
}
