// Package paths names the directories haroute uses by default: the ones
// the packaged systemd unit makes readable or writable
// (ConfigurationDirectory=, RuntimeDirectory=, StateDirectory=). A leaf
// package, so the command line, the service installer and the daemon agree
// without importing one another.
package paths

const (
	// ConfigDir is the config tree the packaged unit watches.
	ConfigDir = "/etc/haroute/config"
	// RunDir holds HAProxy's master and admin sockets (mode 0700).
	RunDir = "/run/haroute"
	// StateDir holds the rendered bundle, the generated default
	// certificate and the saved last good state; also the haroute
	// account's home.
	StateDir = "/var/lib/haroute"
)
