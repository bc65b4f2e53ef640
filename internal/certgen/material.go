package certgen

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/haroute/haroute/internal/fsutil"
	"github.com/haroute/haroute/internal/model"
)

// Material is the TLS material a RouterConfig refers to, resolved to bytes.
type Material struct {
	DefaultCertificate   []byte // never empty
	DefaultDestinationCA []byte // empty: the system trust store
	// StatsCredentials guard the /stats page; unset: no /stats page.
	StatsCredentials model.StatsCredentials
	// ClientCA verifies client certificates (spec.clientTLS); empty
	// when clients are not asked for one.
	ClientCA []byte
	// ErrorPages are custom error pages by status code (404, 503), each
	// a complete HTTP response; none: HAProxy's own.
	ErrorPages map[int][]byte
}

// Resolve reads what settings name: inline PEM as is, a file path from
// disk (bounded by model.MaxFileSize), and, when no default certificate is
// configured, the self-signed one kept in stateDir (made once).
func Resolve(s model.Settings, stateDir string, now func() time.Time) (Material, error) {
	return ResolveOver(s, stateDir, now, nil)
}

// ResolveOver is Resolve where an item that cannot be read keeps its
// content in last, when last is not nil: a file broken under unchanged
// settings serves its last good content while the others serve what they
// name now (a CA file newly named beside a broken default certificate:
// all of the last material left render without the CA the settings ask
// for). It returns the first error met, with the material.
func ResolveOver(s model.Settings, stateDir string, now func() time.Time, last *Material) (Material, error) {
	var m Material
	var first error
	// keepLast records err and reports whether the item may keep its
	// content in last (else the whole resolution fails with first).
	keepLast := func(err error) bool {
		if first == nil {
			first = err
		}
		return last != nil
	}
	var err error
	switch {
	case s.DefaultCertificate != "":
		m.DefaultCertificate = []byte(s.DefaultCertificate)
	case s.DefaultCertificateFile != "":
		if m.DefaultCertificate, err = readDefaultCertificate(s.DefaultCertificateFile); err != nil {
			if !keepLast(fmt.Errorf("%s: %w", FieldDefaultCertificate, err)) {
				return m, first
			}
			m.DefaultCertificate = last.DefaultCertificate
		}
	default:
		if m.DefaultCertificate, err = EnsureDefault(stateDir, now); err != nil {
			if !keepLast(fmt.Errorf("default certificate: %w", err)) {
				return m, first
			}
			m.DefaultCertificate = last.DefaultCertificate
		}
	}
	switch {
	case s.DefaultDestinationCA != "":
		m.DefaultDestinationCA = []byte(s.DefaultDestinationCA)
	case s.DefaultDestinationCAFile != "":
		if m.DefaultDestinationCA, err = readDestinationCA(s.DefaultDestinationCAFile); err != nil {
			if !keepLast(fmt.Errorf("%s: %w", FieldDefaultDestinationCA, err)) {
				return m, first
			}
			m.DefaultDestinationCA = last.DefaultDestinationCA
		}
	}
	if p := s.StatsCredentialsFile; p != "" {
		if m.StatsCredentials, err = readStatsCredentials(p); err != nil {
			if !keepLast(fmt.Errorf("stats credentials: %w", err)) {
				return m, first
			}
			m.StatsCredentials = last.StatsCredentials
		}
	}
	if c := s.ClientTLS; c != nil {
		if c.CA != "" {
			m.ClientCA = []byte(c.CA)
		} else if m.ClientCA, err = readDestinationCA(c.CAFile); err != nil {
			if !keepLast(fmt.Errorf("%s: %w", FieldClientCA, err)) {
				return m, first
			}
			m.ClientCA = last.ClientCA
		}
	}
	if s.ErrorPagesDir != "" {
		if m.ErrorPages, err = readErrorPages(s); err != nil {
			if !keepLast(fmt.Errorf("%s: %w", FieldErrorPages, err)) {
				return m, first
			}
			m.ErrorPages = last.ErrorPages
		}
	}
	return m, first
}

// The RouterConfig fields that may name files.
const (
	FieldDefaultCertificate   = "spec.defaultCertificate"
	FieldDefaultDestinationCA = "spec.defaultDestinationCA"
	FieldStatsCredentials     = "spec.stats.credentialsFile"
	FieldClientCA             = "spec.clientTLS.clientCA"
	FieldErrorPages           = "spec.httpErrorCodePages"
)

// FileProblem is a file a RouterConfig field names that cannot be used.
type FileProblem struct {
	Field string
	Err   error
}

