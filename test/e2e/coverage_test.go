package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/haroute/haroute/internal/daemon"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/test/publish"
)

// corpusDirs hold the project's compatibility corpus: manifests in the
// shapes real tools write, and cases from OpenShift's own test suites.
var corpusDirs = []string{"../../internal/model/testdata/compat", "../compat/testdata/openshift"}

// corpusDomain is the RouterConfig's domain, for routes without a host.
const corpusDomain = "apps.e2e.test"

// corpusRoute is one Route of the corpus, alone in a file of its own.
type corpusRoute struct {
	from string // file it comes from
	yaml []byte
	key  model.RouteKey
	// services are the services it names, each with the port name its
	// targetPort gives ("" for a number or none).
	services []model.RouteKey
	portName string
}

// endpoints is an Endpoints document for each service cr names, with web
// as its one address and the port name its targetPort asks for (quoted:
// a name may read as a number); nil when it names none.
func (cr corpusRoute) endpoints(web *backend) []byte {
	var eps []string
	for _, svc := range cr.services {
		port := fmt.Sprintf("      - port: %d\n", web.Port)
		if cr.portName != "" {
			port = fmt.Sprintf("      - name: %q\n        port: %d\n", cr.portName, web.Port)
		}
		eps = append(eps, fmt.Sprintf("apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: %s\nsubsets:\n  - addresses:\n      - ip: 127.0.0.1\n    ports:\n%s",
			svc.Name, svc.Namespace, port))
	}
	if len(eps) == 0 {
		return nil
	}
	return []byte(join(eps...))
}

