// Package certgen makes the self-signed certificate haroute serves when no
// route matches a TLS client's SNI and no default certificate is
// configured: edge routes without a certificate of their own need one too.
package certgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
)

// Validity is how long a generated certificate is valid: one year.
// NotBefore is set an hour before now to tolerate clock skew between
// hosts.
const Validity = 365 * 24 * time.Hour

// RenewWithin is how long before it expires the generated default
// certificate is made anew: a router that runs for a year, or one whose
// first start came before the clock was set (a host without a real-time
// clock boots in 1970), would otherwise serve it expired until something
// else changed.
const RenewWithin = 30 * 24 * time.Hour

// DefaultFile is the name of the default certificate inside the state dir.
const DefaultFile = "default.pem"

// DefaultCommonName names the generated default certificate. It is not a
// resolvable name (.invalid is reserved), so it cannot shadow a real host.
const DefaultCommonName = "haroute-default.invalid"

// SelfSigned returns a self-signed ECDSA P-256 certificate valid for one
// year from now, for hosts (DNS names or IP literals; the first is also
// the common name, DefaultCommonName when hosts is empty).
func SelfSigned(now time.Time, hosts []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial: %w", err)
	}
	cn := DefaultCommonName
	if len(hosts) > 0 {
		cn = hosts[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"haroute self-signed"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(Validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

// EnsureDefault returns the PEM (certificate + key) of <stateDir>/default.pem,
// creating it first when it does not exist, does not hold a matching
// certificate and key, or expires within RenewWithin of now() (see
// usable): a default certificate is generated once and then reused until
// then, so clients that pinned it keep working across restarts. The file
// is written atomically with mode 0600.
func EnsureDefault(stateDir string, now func() time.Time) ([]byte, error) {
	path := filepath.Join(stateDir, DefaultFile)
	data, err := fsutil.ReadRegular(path)
	switch {
	case err == nil:
		if usable(data, now()) == nil {
			return data, nil
		}
	case errors.Is(err, fsutil.ErrNotRegular):
		// Not a file haroute wrote: a FIFO, which held the read until a
		// writer came, or a directory, which stopped every start without
		// a saved state to serve. Set aside, and made anew like an
		// unusable one.
		aside := path + ".unusable"
		if err := os.RemoveAll(aside); err != nil {
			return nil, fmt.Errorf("default certificate: %w", err)
		}
		if err := os.Rename(path, aside); err != nil {
			return nil, fmt.Errorf("default certificate: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read default certificate: %w", err)
	}
	certPEM, keyPEM, err := SelfSigned(now(), nil)
	if err != nil {
		return nil, fmt.Errorf("default certificate: %w", err)
	}
	data = append(certPEM, keyPEM...)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("write default certificate: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("write default certificate: %w", err)
	}
	return data, nil
}

// usable checks that data holds a certificate with its key that does not
// expire within RenewWithin of now. One not valid yet is usable: the
// clock is behind (a host without a real-time clock boots in 1970 until
// NTP sets it), and a certificate made then would be expired for every
// client once the clock is right.
func usable(data []byte, now time.Time) error {
	pair, err := tls.X509KeyPair(data, data)
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	if ExpiresSoon(leaf.NotAfter, now) {
		return fmt.Errorf("certificate expires %s, within %s of %s", leaf.NotAfter, RenewWithin, now)
	}
	return nil
}

// ExpiresSoon reports whether the generated default certificate, which
// expires at notAfter, is due to be made anew at now (EnsureDefault).
func ExpiresSoon(notAfter, now time.Time) bool { return !now.Add(RenewWithin).Before(notAfter) }
