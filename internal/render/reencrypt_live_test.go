package render

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// TestLiveReencryptVerifiesAsOpenShift serves reencrypt routes through a
// real HAProxy to TLS backends whose certificates are issued, as
// OpenShift's service CA issues them, for <service>.<namespace>.svc — not
// for the route's public host. As in OpenShift's template: a route's own
// destinationCACertificate checks the chain only; the router's default
// destination CA also checks the service's name; neither sends the public
// host.
func TestLiveReencryptVerifiesAsOpenShift(t *testing.T) {
	bin := testutil.HAProxy(t)
	tc := loadTestCerts(t)
	serviceCA, stranger := testutil.NewCA(t, "service CA"), testutil.NewCA(t, "stranger CA")

	tlsBackend := func(name string, cert tls.Certificate) string {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// No SNI reaches the backend, on any version: from 3.3
			// HAProxy sends the Host unless told otherwise.
			if sni := r.TLS.ServerName; sni != "" {
				http.Error(w, "SNI "+sni, http.StatusMisdirectedRequest)
				return
			}
			fmt.Fprintf(w, "%s %s", name, r.URL.Path)
		}))
		s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		s.StartTLS()
		t.Cleanup(s.Close)
		return s.Listener.Addr().String()
	}
	forService := serviceCA.Issue(t, "web.shop.svc")
	forOther := serviceCA.Issue(t, "other.shop.svc")

	front := model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}
	withDestCA := func(ca string) model.RouteTLS {
		r := front
		r.DestinationCACertificate = ca
		return r
	}
	s := model.DefaultSettings()
	s.BindAddress = "127.0.0.1"
	s.MaxConnections = 2000
	s.HTTPPort, s.HTTPSPort, s.StatsPort = testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	d := desired(s,
		route("shop", "own-ca", "own-ca.example.com", "", reencrypt(model.InsecurePolicyNone, withDestCA(serviceCA.PEM)),
			svc("web", 100, tlsBackend("own-ca", forService))),
		// The route's own CA checks the chain only: any name passes.
		route("shop", "own-ca-any-name", "own-ca-any-name.example.com", "", reencrypt(model.InsecurePolicyNone, withDestCA(serviceCA.PEM)),
			svc("web", 100, tlsBackend("own-ca-any-name", forOther))),
		route("shop", "own-ca-stranger", "own-ca-stranger.example.com", "", reencrypt(model.InsecurePolicyNone, withDestCA(stranger.PEM)),
			svc("web", 100, tlsBackend("own-ca-stranger", forService))),
		route("shop", "default-ca", "default-ca.example.com", "", reencrypt(model.InsecurePolicyNone, front),
			svc("web", 100, tlsBackend("default-ca", forService))),
		// The default CA checks the service's name: web.shop.svc.
		route("shop", "default-ca-wrong-name", "default-ca-wrong-name.example.com", "", reencrypt(model.InsecurePolicyNone, front),
			svc("web", 100, tlsBackend("default-ca-wrong-name", forOther))),
	)
	tmp := testutil.ShortTempDir(t)
	in := Input{Desired: d, Dir: tmp + "/b", RunDir: tmp + "/r", DefaultCertificate: []byte(tc.Default),
		DefaultDestinationCA: []byte(serviceCA.PEM)}
	b := mustRender(t, in)
	writeBundle(t, in.Dir, b)
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	startHAProxy(t, bin, in)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(tc.CA))
	cl := client(s.HTTPSPort, &tls.Config{RootCAs: pool})
	for _, c := range []struct {
		route      string
		wantStatus int
	}{
		{"own-ca", 200},
		{"own-ca-any-name", 200},
		{"own-ca-stranger", 503},
		{"default-ca", 200},
		{"default-ca-wrong-name", 503},
	} {
		t.Run(c.route, func(t *testing.T) {
			status, body, _ := get(t, cl, "https://"+c.route+".example.com/x", "")
			if status != c.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", status, c.wantStatus, body)
			}
			if want := c.route + " /x"; c.wantStatus == 200 && body != want {
				t.Errorf("body %q, want %q", body, want)
			}
		})
	}

	// A server added at runtime verifies as the configured ones do: one
	// presenting another service's name is refused, one for the service
	// serves.
	t.Run("runtime add server", func(t *testing.T) {
		var r *model.AdmittedRoute
		for _, x := range d.Routes {
			if x.Key.Name == "default-ca" {
				r = x
			}
		}
		be := r.BackendName()
		testutil.MustAdminCommand(t, in.RunDir, fmt.Sprintf("set server %s/%s state maint", be, r.Services[0].Servers[0].Name))
		for _, a := range []struct {
			name       string
			cert       tls.Certificate
			wantStatus int
		}{{"added_wrong", forOther, 503}, {"added_right", forService, 200}} {
			host, port := splitHostPort(tlsBackend(a.name, a.cert))
			srv := model.Server{Name: model.ServerName(a.name), Address: host, Port: port, Weight: 1}
			cmd := fmt.Sprintf("add server %s/%s %s %s", be, srv.Name, HostPort(host, port), ServerArgs(r, srv, in))
			if !strings.Contains(cmd, " verifyhost web.shop.svc ") {
				t.Fatalf("runtime server does not verify the service name: %s", cmd)
			}
			if out := testutil.MustAdminCommand(t, in.RunDir, cmd); !strings.Contains(out, "New server registered") {
				t.Fatalf("%s\n→ %s", cmd, out)
			}
			testutil.MustAdminCommand(t, in.RunDir, fmt.Sprintf("enable server %s/%s", be, srv.Name))
			status, body, _ := get(t, cl, "https://default-ca.example.com/y", "")
			if status != a.wantStatus {
				t.Fatalf("%s: status %d, want %d (body %q)", a.name, status, a.wantStatus, body)
			}
			testutil.MustAdminCommand(t, in.RunDir, fmt.Sprintf("set server %s/%s state maint", be, srv.Name))
		}
	})
}
