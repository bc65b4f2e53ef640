package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/model"
)

// The saved state reads back as written, and a damaged or hostile one is
// refused rather than served.
func TestLastGoodStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := newLastGoodStore(dir, slog.New(slog.DiscardHandler))
	files := []model.SourceFile{{Path: "a.yaml", Data: []byte("a: 1\n")}, {Path: "sub/b.yaml", Data: []byte("b: 2\n")}}
	anchor := model.SourceFile{Path: "a.yaml", Data: []byte("a: 0\n")}
	req := saveRequest{files: files, anchors: []model.SourceFile{anchor}, material: certgen.Material{
		DefaultCertificate: []byte("pem"), StatsCredentials: model.StatsCredentials{User: "admin", Password: "s3cret"},
		ClientCA:   []byte("client ca"),
		ErrorPages: map[int][]byte{503: []byte("page 503")},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	go s.run(ctx)
	s.save(req)
	cancel()
	<-s.done

	sv, err := s.load()
	if err != nil || sv == nil {
		t.Fatalf("load: %v, %v", sv, err)
	}
	if len(sv.files) != 2 || string(sv.files[1].Data) != "b: 2\n" || len(sv.anchors) != 1 || string(sv.anchors[0].Data) != "a: 0\n" {
		t.Fatalf("files %+v anchors %+v", sv.files, sv.anchors)
	}
	if sv.material == nil || string(sv.material.DefaultCertificate) != "pem" || sv.material.StatsCredentials.Password != "s3cret" ||
		string(sv.material.ClientCA) != "client ca" || string(sv.material.ErrorPages[503]) != "page 503" {
		t.Fatalf("material %+v", sv.material)
	}
	info, err := os.Stat(filepath.Join(dir, lastGoodDir, "objects", contentHash([]byte("admin:s3cret\n"))))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("saved credentials: %v, mode %v", err, info.Mode())
	}

	// Damaged content is refused, and costs only its own entry: the
	// other files keep their last good versions (one bad object threw
	// the whole state away).
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, lastGoodDir, "objects", contentHash(files[0].Data)), []byte("tampered"), 0o600))
	sv, err = s.load()
	if err != nil || len(sv.files) != 1 || sv.files[0].Path != "sub/b.yaml" || len(sv.lost) != 1 ||
		!strings.Contains(sv.lost[0], "a.yaml: saved content") || !strings.Contains(sv.lost[0], "damaged") {
		t.Fatalf("damaged content: %+v, %v", sv, err)
	}
	// So does a missing one; missing TLS material drops the material
	// whole (it is used whole or not at all).
	must(os.Remove(filepath.Join(dir, lastGoodDir, "objects", contentHash([]byte("client ca")))))
	sv, err = s.load()
	if err != nil || len(sv.files) != 1 || sv.material != nil || len(sv.lost) != 2 || !strings.HasPrefix(sv.lost[1], "TLS material: ") {
		t.Fatalf("missing material: %+v, %v", sv, err)
	}
	// An index that cannot be used gives way to its copy; with the copy
	// gone too, the state is unreadable (and was lost whole before).
	must(os.WriteFile(filepath.Join(dir, lastGoodDir, indexFile), []byte(`{"version":2,"files":[`), 0o600))
	if sv, err := s.load(); err != nil || len(sv.files) != 1 || sv.files[0].Path != "sub/b.yaml" {
		t.Fatalf("damaged index: %+v, %v", sv, err)
	}
	must(os.Remove(filepath.Join(dir, lastGoodDir, indexCopyFile)))
	if sv, err := s.load(); err == nil || !strings.Contains(err.Error(), "unexpected end of JSON input") {
		t.Fatalf("damaged index without a copy: %+v, %v", sv, err)
	}
	// An index naming a path instead of a hash is refused.
	must(os.WriteFile(filepath.Join(dir, lastGoodDir, "index.json"), []byte(`{"version":1,"files":[{"path":"x","hash":"../../etc/passwd"}]}`), 0o600))
	if sv, err := s.load(); err != nil || len(sv.files) != 0 || len(sv.lost) != 1 || !strings.Contains(sv.lost[0], "not a content hash") {
		t.Fatalf("hostile index: %+v, %v", sv, err)
	}
}

