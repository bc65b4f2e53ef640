package watch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// Generous: these wait for real inotify events on a loaded 2-core machine.
const patience = 10 * time.Second

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// harness runs Watch and counts every trigger with a consumer that drains
// the channel at once, so collapsed bursts show up as one count.
type harness struct {
	t        *testing.T
	triggers atomic.Int64
	events   atomic.Int64
	got      chan struct{} // one value per trigger received
}

func start(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, got: make(chan struct{}, 1000)}
	opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.OnEvent = func() { h.events.Add(1) }
	if opts.Resync == 0 {
		opts.Resync = time.Hour // only the tests' own actions trigger
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, opts, out) }()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-out:
				h.triggers.Add(1)
				h.got <- struct{}{}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
	})
	h.expect("initial trigger")
	return h
}

// expect waits for one trigger.
func (h *harness) expect(why string) {
	h.t.Helper()
	select {
	case <-h.got:
	case <-time.After(patience):
		h.t.Fatalf("no trigger within %v after %s", patience, why)
	}
}

// settle waits until no trigger arrived for quiet, so a late trigger from
// an earlier step cannot pass for the effect of the next one.
func (h *harness) settle(quiet time.Duration) {
	h.t.Helper()
	for {
		select {
		case <-h.got:
		case <-time.After(quiet):
			return
		}
	}
}

// expectNone asserts that no trigger arrives within d.
func (h *harness) expectNone(d time.Duration, why string) {
	h.t.Helper()
	select {
	case <-h.got:
		h.t.Fatalf("unexpected trigger after %s", why)
	case <-time.After(d):
	}
}

func gen(n int) map[string][]byte {
	return map[string][]byte{
		"route.yaml":         []byte(fmt.Sprintf("generation: %d\n", n)),
		"endpoints/web.yaml": []byte(fmt.Sprintf("generation: %d\n", n)),
	}
}

