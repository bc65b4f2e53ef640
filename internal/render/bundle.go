package render

import (
	"io/fs"

	"github.com/haroute/haroute/internal/model"
)

// Input is everything Render needs. It holds values only: Render does no I/O.
type Input struct {
	Desired *model.Desired
	// Dir is the absolute directory the bundle will be written to;
	// haproxy.cfg references maps, crt-list and certificates under it.
	Dir string
	// RunDir holds the admin socket and the internal TLS hop socket.
	RunDir string
	// DefaultCertificate is PEM (chain + key) served when no route matches
	// the SNI. Never empty: the daemon generates one when none is set.
	DefaultCertificate []byte
	// DefaultDestinationCA is the PEM bundle reencrypt routes without their
	// own destinationCACertificate verify against; empty = system store.
	DefaultDestinationCA []byte
	// Cache, when set, lets Render reuse the output of routes that did
	// not change since an earlier call with the same Cache; the bundle is
	// byte-identical either way. nil renders everything.
	Cache *Cache
}

// File is one file of a bundle. Name is relative to Input.Dir.
type File struct {
	Name string
	Data []byte
	Mode fs.FileMode // 0600 for anything holding a private key, else 0644
}

// MapEntry is one line of an HAProxy map file.
type MapEntry struct {
	Key   string
	Value string
}

// Map is one map file with its entries in file order. Name is the file's
// name inside the bundle (e.g. "maps/http.map"); the runtime API addresses
// it by its absolute path, Input.Dir + "/" + Name.
type Map struct {
	Name    string
	Entries []MapEntry
}

// Cert is a PEM file (certificate chain + key) referenced from the
// crt-list or as the default certificate. Name is the file's name inside
// the bundle; the runtime API addresses it by its absolute path.
type Cert struct {
	Name string
	PEM  []byte
}

// Bundle is a complete rendered configuration.
type Bundle struct {
	// Files is every file to write, sorted by Name: haproxy.cfg, the maps,
	// the crt-list, certificates and CA files.
	Files []File
	// Skeleton is haproxy.cfg with everything the runtime API can change
	// (server lines) left out. Two bundles with equal skeletons, equal map
	// key sets per backend and equal crt-list need no reload: the rest is
	// runtime work.
	Skeleton []byte
	Maps     []Map
	Certs    []Cert
}

// File returns the named file, or nil.
func (b *Bundle) File(name string) *File {
	for i := range b.Files {
		if b.Files[i].Name == name {
			return &b.Files[i]
		}
	}
	return nil
}

// Well-known file names inside a bundle.
const (
	ConfigFile  = "haproxy.cfg"
	CrtListFile = "crt-list"
)