// An edited file's old versions do not pile up in the saved state: once
// the contents no index names are as many as the named ones, they go. 40
// edits of one file left 40 versions (9.9 MB for a 500 KB file in the
// audit) until a small state disk was full for good.
func TestLastGoodStorePrunesOldVersions(t *testing.T) {
	dir := t.TempDir()
	s := newLastGoodStore(dir, slog.New(slog.DiscardHandler))
	for i := range 40 {
		s.write(saveRequest{files: []model.SourceFile{
			{Path: "routes.yaml", Data: []byte("edit: " + strings.Repeat("x", i) + "\n")},
			{Path: "endpoints.yaml", Data: []byte("same\n")},
		}})
	}
	entries, err := os.ReadDir(filepath.Join(dir, lastGoodDir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 2*2+16+1 {
		t.Fatalf("%d contents saved for an index naming 2", len(entries))
	}
	sv, err := s.load()
	if err != nil || sv == nil || string(sv.files[0].Data) != "edit: "+strings.Repeat("x", 39)+"\n" {
		t.Fatalf("the latest state does not read back: %v, %v", sv, err)
	}
}

// A save that fails (a full or read-only state disk) is reported and tried
// again by itself: it waited for the next accepted change, and the state
// on disk lagged what served meanwhile.
func TestLastGoodStoreRetriesAFailedSave(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, lastGoodDir)
	if err := os.WriteFile(blocker, nil, 0o600); err != nil { // where its directory goes
		t.Fatal(err)
	}
	s := newLastGoodStore(dir, slog.New(slog.DiscardHandler))
	s.retryAfter = 20 * time.Millisecond
	failures := make(chan error, 100)
	s.failed = func(err error) { failures <- err }
	ctx, cancel := context.WithCancel(context.Background())
	go s.run(ctx)
	defer func() { cancel(); <-s.done }()
	s.save(saveRequest{files: []model.SourceFile{{Path: "routes.yaml", Data: []byte("kind: Route\n")}}})
	select {
	case err := <-failures:
		if !strings.Contains(err.Error(), "will retry") {
			t.Errorf("reported %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the failed save was not reported")
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if sv, err := s.load(); err == nil && sv != nil && len(sv.files) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the state was not saved once the disk took it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A copy of the index that cannot be written fails nothing: the index is
// saved, and what it names is kept. Failing the save made its clean-up
// delete the contents the new index named (an audit), and every file
// changed since came back without its last good version.
func TestLastGoodStoreSurvivesAnUnwritableIndexCopy(t *testing.T) {
	dir := t.TempDir()
	s := newLastGoodStore(dir, slog.New(slog.DiscardHandler))
	if err := s.write(saveRequest{files: []model.SourceFile{{Path: "a.yaml", Data: []byte("first\n")}}}); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, lastGoodDir, indexCopyFile)
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(blocker, "inside"), 0o700); err != nil { // no rename lands on it
		t.Fatal(err)
	}
	if err := s.write(saveRequest{files: []model.SourceFile{{Path: "a.yaml", Data: []byte("second\n")}}}); err != nil {
		t.Fatalf("the save failed with its copy: %v", err)
	}
	sv, err := s.load()
	if err != nil || sv == nil || len(sv.files) != 1 || string(sv.files[0].Data) != "second\n" || len(sv.lost) != 0 {
		t.Fatalf("load after the copy failed: %+v, %v", sv, err)
	}
	if _, err := os.Lstat(blocker); err == nil {
		t.Error("the copy that could not be written is still there, to bring an older state back")
	}
}

// A copy of the index older than the index (a version that keeps no copy
// updated the index alone: a downgrade) still serves when the index
// cannot, but the log says it may bring back a state from before.
func TestLastGoodStoreSaysWhenItsCopyIsOlder(t *testing.T) {
	dir := t.TempDir()
	var logged strings.Builder
	s := newLastGoodStore(dir, slog.New(slog.NewTextHandler(&logged, nil)))
	if err := s.write(saveRequest{files: []model.SourceFile{{Path: "a.yaml", Data: []byte("first\n")}}}); err != nil {
		t.Fatal(err)
	}
	index, cp := filepath.Join(dir, lastGoodDir, indexFile), filepath.Join(dir, lastGoodDir, indexCopyFile)
	if err := os.WriteFile(index, []byte(`{"version":2,"files":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	if sv, err := s.load(); err != nil || sv == nil || len(sv.files) != 1 || strings.Contains(logged.String(), "older than the index") {
		t.Fatalf("a copy as old as the index: %+v, %v; log:\n%s", sv, err, logged.String())
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(cp, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	if sv, err := s.load(); err != nil || sv == nil || len(sv.files) != 1 || !strings.Contains(logged.String(), "older than the index") {
		t.Fatalf("a copy an hour older: %+v, %v; log:\n%s", sv, err, logged.String())
	}
}
