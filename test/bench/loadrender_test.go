package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// realisticTree is n routes, every fourth edge-terminated, each service
// with two ready endpoints on distinct pod IPs: the input of a cold start.
func realisticTree(n int) *tree {
	t := newTree("bench", n, func(i int) []endpoint {
		return []endpoint{
			{ip: fmt.Sprintf("10.%d.%d.1", i/256, i%256), port: 8080},
			{ip: fmt.Sprintf("10.%d.%d.2", i/256, i%256), port: 8080},
		}
	})
	t.edgeEvery = 4
	return t
}

func defaultCert(tb testing.TB) []byte {
	tb.Helper()
	cert, key, err := certgen.SelfSigned(time.Now(), []string{"bench.test"})
	if err != nil {
		tb.Fatal(err)
	}
	return append(cert, key...)
}

// loadRender is the cold path from bytes to bundle: a fresh loader (every
// file hashed and parsed), admission, then render.
func loadRender(files []model.SourceFile, cert []byte) (model.Result, *render.Bundle, error) {
	res := model.NewLoader().Load(files)
	if res.Desired == nil {
		return res, nil, fmt.Errorf("no desired state")
	}
	b, err := render.Render(render.Input{
		Desired: res.Desired, Dir: "/var/lib/haroute/live", RunDir: "/run/haroute",
		DefaultCertificate: cert,
	})
	return res, b, err
}

// The generator writes what the loader admits in full, so the benchmarks
// and the load harness measure real routes, not rejected ones.
func TestGeneratedTreeAdmits(t *testing.T) {
	tr := realisticTree(250)
	files := tr.sourceFiles()
	if got, want := len(files), 6; got != want {
		t.Fatalf("%d files, want %d (3 route files, 3 endpoints files)", got, want)
	}
	res, b, err := loadRender(files, defaultCert(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Diagnostics {
		if d.Severity >= model.SeverityWarning {
			t.Errorf("diagnostic: %s", d)
		}
	}
	if got := len(res.Desired.Routes); got != 250 {
		t.Fatalf("%d admitted routes, want 250", got)
	}
	for _, i := range []int{0, 99, 100, 249} {
		n, ok := routeServers(res.Desired, tr.key(i))
		if !ok || n != 2 {
			t.Errorf("route %d: %d servers (admitted %v), want 2", i, n, ok)
		}
	}
	if _, ok := routeServers(res.Desired, tr.key(250)); ok {
		t.Errorf("route 250 found, but only 0..249 exist")
	}
	if b.File(render.ConfigFile) == nil {
		t.Fatalf("bundle has no %s", render.ConfigFile)
	}
}

func benchmarkLoadRender(b *testing.B, n int) {
	files := realisticTree(n).sourceFiles()
	size := 0
	for _, f := range files {
		size += len(f.Data)
	}
	cert := defaultCert(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		res, bundle, err := loadRender(files, cert)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Desired.Routes) != n || len(bundle.Files) == 0 {
			b.Fatalf("%d routes admitted, %d files rendered", len(res.Desired.Routes), len(bundle.Files))
		}
	}
}

// BenchmarkLoadRender1k and BenchmarkLoadRender10k measure a cold start:
// generated YAML (100 routes or Endpoints per file) to a rendered bundle.
// Target at 10k: ≤ 300 ms.
func BenchmarkLoadRender1k(b *testing.B)  { benchmarkLoadRender(b, 1000) }
func BenchmarkLoadRender10k(b *testing.B) { benchmarkLoadRender(b, 10000) }
