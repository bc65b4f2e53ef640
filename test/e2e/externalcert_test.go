package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/test/publish"
)

// extRoute is an edge route whose certificate is the Secret ext-tls's.
const extRoute = `apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: ext
  namespace: e2e
spec:
  host: ext.e2e.test
  to:
    kind: Service
    name: one
  tls:
    termination: edge
    externalCertificate:
      name: ext-tls
`

// tlsSecretYAML is the Secret ext-tls holding certPEM and keyPEM.
func tlsSecretYAML(certPEM, keyPEM string) string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: ext-tls\n  namespace: e2e\ntype: kubernetes.io/tls\ndata:\n  tls.crt: %s\n  tls.key: %s\n",
		b64(certPEM), b64(keyPEM))
}

// extPublisher returns what publishes r's tree: extRoute served by one,
// and its Secret with certPEM and keyPEM.
func extPublisher(t *testing.T, r *router, one *backend) func(certPEM, keyPEM string) {
	w := publish.NewAtomicWriter(r.dir)
	return func(certPEM, keyPEM string) {
		must(t, w.Publish(files("router.yaml", r.routerConfig(""), "routes.yaml", extRoute,
			"secret.yaml", tlsSecretYAML(certPEM, keyPEM), "endpoints.yaml", endpointsYAML("one", one))))
	}
}

// A route's spec.tls.externalCertificate names a kubernetes.io/tls Secret
// in the directory; the Secret's certificate is served, and a new Secret
// rotates it at runtime, without a reload, as OpenShift's router does.
func TestExternalCertificateSecretRotatesWithoutReload(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	pub := extPublisher(t, r, one)
	c1, k1 := makeCert(t, "ext.e2e.test", 3003)
	pub(c1, k1)
	r.start("atomic")
	r.eventually(20*time.Second, "the Secret's certificate served", func() error { return servedSerial(r, "ext.e2e.test", 3003) })
	before := r.reloads()
	c2, k2 := makeCert(t, "ext.e2e.test", 4004)
	pub(c2, k2)
	r.eventually(20*time.Second, "the rotated Secret's certificate served", func() error { return servedSerial(r, "ext.e2e.test", 4004) })
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("rotating the Secret caused %d reloads, want 0", got)
	}

	// A new version of the Secret that cannot serve (its key belongs to
	// another certificate) leaves the last good one serving, the route
	// stale with the Secret's error at its file: it took the route down.
	_, k3 := makeCert(t, "ext.e2e.test", 5005)
	pub(c2, k3)
	st := r.routeStatus("ext", model.RouteStale)
	if len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "secret.yaml:") {
		t.Errorf("stale route's reasons %q, want the Secret's file and position", st.Reasons)
	}
	if err := servedSerial(r, "ext.e2e.test", 4004); err != nil {
		t.Fatalf("with a broken Secret: %v", err)
	}
	if got, err := r.getTLS("ext.e2e.test"); err != nil || got != "one" {
		t.Fatalf("with a broken Secret: %q, %v", got, err)
	}
	staleAcrossRestartThenFixed(t, r, pub, 4004, 6006)
}

// staleAcrossRestartThenFixed restarts r, whose route ext serves its last
// good certificate (serial) with the Secret broken: it must still be stale
// and serve it after the restart; then a fixed Secret (fixedSerial),
// published with pub, serves, and the route is admitted again.
func staleAcrossRestartThenFixed(t *testing.T, r *router, pub func(certPEM, keyPEM string), serial, fixedSerial int64) {
	t.Helper()
	time.Sleep(500 * time.Millisecond) // the save of the last good state runs off the loop
	r.stop()
	r.start("atomic")
	r.routeStatus("ext", model.RouteStale)
	if err := servedSerial(r, "ext.e2e.test", serial); err != nil {
		t.Fatalf("with a broken Secret, after a restart: %v", err)
	}
	fixed, fixedKey := makeCert(t, "ext.e2e.test", fixedSerial)
	pub(fixed, fixedKey)
	r.eventually(20*time.Second, "the fixed Secret's certificate served", func() error { return servedSerial(r, "ext.e2e.test", fixedSerial) })
	r.routeStatus("ext", model.RouteAdmitted)
}

// A Secret moved to another file and broken there in the same change
// serves its last good version, also across a restart: the saved state
// kept last good content by file, and the file the good version came
// from held it no more, so the restart rejected the Secret's routes.
func TestMovedAndBrokenSecretKeepsServingAcrossARestart(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	w := publish.NewAtomicWriter(r.dir)
	c1, k1 := makeCert(t, "ext.e2e.test", 3003)
	must(t, w.Publish(files("router.yaml", r.routerConfig(""), "routes.yaml", extRoute,
		"old/secret.yaml", tlsSecretYAML(c1, k1), "endpoints.yaml", endpointsYAML("one", one))))
	r.start("atomic")
	r.eventually(20*time.Second, "the Secret's certificate served", func() error { return servedSerial(r, "ext.e2e.test", 3003) })

	// Moved to another file, with a key of another certificate.
	_, k2 := makeCert(t, "ext.e2e.test", 4004)
	must(t, w.Publish(files("router.yaml", r.routerConfig(""), "routes.yaml", extRoute,
		"new/secret.yaml", tlsSecretYAML(c1, k2), "endpoints.yaml", endpointsYAML("one", one))))
	st := r.routeStatus("ext", model.RouteStale)
	if len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "new/secret.yaml:") {
		t.Errorf("stale route's reasons %q, want the new file's", st.Reasons)
	}
	time.Sleep(500 * time.Millisecond) // the save of the last good state runs off the loop
	r.stop()
	r.start("atomic")
	r.routeStatus("ext", model.RouteStale)
	if err := servedSerial(r, "ext.e2e.test", 3003); err != nil {
		t.Fatalf("moved and broken, after a restart: %v", err)
	}
	if got, err := r.getTLS("ext.e2e.test"); err != nil || got != "one" {
		t.Fatalf("moved and broken, after a restart: %q, %v", got, err)
	}
}

// A Secret rotated to material HAProxy refuses (here a wrapper refuses to
// check or start on a configuration holding it) keeps its last good
// material serving, also across a restart, where the refusal must be found
// again; fixed, the Secret serves. After a restart the route was rejected
// for good, and fixing the Secret did not bring it back.
func TestRefusedSecretMaterialKeepsServingAcrossARestart(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	bad, badKey := makeCert(t, "ext.e2e.test", 8002)
	r.haproxy = refusingCertificates(t, badKey)
	pub := extPublisher(t, r, one)
	good, goodKey := makeCert(t, "ext.e2e.test", 8001)
	pub(good, goodKey)
	r.start("atomic")
	r.eventually(20*time.Second, "the Secret's certificate served", func() error { return servedSerial(r, "ext.e2e.test", 8001) })

	pub(bad, badKey)
	st := r.routeStatus("ext", model.RouteStale)
	if len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "refused by HAProxy") {
		t.Errorf("stale route's reasons %q, want HAProxy's refusal", st.Reasons)
	}
	if err := servedSerial(r, "ext.e2e.test", 8001); err != nil {
		t.Fatalf("with refused material: %v", err)
	}
	staleAcrossRestartThenFixed(t, r, pub, 8001, 8003)
}
