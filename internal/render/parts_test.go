package render

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// Backends are rendered in parts on several goroutines; the config must
// read as if they had been written one after another, for any number of
// routes around the part size.
func TestBackendsInPartsKeepOrder(t *testing.T) {
	for _, n := range []int{0, 1, backendsPerPart - 1, backendsPerPart, backendsPerPart + 1, 2*backendsPerPart + 7} {
		in := bench10k(t)
		in.Desired.Routes = in.Desired.Routes[:n]
		b := mustRender(t, in)

		var want cfgWriter
		for i := range in.Desired.Routes {
			want.line("")
			backend(&want, &in.Desired.Routes[i], in)
		}
		full := b.File(ConfigFile).Bytes()
		if !bytes.HasSuffix(full, want.full) || !bytes.HasSuffix(b.Skeleton, want.skel) {
			t.Errorf("%d routes: backends differ from one-by-one rendering", n)
		}
		if got := bytes.Count(full, []byte("\n# route ")); got != n {
			t.Errorf("%d routes: %d route backends rendered", n, got)
		}
		var stripped []string
		for _, l := range strings.SplitAfter(string(full), "\n") {
			if !strings.HasPrefix(l, "  server ep_") {
				stripped = append(stripped, l)
			}
		}
		if strings.Join(stripped, "") != string(b.Skeleton) {
			t.Errorf("%d routes: skeleton is not the config minus route server lines", n)
		}
	}
}

// RouteServers keeps the first server of each name across services, with
// and without the map it uses for routes with many servers.
func TestRouteServersDuplicates(t *testing.T) {
	eps := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("10.0.0.%d:80", i))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		a, b  []string
		names []string
	}{
		{"small", eps(1, 4), eps(2, 6), []string{"1", "2", "3", "4", "5"}},
		{"large", eps(1, 20), eps(10, 30), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := route("ns", "r", "r.example.com", "", svc("a", 100, tc.a...), svc("b", 50, tc.b...))
			got := RouteServers(r)
			// The reference: first of each name, in service order.
			seen := map[model.ServerName]bool{}
			var want []model.Server
			for _, s := range r.Servers() {
				if !seen[s.Name] {
					seen[s.Name] = true
					want = append(want, s)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("RouteServers = %v, want %v", got, want)
			}
			for i, suffix := range tc.names {
				if string(got[i].Name) != "ep_10.0.0."+suffix+"_80" {
					t.Errorf("server %d = %s, want ep_10.0.0.%s_80", i, got[i].Name, suffix)
				}
			}
		})
	}
	if got := RouteServers(route("ns", "r", "r.example.com", "", svc("a", 100))); got != nil {
		t.Errorf("RouteServers without servers = %v, want nil", got)
	}
}
