package plan

import (
	"fmt"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// BenchmarkCompute10kRoutesOneEndpoint is the common case at scale: 10,000
// routes with two endpoints each, one endpoint replaced.
func BenchmarkCompute10kRoutesOneEndpoint(b *testing.B) {
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
	applied, desired := stateFor(build(false)), stateFor(build(true))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p := Compute(applied, desired)
		if p.Reload || len(p.Ops) != 3 {
			b.Fatalf("plan: reload %v, %d ops; want 3 runtime ops", p.Reload, len(p.Ops))
		}
	}
}