func TestAtomicPublishTriggers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := publish.NewAtomicWriter(dir)
	if err := w.Publish(gen(0)); err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{Dir: dir})
	for n := 1; n <= 5; n++ {
		if err := w.Publish(gen(n)); err != nil {
			t.Fatal(err)
		}
		h.expect(fmt.Sprintf("publishing generation %d", n))
	}
	if got := h.events.Load(); got < 5 {
		t.Errorf("OnEvent called %d times for 5 generations", got)
	}
	h.settle(300 * time.Millisecond)
	// Only ..data is the commit point; other names in dir are ignored.
	if err := os.WriteFile(filepath.Join(dir, "stray.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expectNone(time.Second, "writing a file next to ..data")
}

func TestLinkPublishTriggers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	g, h := watchGitSync(t, root)
	for n := 1; n <= 5; n++ {
		if err := g.Publish(gen(n)); err != nil {
			t.Fatal(err)
		}
		h.expect(fmt.Sprintf("publishing generation %d", n))
	}
	h.settle(300 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(root, "sibling.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expectNone(time.Second, "writing a sibling of the link")
}

func TestPlainBurstTriggersOnceAfterDebounce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const debounce = 300 * time.Millisecond
	h := start(t, Options{Dir: dir, Debounce: debounce})

	before := h.events.Load()
	for i := range 20 {
		name := filepath.Join(dir, fmt.Sprintf("route-%d.yaml", i%5))
		if err := os.WriteFile(name, []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.expect("a burst of 20 writes")
	h.expectNone(3*debounce, "the burst's one trigger")
	if got := h.triggers.Load(); got != 2 {
		t.Errorf("%d triggers, want 2 (initial + one for the burst)", got)
	}
	if got := h.events.Load() - before; got < 20 {
		t.Errorf("OnEvent counted %d events for 20 writes", got)
	}

	// A new subdirectory gets its own watch.
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.expect("creating a subdirectory")
	h.settle(3 * debounce)
	if err := os.WriteFile(filepath.Join(dir, "sub", "x.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect("writing into the new subdirectory")

	// Dot names are never read, so they do not trigger.
	h.settle(3 * debounce)
	if err := os.WriteFile(filepath.Join(dir, ".route-1.yaml.swp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expectNone(3*debounce, "writing a dot file")
}

func TestResyncFires(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := start(t, Options{Dir: dir, Resync: 100 * time.Millisecond})
	for i := range 3 {
		h.expect(fmt.Sprintf("resync %d", i+1))
	}
	if got := h.events.Load(); got != 0 {
		t.Errorf("resyncs counted as %d filesystem events", got)
	}
}

func TestVanishedDirRecovers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		mode    snapshot.Mode
		publish func(dir string, n int) error
	}{
		{"plain", snapshot.ModeAuto, func(dir string, n int) error {
			return publish.NewPlain(dir).Publish(gen(n))
		}},
		{"atomic", snapshot.ModeAuto, func(dir string, n int) error {
			return publish.NewAtomicWriter(dir).Publish(gen(n))
		}},
		{"atomic-forced", snapshot.ModeAtomic, func(dir string, n int) error {
			return publish.NewAtomicWriter(dir).Publish(gen(n))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "config")
			if err := tc.publish(dir, 0); err != nil {
				t.Fatal(err)
			}
			h := start(t, Options{Dir: dir, Mode: tc.mode, Debounce: 50 * time.Millisecond, Poll: 100 * time.Millisecond})
			for round := 1; round <= 2; round++ {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				h.expect("removing the config dir")
				h.settle(500 * time.Millisecond)
				if err := tc.publish(dir, round); err != nil {
					t.Fatal(err)
				}
				h.expect("re-creating the config dir")
				h.settle(500 * time.Millisecond)
				// The watches are back: an ordinary change triggers again.
				if err := tc.publish(dir, round+10); err != nil {
					t.Fatal(err)
				}
				h.expect("publishing into the re-created dir")
				h.settle(500 * time.Millisecond)
			}
		})
	}
}

// A plain directory swapped in two renames (mv dir dir.old; mv dir.new
// dir) is read once it is back, not in the moment between: that read
// found it missing, an error counted and alerted on at every deploy
// (T42).
func TestPlainDirSwappedInTwoRenamesIsReadOnceBack(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "config")
	if err := publish.NewPlain(dir).Publish(gen(0)); err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{Dir: dir, Debounce: 300 * time.Millisecond, Poll: 100 * time.Millisecond})
	for round := 1; round <= 2; round++ {
		next := filepath.Join(root, fmt.Sprintf("config.new%d", round))
		if err := publish.NewPlain(next).Publish(gen(round)); err != nil {
			t.Fatal(err)
		}
		before := h.triggers.Load()
		if err := os.Rename(dir, filepath.Join(root, fmt.Sprintf("config.old%d", round))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if n := h.triggers.Load() - before; n != 0 {
			t.Fatalf("%d trigger(s) while the directory was gone for a moment", n)
		}
		if err := os.Rename(next, dir); err != nil {
			t.Fatal(err)
		}
		h.expect("the swap")
		h.settle(700 * time.Millisecond)
	}
}

func TestMissingDirAndParentRecover(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	parent := filepath.Join(base, "parent")
	dir := filepath.Join(parent, "config")
	// Neither the directory nor its parent exists yet: only polling helps.
	h := start(t, Options{Dir: dir, Poll: 100 * time.Millisecond})
	w := publish.NewAtomicWriter(dir)
	if err := w.Publish(gen(1)); err != nil {
		t.Fatal(err)
	}
	h.expect("creating the config dir and its parent")
	h.settle(500 * time.Millisecond)
	if err := w.Publish(gen(2)); err != nil {
		t.Fatal(err)
	}
	h.expect("publishing after the dir appeared")
	h.settle(500 * time.Millisecond)

	// The parent vanishes and comes back.
	if err := os.RemoveAll(parent); err != nil {
		t.Fatal(err)
	}
	h.expect("removing the parent")
	h.settle(500 * time.Millisecond)
	if err := w.Publish(gen(3)); err != nil {
		t.Fatal(err)
	}
	h.expect("re-creating the parent and the dir")
	h.settle(500 * time.Millisecond)
	if err := w.Publish(gen(4)); err != nil {
		t.Fatal(err)
	}
	h.expect("publishing after the parent came back")
}

func TestWatchErrors(t *testing.T) {
	err := Watch(context.Background(), Options{}, make(chan struct{}, 1))
	if err == nil || err.Error() != "watch: no config dir" {
		t.Errorf("empty Dir: %v", err)
	}
}

// Without an inotify watcher (fs.inotify.max_user_instances used up), the
// directory is polled: a change triggers once it has held for a poll, in
// atomic and in plain mode, and the watcher is made as soon as it can be.
// Not parallel: it replaces newWatcher.
func TestPollsWithoutInotify(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	newWatcher = func() (*fsnotify.Watcher, error) {
		if refuse.Load() {
			return nil, syscall.EMFILE // what inotify_init1 returns at the limit
		}
		return fsnotify.NewWatcher()
	}
	t.Cleanup(func() { newWatcher = fsnotify.NewWatcher })

	atomicDir := t.TempDir()
	w := publish.NewAtomicWriter(atomicDir)
	if err := w.Publish(gen(0)); err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{Dir: atomicDir, Poll: 100 * time.Millisecond})
	h.expectNone(500*time.Millisecond, "nothing changed")
	for n := 1; n <= 3; n++ {
		if err := w.Publish(gen(n)); err != nil {
			t.Fatal(err)
		}
		h.expect(fmt.Sprintf("publishing generation %d without inotify", n))
		h.expectNone(500*time.Millisecond, "a generation already seen")
	}

	plainDir := t.TempDir()
	file := filepath.Join(plainDir, "route.yaml")
	if err := os.WriteFile(file, []byte("generation: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, Options{Dir: plainDir, Poll: 100 * time.Millisecond})
	if err := os.WriteFile(file, []byte("generation: 1, a longer line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.expect("rewriting a file without inotify")
	p.expectNone(500*time.Millisecond, "a file already seen")

	// inotify is back: the watcher is made and events trigger again.
	refuse.Store(false)
	p.expect("the watcher's first trigger once made")
	if err := os.WriteFile(filepath.Join(plainDir, "more.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.expect("a new file, watched")
	if p.events.Load() == 0 {
		t.Error("no event counted")
	}
}

// A plain tree whose watches cannot be added (fs.inotify.max_user_watches
// used up) is polled as well, not left to the resync. Not parallel: it
// replaces addWatch.
func TestPollsWhenWatchesRunOut(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "routes")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	addWatch = func(fw *fsnotify.Watcher, p string) error {
		if p == sub {
			return syscall.ENOSPC // what inotify_add_watch returns at the limit
		}
		return fw.Add(p)
	}
	t.Cleanup(func() { addWatch = (*fsnotify.Watcher).Add })

	h := start(t, Options{Dir: dir, Poll: 100 * time.Millisecond})
	h.expectNone(500*time.Millisecond, "nothing changed")
	if err := os.WriteFile(filepath.Join(sub, "route.yaml"), []byte("generation: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect("a file written in an unwatchable tree")
	h.expectNone(500*time.Millisecond, "a file already seen")
}

// A config dir that is a mount point, unmounted and mounted again (a
// ConfigMap volume remounted when its pod is recreated): inotify says
// nothing the parent's watch sees, and the watches were left on the old
// file system, so every later change waited for the resync. The directory
// is found replaced at the next poll and watched again. A tmpfs stands for
// the volume (root only: CI runs as root).
func TestRemountedDirIsWatchedAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		publish func(dir string, n int) error
	}{
		{"plain", func(dir string, n int) error { return publish.NewPlain(dir).Publish(gen(n)) }},
		{"atomic", func(dir string, n int) error { return publish.NewAtomicWriter(dir).Publish(gen(n)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "config")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			testutil.Tmpfs(t, dir, "1m")
			if err := tc.publish(dir, 0); err != nil {
				t.Fatal(err)
			}
			h := start(t, Options{Dir: dir, Debounce: 50 * time.Millisecond, Poll: 100 * time.Millisecond})
			if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
				t.Fatalf("umount: %v: %s", err, out)
			}
			testutil.Tmpfs(t, dir, "1m")
			if err := tc.publish(dir, 1); err != nil {
				t.Fatal(err)
			}
			h.settle(time.Second) // the remount found, whatever it triggered
			if err := tc.publish(dir, 2); err != nil {
				t.Fatal(err)
			}
			h.expect("a change in the remounted dir")
		})
	}
}

// A plain-mode file whose writer pauses longer than the quiet period,
// its descriptor still open, is not read until the writer closes it: the
// part written so far may end at a line boundary and parse, and the
// routes past the cut were deleted until the rest arrived.
func TestPlainWaitsForAFileStillOpenForWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "route.yaml")
	if err := os.WriteFile(file, []byte("generation: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A resync every 100 ms: one that read the file meanwhile took it
	// half written (the deletion guard then applied its drops).
	var settling atomic.Bool
	h := start(t, Options{Dir: dir, Mode: snapshot.ModePlain, Debounce: 50 * time.Millisecond, Resync: 100 * time.Millisecond, Settling: &settling})
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("generation: 1\n"); err != nil {
		t.Fatal(err)
	}
	// A resync may have fired before the write was seen; none after.
	h.settle(40 * time.Millisecond)
	h.expectNone(time.Second, "a write whose writer still holds the file")
	if !settling.Load() {
		t.Error("not settling while the writer holds the file: a requested resync would read it half written")
	}
	if _, err := f.WriteString("more: 1\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The close is no event fsnotify passes on: the hold is looked at
	// again each quiet period.
	h.expect("the writer closed the file")
	if settling.Load() {
		t.Error("still settling after the burst triggered: a requested resync would wait for the next change")
	}
}

// A file the snapshot does not read (a log another process keeps open in
// the tree) does not hold a change back.
func TestPlainDoesNotWaitForOtherFilesWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "out.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	h := start(t, Options{Dir: dir, Mode: snapshot.ModePlain, Debounce: 50 * time.Millisecond})
	if _, err := log.WriteString("still logging\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "route.yaml"), []byte("generation: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.got:
	case <-time.After(5 * time.Second):
		t.Fatal("a change waited for a log file's writer")
	}
}

// openForWriting tells a file some process holds open for writing from
// one nobody does.
func TestOpenForWriting(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(file, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if open, err := openForWriting(file); open || err != nil {
		t.Fatalf("a closed file: open for writing %v, %v", open, err)
	}
	r, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if open, err := openForWriting(file); open || err != nil {
		t.Fatalf("a file open for reading: open for writing %v, %v", open, err)
	}
	// Another process, as an editor or scp would be.
	cmd := exec.Command("sh", "-c", "exec 3>>\"$1\"; exec sleep 30", "sh", file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(patience)
	for open, _ := openForWriting(file); !open; open, _ = openForWriting(file) {
		if time.Now().After(deadline) {
			t.Fatal("a file another process holds open for writing does not read as such")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if open, err := openForWriting(file); open || err != nil {
		t.Fatalf("after its writer exited: open for writing %v, %v", open, err)
	}
}

// A link created before its target (a "current -> release-N" publisher
// that links first): the target's appearance changes no entry of the
// link's parent, so only the poll sees it. It waited for the resync.
func TestLinkTargetCreatedAfterTheLinkTriggers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	g, h := watchGitSync(t, root)
	h.settle(300 * time.Millisecond)
	swapLink(t, "release-2", g.Link())
	h.expect("the link pointed nowhere")
	h.settle(1500 * time.Millisecond)
	if err := os.MkdirAll(filepath.Join(root, "release-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "release-2", "a.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.expect("the link's target created")
}

// The config dir's parent reached through a symlink that moves (a
// release directory switched): the parent's watch holds on to the old
// one, and every later swap waited for the resync.
func TestParentLinkMovedTriggers(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mk := func(name string) *publish.GitSync {
		root := filepath.Join(base, name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		g := publish.NewGitSync(root, "config")
		if err := g.Publish(gen(0)); err != nil {
			t.Fatal(err)
		}
		return g
	}
	mk("a")
	b := mk("b")
	if err := os.Symlink("a", filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	h := start(t, Options{Dir: filepath.Join(base, "alias", "config"), Mode: snapshot.ModeLink})
	h.settle(300 * time.Millisecond)
	swapLink(t, "b", filepath.Join(base, "alias"))
	h.expect("the parent's link moved")
	h.settle(1500 * time.Millisecond)
	// A swap in the new parent is seen.
	if err := b.Publish(gen(1)); err != nil {
		t.Fatal(err)
	}
	h.expect("a swap in the new parent")
}

// swapLink points link at target in one rename, as git-sync swaps its
// link.
func swapLink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// watchGitSync publishes a first generation git-sync's way under root and
// watches its link in link mode.
func watchGitSync(t *testing.T, root string) (*publish.GitSync, *harness) {
	t.Helper()
	g := publish.NewGitSync(root, "current")
	if err := g.Publish(gen(0)); err != nil {
		t.Fatal(err)
	}
	return g, start(t, Options{Dir: g.Link(), Mode: snapshot.ModeLink})
}
