package daemon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/testutil"
)

func TestBundleDirWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	d := newBundleDir(dir)
	b := &render.Bundle{Files: []render.File{
		{Name: "haproxy.cfg", Data: []byte("global\n"), Mode: 0o644},
		{Name: "certs/a.pem", Data: []byte("key"), Mode: 0o600},
	}}
	if n, err := d.write(b); err != nil || n != 2 {
		t.Fatalf("first write: changed=%d err=%v, want 2 files", n, err)
	}
	if n, err := d.write(b); err != nil || n != 0 {
		t.Fatalf("same bundle again: changed=%d err=%v, want 0", n, err)
	}
	st, err := os.Stat(filepath.Join(dir, "certs/a.pem"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v, %v; want 0600", st.Mode().Perm(), err)
	}
	// haproxy.cfg in parts, as Render makes it: same content, no write;
	// one part changed, the file is rewritten whole.
	b.Files[0] = render.File{Name: "haproxy.cfg", Parts: [][]byte{[]byte("glo"), []byte("bal\n")}, Mode: 0o644}
	if n, err := d.write(b); err != nil || n != 0 {
		t.Fatalf("same content in parts: changed=%d err=%v, want 0", n, err)
	}
	b.Files[0].Parts = [][]byte{[]byte("global\n"), []byte("\nbackend b\n")}
	if n, err := d.write(b); err != nil || n != 1 {
		t.Fatalf("a changed part: changed=%d err=%v, want 1", n, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg")); err != nil || string(got) != "global\n\nbackend b\n" {
		t.Fatalf("haproxy.cfg = %q, %v", got, err)
	}
	b.Files = b.Files[:1]
	if n, err := d.write(b); err != nil || n != 1 {
		t.Fatalf("dropping a file: changed=%d err=%v, want 1", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "certs/a.pem")); !os.IsNotExist(err) {
		t.Fatalf("stale certificate not removed: %v", err)
	}
}

func TestSafeName(t *testing.T) {
	for _, bad := range []string{"", "/etc/passwd", "../x", "certs/../../x", "a//b", `a\b`} {
		if safeName(bad) == nil {
			t.Errorf("safeName(%q) accepted", bad)
		}
	}
	if err := safeName("certs/default.pem"); err != nil {
		t.Errorf("safeName rejected a good name: %v", err)
	}
}

// Files left by an earlier run that the bundle does not have are removed
// on the first write.
func TestBundleDirRemovesLeftovers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "certs", "gone.pem")
	if err := os.WriteFile(old, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := newBundleDir(dir)
	if _, err := d.write(&render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte("g"), Mode: 0o644}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("leftover from an earlier run not removed: %v", err)
	}
}

// The runtime path stages a bundle before its commands and commits it
// after: until the commit the directory holds the previous bundle whole,
// a newer staging replaces an older one (its temporary files go), and the
// commit leaves exactly the newest bundle.
func TestBundleDirStageThenCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	d := newBundleDir(dir)
	cfg := func(s string) *render.Bundle {
		return &render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte(s), Mode: 0o644}}}
	}
	if _, err := d.write(cfg("one\n")); err != nil {
		t.Fatal(err)
	}
	for _, next := range []string{"two\n", "three\n"} {
		if err := d.stage(cfg(next)); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(dir, "haproxy.cfg")); got != "one\n" {
			t.Fatalf("haproxy.cfg = %q before the commit, want the previous bundle", got)
		}
		if !d.pending() {
			t.Fatal("a staged bundle is not pending")
		}
		if temps := tempFiles(t, dir); len(temps) != 1 {
			t.Fatalf("temporary files after staging %q: %v, want one", next, temps)
		}
	}
	if n, err := d.commit(); err != nil || n != 1 {
		t.Fatalf("commit: changed=%d err=%v, want 1", n, err)
	}
	if got := readFile(t, filepath.Join(dir, "haproxy.cfg")); got != "three\n" {
		t.Fatalf("haproxy.cfg = %q after the commit, want the newest staged bundle", got)
	}
	if temps := tempFiles(t, dir); len(temps) != 0 || d.pending() {
		t.Fatalf("after the commit: temporary files %v, pending %v", temps, d.pending())
	}
	if n, err := d.write(cfg("three\n")); err != nil || n != 0 {
		t.Fatalf("committed content written again: changed=%d err=%v", n, err)
	}
}

