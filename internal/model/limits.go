package model

// Input limits. The config directory is written by other programs (git-sync,
// kubelet, operators, people), so haroute bounds what one snapshot may cost:
// a runaway generator or a hostile file gets a clear error naming the file,
// never an out-of-memory kill of the router that is serving traffic.
const (
	// MaxFileSize is the largest input file accepted (8 MiB).
	MaxFileSize = 8 << 20
	// MaxTotalSize bounds the sum of all files in one snapshot (256 MiB).
	// The snapshot reader enforces it, as it is the one reading the files.
	MaxTotalSize = 256 << 20
	// MaxAliasExpansion bounds how many nodes YAML aliases may add to one
	// document when expanded. Hand-written manifests use a few aliases;
	// "billion laughs" style documents need millions.
	MaxAliasExpansion = 100_000
	// MaxDepth bounds the nesting of collections in one document. Real
	// manifests nest about ten levels (managedFields included).
	MaxDepth = 100
)

// Limits are the bounds one Loader applies; DefaultLimits returns the
// documented defaults. Tests lower them to exercise the errors cheaply.
type Limits struct {
	MaxFileSize       int
	MaxAliasExpansion int
	MaxDepth          int
}

// DefaultLimits returns MaxFileSize, MaxAliasExpansion and MaxDepth.
func DefaultLimits() Limits {
	return Limits{
		MaxFileSize:       MaxFileSize,
		MaxAliasExpansion: MaxAliasExpansion,
		MaxDepth:          MaxDepth,
	}
}

// MaxMapKeyLength bounds the key a route puts in HAProxy's map files:
// its host and its path, and "?" or "/" (see internal/render). HAProxy 2.6 reads map files a line at a time into a
// buffer of tune.bufsize (16 KiB by default) and cuts a longer line in
// two, the tail becoming an entry of its own: a route of one tenant could
// then claim a host and path of another. The limit is well inside that
// buffer, and validation refuses routes whose host and path exceed it.
// It is 2 KiB, not 4, because HAProxy indexes map_beg keys in a prefix tree that stops telling apart keys
// which share more than 2048 bytes: measured on 2.6.12, "/a…a?" and
// "/a…a/" (a route's exact path and what lies below it, or two routes'
// paths) of 2049 bytes match nothing, of 2048 bytes each match what they
// should.
const MaxMapKeyLength = 2048

// FDBudget is what HAProxy 2.6 reserves file descriptors for besides
// connections. HAProxy sums them into global.maxsock (src/haproxy.c,
// compute_ideal_maxsock, and the parsers that add to it) and refuses to
// start when maxsock exceeds the hard RLIMIT_NOFILE ("Cannot raise FD
// limit to N, limit is M"):
//
//	maxsock = 10                      reserved at boot
//	        + one per listener        bind lines, the stats socket, the master CLI socket
//	        + one per checked server  servers of the config with `check`
//	        + one per `port` keyword  reencrypt servers name their check port
//	        + 100 + 10                maxconn of the stats socket and of the master CLI
//	        + 1                       the master-worker's socket pair (-W)
//	        + 3 per thread            a poller and a wake-up pipe each
//	        + 2 × maxconn             client and server side of each connection
//
// plus 16 spare for the versions after 2.6 (haproxyNewerSlack).
// (no pipes: haroute does not splice; no async SSL engines).
type FDBudget struct {
	Listeners      int
	CheckedServers int
	// PortServers are the servers of the config with a `port` keyword
	// (every reencrypt server, checked or not): HAProxy reserves a
	// descriptor for each when it parses one at start (srv_parse_check_port
	// in 2.6 and 3.x), which made it refuse to start past about 270 of
	// them where the limit bound (T52).
	PortServers int
	Threads     int
}

// StatsSocketMaxConn is the maxconn of the admin socket (`stats maxconn`
// in haproxy.cfg): render writes it and the descriptor budget reserves
// it. The budget reserved HAProxy's default of 10 while render wrote 100,
// so HAProxy refused to start where the fd limit bound (T50).
const StatsSocketMaxConn = 100

// The constant parts of HAProxy 2.6's maxsock.
const (
	haproxyBootFDs    = 10 // global.maxsock = 10 before parsing
	haproxyCLIMaxConn = 10 // the master CLI's default maxconn
	haproxyWorkerPair = 1  // master-worker mode's socket pair
	haproxyFDsPerConn = 2
	haproxyThreadFDs  = 3
	// haproxyNewerSlack keeps the budget valid beyond 2.6: HAProxy 3.0.11
	// reserves 10 or 11 descriptors more than this sum for the same
	// config (measured under prlimit, TestFDBudgetMatchesHAProxy), so the
	// budget keeps 16 spare rather than tracking each version's sum.
	haproxyNewerSlack = 16
)

// Fixed is maxsock without connections.
func (b FDBudget) Fixed() int64 {
	return haproxyBootFDs + int64(b.Listeners) + int64(b.CheckedServers) + int64(b.PortServers) +
		StatsSocketMaxConn + haproxyCLIMaxConn + haproxyWorkerPair + haproxyThreadFDs*int64(b.Threads) + haproxyNewerSlack
}

// MaxConn is the largest maxconn HAProxy starts with under the hard limit;
// below 1 when even the fixed part does not fit.
func (b FDBudget) MaxConn(hardLimit uint64) int64 {
	return (int64(hardLimit) - b.Fixed()) / haproxyFDsPerConn
}

// NeededLimit is the hard limit HAProxy needs for maxconn.
func (b FDBudget) NeededLimit(maxConn int) int64 {
	return b.Fixed() + haproxyFDsPerConn*int64(maxConn)
}

// FDBudgetOf counts d's listeners and checked servers as render writes
// them; threads is HAProxy's thread count (Router.ThreadCount, or the CPUs
// it may run on when that is 0, which only the caller can know).
//
// Listeners: the public, TLS and stats frontends bind each listen address;
// the TLS hop binds a unix socket, two during a handover (counted always,
// so a handover does not move maxconn); the stats socket and the master
// CLI socket.
func FDBudgetOf(d *Desired, threads int) FDBudget {
	return FDBudget{
		Listeners:      3*len(d.Router.ListenAddresses()) + 2 + 2,
		CheckedServers: CheckedServers(d),
		PortServers:    portServers(d),
		Threads:        threads,
	}
}

// portServers counts the servers rendered with a `port` keyword: those of
// reencrypt routes (render/servers.go names the check port).
func portServers(d *Desired) int {
	n := 0
	for _, r := range d.Routes {
		if r.Termination == TerminationReencrypt {
			for _, svc := range r.Services {
				n += len(svc.Servers)
			}
		}
	}
	return n
}

// CheckedServers counts the servers rendered with `check`: those of routes
// with two or more active endpoints (AdmittedRoute.HealthChecked).
func CheckedServers(d *Desired) int {
	n := 0
	for _, r := range d.Routes {
		if r.HealthChecked() {
			for _, svc := range r.Services {
				n += len(svc.Servers)
			}
		}
	}
	return n
}
