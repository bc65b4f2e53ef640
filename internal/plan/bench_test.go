package plan

import (
	"fmt"
	"slices"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// BenchmarkCompute10kRoutesOneEndpoint is the common case at scale: 10,000
// routes with two endpoints each, one endpoint replaced; every route of
// the two states is a copy of its own, as after a fresh load.
func BenchmarkCompute10kRoutesOneEndpoint(b *testing.B) {
	benchmarkCompute10k(b, false)
}

// BenchmarkCompute10kRoutesOneEndpointShared is the same change as the
// daemon computes it: the loader's unchanged routes are the very pointers
// the applied state holds.
func BenchmarkCompute10kRoutesOneEndpointShared(b *testing.B) {
	benchmarkCompute10k(b, true)
}

func benchmarkCompute10k(b *testing.B, shared bool) {
	build := func(changed bool) *model.Desired {
		d := &model.Desired{Router: model.DefaultSettings()}
		for i := range 10000 {
			ip := fmt.Sprintf("10.%d.%d.1", i/250, i%250)
			r := httpRoute(fmt.Sprintf("r%05d", i), fmt.Sprintf("r%05d.example.com", i),
				svc("s", 100, srv(ip, 8080, 128), srv(ip, 8081, 128)))
			if changed && i == 5000 {
				r.Services[0].Servers[1] = srv(ip, 8082, 128)
			}
			d.Routes = append(d.Routes, &r)
		}
		return d
	}
	stateFor := func(d *model.Desired) State {
		in := render.Input{Desired: d, Dir: testDir, RunDir: testRunDir, DefaultCertificate: []byte(testDefaultCert)}
		bundle, err := render.Render(in)
		if err != nil {
			b.Fatal(err)
		}
		return State{Desired: d, Bundle: bundle, Input: in}
	}
	old, cur := build(false), build(true)
	if shared {
		routes := slices.Clone(old.Routes)
		routes[5000] = cur.Routes[5000]
		cur.Routes = routes
	}
	applied, desired := stateFor(old), stateFor(cur)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := Compute(applied, desired)
		if p.Reload || len(p.Ops) != 3 {
			b.Fatalf("plan: reload %v, %d ops; want 3 runtime ops", p.Reload, len(p.Ops))
		}
	}
}
