package certgen

import (
	"fmt"
	"os"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// Material is the TLS material a RouterConfig refers to, resolved to bytes.
type Material struct {
	DefaultCertificate   []byte // never empty
	DefaultDestinationCA []byte // empty: the system trust store
}

// Resolve reads what settings name: inline PEM as is, a file path from
// disk (bounded by model.MaxFileSize), and, when no default certificate is
// configured, the self-signed one kept in stateDir (made once).
func Resolve(s model.Settings, stateDir string, now func() time.Time) (Material, error) {
	var m Material
	var err error
	switch {
	case s.DefaultCertificate != "":
		m.DefaultCertificate = []byte(s.DefaultCertificate)
	case s.DefaultCertificateFile != "":
		if m.DefaultCertificate, err = readBounded(s.DefaultCertificateFile); err != nil {
			return m, fmt.Errorf("default certificate: %w", err)
		}
	default:
		if m.DefaultCertificate, err = EnsureDefault(stateDir, now); err != nil {
			return m, fmt.Errorf("default certificate: %w", err)
		}
	}
	switch {
	case s.DefaultDestinationCA != "":
		m.DefaultDestinationCA = []byte(s.DefaultDestinationCA)
	case s.DefaultDestinationCAFile != "":
		if m.DefaultDestinationCA, err = readBounded(s.DefaultDestinationCAFile); err != nil {
			return m, fmt.Errorf("default destination CA: %w", err)
		}
	}
	return m, nil
}

func readBounded(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > model.MaxFileSize {
		return nil, fmt.Errorf("%s: %d bytes, limit %d", path, st.Size(), model.MaxFileSize)
	}
	return os.ReadFile(path)
}
