package haproxy

import (
	"context"
	"crypto/sha1"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	cnerrors "github.com/haproxytech/client-native/v5/errors"
	"github.com/haproxytech/client-native/v5/models"
	cnruntime "github.com/haproxytech/client-native/v5/runtime"
	"github.com/haproxytech/client-native/v5/runtime/options"
)

// Inspector reads HAProxy's own view of itself: process figures for
// status and metrics (and to confirm that a maxconn derived from the fd
// limit took effect), and the certificates it holds (to confirm a
// `set ssl cert` + `commit ssl cert`). NativeInspector implements it.
type Inspector interface {
	Info(ctx context.Context) (Info, error)
	Cert(ctx context.Context, path string) (CertInfo, error)
	CertPaths(ctx context.Context) ([]string, error)
}

// Info is what `show info` reports about the worker answering on the
// admin socket.
type Info struct {
	Version string // "2.6.12-1+deb12u4"
	PID     int
	Uptime  time.Duration
	Threads int // nbthread
	// Processes is Nbproc, always 1 since HAProxy 2.5 dropped
	// multi-process mode; how many workers (old ones included) are alive
	// is the master's `show proc` (Master.ShowProc).
	Processes int

	MaxConn     int // maxconn in effect (global maxconn, or derived by HAProxy)
	HardMaxConn int
	// UlimitN is the number of file descriptors HAProxy needs for
	// MaxConn and made sure it has: it raises its soft limit to that and
	// never lowers it, so the process limit may be higher (2.6.12:
	// "Ulimit-n: 683" with maxconn 321 under a soft limit of 20000).
	UlimitN int
	MaxSock int

	CurrConns    int // current client connections (the CLI's own is not counted)
	CumConns     int64
	CumReq       int64
	CurrSSLConns int
}

// CertInfo is what `show ssl cert <path>` reports about a loaded
// certificate.
type CertInfo struct {
	Path      string
	Used      bool     // referenced by a bind line or crt-list ("Status: Used")
	Serial    *big.Int // from HAProxy's hex
	NotBefore time.Time
	NotAfter  time.Time
	Subject   string // OpenSSL one-line form: "/CN=example.com"
	Issuer    string
	SANs      string // "DNS:a.example.com, DNS:b.example.com"
	// SHA1 is the fingerprint of the leaf certificate's DER, upper-case
	// hex as HAProxy prints it.
	SHA1 string
}

// Is reports whether HAProxy holds exactly cert: same DER fingerprint. A
// serial alone does not identify a certificate (self-signed ones often
// reuse serial 1).
func (c CertInfo) Is(cert *x509.Certificate) bool {
	sum := sha1.Sum(cert.Raw)
	return strings.EqualFold(c.SHA1, hex.EncodeToString(sum[:]))
}

// NativeInspector implements Inspector with client-native's runtime client
// (github.com/haproxytech/client-native/v5/runtime), whose readers for
// these commands were checked against HAProxy 2.6.12 in native_test.go:
//
//   - GetInfo parses `show info typed` by field number, which is stable
//     across versions (2.6.12's numbering matches what it expects).
//   - ShowCertificate parses `show ssl cert <path>` ("Serial: 075BCD15",
//     "notAfter: Nov  1 10:00:00 2031 GMT", …) correctly.
//   - ShowCerts lists the loaded certificates and skips the "# transaction"
//     section, so an open `set ssl cert` is not listed twice.
//
// Where it falls short, this type makes up for it rather than working
// around it elsewhere:
//
//   - It takes no context and uses a fixed 30 s deadline per command (plus
//     one retry on a failed dial). Each call here runs in a goroutine and
//     returns when ctx ends; the abandoned call finishes on its own
//     deadline. SingleRuntime serializes calls, so a stuck socket delays
//     later calls rather than piling up connections.
//   - It ignores read errors and returns whatever arrived, so a cut reply
//     parses as a reply with fields missing: results without the fields
//     this package relies on (Version; Serial and notAfter) are errors.
//   - ShowCertificate wraps every failure, a dead socket included, in its
//     ErrNotFound; only HAProxy's own "Not found" reply is reported as
//     ErrNotFound here.
//   - It checks commands for ';' but not for line breaks, which would
//     smuggle a second command in: paths are checked here.
//
// The client is built from SingleRuntime directly rather than runtime.New,
// which caches the first HAProxy version it sees in a package global
// (wrong after an upgrade and restart) and dials at construction.
type NativeInspector struct {
	socketPath string
	rt         *cnruntime.SingleRuntime
}

var _ Inspector = (*NativeInspector)(nil)

// NewInspector returns an Inspector for the admin socket at socketPath. It
// does not connect: HAProxy need not be running yet.
func NewInspector(socketPath string) (*NativeInspector, error) {
	rt := &cnruntime.SingleRuntime{}
	// worker 0: the stats socket itself, not a worker behind the master.
	if err := rt.Init(socketPath, 0, 0, options.RuntimeOptions{DoNotCheckRuntimeOnInit: true}); err != nil {
		return nil, fmt.Errorf("runtime client for %s: %w", socketPath, err)
	}
	return &NativeInspector{socketPath: socketPath, rt: rt}, nil
}

