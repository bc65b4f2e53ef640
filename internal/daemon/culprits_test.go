package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

// A candidate `haproxy -c` refuses is pinned on the routes responsible,
// with HAProxy's own message, and only on them.
func TestCulpritsFindsRefusedRoutes(t *testing.T) {
	bin := testutil.HAProxy(t)
	dir := t.TempDir()
	d, err := New(Options{ConfigDir: dir, RunDir: filepath.Join(dir, "run"), StateDir: filepath.Join(dir, "state"), HAProxy: bin})
	if err != nil {
		t.Fatal(err)
	}
	var routes strings.Builder
	for i := range 12 {
		fmt.Fprintf(&routes, "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: r%02d, namespace: ns}\nspec:\n  host: r%02d.example.test\n  to: {name: svc}\n  tls: {termination: edge}\n", i, i)
	}
	res := model.NewLoader().Load([]model.SourceFile{{Path: "r.yaml", Data: []byte(routes.String())}})
	m, err := certgen.Resolve(res.Desired.Router, d.opts.StateDir, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	good, err := d.prepare(res.Desired, d.live.path, renderEnv{material: m})
	if err != nil {
		t.Fatal(err)
	}
	d.desired = good

	// Two routes get a certificate no validation would admit, written as
	// is: HAProxy refuses it.
	bad := *res.Desired
	bad.Routes = append([]*model.AdmittedRoute(nil), res.Desired.Routes...)
	for _, i := range []int{3, 8} {
		r := *bad.Routes[i] // routes are shared: change a copy
		bad.Routes[i] = &r
		bad.Routes[i].TLS.Certificate = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"
		bad.Routes[i].TLS.Key = bad.Routes[i].TLS.Certificate
	}
	next, err := d.prepare(&bad, d.live.path, renderEnv{material: m})
	if err != nil {
		t.Fatal(err)
	}
	werr := d.writeChecked(context.Background(), next)
	if werr == nil {
		t.Fatal("haproxy -c accepted the broken candidate; the test proves nothing")
	}
	cs, err := d.culprits(context.Background(), next, werr.Error())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.key.String())
		if !strings.Contains(c.msg, "r0") && !strings.Contains(strings.ToLower(c.msg), "certificate") {
			t.Errorf("culprit %s: message %q is not HAProxy's about its certificate", c.key, c.msg)
		}
	}
	if strings.Join(got, ",") != "ns/r03,ns/r08" {
		t.Fatalf("culprits %v, want ns/r03,ns/r08", got)
	}
}
