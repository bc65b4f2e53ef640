package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
	"github.com/haroute/haroute/test/testenv"
)

// An endpoint that refuses connections (its pod gone) is replaced while
// requests keep coming. Requests retrying against it (retries 3, a second
// apart) still hold its server while its sessions read 0, and HAProxy
// 2.6.12 deleted it under them: its worker crashed ("malloc(): unaligned
// tcache chunk detected", or SIGSEGV), cutting every connection of every
// route (an audit: 6 crashes in 50 s). A drained server is deleted only
// once no retry can still hold it.
func TestRefusingEndpointIsDeletedWithoutCrashingHAProxy(t *testing.T) {
	// glibc fills freed memory, so that HAProxy using a server it freed
	// crashes every time rather than now and then.
	t.Setenv("MALLOC_PERTURB_", "204")
	r := newRouter(t)
	good := startBackend(t, "good")
	refusing := &backend{Name: "refusing", Port: testutil.FreePort(t)} // nothing listens there
	w := publish.NewAtomicWriter(r.dir)
	gen := func(ep *backend) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", routeYAML("one", "one.e2e.test", "", "one"),
			"endpoints.yaml", endpointsYAML("one", ep),
		)
	}
	must(t, w.Publish(gen(good)))
	r.start("atomic")
	r.serves("one.e2e.test", "/", "good")
	worker := testenv.ShowProc(t, r.runDir).Workers[0].PID

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = testenv.Get(client, r.http, "one.e2e.test", "/")
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	for range 4 {
		must(t, w.Publish(gen(refusing)))
		time.Sleep(2500 * time.Millisecond)
		must(t, w.Publish(gen(good)))
		time.Sleep(2500 * time.Millisecond)
	}
	// Until every drained server is deleted (the refusing one last).
	r.eventually(60*time.Second, "drained servers deleted", func() error {
		state, err := showServersState(r.runDir, "be_http:e2e:one")
		if err != nil {
			return err
		}
		var servers []string
		for i, line := range strings.Split(strings.TrimSpace(state), "\n") {
			if i > 0 && !strings.HasPrefix(line, "#") {
				servers = append(servers, line)
			}
		}
		if len(servers) != 1 || !strings.Contains(servers[0], fmt.Sprintf(" %d ", good.Port)) {
			return fmt.Errorf("servers left: %q", servers)
		}
		return nil
	})
	cancel()
	wg.Wait()
	for _, e := range r.store.Get().RecentErrors {
		if strings.HasPrefix(e.Message, "haproxy exited") {
			t.Errorf("HAProxy exited: %s", e.Message)
		}
	}
	if got := testenv.ShowProc(t, r.runDir).Workers; len(got) != 1 || got[0].PID != worker {
		t.Errorf("workers %+v, want the first one, %d, still serving", got, worker)
	}
}
