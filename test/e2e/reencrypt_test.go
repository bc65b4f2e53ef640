package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// tlsBackend is an HTTPS server on 127.0.0.1 presenting cert and
// answering with its name.
func tlsBackend(t *testing.T, name string, cert tls.Certificate) *backend {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) }))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return &backend{Name: name, Port: s.Listener.Addr().(*net.TCPAddr).Port}
}

// getHTTPS fetches https://host/ through the router's HTTPS port, with
// host as SNI; it returns the status and body.
func (r *router) getHTTPS(host string) (int, string, error) {
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", r.https))
	}
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: dial, DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := cl.Get("https://" + host + "/")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// A reencrypt route without its own destinationCACertificate verifies the
// backend against the RouterConfig's defaultDestinationCA and the
// service's name, <service>.<namespace>.svc, as OpenShift does with its
// service CA: a backend certificate issued for the service serves; one
// for another name does not. An endpoint added at runtime verifies the
// same way and serves, without a reload.
func TestReencryptDefaultCAVerifiesServiceName(t *testing.T) {
	r := newRouter(t)
	ca := testutil.NewCA(t, "service CA")
	web1 := tlsBackend(t, "web1", ca.Issue(t, "web.e2e.svc"))
	web2 := tlsBackend(t, "web2", ca.Issue(t, "web.e2e.svc"))
	wrong := tlsBackend(t, "wrong", ca.Issue(t, "other.e2e.svc"))
	reencrypt := func(name, service string) string {
		return fmt.Sprintf(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: %s
  namespace: e2e
spec:
  host: %s.e2e.test
  to:
    kind: Service
    name: %s
  tls:
    termination: reencrypt
`, name, name, service)
	}
	gen := func(webEndpoints ...*backend) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig("  defaultDestinationCA: |\n"+indent(ca.PEM, 4)),
			"routes.yaml", join(reencrypt("shop", "web"), reencrypt("mislabelled", "mislabelled")),
			"endpoints.yaml", join(endpointsYAML("web", webEndpoints...), endpointsYAML("mislabelled", wrong)),
		)
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen(web1)))
	r.start("atomic")
	r.eventually(20*time.Second, "shop served over reencrypt", func() error {
		status, body, err := r.getHTTPS("shop.e2e.test")
		if err != nil || status != 200 || body != "web1" {
			return fmt.Errorf("%d %q %v", status, body, err)
		}
		return nil
	})
	if status, body, err := r.getHTTPS("mislabelled.e2e.test"); err != nil || status != 503 {
		t.Fatalf("backend certificate for another service: %d %q %v, want 503", status, body, err)
	}

	before := r.reloads()
	must(t, w.Publish(gen(web1, web2)))
	r.eventually(20*time.Second, "runtime-added web2 serves", func() error {
		status, body, err := r.getHTTPS("shop.e2e.test")
		if err != nil || status != 200 || body != "web2" {
			return fmt.Errorf("%d %q %v", status, body, err)
		}
		return nil
	})
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding an endpoint caused %d reloads, want 0", got)
	}
	if state := readShowServers(t, r, "be_secure:e2e:shop"); !strings.Contains(state, fmt.Sprintf("_%d ", web2.Port)) {
		t.Fatalf("web2 is not a server of the backend:\n%s", state)
	}
}

// The first reencrypt route that verifies against the router's
// defaultDestinationCA binds to a spare too: the CA file is loaded from
// the start, whether or not a route uses it yet. It was not (T38): the
// servers' `ca-file` named a file HAProxy had not loaded, the runtime
// update failed, and a fallback reload served the route.
func TestReencryptDefaultCAFirstRouteWithoutReload(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	ca := testutil.NewCA(t, "service CA")
	web := tlsBackend(t, "web", ca.Issue(t, "web.e2e.svc"))
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig("  defaultDestinationCA: |\n"+indent(ca.PEM, 4)),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("web", web)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	before := r.reloads()

	gen["shop.yaml"] = []byte(routeYAML("shop", "shop.e2e.test", "", "web") + "  tls:\n    termination: reencrypt\n")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "shop served over reencrypt", func() error {
		status, body, err := r.getHTTPS("shop.e2e.test")
		if err != nil || status != 200 || body != "web" {
			return fmt.Errorf("%d %q %v", status, body, err)
		}
		return nil
	})
	if got, st := r.reloads()-before, r.store.Get(); got != 0 || st.Fallbacks != 0 {
		t.Fatalf("the first reencrypt route on the default CA took %d reloads (%d runtime fallbacks), want 0; last error: %s", got, st.Fallbacks, st.LastError)
	}
}

// A new reencrypt route with its own destinationCACertificate binds to a
// spare: its CA file is loaded (new/set/commit ssl ca-file) before its
// servers, which name it, are added; deleting the route unloads it. Both
// without a reload, and the CA is in force: a backend certificate it did
// not sign is refused.
func TestReencryptOwnCAWithoutReload(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	ca, other := testutil.NewCA(t, "route CA"), testutil.NewCA(t, "another CA")
	web := tlsBackend(t, "web", ca.Issue(t, "web.e2e.svc"))
	stranger := tlsBackend(t, "stranger", other.Issue(t, "web.e2e.svc"))
	route := func(name, service string) []byte {
		return []byte(routeYAML(name, name+".e2e.test", "", service) +
			"  tls:\n    termination: reencrypt\n    destinationCACertificate: |\n" + indent(ca.PEM, 6) + "\n")
	}
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "one"),
		"endpoints.yaml", join(endpointsYAML("one", one), endpointsYAML("web", web), endpointsYAML("stranger", stranger)))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	before := r.reloads()

	gen["shop.yaml"] = route("shop", "web")
	gen["fake.yaml"] = route("fake", "stranger")
	must(t, w.Publish(gen))
	served := func() {
		t.Helper()
		r.eventually(20*time.Second, "shop served over reencrypt with its own CA", func() error {
			status, body, err := r.getHTTPS("shop.e2e.test")
			if err != nil || status != 200 || body != "web" {
				return fmt.Errorf("%d %q %v", status, body, err)
			}
			return nil
		})
	}
	served()
	if status, body, err := r.getHTTPS("fake.e2e.test"); err != nil || status != 503 {
		t.Fatalf("a backend certificate the route's CA did not sign: %d %q %v, want 503", status, body, err)
	}
	if _, err := os.Stat(filepath.Join(r.stateDir, "live", "cas", "e2e_shop.pem")); err != nil {
		t.Fatalf("the route's CA file is not on disk: %v", err)
	}
	delete(gen, "shop.yaml")
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "shop gone", func() error {
		if status, _, err := r.getHTTPS("shop.e2e.test"); err == nil && status == 200 {
			return fmt.Errorf("still served")
		}
		return nil
	})
	gen["shop.yaml"] = route("shop", "web")
	must(t, w.Publish(gen))
	served()
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding, deleting and re-adding reencrypt routes with their own CA took %d reloads, want 0", got)
	}
}
