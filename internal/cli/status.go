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
	if fs.NArg() != 0 {
		// `haroute status 127.0.0.1:9191` asked the default address.
		fmt.Fprintln(stderr, "usage: haroute status [--address ADDR]")
		return ExitUsage
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

const serviceUsage = `usage: haroute service install|uninstall|start|stop|status [run flags]

  install    write haroute's systemd unit (or another init system's service)
             running "haroute run" with the run flags given, and enable it;
             --config-dir is required (root)
  uninstall  disable and remove what install wrote (root)
  start      start the installed service (root)
  stop       stop it (root)
  status     say whether it is installed and running

The .deb and .rpm install the unit themselves: use systemctl there.
`

func serviceCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, serviceUsage)
		return ExitUsage
	}
	action, rest := args[0], args[1:]
	switch action {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, serviceUsage)
		return ExitOK
	}
	if action != "install" && len(rest) == 1 && isHelpFlag(rest[0]) {
		fmt.Fprint(stdout, serviceUsage)
		return ExitOK
	}
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
			switch st {
			case service.StateStopped:
				return ExitServiceStopped
			case service.StateNotInstalled:
				return ExitServiceNotInstalled
			}
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

func isHelpFlag(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}
