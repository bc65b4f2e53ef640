package daemon

import (
	"fmt"
	"syscall"

	"github.com/haroute/haroute/internal/model"
)

// fdsPerConn is what HAProxy reserves per connection: one for the client
// side, one for the server side.
const fdsPerConn = 2

// rlimInfinity is RLIM_INFINITY as the kernel reports it in a uint64.
const rlimInfinity = ^uint64(0)

// fdReserve covers listeners, the master CLI and runtime API sockets,
// logging and the TLS hop.
func fdReserve(hardLimit uint64) int64 { return 256 + int64(hardLimit/10) }

// serverFDBucket is what HAProxy also reserves for servers: about one
// descriptor each, for health checks (seen with 10k servers: "Cannot raise
// FD limit to 27787, limit is 20000" at maxconn 8872). The count is rounded
// up to a coarse bucket with headroom, so endpoints scaling in and out do
// not move the derived maxconn — which would turn scale events into
// reloads — except when a bucket boundary is crossed.
func serverFDBucket(servers int) int64 {
	const bucket = 4096
	return int64((servers+256)/bucket+1) * bucket
}

// fitMaxConn returns the largest maxconn HAProxy can honour under the hard
// file-descriptor limit, and whether want had to be lowered. HAProxy refuses
// to start rather than serve with fewer ("Cannot raise FD limit to 100044,
// limit is 20000"); serving with a derived limit is better at 3 a.m.
func fitMaxConn(want int, hardLimit uint64, servers int) (int, bool) {
	if hardLimit == rlimInfinity || hardLimit == 0 {
		return want, false
	}
	budget := int64(hardLimit) - fdReserve(hardLimit) - serverFDBucket(servers)
	fit := budget / fdsPerConn
	if fit < 1 {
		fit = 1
	}
	if int64(want) <= fit {
		return want, false
	}
	return int(fit), true
}

// nofileHardLimit reads RLIMIT_NOFILE's hard limit (0 when unknown).
func nofileHardLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	return lim.Max
}

// fitted returns desired with MaxConnections lowered to what the host's
// file-descriptor limit allows; desired itself is not modified. When the
// limit leaves fewer than minUsableConns, it is an error: a router that
// serves one connection at a time is down in all but name.
func (d *Daemon) fitted(desired *model.Desired) (*model.Desired, error) {
	servers := 0
	for _, r := range desired.Routes {
		for _, svc := range r.Services {
			servers += len(svc.Servers)
		}
	}
	fit, lowered := fitMaxConn(desired.Router.MaxConnections, d.hardNOFILE, servers)
	if !lowered {
		return desired, nil
	}
	if fit < minUsableConns {
		need := fdReserve(d.hardNOFILE) + serverFDBucket(servers) + int64(fdsPerConn*min(desired.Router.MaxConnections, 10*minUsableConns))
		return nil, fmt.Errorf("the file-descriptor hard limit %d leaves room for only %d connections with %d servers "+
			"(HAProxy reserves about one descriptor per server, two per connection, %d for itself): "+
			"raise LimitNOFILE (at least %d) or lower spec.tuningOptions.maxConnections; the last good configuration keeps serving",
			d.hardNOFILE, fit, servers, fdReserve(d.hardNOFILE), need)
	}
	if !d.warnedMaxConn || d.lastMaxConnFit != fit {
		d.log.Warn("maxConnections lowered to fit the file-descriptor limit; raise LimitNOFILE to serve more",
			"configured", desired.Router.MaxConnections, "used", fit, "nofile_hard_limit", d.hardNOFILE)
		d.warnedMaxConn, d.lastMaxConnFit = true, fit
	}
	cp := *desired
	cp.Router.MaxConnections = fit
	return &cp, nil
}

// minUsableConns is the fewest connections a router may be left with.
const minUsableConns = 100
