package render

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// A cached render edits the last maps for a route added, deleted or moved,
// and the maps equal those built afresh; where an edit could not be exact
// (a weak entry, a key two routes claim) the maps are built afresh, and
// equal them too.
func TestMapsEditedMatchFullBuild(t *testing.T) {
	tc := loadTestCerts(t)
	plain := func(i int, host, path string) model.AdmittedRoute {
		return route("a", fmt.Sprintf("r%03d", i), host, path, svc("s", 100, "10.0.0.1:8080"))
	}
	secure := route("a", "secure", "secure.example.com", "", svc("s", 100, "10.0.0.1:8080"),
		edge(model.InsecurePolicyRedirect, model.RouteTLS{}))
	through := route("a", "through", "through.example.com", "", svc("s", 100, "10.0.0.1:8443"),
		func(r *model.AdmittedRoute) { r.Termination = model.TerminationPassthrough })
	closed := route("a", "closed", "secure.example.com", "/closed/", svc("s", 100, "10.0.0.1:8080"),
		edge(model.InsecurePolicyNone, model.RouteTLS{}))
	base := []model.AdmittedRoute{secure, through}
	for i := range 30 {
		base = append(base, plain(2*i, fmt.Sprintf("h%03d.example.com", 2*i), ""))
	}
	// Admission hands routes over in key order; so do the steps.
	with := func(rs []model.AdmittedRoute, more ...model.AdmittedRoute) []model.AdmittedRoute {
		out := append(slices.Clone(rs), more...)
		slices.SortFunc(out, func(a, b model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
		return out
	}
	base = with(base)
	without := func(rs []model.AdmittedRoute, name string) []model.AdmittedRoute {
		return slices.DeleteFunc(slices.Clone(rs), func(r model.AdmittedRoute) bool { return r.Key.Name == name })
	}
	moved := with(without(base, "r010"), plain(10, "moved.example.com", ""))
	twice := with(base, plain(7, "h004.example.com", "")) // r004's key, claimed again by r007
	steps := []struct {
		what   string
		routes []model.AdmittedRoute
		edited bool
	}{
		{"start", base, false},
		{"a route added", with(base, plain(1, "h001.example.com", "")), true},
		{"it is deleted", base, true},
		{"a route moved to a path of another host", moved, true},
		{"back", base, true},
		{"a route whose path makes a weak entry", with(base, plain(3, "h003.example.com", "/p")), false},
		{"back", base, false}, // the weak entry goes
		{"a second route claims a key", twice, false},
		{"the first claimant deleted", without(twice, "r004"), false},
		{"the key passes back to it", base, true},
		{"one route's redirect policy changes", with(without(base, "secure"), route("a", "secure", "secure.example.com", "",
			svc("s", 100, "10.0.0.1:8080"), edge(model.InsecurePolicyAllow, model.RouteTLS{}))), true},
		{"back", base, true},
		// A None path under the redirecting root: its HTTP map entries
		// depend on the root's, so the map is built afresh while it has
		// them, and they go when the root stops redirecting.
		{"a None path under a root that redirects", with(base, closed), false},
		{"the root allows HTTP", with(without(base, "secure"), closed, route("a", "secure", "secure.example.com", "",
			svc("s", 100, "10.0.0.1:8080"), edge(model.InsecurePolicyAllow, model.RouteTLS{}))), false},
		{"back to redirecting", with(base, closed), false},
		{"the None path deleted", base, false},
		{"a route added after", with(base, plain(1, "h001.example.com", "")), true},
	}
	cache := &Cache{}
	var last *Bundle
	for _, s := range steps {
		in := Input{Desired: desired(model.DefaultSettings(), s.routes...), Dir: goldenDir, RunDir: goldenRunDir, DefaultCertificate: []byte(tc.Default)}
		fresh, err := Render(in)
		if err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		in.Cache = cache
		got, err := Render(in)
		if err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if !reflect.DeepEqual(got.Maps, fresh.Maps) {
			t.Fatalf("%s: the cached render's maps\n%v\nwant, as built afresh,\n%v", s.what, got.Maps, fresh.Maps)
		}
		for i := range got.Files {
			if !got.Files[i].Equal(&fresh.Files[i]) {
				t.Fatalf("%s: %s differs from a render afresh", s.what, got.Files[i].Name)
			}
		}
		// An edit keeps the maps it did not touch; a build makes them
		// anew. The SNI map holds only the passthrough route, which no
		// step changes.
		if last != nil {
			sni := slices.IndexFunc(got.Maps, func(m Map) bool { return m.Name == SNIPassthroughMap })
			if kept := &got.Maps[sni].Entries[0] == &last.Maps[sni].Entries[0]; kept != s.edited {
				t.Errorf("%s: maps edited %v, want %v", s.what, kept, s.edited)
			}
		}
		last = got
	}
}
