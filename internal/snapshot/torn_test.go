package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haroute/haroute/test/publish"
)

type publisher interface {
	Publish(files map[string][]byte) error
}

// generation builds a payload in which every file names generation n, so
// a torn snapshot shows up as two different numbers.
func generation(n int) map[string][]byte {
	files := map[string][]byte{}
	body := fmt.Sprintf("generation: %d\npadding: %s\n", n, strings.Repeat("x", 512))
	for i := range 6 {
		files[fmt.Sprintf("route-%d.yaml", i)] = []byte(body)
	}
	files["endpoints/web.yaml"] = []byte(body)
	files["endpoints/deep/api.json"] = []byte(body)
	return files
}

// TestNoTornReads publishes generations as fast as possible, exactly the way
// kubelet and git-sync do, while reading in a loop: every snapshot must hold
// all files of one single generation.
func TestNoTornReads(t *testing.T) {
	const reads = 500
	for _, tc := range []struct {
		name string
		mode Mode
		make func(base string) (publisher, string)
	}{
		{"atomic", ModeAtomic, func(base string) (publisher, string) {
			return publish.NewAtomicWriter(base), base
		}},
		{"link", ModeLink, func(base string) (publisher, string) {
			g := publish.NewGitSync(base, "current")
			return g, g.Link()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, dir := tc.make(t.TempDir())
			if err := pub.Publish(generation(0)); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var published atomic.Int64
			var pubErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 1; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := pub.Publish(generation(n)); err != nil {
						pubErr = err
						return
					}
					published.Store(int64(n))
				}
			}()

			r := &Reader{}
			seen := map[string]bool{}
			var ok, unstable, retried int
			deadline := time.Now().Add(30 * time.Second)
			// At least `reads` reads, and keep going until enough swaps
			// happened under them for the result to mean something.
			// check returns what is wrong with one read, if anything.
			check := func(s *Snapshot, err error) string {
				if err != nil {
					return fmt.Sprintf("read: %v", err)
				}
				if s.Mode != tc.mode {
					return fmt.Sprintf("mode %s, want %s", s.Mode, tc.mode)
				}
				if len(s.Files) != 8 || len(s.Errors) != 0 {
					return fmt.Sprintf("torn snapshot: %d files, errors %v", len(s.Files), s.Errors)
				}
				first := string(s.Files[0].Data)
				for _, f := range s.Files[1:] {
					if string(f.Data) != first {
						return fmt.Sprintf("torn snapshot: %s holds %q, %s holds %q", s.Files[0].Path, first[:16], f.Path, string(f.Data)[:16])
					}
				}
				seen[first] = true
				return ""
			}
			var failure string
			for i := 0; failure == "" && (i < reads || (published.Load() < 100 && time.Now().Before(deadline))); i++ {
				s, err := r.Read(context.Background(), dir, ModeAuto)
				if errors.Is(err, ErrUnstable) {
					unstable++
					continue
				}
				if failure = check(s, err); failure == "" {
					ok++
					if s.Attempts > 1 {
						retried++
					}
				}
			}
			close(stop)
			wg.Wait() // before failing, so the publisher is not left writing
			if failure != "" {
				t.Fatal(failure)
			}
			if pubErr != nil {
				t.Fatalf("publish: %v", pubErr)
			}
			t.Logf("%d generations published; %d reads consistent (%d of them retried, %d distinct generations), %d gave up (ErrUnstable)",
				published.Load(), ok, retried, len(seen), unstable)
			// The test only proves something if reads raced real swaps.
			if ok < reads/2 || len(seen) < 10 {
				t.Errorf("too little concurrency to prove anything: %d consistent reads, %d distinct generations", ok, len(seen))
			}
		})
	}
}
