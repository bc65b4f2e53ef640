package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/test/publish"
)

// The default certificate haroute generated is made anew a month before
// it expires, while the router runs, and served without a reload: it was
// served expired a year after it was made, or from the start on a host
// whose clock was set after haroute's first start, until the directory
// changed.
func TestGeneratedDefaultCertificateIsRenewed(t *testing.T) {
	r := newRouter(t)
	var ahead atomic.Int64 // how far the daemon's clock is ahead
	r.now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(files("router.yaml", r.routerConfig(""),
		"edge.yaml", routeYAML("edge", "edge.e2e.test", "", "one")+"  tls:\n    termination: edge\n",
		"endpoints.yaml", endpointsYAML("one", one))))
	r.start("atomic")
	served := func() (*x509.Certificate, error) {
		c, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.https), &tls.Config{InsecureSkipVerify: true, ServerName: "edge.e2e.test"})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0], nil
	}
	first, err := served()
	must(t, err)
	if first.Subject.CommonName != certgen.DefaultCommonName {
		t.Fatalf("served %q, want the generated default certificate", first.Subject.CommonName)
	}
	before := r.reloads()

	// 20 days before it expires: due.
	ahead.Store(int64(time.Until(first.NotAfter) - 20*24*time.Hour))
	r.eventually(20*time.Second, "a new default certificate", func() error {
		c, err := served()
		if err != nil {
			return err
		}
		if c.SerialNumber.Cmp(first.SerialNumber) == 0 || c.Subject.CommonName != certgen.DefaultCommonName {
			return fmt.Errorf("still serial %s (%s)", c.SerialNumber, c.Subject.CommonName)
		}
		if now := r.now(); certgen.ExpiresSoon(c.NotAfter, now) || now.Before(c.NotBefore) {
			return fmt.Errorf("the new certificate is valid %s–%s, not at %s", c.NotBefore, c.NotAfter, now)
		}
		return nil
	})
	if body, err := r.getTLS("edge.e2e.test"); err != nil || body != "one" {
		t.Errorf("after the renewal edge.e2e.test answers %q, %v; want one", body, err)
	}
	if got := r.reloads() - before; got != 0 {
		t.Errorf("renewing the default certificate took %d reloads, want 0", got)
	}
	onDisk, err := os.ReadFile(filepath.Join(r.stateDir, certgen.DefaultFile))
	must(t, err)
	if !bytes.Contains(onDisk, []byte("CERTIFICATE")) {
		t.Fatalf("state dir's %s: %q", certgen.DefaultFile, onDisk)
	}
}
