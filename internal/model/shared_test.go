package model

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Desired shares unchanged routes from load to load: a route whose file,
// endpoints and settings did not change is the very pointer the last
// load returned, a route that changed is a new one, and the last load's
// routes are left as they were (render caches and plan diffs hold them).
func TestUnchangedRoutesAreShared(t *testing.T) {
	routes := ""
	for i := range 3 {
		routes += fmt.Sprintf("---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r%d\n  namespace: ns\nspec:\n  host: r%d.example.com\n  to: {name: s%d}\n", i, i, i)
	}
	endpoints := func(ip string) string {
		out := ""
		for i := range 3 {
			addr := "10.0.0.1"
			if i == 1 {
				addr = ip
			}
			out += fmt.Sprintf("---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: s%d\n  namespace: ns\nsubsets:\n- addresses: [{ip: %s}]\n  ports: [{port: 8080}]\n", i, addr)
		}
		return out
	}
	files := func(ip string) []SourceFile {
		return []SourceFile{{Path: "routes.yaml", Data: []byte(routes)}, {Path: "endpoints.yaml", Data: []byte(endpoints(ip))}}
	}
	l := NewLoader()
	before := l.Load(files("10.0.0.2")).Desired
	after := l.Load(files("10.0.0.3")).Desired
	if len(before.Routes) != 3 || len(after.Routes) != 3 {
		t.Fatalf("%d and %d routes admitted, want 3", len(before.Routes), len(after.Routes))
	}
	for i := range 3 {
		shared := before.Routes[i] == after.Routes[i]
		if want := i != 1; shared != want {
			t.Errorf("route r%d shared between loads: %v, want %v", i, shared, want)
		}
	}
	if got := before.Routes[1].Services[0].Servers[0].Address; got != "10.0.0.2" {
		t.Errorf("the last load's r1 now serves %s: a later load changed it", got)
	}
	if got := after.Routes[1].Services[0].Servers[0].Address; got != "10.0.0.3" {
		t.Errorf("r1 serves %s, want the new endpoint 10.0.0.3", got)
	}
	// Admission from scratch shares nothing with the loader's results.
	if fresh := NewLoader().Load(files("10.0.0.3")).Desired; fresh.Routes[0] == after.Routes[0] {
		t.Error("two loaders returned the same route")
	}
}

// A file read again keeps the memos of its unchanged services (see
// fileMemo.carryOver), and decoded strings share their file's text: the
// memos must not keep older versions of the text alive. A file of 20
// services, each changing in turn, would otherwise keep 20 versions of
// its text: each memo the one it was made from.
func TestCarriedMemosDoNotKeepOldText(t *testing.T) {
	const services = 20
	pad := strings.Repeat("x", 20<<10) // 400 kB of text per version
	version := func(v int) []SourceFile {
		var b strings.Builder
		for i := range services {
			ip := "10.0.0.1"
			if i == v%services {
				ip = fmt.Sprintf("10.0.%d.%d", v/250, v%250)
			}
			// Block style: the fast parser, whose strings are pieces of
			// the text, reads it (flow style goes to yaml.v3, which
			// copies).
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: s%d\n  namespace: ns\n  annotations:\n    pad: %s\nsubsets:\n- addresses:\n  - ip: %s\n  ports:\n  - name: http\n    port: 8080\n", i, pad, ip)
		}
		return []SourceFile{{Path: "endpoints.yaml", Data: []byte(b.String())}}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	l := NewLoader()
	for v := range 3 {
		l.Load(version(v))
	}
	before := heap()
	for v := 3; v < 3*services; v++ {
		if res := l.Load(version(v)); len(res.Objects.Endpoints) != services || res.Diagnostics.HasErrors(false) {
			t.Fatalf("version %d: %d endpoints, %v", v, len(res.Objects.Endpoints), res.Diagnostics)
		}
	}
	grew := int64(heap()) - int64(before)
	t.Logf("heap grew by %d kB over %d versions", grew>>10, 3*services-3)
	if grew > 2<<20 {
		t.Errorf("the heap grew by %d kB over %d versions of a 400 kB file: old versions are kept", grew>>10, 3*services-3)
	}
	runtime.KeepAlive(l)
}

// refs returns pointers to copies of rs, as Objects holds routes.
func refs(rs ...Route) []*Route {
	out := make([]*Route, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out
}

// eprefs returns pointers to copies of es, as Objects holds Endpoints.
func eprefs(es ...Endpoints) []*Endpoints {
	out := make([]*Endpoints, len(es))
	for i := range es {
		out[i] = &es[i]
	}
	return out
}
