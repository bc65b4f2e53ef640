package daemon

import (
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

func edgeRoute(name, cert string) *model.AdmittedRoute {
	return &model.AdmittedRoute{Key: model.RouteKey{Namespace: "ns", Name: name}, Termination: model.TerminationEdge,
		TLS: model.RouteTLS{Certificate: cert}}
}

// The expiry of each certificate a route serves of its own is reported,
// and each expired one is reported once per expiry: again only when the
// route's certificate is replaced by another that also expired.
func TestCertificateExpiry(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-48*time.Hour).Truncate(time.Second), now.Add(90*24*time.Hour).Truncate(time.Second)
	expired, _, _ := testutil.SelfSignedCert(t, "old.example.test", big.NewInt(1), past)
	valid, _, _ := testutil.SelfSignedCert(t, "new.example.test", big.NewInt(2), future)
	plain := &model.AdmittedRoute{Key: model.RouteKey{Namespace: "ns", Name: "plain"}}
	withDefault := edgeRoute("default-cert", "")
	old, fresh := edgeRoute("old", string(expired)), edgeRoute("fresh", string(valid))
	d := &model.Desired{Routes: []*model.AdmittedRoute{withDefault, fresh, old, plain}}

	var c certExpiry
	c.setDefault(valid)
	routes, def := c.routes(d)
	if len(routes) != 2 || routes[0].Route != "fresh" || !routes[0].NotAfter.Equal(future) || routes[1].Route != "old" || !routes[1].NotAfter.Equal(past) {
		t.Fatalf("routes = %+v, want fresh at %v and old at %v", routes, future, past)
	}
	if !def.Equal(future) {
		t.Errorf("default certificate expires %v, want %v", def, future)
	}
	got := c.newlyExpired(d, now)
	if len(got) != 1 || !got[model.RouteKey{Namespace: "ns", Name: "old"}].Equal(past) {
		t.Fatalf("newly expired = %v, want ns/old", got)
	}
	if got := c.newlyExpired(d, now.Add(time.Hour)); len(got) != 0 {
		t.Errorf("reported again: %v", got)
	}
	// Another expired certificate for the route, and the default
	// certificate expired: both reported.
	older, _, _ := testutil.SelfSignedCert(t, "old.example.test", big.NewInt(3), past.Add(-time.Hour))
	c.setDefault(expired)
	d2 := &model.Desired{Routes: []*model.AdmittedRoute{fresh, edgeRoute("old", string(older))}}
	got = c.newlyExpired(d2, now)
	if len(got) != 2 || !got[model.RouteKey{}].Equal(past) || !got[model.RouteKey{Namespace: "ns", Name: "old"}].Equal(past.Add(-time.Hour)) {
		t.Errorf("newly expired = %v, want the default certificate and ns/old's new one", got)
	}
	// Time passes: the valid one expires too.
	if got := c.newlyExpired(d2, future.Add(time.Second)); len(got) != 1 || !got[model.RouteKey{Namespace: "ns", Name: "fresh"}].Equal(future) {
		t.Errorf("after %v: newly expired = %v, want ns/fresh", future, got)
	}
	// Routes deleted are forgotten (T50: under churn, every route ever
	// warned of stayed), the default certificate is not.
	c.newlyExpired(&model.Desired{Routes: []*model.AdmittedRoute{plain}}, future.Add(time.Second))
	if len(c.warned) != 1 {
		t.Errorf("warned of %v after the routes went, want only the default certificate", c.warned)
	}
}

// A file the RouterConfig names is read again when its mode or owner
// changes: a rotated certificate installed unreadable (0600 root, for a
// router that runs as another user) and then made readable kept the
// material's stamp, and the resync never read it again (T48).
func TestMaterialStampMovesWithTheFilesMode(t *testing.T) {
	cert := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(cert, []byte("pem"), 0o000); err != nil {
		t.Fatal(err)
	}
	s := model.Settings{DefaultCertificateFile: cert}
	before := materialStamp(s)
	// A change time a tick apart, on file systems that count coarsely.
	time.Sleep(20 * time.Millisecond)
	if err := os.Chmod(cert, 0o644); err != nil {
		t.Fatal(err)
	}
	if after := materialStamp(s); after == before {
		t.Errorf("the stamp %q did not move with a chmod", after)
	}
}
