package cli

import (
	"context"

	"fmt"
	"io"
	"time"

	"github.com/haroute/haroute/internal/service"
	"github.com/haroute/haroute/internal/status"
)

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("status", stderr)
	addr := fs.String("address", defaultMetricsAddress, "the daemon's --metrics-address")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := status.Fetch(ctx, *addr)
	if err != nil {
		fmt.Fprintf(stderr, "haroute status: %v\n", err)
		return ExitInvalid
	}
	st.Format(stdout)
	return ExitOK
}

func serviceCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: haroute service install|uninstall|start|stop|status [run flags]")
		return ExitUsage
	}
	action, rest := args[0], args[1:]
	if action == "install" {
		// Validate the run flags here so a typo fails now, not at boot.
		fs := newFlags("service install", stderr)
		var f runFlags
		f.register(fs)
		if err := fs.Parse(rest); err != nil {
			return parseErr(err)
		}
		if f.configDir == "" {
			fmt.Fprintln(stderr, "haroute service install: --config-dir is required")
			return ExitUsage
		}
		if fs.NArg() != 0 {
			fmt.Fprintf(stderr, "haroute service install: unexpected arguments %q (run flags only)\n", fs.Args())
			return ExitUsage
		}
	} else if len(rest) > 0 {
		fmt.Fprintf(stderr, "haroute service %s takes no arguments\n", action)
		return ExitUsage
	}
	m, err := service.New(service.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "haroute service: %v\n", err)
		return ExitInvalid
	}
	switch action {
	case "install":
		err = m.Install(rest)
	case "uninstall":
		err = m.Uninstall()
	case "start":
		err = m.Start()
	case "stop":
		err = m.Stop()
	case "status":
		var st service.State
		st, err = m.Status()
		if err == nil {
			fmt.Fprintf(stdout, "haroute service: %v\n", st)
		}
	default:
		fmt.Fprintf(stderr, "haroute service: unknown action %q\n", action)
		return ExitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "haroute service %s: %v\n", action, err)
		return ExitInvalid
	}
	if action != "status" {
		fmt.Fprintf(stdout, "haroute service %s: done\n", action)
	}
	return ExitOK
}
