package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/haroute/haroute/test/publish"
)

// The MicroShift holder pod recreated (examples/microshift): the kubelet
// tears the old ConfigMap volume down under haroute, haroute restarts
// (the bind script's try-restart) before the new volume is bound, and for
// a while its --config-dir is the package's own directory, with a
// RouterConfig on other ports and no ..data. In atomic mode, as the
// example's drop-in runs it, nothing of that is applied: the routes keep
// serving on the same ports, across the restart, until the new volume is
// bound, whose content is then followed.
func TestHolderPodRecreatedKeepsRoutes(t *testing.T) {
	r := newRouter(t)
	one, two := startBackend(t, "one"), startBackend(t, "two")
	must(t, publish.NewAtomicWriter(r.dir).Publish(twoRoutes(r, one, two, "a.e2e.test")))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	http := r.http

	// The kubelet removes the old volume's links and data.
	tearDown(t, r.dir)
	r.reportsError("read")
	r.keepsServing("a.e2e.test", "one", 10, "volume torn down")
	time.Sleep(500 * time.Millisecond) // the save of the last good state runs off the loop
	r.stop()

	// What shows at the bind target without the bind: the package's
	// production skeleton, a RouterConfig on other ports.
	other := newRouter(t)
	must(t, os.WriteFile(filepath.Join(r.dir, "routerconfig.yaml"), []byte(other.routerConfig("")), 0o644))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "one")
	r.serves("b.e2e.test", "/", "two")
	r.reportsError("read")
	if _, err := other.get("a.e2e.test", "/"); err == nil {
		t.Fatal("haroute moved to the RouterConfig of the unbound directory")
	}

	// The new volume is bound at the same place: its content applies.
	must(t, os.Remove(filepath.Join(r.dir, "routerconfig.yaml")))
	must(t, publish.NewAtomicWriter(r.dir).Publish(twoRoutes(r, two, one, "a.e2e.test")))
	r.serves("a.e2e.test", "/", "two")
	if r.http != http {
		t.Fatal("port moved")
	}
}
