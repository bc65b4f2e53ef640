package render

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil/testroutes"
)

// The incremental path (a warm model.Loader, which reuses admission
// results of unchanged files, and Render with a Cache) must give exactly
// what the plain path gives: these tests drive both through random edits.

// genRoute is one route of a generated tree.
type genRoute struct {
	name, host, path string
	weight           int
	alt              string // alternate service, "" = none
	tls              string // "", edge, edge-cert, edge-badcert, reencrypt, passthrough
	wildcard         bool
	ann              map[string]string
}

// genTree is a config directory the tests edit at random.
type genTree struct {
	rng     *rand.Rand
	certs   testCerts
	routes  []*genRoute // nil = removed
	eps     [][]string  // per route index: the endpoints of svc-<i>
	router  string      // RouterConfig spec, "" = no RouterConfig
	broken  map[string]bool
	removed map[string]bool
	// prevDependent is set while the RouterConfig is invalid: the settings
	// in force then depend on the loader's history.
	prevDependent bool
}

const genPerFile = 8

func newGenTree(seed uint64, routes int, certs testCerts) *genTree {
	g := &genTree{rng: rand.New(rand.NewPCG(seed, 1)), certs: certs, broken: map[string]bool{}, removed: map[string]bool{}}
	for range routes {
		g.addRoute()
	}
	return g
}

func (g *genTree) addRoute() {
	i := len(g.routes)
	r := &genRoute{name: fmt.Sprintf("r%03d", i), host: fmt.Sprintf("h%03d.example.com", i), weight: 100}
	if i%3 == 1 {
		r.path = fmt.Sprintf("/p%d", i%4)
	}
	if i%4 == 2 {
		r.tls = "edge"
	}
	g.routes = append(g.routes, r)
	g.eps = append(g.eps, []string{fmt.Sprintf("10.0.%d.1:8080", i), fmt.Sprintf("10.0.%d.2:8080", i)})
}

func (g *genTree) live() []int {
	var out []int
	for i, r := range g.routes {
		if r != nil {
			out = append(out, i)
		}
	}
	return out
}

func (g *genTree) pick(from []int) int { return from[g.rng.IntN(len(from))] }