// Info runs `show info typed`.
func (n *NativeInspector) Info(ctx context.Context) (Info, error) {
	pi, err := callNative(ctx, func() (models.ProcessInfo, error) { return n.rt.GetInfo(), nil })
	if err != nil {
		return Info{}, fmt.Errorf("show info on %s: %w", n.socketPath, err)
	}
	info, err := infoFromNative(pi)
	if err != nil {
		return Info{}, fmt.Errorf("show info on %s: %w", n.socketPath, err)
	}
	return info, nil
}

// Cert runs `show ssl cert <path>`. A path HAProxy does not hold gives an
// error wrapping ErrNotFound. During an uncommitted `set ssl cert` it
// reports the certificate still in use; "*<path>" asks for the one in the
// transaction.
func (n *NativeInspector) Cert(ctx context.Context, path string) (CertInfo, error) {
	if err := checkCertPath(path); err != nil {
		return CertInfo{}, err
	}
	c, err := callNative(ctx, func() (*models.SslCertificate, error) { return n.rt.ShowCertificate(path) })
	switch {
	case err == nil:
	case !errors.Is(err, cnerrors.ErrNotFound): // ctx ended
		return CertInfo{}, fmt.Errorf("show ssl cert %s: %w", path, err)
	case strings.Contains(err.Error(), "Can't display the certificate: Not found"):
		// HAProxy 2.6.12: "[3]: Can't display the certificate: Not found
		// or the certificate is a bundle!"
		return CertInfo{}, fmt.Errorf("show ssl cert %s: %w", path, ErrNotFound)
	default:
		// ShowCertificate tags every failure, a dead socket included,
		// "… not found": drop the tag, which would mislead here.
		msg := strings.TrimSuffix(err.Error(), " "+cnerrors.ErrNotFound.Error())
		return CertInfo{}, fmt.Errorf("show ssl cert %s: %s", path, msg)
	}
	info, err := certFromNative(c)
	if err != nil {
		return CertInfo{}, fmt.Errorf("show ssl cert %s: %w", path, err)
	}
	if strings.HasPrefix(path, "*") && !strings.HasPrefix(info.Path, "*") {
		// HAProxy names the transaction's certificate "*<path>", as
		// asked; from 3.2 it also prints a "Crt filename:" line, which
		// client-native takes for the name instead. It is the one asked
		// for.
		info.Path = path
	}
	return info, nil
}

// CertPaths runs `show ssl cert` and returns the paths of the loaded
// certificates, in HAProxy's order.
func (n *NativeInspector) CertPaths(ctx context.Context) ([]string, error) {
	certs, err := callNative(ctx, n.rt.ShowCerts)
	if err != nil {
		return nil, fmt.Errorf("show ssl cert on %s: %w", n.socketPath, err)
	}
	paths := make([]string, 0, len(certs))
	for _, c := range certs {
		paths = append(paths, c.StorageName)
	}
	return paths, nil
}

// callNative runs a context-less client-native call so that the caller can
// stop waiting when ctx ends.
func callNative[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned call must not block
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

func infoFromNative(pi models.ProcessInfo) (Info, error) {
	if pi.Error != "" {
		return Info{}, errors.New(pi.Error)
	}
	in := pi.Info
	if in == nil || in.Version == "" {
		return Info{}, errors.New("reply has no Version: cut short or not show info")
	}
	return Info{
		Version:      in.Version,
		PID:          int(val(in.Pid)),
		Uptime:       time.Duration(val(in.Uptime)) * time.Second,
		Threads:      int(val(in.Nbthread)),
		Processes:    int(val(in.Processes)),
		MaxConn:      int(val(in.MaxConn)),
		HardMaxConn:  int(val(in.HardMaxConn)),
		UlimitN:      int(val(in.Ulimitn)),
		MaxSock:      int(val(in.MaxSock)),
		CurrConns:    int(val(in.CurrConns)),
		CumConns:     val(in.CumConns),
		CumReq:       val(in.CumReq),
		CurrSSLConns: int(val(in.CurrSslConns)),
	}, nil
}

func certFromNative(c *models.SslCertificate) (CertInfo, error) {
	if c == nil {
		return CertInfo{}, errors.New("no certificate in reply")
	}
	serial, ok := new(big.Int).SetString(c.Serial, 16)
	if !ok {
		return CertInfo{}, fmt.Errorf("serial %q is not hex: reply cut short?", c.Serial)
	}
	// client-native leaves a date it could not parse as the zero time.
	var notBefore, notAfter time.Time
	if c.NotBefore != nil {
		notBefore = time.Time(*c.NotBefore)
	}
	if c.NotAfter != nil {
		notAfter = time.Time(*c.NotAfter)
	}
	if notAfter.IsZero() {
		return CertInfo{}, errors.New("no readable notAfter in reply")
	}
	return CertInfo{
		Path:      c.StorageName,
		Used:      c.Status == "Used",
		Serial:    serial,
		NotBefore: notBefore.UTC(),
		NotAfter:  notAfter.UTC(),
		Subject:   c.Subject,
		Issuer:    c.Issuers,
		SANs:      c.SubjectAlternativeNames,
		SHA1:      c.Sha1FingerPrint,
	}, nil
}

// checkCertPath refuses what would change the command: client-native
// rejects ';' itself but sends line breaks through, and a space would make
// HAProxy read a different path.
func checkCertPath(path string) error {
	switch {
	case path == "":
		return errors.New("show ssl cert: empty path")
	case strings.ContainsAny(path, " \t\r\n;"):
		return fmt.Errorf("show ssl cert %q: path contains white space or ';'", path)
	}
	return nil
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
