// Package cli is haroute's command line: it parses flags, wires the
// packages together and turns outcomes into exit codes. It is the only
// package that reads flags or turns signals into events.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
)

// Version is set at build time with -ldflags.
var Version = "dev"

// Exit codes.
const (
	ExitOK      = 0
	ExitInvalid = 1 // check: the directory is invalid; other commands: failure
	ExitUsage   = 2
	// service status, as LSB init scripts and systemctl say it: a script
	// that tests the exit code must not read "not installed" as running.
	ExitServiceStopped      = 3
	ExitServiceNotInstalled = 4
)

const usage = `haroute — a declarative, file-driven HAProxy router

Usage:
  haroute run     --config-dir DIR [--run-dir DIR] [--state-dir DIR] [--haproxy PATH]
                  [--metrics-address ADDR] [--watch-mode auto|atomic|link|plain]
                  [--log-format text|json] [--log-level debug|info|warn|error]
                  [--handover-grace D] [--resync D] [--debounce D]
                  [--deletion-quiet D] [--deletion-share F]
  haroute check   DIR [--strict] [--haproxy PATH] [--limit-nofile N]
                                        exit 0 valid, 1 invalid; errors as path:line:col: message
  haroute render  DIR --out OUTDIR [--allow-errors] [--run-dir DIR] [--limit-nofile N] [--haproxy PATH]
                                        write haproxy.cfg, maps, crt-list and certificates;
                                        exit 1 without writing when DIR has errors (as check finds them)
  haroute plan    --from DIR --to DIR   which changes apply at runtime and which reload, and why
  haroute status  [--address ADDR]      ask the running daemon for its state
  haroute service install|uninstall|start|stop|status [run flags]
                                        status exits 0 running, 3 stopped, 4 not installed
  haroute version

haroute CMD -h explains each flag.
`

type command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Run executes the command in args and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	commands := map[string]command{
		"run":     runCmd,
		"check":   checkCmd,
		"render":  renderCmd,
		"plan":    planCmd,
		"status":  statusCmd,
		"service": serviceCmd,
		"version": versionCmd,
		"reap":    reapCmd,
	}
	name := args[0]
	switch name {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	case "-v", "--version":
		name = "version"
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "haroute: unknown command %q\n\n%s", name, usage)
		return ExitUsage
	}
	return cmd(ctx, args[1:], stdout, stderr)
}

func versionCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: haroute version")
		return ExitUsage
	}
	v := Version
	if v == "dev" {
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
	}
	fmt.Fprintf(stdout, "haroute %s\n", v)
	return ExitOK
}

// newFlags returns a FlagSet that reports errors to stderr without exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("haroute "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("check DIR --strict" and "check --strict DIR" both work).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func parseErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// newLogger builds the injected logger from --log-format and --log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
}