// edit applies one random edit and describes it.
func (g *genTree) edit() string {
	live := g.live()
	r := g.routes[g.pick(live)]
	i := g.pick(live)
	switch op := g.rng.IntN(16); op {
	case 0, 1:
		ep := fmt.Sprintf("10.1.%d.%d:%d", g.rng.IntN(4), g.rng.IntN(250)+1, 8080+g.rng.IntN(2))
		g.eps[i] = append(g.eps[i], ep)
		return fmt.Sprintf("endpoint %s added to svc %d", ep, i)
	case 2, 3:
		if len(g.eps[i]) == 0 {
			return "no endpoint to remove"
		}
		j := g.rng.IntN(len(g.eps[i]))
		g.eps[i] = slices.Delete(slices.Clone(g.eps[i]), j, j+1)
		return fmt.Sprintf("endpoint %d of svc %d removed", j, i)
	case 4:
		r.weight = g.rng.IntN(258) // 257 is out of range: the route is rejected
		return fmt.Sprintf("route %s weight %d", r.name, r.weight)
	case 5:
		g.addRoute()
		return "route added"
	case 6:
		if len(live) > 1 {
			g.routes[i] = nil
		}
		return fmt.Sprintf("route %d removed", i)
	case 7:
		keys := []string{model.AnnotationTimeout, model.AnnotationBalance, model.AnnotationHSTSHeader,
			model.AnnotationCookieName, model.AnnotationHealthCheckInterval, model.AnnotationIPAllowlist,
			model.AnnotationDisableCookies, model.AnnotationRewriteTarget}
		values := map[string][]string{
			model.AnnotationTimeout:             {"5s", "7s", "bogus"}, // 5s and 7s: skeletons of equal length
			model.AnnotationBalance:             {"roundrobin", "source", "nope"},
			model.AnnotationHSTSHeader:          {"max-age=60", "max-age=1;includeSubDomains", "x"},
			model.AnnotationCookieName:          {"c1", "bad cookie"},
			model.AnnotationHealthCheckInterval: {"2s", "0"},
			model.AnnotationIPAllowlist:         {"10.0.0.0/8 192.168.1.1", "nope"},
			model.AnnotationDisableCookies:      {"true", "false"},
			model.AnnotationRewriteTarget:       {"/", "/x"},
		}
		k := keys[g.rng.IntN(len(keys))]
		if r.ann == nil {
			r.ann = map[string]string{}
		}
		if _, ok := r.ann[k]; ok && g.rng.IntN(3) == 0 {
			delete(r.ann, k)
			return fmt.Sprintf("route %s annotation %s removed", r.name, k)
		}
		v := values[k][g.rng.IntN(len(values[k]))]
		r.ann[k] = v
		return fmt.Sprintf("route %s annotation %s=%q", r.name, k, v)
	case 8:
		kinds := []string{"", "edge", "edge-cert", "edge-badcert", "reencrypt", "passthrough"}
		r.tls = kinds[g.rng.IntN(len(kinds))]
		return fmt.Sprintf("route %s tls %q", r.name, r.tls)
	case 9:
		// Every host is under example.com: under Strict namespace
		// ownership one wildcard route would hold them all, so wildcards
		// come with InterNamespaceAllowed.
		configs := []string{"", "  tuningOptions:\n    healthCheckInterval: 3s\n",
			"  allowWildcardRoutes: true\n  routeAdmission:\n    namespaceOwnership: InterNamespaceAllowed\n",
			"  bindOptions:\n    ports:\n      http: 8080\n", "  tuningOptions:\n    reloadInterval: bogus\n"}
		g.router = configs[g.rng.IntN(len(configs))]
		g.prevDependent = strings.Contains(g.router, "bogus")
		return fmt.Sprintf("router config %q", g.router)
	case 10:
		paths := g.paths()
		p := paths[g.rng.IntN(len(paths))]
		g.broken[p] = true
		return "file broken: " + p
	case 11:
		for p := range g.broken {
			delete(g.broken, p)
			return "file fixed: " + p
		}
		return "no broken file"
	case 12:
		paths := g.paths()
		p := paths[g.rng.IntN(len(paths))]
		g.removed[p] = true
		return "file removed: " + p
	case 13:
		for p := range g.removed {
			delete(g.removed, p)
			return "file restored: " + p
		}
		return "no removed file"
	case 14:
		// A host (and path) another route has: admission decides.
		o := g.routes[g.pick(live)]
		r.host, r.path = o.host, o.path
		return fmt.Sprintf("route %s takes host %s%s", r.name, o.host, o.path)
	default:
		r.wildcard = !r.wildcard
		if g.rng.IntN(2) == 0 {
			r.alt = fmt.Sprintf("svc-%03d", g.pick(live))
		} else {
			r.alt = ""
		}
		return fmt.Sprintf("route %s wildcard %v alt %q", r.name, r.wildcard, r.alt)
	}
}

// paths lists every file the tree has, removed or not.
func (g *genTree) paths() []string {
	var out []string
	if g.router != "" {
		out = append(out, "router.yaml")
	}
	for c := 0; c*genPerFile < len(g.routes); c++ {
		out = append(out, fmt.Sprintf("routes/r%02d.yaml", c), fmt.Sprintf("eps/e%02d.yaml", c))
	}
	return out
}

