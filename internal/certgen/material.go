package certgen

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// Material is the TLS material a RouterConfig refers to, resolved to bytes.
type Material struct {
	DefaultCertificate   []byte // never empty
	DefaultDestinationCA []byte // empty: the system trust store
	// StatsCredentials guard the /stats page; unset: no /stats page.
	StatsCredentials model.StatsCredentials
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
	if p := s.StatsCredentialsFile; p != "" {
		data, err := readBounded(p)
		if err != nil {
			return m, fmt.Errorf("stats credentials: %w", err)
		}
		// The error names the file, never its content: a password.
		if m.StatsCredentials, err = model.ParseStatsCredentials(data); err != nil {
			return m, fmt.Errorf("stats credentials %s: %w", p, err)
		}
	}
	return m, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read through the limit rather than trust a size read before: a file
	// that grows meanwhile cannot exhaust memory.
	data, err := io.ReadAll(io.LimitReader(f, model.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > model.MaxFileSize {
		return nil, fmt.Errorf("%s: more than %d bytes", path, model.MaxFileSize)
	}
	return data, nil
}