// A staging that fails (here on a name that would leave the directory,
// after a file was staged) leaves the
// earlier staged bundle in place, so the commit still brings the directory
// to what HAProxy was told.
func TestBundleDirFailedStageKeepsEarlier(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	d := newBundleDir(dir)
	cfg := &render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte("one\n"), Mode: 0o644}}}
	if _, err := d.write(cfg); err != nil {
		t.Fatal(err)
	}
	if err := d.stage(&render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte("two\n"), Mode: 0o644}}}); err != nil {
		t.Fatal(err)
	}
	bad := &render.Bundle{Files: []render.File{
		{Name: "haproxy.cfg", Data: []byte("three\n"), Mode: 0o644},
		{Name: "../a.pem", Data: []byte("key"), Mode: 0o600},
	}}
	if err := d.stage(bad); err == nil {
		t.Fatal("staging a name that leaves the directory succeeded")
	}
	if _, err := d.commit(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "haproxy.cfg")); got != "two\n" {
		t.Fatalf("haproxy.cfg = %q, want the bundle staged before the failure", got)
	}
	if temps := tempFiles(t, dir); len(temps) != 0 {
		t.Fatalf("temporary files left: %v", temps)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tempFiles lists the staged temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A staged file's space is taken at once and its content written at the
// commit: until then its name holds the old content; after, the new,
// whole, with its mode, however the content is split into parts.
func TestBundleDirStagedContentLandsWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	d := newBundleDir(dir)
	old := &render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte("old\n"), Mode: 0o600}}}
	if _, err := d.write(old); err != nil {
		t.Fatal(err)
	}
	var parts [][]byte
	var want strings.Builder
	for i := range 5000 {
		p := []byte(fmt.Sprintf("\nbackend be%d\n  server s 127.0.0.1:%d\n", i, 1024+i))
		parts = append(parts, p)
		want.Write(p)
	}
	if err := d.stage(&render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Parts: parts, Mode: 0o600}}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "haproxy.cfg")); got != "old\n" {
		t.Fatalf("haproxy.cfg before the commit: %d bytes, want the old content", len(got))
	}
	temps := tempFiles(t, dir)
	if len(temps) != 1 {
		t.Fatalf("temporary files: %v", temps)
	}
	// Its size taken (reserved, or written where the file system cannot
	// reserve): a full disk shows before the change is applied.
	if fi, err := os.Stat(temps[0]); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != int64(want.Len()) {
		t.Fatalf("staged file: %v, %v; want mode 0600 and %d bytes from the start", fi, err, want.Len())
	}
	if _, err := d.commit(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if got := readFile(t, path); got != want.String() {
		t.Fatalf("haproxy.cfg after the commit: %d bytes, want %d", len(got), want.Len())
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("haproxy.cfg: %v, %v; want mode 0600", fi, err)
	}
	if temps := tempFiles(t, dir); len(temps) != 0 {
		t.Fatalf("temporary files left: %v", temps)
	}
}

// On a full disk the staging fails, before anything is applied, and
// leaves neither a temporary file nor a changed name behind. A 64 kB
// tmpfs stands for the full disk (root only: CI runs as root).
func TestBundleDirFullDiskFailsTheStaging(t *testing.T) {
	mnt := t.TempDir()
	testutil.Tmpfs(t, mnt, "64k")
	dir := filepath.Join(mnt, "live")
	d := newBundleDir(dir)
	if _, err := d.write(&render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte("old\n"), Mode: 0o600}}}); err != nil {
		t.Fatal(err)
	}
	big := &render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: make([]byte, 1<<20), Mode: 0o600}}}
	err := d.stage(big)
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("staging 1 MB on a 64 kB file system: %v, want no space left", err)
	}
	if temps := tempFiles(t, dir); len(temps) != 0 || d.pending() {
		t.Fatalf("after the failed staging: temporary files %v, pending %v", temps, d.pending())
	}
	if got := readFile(t, filepath.Join(dir, "haproxy.cfg")); got != "old\n" {
		t.Fatalf("haproxy.cfg = %q, want the old content", got)
	}
}