// files returns the tree as the snapshot reader would.
func (g *genTree) files() []model.SourceFile {
	var out []model.SourceFile
	for _, p := range g.paths() {
		if g.removed[p] {
			continue
		}
		var data string
		switch {
		case g.broken[p]:
			data = "kind: Route\nmetadata: [unclosed\n"
		case p == "router.yaml":
			data = "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n" + g.router
		case strings.HasPrefix(p, "routes/"):
			var c int
			fmt.Sscanf(p, "routes/r%02d.yaml", &c)
			data = g.routeChunk(c)
		default:
			var c int
			fmt.Sscanf(p, "eps/e%02d.yaml", &c)
			data = g.epChunk(c)
		}
		out = append(out, model.SourceFile{Path: p, Data: []byte(data)})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

func indentPEM(pem string) string {
	return "      " + strings.ReplaceAll(strings.TrimSpace(pem), "\n", "\n      ") + "\n"
}

func (g *genTree) routeChunk(c int) string {
	var b strings.Builder
	for i := c * genPerFile; i < min((c+1)*genPerFile, len(g.routes)); i++ {
		r := g.routes[i]
		if r == nil {
			continue
		}
		fmt.Fprintf(&b, "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: %s\n  namespace: ns%d\n", r.name, i%2)
		fmt.Fprintf(&b, "  creationTimestamp: \"2026-01-02T03:04:%02dZ\"\n", i%60)
		if len(r.ann) > 0 {
			b.WriteString("  annotations:\n")
			keys := make([]string, 0, len(r.ann))
			for k := range r.ann {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "    %s: %q\n", k, r.ann[k])
			}
		}
		fmt.Fprintf(&b, "spec:\n  host: %s\n", r.host)
		if r.path != "" && r.tls != "passthrough" {
			fmt.Fprintf(&b, "  path: %s\n", r.path)
		}
		fmt.Fprintf(&b, "  to:\n    kind: Service\n    name: svc-%03d\n    weight: %d\n", i, r.weight)
		if r.alt != "" {
			fmt.Fprintf(&b, "  alternateBackends:\n  - kind: Service\n    name: %s\n    weight: 50\n", r.alt)
		}
		b.WriteString("  port:\n    targetPort: http\n")
		if r.wildcard {
			b.WriteString("  wildcardPolicy: Subdomain\n")
		}
		switch r.tls {
		case "edge":
			b.WriteString("  tls:\n    termination: edge\n    insecureEdgeTerminationPolicy: Redirect\n")
		case "edge-cert":
			b.WriteString("  tls:\n    termination: edge\n    insecureEdgeTerminationPolicy: Allow\n    certificate: |\n" + indentPEM(g.certs.Cert) +
				"    key: |\n" + indentPEM(g.certs.Key))
		case "edge-badcert":
			b.WriteString("  tls:\n    termination: edge\n    certificate: |\n" + indentPEM(g.certs.CA) + "    key: |\n" + indentPEM(g.certs.Key))
		case "reencrypt":
			b.WriteString("  tls:\n    termination: reencrypt\n    destinationCACertificate: |\n" + indentPEM(g.certs.CA))
		case "passthrough":
			b.WriteString("  tls:\n    termination: passthrough\n")
		}
	}
	return b.String()
}

func (g *genTree) epChunk(c int) string {
	var b strings.Builder
	for i := c * genPerFile; i < min((c+1)*genPerFile, len(g.routes)); i++ {
		// Services outlive their routes: alternateBackends may name them.
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: svc-%03d\n  namespace: ns%d\nsubsets:\n", i, i%2)
		byPort := map[string][]string{}
		var ports []string
		for _, ep := range g.eps[i] {
			ip, port, _ := strings.Cut(ep, ":")
			if _, ok := byPort[port]; !ok {
				ports = append(ports, port)
			}
			byPort[port] = append(byPort[port], ip)
		}
		if len(ports) == 0 {
			b.WriteString("  []\n")
		}
		for _, port := range ports {
			b.WriteString("- addresses:\n")
			for _, ip := range byPort[port] {
				fmt.Fprintf(&b, "  - ip: %s\n", ip)
			}
			fmt.Fprintf(&b, "  ports:\n  - name: http\n    port: %s\n", port)
		}
	}
	return b.String()
}

// sameBundle reports the first difference between two bundles.
func sameBundle(a, b *Bundle) error {
	if len(a.Files) != len(b.Files) {
		return fmt.Errorf("%d files, want %d", len(a.Files), len(b.Files))
	}
	for i := range a.Files {
		fa, fb := a.Files[i], b.Files[i]
		if fa.Name != fb.Name || fa.Mode != fb.Mode || !bytes.Equal(fa.Bytes(), fb.Bytes()) {
			return fmt.Errorf("file %d: %s (%v, %d bytes), want %s (%v, %d bytes)", i, fa.Name, fa.Mode, fa.Size(), fb.Name, fb.Mode, fb.Size())
		}
	}
	if !bytes.Equal(a.Skeleton, b.Skeleton) {
		return fmt.Errorf("skeletons differ")
	}
	if !reflect.DeepEqual(a.Maps, b.Maps) {
		return fmt.Errorf("maps differ")
	}
	if len(a.Certs) != len(b.Certs) {
		return fmt.Errorf("%d certs, want %d", len(a.Certs), len(b.Certs))
	}
	for i := range a.Certs {
		if a.Certs[i].Name != b.Certs[i].Name || !bytes.Equal(a.Certs[i].PEM, b.Certs[i].PEM) {
			return fmt.Errorf("cert %d: %s, want %s", i, a.Certs[i].Name, b.Certs[i].Name)
		}
	}
	return nil
}

// TestIncrementalMatchesFresh applies random edits to a generated tree and
// checks, after each, that the incremental path (one warm Loader, Render
// with a Cache, alternating bundle dirs as the daemon does on reloads)
// gives exactly what the plain path gives:
//
//   - always: a fresh NewLoader().Load of the tree with each broken file
//     replaced by the content the warm loader still serves (plainTree),
//     rendered without a cache (same Desired, byte-identical bundle);
//   - whenever no file is broken and the RouterConfig is valid (so the
//     loader's history cannot matter): a fresh NewLoader().Load and
//     Render (same Desired, same diagnostics, byte-identical bundle).
func TestIncrementalMatchesFresh(t *testing.T) {
	certs := loadTestCerts(t)
	// 300 steps take under a second; fewer would not reliably reach a
	// rejected route (the check at the end), so -short runs them all too.
	const steps = 300
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			g := newGenTree(seed, 40, certs)
			loader := model.NewLoader()
			cache := &Cache{}
			p := plainTree{clean: map[string][]byte{}}
			fresh, clean, stale := 0, 0, 0
			defer func() {
				t.Logf("%d of %d steps had stale objects or conflicts, %d compared with a fresh load", stale, steps, clean)
			}()
			for step := range steps {
				what := "initial tree"
				if step > 0 {
					what = g.edit()
				}
				files := g.files()
				in := Input{Dir: "/var/lib/haroute/live", RunDir: "/run/haroute", DefaultCertificate: []byte(certs.Default)}
				if g.rng.IntN(4) == 0 {
					in.Dir = "/var/lib/haroute/candidate"
				}
				if g.rng.IntN(5) == 0 {
					in.DefaultDestinationCA = []byte(certs.CA)
				}

				res := loader.Load(files)
				inc := in
				inc.Desired, inc.Cache = res.Desired, cache
				incB, incErr := Render(inc)

				refD := model.NewLoader().Load(p.of(files, g)).Desired
				if res.StaleCount() > 0 || keptRouterConfig(res) || conflictDecided(res) {
					// A stale object serves its last good version, and a
					// conflict goes to the route that served the claim,
					// which a fresh load of the current tree cannot know:
					// the render is still compared with a render from
					// scratch.
					stale++
					refD = res.Desired
				}
				p.served(files, g)
				ref := in
				ref.Desired = refD
				refB, refErr := Render(ref)
				if !reflect.DeepEqual(res.Desired, refD) {
					for i := range res.Desired.Statuses {
						if i < len(refD.Statuses) && !reflect.DeepEqual(res.Desired.Statuses[i], refD.Statuses[i]) {
							t.Logf("status %d: %+v vs %+v", i, res.Desired.Statuses[i], refD.Statuses[i])
						}
					}
					t.Logf("routes %d vs %d; router equal %v", len(res.Desired.Routes), len(refD.Routes), reflect.DeepEqual(res.Desired.Router, refD.Router))
					t.Fatalf("step %d (%s): desired differs from a fresh load of the plain tree", step, what)
				}
				checkSame(t, step, what, incB, incErr, refB, refErr)

				if len(g.broken) > 0 || g.prevDependent || res.StaleCount() > 0 || keptRouterConfig(res) || conflictDecided(res) {
					continue
				}
				clean++
				fr := model.NewLoader().Load(files)
				fin := in
				fin.Desired = fr.Desired
				frB, frErr := Render(fin)
				if !reflect.DeepEqual(res.Desired, fr.Desired) {
					t.Fatalf("step %d (%s): desired differs from a fresh load", step, what)
				}
				if !reflect.DeepEqual(res.Diagnostics, fr.Diagnostics) {
					t.Fatalf("step %d (%s): diagnostics differ from a fresh load:\n%q\nwant\n%q", step, what, res.Diagnostics, fr.Diagnostics)
				}
				checkSame(t, step, what, incB, incErr, frB, frErr)
				if len(res.Desired.Routes) < len(res.Desired.Statuses) {
					fresh++ // some route rejected: admission decided something
				}
			}
			// The edits must exercise both comparisons and rejections. A
			// rejected route that was good before stays stale (serving its
			// last good version) until fixed, and such steps cannot be
			// compared with a fresh load, so fewer steps compare than
			// before last good was kept per object.
			// Steps free of stale objects and conflicts come early (a
			// stale object lasts until the random edits fix it): 14 and
			// 22 of the 300 with these seeds.
			if clean < 10 || fresh+stale == 0 {
				t.Fatalf("only %d of %d steps compared with a fresh load, %d with rejected routes", clean, steps, fresh)
			}
		})
	}
}

