package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// The kubelet tearing a ConfigMap volume down (os.RemoveAll) removes the
// files of the generation ..data points to one by one, ..data possibly
// last. A published generation is never changed, so files vanishing from
// under an unchanged ..data are a teardown: the first route to lose its
// file keeps serving, although it is far below the share of routes the
// guard waits for otherwise. A deletion that stays applies after the
// quiet period.
func TestVolumeTornDownFileByFileKeepsRoutes(t *testing.T) {
	r := newRouter(t)
	r.deletionQuiet = 4 * time.Second
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig(""))
	var bs []*backend
	for i := range 4 {
		b := startBackend(t, fmt.Sprintf("b%d", i))
		bs = append(bs, b)
		name := fmt.Sprintf("r%d", i)
		gen[name+".yaml"] = []byte(join(routeYAML(name, name+".e2e.test", "", name), endpointsYAML(name, b)))
	}
	must(t, w.Publish(gen))
	r.start("auto")
	for i := range 4 {
		r.serves(fmt.Sprintf("r%d.e2e.test", i), "/", bs[i].Name)
	}
	target, err := os.Readlink(filepath.Join(r.dir, "..data"))
	must(t, err)
	must(t, os.Remove(filepath.Join(r.dir, target, "r0.yaml")))
	r.trigger <- struct{}{} // no event names a file inside the timestamped directory; the resync would read it
	r.eventually(10*time.Second, "the guard holds r0", func() error {
		if g := r.store.Get().DeletionGuard; g == nil || g.Dropped != 1 {
			return fmt.Errorf("deletion guard %+v, want 1 route held", g)
		}
		return nil
	})
	r.keepsServing("r0.e2e.test", "b0", 5, "r0.yaml vanished from under ..data")

	// Held for the quiet period only: a file removed by hand stays removed.
	r.gone("r0.e2e.test")
	r.serves("r1.e2e.test", "/", "b1")
	// One hold, however often the directory was read during it.
	body, err := r.scrapeMetrics()
	must(t, err)
	if !strings.Contains(body, "haroute_deletion_guard_holds_total 1\n") {
		t.Errorf("the hold was not counted once")
	}
}
