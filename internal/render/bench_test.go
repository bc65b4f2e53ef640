package render

import (
	"fmt"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// bench10k builds 10,000 routes with 3 endpoints each, in namespace/name
// order as admission produces them: a mix of plain HTTP, path-based and
// edge routes, with annotations on some.
func bench10k(tb testing.TB) Input {
	tc := loadTestCerts(tb)
	routes := make([]model.AdmittedRoute, 0, 10000)
	for i := range 10000 {
		ns := fmt.Sprintf("ns%03d", i/100)
		name := fmt.Sprintf("route%05d", i)
		host := fmt.Sprintf("app%05d.%s.example.com", i, ns)
		path := ""
		if i%4 == 1 {
			path = fmt.Sprintf("/api/v%d", i%7)
		}
		opts := []func(*model.AdmittedRoute){svc("s", 100,
			fmt.Sprintf("10.%d.%d.1:8080", i/256%256, i%256),
			fmt.Sprintf("10.%d.%d.2:8080", i/256%256, i%256),
			fmt.Sprintf("10.%d.%d.3:8080", i/256%256, i%256))}
		switch i % 5 {
		case 2:
			opts = append(opts, edge(model.InsecurePolicyRedirect, model.RouteTLS{Certificate: tc.Cert, Key: tc.Key}))
		case 3:
			opts = append(opts, backendSettings(func(b *model.BackendSettings) {
				b.HSTSHeader = "max-age=31536000"
				b.IPAllowlist = "10.0.0.0/8 192.168.0.0/16"
				b.RateLimit = model.RateLimit{RateHTTP: 100}
			}))
		}
		routes = append(routes, route(ns, name, host, path, opts...))
	}
	return Input{Desired: desired(model.DefaultSettings(), routes...), Dir: goldenDir, RunDir: goldenRunDir, DefaultCertificate: []byte(tc.Default)}
}

func BenchmarkRender10k(b *testing.B) {
	in := bench10k(b)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		out, err := Render(in)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out.File(ConfigFile).Bytes())
	}
	b.ReportMetric(float64(size)/1e6, "MB-cfg")
}