// CheckFiles reads and judges the files s names, as Resolve does, and
// generates nothing: `haroute check` reports what the daemon would refuse,
// at the field that names the file.
func CheckFiles(s model.Settings) []FileProblem {
	var out []FileProblem
	if p := s.DefaultCertificateFile; p != "" && s.DefaultCertificate == "" {
		if _, err := readDefaultCertificate(p); err != nil {
			out = append(out, FileProblem{Field: FieldDefaultCertificate, Err: err})
		}
	}
	if p := s.DefaultDestinationCAFile; p != "" && s.DefaultDestinationCA == "" {
		if _, err := readDestinationCA(p); err != nil {
			out = append(out, FileProblem{Field: FieldDefaultDestinationCA, Err: err})
		}
	}
	if p := s.StatsCredentialsFile; p != "" {
		if _, err := readStatsCredentials(p); err != nil {
			out = append(out, FileProblem{Field: FieldStatsCredentials, Err: err})
		}
	}
	if c := s.ClientTLS; c != nil && c.CAFile != "" {
		if _, err := readDestinationCA(c.CAFile); err != nil {
			out = append(out, FileProblem{Field: FieldClientCA, Err: err})
		}
	}
	if s.ErrorPagesDir != "" {
		if _, err := readErrorPages(s); err != nil {
			out = append(out, FileProblem{Field: FieldErrorPages, Err: err})
		}
	}
	return out
}

// Naming is what in s names the file (or inline content) of field, one of
// the Field constants: two settings with the same naming read the same
// file. A file that breaks under unchanged naming keeps its last good
// content; only settings that name another judge it anew.
func Naming(s model.Settings, field string) string {
	switch field {
	case FieldDefaultCertificate:
		return s.DefaultCertificateFile + "\x00" + s.DefaultCertificate
	case FieldDefaultDestinationCA:
		return s.DefaultDestinationCAFile + "\x00" + s.DefaultDestinationCA
	case FieldStatsCredentials:
		return s.StatsCredentialsFile
	case FieldClientCA:
		if s.ClientTLS == nil {
			return ""
		}
		return s.ClientTLS.CAFile
	case FieldErrorPages:
		return s.ErrorPagesDir
	}
	return ""
}

// FileNamed is the path of the file s names for field, one of the Field
// constants; "" when s gives the content inline, or nothing.
func FileNamed(s model.Settings, field string) string {
	switch field {
	case FieldDefaultCertificate:
		return s.DefaultCertificateFile
	case FieldDefaultDestinationCA:
		return s.DefaultDestinationCAFile
	case FieldStatsCredentials:
		return s.StatsCredentialsFile
	case FieldClientCA:
		if s.ClientTLS == nil || s.ClientTLS.CA != "" {
			return ""
		}
		return s.ClientTLS.CAFile
	case FieldErrorPages:
		return s.ErrorPagesDir
	}
	return ""
}

func readDefaultCertificate(path string) ([]byte, error) {
	return readPEMFile(path, model.CheckCertificateBundle)
}

func readDestinationCA(path string) ([]byte, error) {
	return readPEMFile(path, model.CheckCABundle)
}

// readErrorPages reads the error pages in s.ErrorPagesDir, as
// OpenShift names them; a page may be missing (HAProxy's own serves),
// not both.
func readErrorPages(s model.Settings) (map[int][]byte, error) {
	pages := map[int][]byte{}
	for code, name := range model.ErrorPageFiles {
		p := filepath.Join(s.ErrorPagesDir, name)
		data, err := readBounded(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := model.CheckErrorPage(code, data, s.HeaderBufferBytes-s.HeaderBufferMaxRewriteBytes); err != nil {
			return nil, fmt.Errorf("%s %w", p, err)
		}
		pages[code] = data
	}
	if len(pages) == 0 {
		return nil, fmt.Errorf("%s holds neither %s nor %s", s.ErrorPagesDir, model.ErrorPageFiles[503], model.ErrorPageFiles[404])
	}
	return pages, nil
}

func readStatsCredentials(path string) (model.StatsCredentials, error) {
	data, err := readBounded(path)
	if err != nil {
		return model.StatsCredentials{}, err
	}
	// The error names the file, never its content: a password.
	c, err := model.ParseStatsCredentials(data)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// readPEMFile reads path and judges it with check, as model judges inline
// PEM: a file HAProxy would refuse must fail here, naming the file, and
// not in `haproxy -c` where it would block every route.
func readPEMFile(path string, check func([]byte) error) ([]byte, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	if err := check(data); err != nil {
		return nil, fmt.Errorf("%s %w", path, err)
	}
	return data, nil
}

// readBounded reads the file a RouterConfig field names. The open never
// blocks and only a regular file is read: a FIFO would hold the sync (and
// with it the whole daemon) until a writer came, and a device never ends.
func readBounded(path string) ([]byte, error) {
	f, _, err := fsutil.OpenRegular(path, false)
	if err != nil {
		if errors.Is(err, fsutil.ErrNotRegular) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err // os errors name the path already
	}
	defer f.Close()
	// Read through the limit rather than trust the size from the open: a
	// file that grows meanwhile cannot exhaust memory.
	data, err := io.ReadAll(io.LimitReader(f, model.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > model.MaxFileSize {
		return nil, fmt.Errorf("%s: more than %d bytes", path, model.MaxFileSize)
	}
	return data, nil
}