func checkSame(t *testing.T, step int, what string, got *Bundle, gotErr error, want *Bundle, wantErr error) {
	t.Helper()
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("step %d (%s): render error %v, want %v", step, what, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if err := sameBundle(got, want); err != nil {
		t.Fatalf("step %d (%s): bundle: %v", step, what, err)
	}
}

// plainTree turns a generated tree into one a fresh Loader decides the same
// way as the warm loader that has seen every step, which serves a broken
// file's last clean objects. (What else the warm loader keeps, a rejected
// route's last good version and the settings of a RouterConfig gone or
// invalid, shows as stale objects or a kept RouterConfig: those steps are
// not compared.)
type plainTree struct {
	clean map[string][]byte // per path, the last content that decoded
}

// of returns files with each broken file replaced by its last clean
// content, or left out if it has none.
func (p *plainTree) of(files []model.SourceFile, g *genTree) []model.SourceFile {
	var out []model.SourceFile
	for _, f := range files {
		if !g.broken[f.Path] {
			out = append(out, f)
		} else if c, ok := p.clean[f.Path]; ok {
			out = append(out, model.SourceFile{Path: f.Path, Data: c})
		}
	}
	return out
}

// served records the clean files of this step; a file gone is forgotten.
func (p *plainTree) served(files []model.SourceFile, g *genTree) {
	present := map[string]bool{}
	for _, f := range files {
		present[f.Path] = true
		if !g.broken[f.Path] {
			p.clean[f.Path] = f.Data
		}
	}
	for path := range p.clean {
		if !present[path] {
			delete(p.clean, path)
		}
	}
}

// keptRouterConfig reports whether res kept the settings of a RouterConfig
// that is gone from the tree or invalid now, which a fresh load cannot
// know.
// conflictDecided reports whether two routes claimed one host: which
// wins depends on which served it before.
func conflictDecided(res model.Result) bool {
	for _, d := range res.Diagnostics {
		if strings.Contains(d.Message, "a route that serves a claim keeps it") {
			return true
		}
	}
	return false
}

func keptRouterConfig(res model.Result) bool {
	for _, d := range res.Diagnostics {
		if strings.Contains(d.Message, "no RouterConfig in this generation") || strings.Contains(d.Message, "the previous settings stay in force") {
			return true
		}
	}
	return false
}

// A route added in front of the others moves them all one place: their
// outputs still come from the cache, found where they moved; and a render
// with the route added reuses them.
func TestCacheFindsMovedRoutes(t *testing.T) {
	in := baseInput(t)
	var routes []model.AdmittedRoute
	for i := range 50 {
		routes = append(routes, route("ns", fmt.Sprintf("r%02d", i+1), fmt.Sprintf("r%02d.example.com", i+1), ""))
	}
	in.Desired.Routes = testroutes.Of(routes)
	in.Cache = &Cache{}
	if _, err := Render(in); err != nil {
		t.Fatal(err)
	}
	tbl := in.Cache.table(in)
	before := slices.Clone(tbl.entries)

	first := route("ns", "r00", "r00.example.com", "")
	next := []*model.AdmittedRoute{&first}
	for _, e := range before {
		next = append(next, e.route) // the very routes, as admission hands them on
	}
	if e := tbl.lookup(0, first.Key); e != nil {
		t.Fatalf("a new route found in the cache: %s", e.route.Key)
	}
	for i, r := range next[1:] {
		if e := tbl.lookup(i+1, r.Key); e != before[i] {
			t.Fatalf("route %s not found where it moved", r.Key)
		}
	}
	if tbl.shift != -1 {
		t.Errorf("the last route was found %d places off, want -1", tbl.shift)
	}

	in.Desired.Routes = next
	if _, err := Render(in); err != nil {
		t.Fatal(err)
	}
	for i, e := range before {
		if in.Cache.table(in).entries[i+1] != e {
			t.Fatalf("route %s was rendered again", e.route.Key)
		}
	}
}
