package haproxy

import (
	"context"
	"fmt"
)

// Helpers only tests use: the daemon reads many backends at once
// (ServersStates, BackendsConns).

// ServersState reads back the servers of one backend.
func (r *Runtime) ServersState(ctx context.Context, backend string) ([]ServerState, error) {
	resp, err := r.one(ctx, "show servers state "+backend)
	if err != nil {
		return nil, err
	}
	states, err := parseServersState(resp.Output)
	if err != nil {
		return nil, fmt.Errorf("show servers state %s: %w", backend, err)
	}
	return states, nil
}

// ServerConns is what BackendsConns counts for one server: its sessions
// and its server connections in use.
func (r *Runtime) ServerConns(ctx context.Context, backend, server string) (int, error) {
	conns, err := r.BackendsConns(ctx, []string{backend})
	if err != nil {
		return 0, err
	}
	u, ok := conns[backend][server]
	if !ok {
		return 0, fmt.Errorf("server %s/%s: %w", backend, server, ErrNotFound)
	}
	return u.Conns, nil
}
