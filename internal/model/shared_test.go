package model

import (
	"fmt"
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
	// The file of routes read again with one route changed: the others
	// keep their memos, so they are still shared.
	moved := []SourceFile{{Path: "routes.yaml", Data: []byte(strings.Replace(routes, "host: r2.example.com", "host: r2.example.org", 1))}, files("10.0.0.3")[1]}
	again := l.Load(moved).Desired
	if len(again.Routes) != 3 || again.Routes[2].Host != "r2.example.org" {
		t.Fatalf("after the move: %d routes, r2 on %q", len(again.Routes), again.Routes[len(again.Routes)-1].Host)
	}
	for i := range 3 {
		if shared, want := again.Routes[i] == after.Routes[i], i != 2; shared != want {
			t.Errorf("after r2 moved, route r%d shared: %v, want %v", i, shared, want)
		}
	}
	// Admission from scratch shares nothing with the loader's results.
	if fresh := NewLoader().Load(files("10.0.0.3")).Desired; fresh.Routes[0] == after.Routes[0] {
		t.Error("two loaders returned the same route")
	}
}