// corpusRoutes returns every Route of the corpus that OpenShift's rules,
// as haroute applies them, admit on its own.
func corpusRoutes(t *testing.T) []corpusRoute {
	var out []corpusRoute
	for _, dir := range corpusDirs {
		entries, err := os.ReadDir(dir)
		must(t, err)
		for _, e := range entries {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
			default:
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			must(t, err)
			for _, node := range routeNodes(t, data) {
				doc, err := yaml.Marshal(node)
				must(t, err)
				if r, ok := admittedAlone(e.Name(), doc); ok {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// routeNodes returns the Route objects of a file, inside Lists too.
func routeNodes(t *testing.T, data []byte) []*yaml.Node {
	var out []*yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			n = n.Content[0]
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		var kind string
		var items *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch n.Content[i].Value {
			case "kind":
				kind = n.Content[i+1].Value
			case "items":
				items = n.Content[i+1]
			}
		}
		switch {
		case kind == "Route":
			out = append(out, n)
		case strings.HasSuffix(kind, "List") && items != nil:
			for _, it := range items.Content {
				walk(it)
			}
		}
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break
		}
		walk(&doc)
	}
	return out
}

// admittedAlone loads one route with haroute's loader and reports it when
// admitted without errors.
func admittedAlone(from string, doc []byte) (corpusRoute, bool) {
	res := model.NewLoader().Load([]model.SourceFile{
		{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  domain: " + corpusDomain + "\n")},
		{Path: "route.yaml", Data: doc},
	})
	if res.Desired == nil || len(res.Desired.Routes) != 1 || res.Diagnostics.HasErrors(false) {
		return corpusRoute{}, false
	}
	ar := res.Desired.Routes[0]
	r := corpusRoute{from: from, yaml: doc, key: ar.Key}
	for _, s := range ar.Services {
		r.services = append(r.services, model.RouteKey{Namespace: ar.Key.Namespace, Name: s.Name})
	}
	if len(res.Objects.Routes) == 1 {
		if p := res.Objects.Routes[0].Spec.Port; p != nil && p.TargetPort.IsString {
			r.portName = p.TargetPort.Str
		}
	}
	return r, true
}

// TestCorpusRoutesAddedWithoutReload measures the pool's coverage: every
// route of the compatibility corpus is added alone to a running router,
// with endpoints for its services, and then deleted; the generation that
// first serves it says whether it took a reload. The figure is logged
// (README "Routes without reloads" quotes it); the test holds the line at
// what the pool covers today.
func TestCorpusRoutesAddedWithoutReload(t *testing.T) {
	routes := corpusRoutes(t)
	if len(routes) < 40 {
		t.Fatalf("only %d corpus routes admitted alone; the corpus shrank or the loader broke", len(routes))
	}
	r := newRouter(t)
	web := startBackend(t, "web")
	w := publish.NewAtomicWriter(r.dir)
	base := func() map[string][]byte {
		return files("router.yaml", r.routerConfig("  domain: "+corpusDomain+"\n"),
			"a.yaml", routeYAML("a", "a.e2e.test", "", "web"),
			"endpoints.yaml", endpointsYAML("web", web))
	}
	must(t, w.Publish(base()))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "web")

	// applied waits for the first generation after seen for which has
	// says yes.
	seen := len(r.appliedSnapshot())
	applied := func(what string, has func(*model.Desired) bool) (a daemon.Applied) {
		t.Helper()
		a, seen = r.appliedSince(seen, 30*time.Second, what, has)
		return a
	}
	hasRoute := func(key model.RouteKey) func(*model.Desired) bool {
		return func(d *model.Desired) bool {
			return slices.ContainsFunc(d.Routes, func(ar *model.AdmittedRoute) bool { return ar.Key == key })
		}
	}

	var reloaded []string
	for _, cr := range routes {
		gen := base()
		gen["route.yaml"] = cr.yaml
		if eps := cr.endpoints(web); eps != nil {
			gen["route-endpoints.yaml"] = eps
		}
		must(t, w.Publish(gen))
		a := applied("corpus route "+cr.key.String()+" applied", hasRoute(cr.key))
		if a.Reload {
			reloaded = append(reloaded, fmt.Sprintf("%s (%s): %s", cr.key, cr.from, strings.Join(a.Reasons, "; ")))
		}
		must(t, w.Publish(base()))
		gone := hasRoute(cr.key)
		d := applied("corpus route "+cr.key.String()+" deleted", func(d *model.Desired) bool { return !gone(d) })
		if d.Reload && !a.Reload {
			// Bound at runtime, so its spare must be given back the same
			// way (a failed read-back falls back to a reload).
			t.Errorf("%s (%s) was added without a reload, but deleting it reloaded: %s", cr.key, cr.from, strings.Join(d.Reasons, "; "))
		}
	}
	covered := len(routes) - len(reloaded)
	t.Logf("pool coverage: %d of %d corpus routes (%.0f%%) added without a reload", covered, len(routes), 100*float64(covered)/float64(len(routes)))
	for _, s := range reloaded {
		t.Logf("reloaded: %s", s)
	}
	// What the pool covers today (the routes listed above are the rest):
	// a drop means a route shape that bound to a spare no longer does.
	const floor = 0.85
	if float64(covered) < floor*float64(len(routes)) {
		t.Fatalf("pool coverage %d of %d is below %.0f%%", covered, len(routes), 100*floor)
	}
}

// TestCorpusRoutesTogetherWithoutFallback puts the corpus routes on one
// router together, one at a time in a shuffled order, then deletes them
// in another: spares bound side by side, their certificates, maps and
// allowlists edited around each other. No runtime plan may fall back to
// a reload (the harness's read-back guard, and here every reason): a
// route that needs a reload takes one, but nothing bound at runtime may
// need repair.
func TestCorpusRoutesTogetherWithoutFallback(t *testing.T) {
	var routes []corpusRoute
	for _, cr := range corpusRoutes(t) {
		// The corpus repeats a few names across files; one of each.
		if !slices.ContainsFunc(routes, func(o corpusRoute) bool { return o.key == cr.key }) {
			routes = append(routes, cr)
		}
	}
	r := newRouter(t)
	web := startBackend(t, "web")
	w := publish.NewAtomicWriter(r.dir)
	gen := files("router.yaml", r.routerConfig("  domain: "+corpusDomain+"\n"),
		"a.yaml", routeYAML("a", "a.e2e.test", "", "web"),
		"endpoints.yaml", endpointsYAML("web", web))
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("a.e2e.test", "/", "web")

	listed := func(key model.RouteKey) func(*model.Desired) bool {
		return func(d *model.Desired) bool {
			return slices.ContainsFunc(d.Statuses, func(st *model.RouteStatus) bool { return st.Key == key })
		}
	}
	seen := len(r.appliedSnapshot())
	rnd := rand.New(rand.NewPCG(11, 11)) // a fixed order: a failure replays
	for _, i := range rnd.Perm(len(routes)) {
		cr := routes[i]
		gen[fmt.Sprintf("route-%02d.yaml", i)] = cr.yaml
		if eps := cr.endpoints(web); eps != nil {
			gen[fmt.Sprintf("endpoints-%02d.yaml", i)] = eps
		}
		must(t, w.Publish(gen))
		_, seen = r.appliedSince(seen, 30*time.Second, cr.key.String()+" added", listed(cr.key))
	}
	r.serves("a.e2e.test", "/", "web")
	for _, i := range rnd.Perm(len(routes)) {
		cr := routes[i]
		delete(gen, fmt.Sprintf("route-%02d.yaml", i))
		delete(gen, fmt.Sprintf("endpoints-%02d.yaml", i))
		must(t, w.Publish(gen))
		gone := listed(cr.key)
		_, seen = r.appliedSince(seen, 30*time.Second, cr.key.String()+" deleted", func(d *model.Desired) bool { return !gone(d) })
	}
	r.serves("a.e2e.test", "/", "web")
	if st := r.store.Get(); st.Fallbacks != 0 {
		t.Fatalf("%d runtime plans fell back to a reload; last error %+v", st.Fallbacks, st.LastError)
	}
}
