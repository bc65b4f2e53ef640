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