// A restart finds the files its last run wrote: those equal to the new
// bundle are not written again (on a full disk a restart with the same
// state still starts), the others are, and drift is found again after.
func TestBundleDirKeepsWhatTheLastRunWrote(t *testing.T) {
	dir := t.TempDir()
	b := &render.Bundle{Files: []render.File{
		{Name: "haproxy.cfg", Data: []byte("cfg\n"), Mode: 0o644},
		{Name: "maps/http.map", Data: []byte("a b\n"), Mode: 0o644},
		{Name: "certs/k.pem", Data: []byte("key\n"), Mode: 0o600},
	}}
	if _, err := newBundleDir(dir).write(b); err != nil {
		t.Fatal(err)
	}
	next := &render.Bundle{Files: slices.Clone(b.Files)}
	next.Files[1] = render.File{Name: "maps/http.map", Data: []byte("a c\n"), Mode: 0o644}
	d := newBundleDir(dir)
	if err := d.stage(next); err != nil {
		t.Fatal(err)
	}
	var staged []string
	for name := range d.staged.temps {
		staged = append(staged, name)
	}
	if !slices.Equal(staged, []string{"maps/http.map"}) {
		t.Fatalf("a restart stages %v, want only the changed maps/http.map", staged)
	}
	if _, err := d.commit(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "certs", "k.pem")); err != nil {
		t.Fatal(err)
	}
	if !d.forgetDrift() {
		t.Fatal("a removed file is not found as drift")
	}
	if _, err := d.write(next); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "certs", "k.pem")); err != nil || string(data) != "key\n" {
		t.Fatalf("the removed file is not written again: %q, %v", data, err)
	}
}

// TestBundleDirReplacesWhatStandsWhereItsDirectoriesBelong: a file where
// the bundle directory, or one of its subdirectories, belongs would stop
// every write (and a restart of HAProxy from the live files) for good.
func TestBundleDirReplacesWhatStandsWhereItsDirectoriesBelong(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "live")
	b := &render.Bundle{Files: []render.File{
		{Name: "haproxy.cfg", Data: []byte("cfg\n"), Mode: 0o644},
		{Name: "maps/http.map", Data: []byte("a b\n"), Mode: 0o644},
	}}
	d := newBundleDir(dir)
	d.recheck = true
	if _, err := d.write(b); err != nil {
		t.Fatal(err)
	}
	for _, blocked := range []string{dir, filepath.Join(dir, "maps")} {
		if err := os.RemoveAll(blocked); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(blocked, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := d.write(b); err != nil {
			t.Fatalf("%s a file: %v", blocked, err)
		}
		for _, f := range b.Files {
			if data, err := os.ReadFile(filepath.Join(dir, f.Name)); err != nil || !bytes.Equal(data, f.Data) {
				t.Errorf("%s a file: %s holds %q, %v", blocked, f.Name, data, err)
			}
		}
	}
}

// A write of the bundle that keeps failing fails alike each time: the
// error names the file, not the temporary file beside it, whose random
// name made each retry a new error in status' history (T51).
func TestBundleDirWriteFailsAlikeEachTime(t *testing.T) {
	dir := t.TempDir()
	// A directory where haproxy.cfg belongs, with something in it: the
	// rename over it fails.
	if err := os.MkdirAll(filepath.Join(dir, "haproxy.cfg", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for range 2 {
		_, err := newBundleDir(dir).write(&render.Bundle{Files: []render.File{{Name: "haproxy.cfg", Data: []byte("global\n"), Mode: 0o644}}})
		if err == nil {
			t.Fatal("the write over a directory succeeded")
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || strings.Contains(msgs[0], ".tmp-") || !strings.Contains(msgs[0], filepath.Join(dir, "haproxy.cfg")) {
		t.Errorf("errors %q and %q: want the same, naming haproxy.cfg and no temporary file", msgs[0], msgs[1])
	}
}
