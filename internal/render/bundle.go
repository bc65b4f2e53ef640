package render

import (
	"bytes"
	"io"
	"io/fs"
	"slices"

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
	// Sockets names them; the zero value is the default names and no
	// backup hop.
	Sockets Sockets
	// DefaultCertificate is PEM (chain + key) served when no route matches
	// the SNI. Never empty: the daemon generates one when none is set.
	DefaultCertificate []byte
	// DefaultDestinationCA is the PEM bundle reencrypt routes without their
	// own destinationCACertificate verify against; empty = system store.
	DefaultDestinationCA []byte
	// StatsCredentials guard the stats port's /stats page; without them
	// the page is not served. They end up in haproxy.cfg, hence its 0600.
	StatsCredentials model.StatsCredentials
	// Spares are the pool's spare backends (pool.go), each an empty route
	// with its Slot set; routes bound to a spare carry the same Slot.
	// The list changes only with a reload.
	Spares []model.AdmittedRoute
	// ClientCA is the PEM bundle client certificates are verified
	// against; needed when the settings ask for client certificates.
	ClientCA []byte
	// ErrorPages are custom error pages by status code (404, 503), each
	// a complete HTTP response; HAProxy's own serve the others.
	ErrorPages map[int][]byte
	// Cache, when set, lets Render reuse the output of routes that did
	// not change since an earlier call with the same Cache; the bundle is
	// byte-identical either way. nil renders everything.
	Cache *Cache
}

// File is one file of a bundle. Name is relative to Input.Dir. Its
// content is Data or, for haproxy.cfg, the concatenation of Parts: the
// global part, then the spares and runs of route backends, shared with
// the render cache. At 10k routes the config is megabytes; an endpoint
// change then compares and writes it part by part instead of first
// copying it into one new buffer. Read the content through Bytes, Equal and WriteTo,
// which treat both forms alike.
type File struct {
	Name  string
	Data  []byte
	Parts [][]byte
	Mode  fs.FileMode // 0600 for anything holding a private key, else 0644
}

// Bytes returns the content in one slice; it joins Parts, so it costs a
// copy of the file for haproxy.cfg.
func (f *File) Bytes() []byte {
	if f.Parts == nil {
		return f.Data
	}
	return bytes.Join(f.Parts, nil)
}

// Size is the length of the content.
func (f *File) Size() int {
	n := len(f.Data)
	for _, p := range f.Parts {
		n += len(p)
	}
	return n
}

// Equal reports whether f and g have the same content. Parts shared
// between two renders are the same memory, which bytes.Equal recognises
// without reading it; parts that split the same content differently are
// compared piece by piece, never joined (a join is a copy of haproxy.cfg,
// megabytes at 10k routes, at every change).
func (f *File) Equal(g *File) bool {
	if f.Size() != g.Size() {
		return false
	}
	fs, gs := f.pieces(), g.pieces()
	var x, y []byte
	for {
		for len(x) == 0 && len(fs) > 0 {
			x, fs = fs[0], fs[1:]
		}
		for len(y) == 0 && len(gs) > 0 {
			y, gs = gs[0], gs[1:]
		}
		if len(x) == 0 || len(y) == 0 {
			return len(x) == len(y)
		}
		n := min(len(x), len(y))
		if !bytes.Equal(x[:n], y[:n]) {
			return false
		}
		x, y = x[n:], y[n:]
	}
}

// pieces is the content as a list of slices, without copying.
func (f *File) pieces() [][]byte {
	if f.Parts == nil {
		return [][]byte{f.Data}
	}
	return f.Parts
}

// WriteTo writes the content to w.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	if f.Parts == nil {
		n, err := w.Write(f.Data)
		return int64(n), err
	}
	var total int64
	for _, p := range f.Parts {
		n, err := w.Write(p)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// MapEntry is one line of an HAProxy map file.
type MapEntry struct {
	Key   string
	Value string
}

// Map is one map file with its entries in file order. Name is the file's
// name inside the bundle (e.g. "maps/http.map"); the runtime API addresses
// it by its absolute path, Input.Dir + "/" + Name. Render gives each key
// once, in the order of compareKeys (sortEntries), which Has relies on.
type Map struct {
	Name    string
	Entries []MapEntry
}

// Has reports whether m has an entry for key: a binary search, where a
// set of the keys would hash all 10k at every route change.
func (m *Map) Has(key string) bool {
	_, found := m.find(key)
	return found
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
	// ACLs are the pool spares' allowlists, whose patterns the runtime
	// API replaces (haproxy.cfg holds them; the skeleton does not).
	ACLs []ACL
}

// ACL is an inline ACL the runtime API names by its id ("#16777217").
type ACL struct {
	ID       string
	Patterns []string
}

// Open reports whether the ACL lets every client in: a free spare's.
func (a ACL) Open() bool { return slices.Equal(a.Patterns, allowAll) }

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
