package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// BenchmarkChange10kOneEndpoint measures the per-change path at scale: a
// warm loader over 10k routes, one Endpoints file changed (one endpoint
// of one service replaced), then load, admit and render with a render
// cache, as the daemon does for every generation. Files carry hashes, as
// the snapshot reader supplies them.
func BenchmarkChange10kOneEndpoint(b *testing.B) {
	benchmarkChange(b, func(tr *tree) {
		tr.setEndpoints(5000, []endpoint{{ip: "10.19.136.1", port: 8080}, {ip: "10.19.136.9", port: 8080}})
	})
}

// BenchmarkChange10kRouteAdd is the same for a route added to the tree:
// the file of routes it lands in and the file of its endpoints change.
func BenchmarkChange10kRouteAdd(b *testing.B) {
	benchmarkChange(b, func(tr *tree) {
		tr.addRoute([]endpoint{{ip: "10.19.136.1", port: 8080}})
	})
}

// benchmarkChange alternates between the 10k-route tree and the tree
// after change, loading and rendering each in turn.
func benchmarkChange(b *testing.B, change func(*tree)) {
	tr := realisticTree(10000)
	before := withHashes(tr.sourceFiles())
	change(tr)
	after := withHashes(tr.sourceFiles())
	cert := defaultCert(b)
	l := model.NewLoader()
	l.Load(before)
	cache := &render.Cache{}
	apply := func(files []model.SourceFile) {
		res := l.Load(files)
		_, err := render.Render(render.Input{
			Desired: res.Desired, Dir: "/var/lib/haroute/live", RunDir: "/run/haroute",
			DefaultCertificate: cert, Cache: cache,
		})
		if err != nil || len(res.Desired.Routes) < 10000 {
			b.Fatalf("%d routes admitted, render error %v", len(res.Desired.Routes), err)
		}
	}
	apply(before) // the daemon's cache is warm too: a cold render is not a change
	gens := [2][]model.SourceFile{after, before}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		apply(gens[i%2])
		i++
	}
	// What stays live between changes: the loader's files, objects and
	// memos and the render cache, plus the two trees' file texts the
	// benchmark holds (as the snapshot reader holds the current one).
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
	runtime.KeepAlive(l)
	runtime.KeepAlive(cache)
}

func withHashes(files []model.SourceFile) []model.SourceFile {
	for i := range files {
		sum := sha256.Sum256(files[i].Data)
		files[i].Hash = hex.EncodeToString(sum[:])
	}
	return files
}
