package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/haroute/haroute/internal/model"
)

// perFile is how many routes (and how many Endpoints) one generated file
// holds: a tree exported from a cluster is many files, not one.
const perFile = 100

// endpoint is one ready address of a service.
type endpoint struct {
	ip   string
	port int
}

// tree is a generated config directory: route i serves host
// r-<i>.bench.test from service svc-<i>, whose endpoints are eps[i].
// Files are cached per chunk of perFile objects, so publishing a change to
// one service regenerates one file, as a real publisher would.
type tree struct {
	namespace string
	// edgeEvery makes every edgeEvery-th route edge-terminated (with the
	// default certificate and a redirect for plain HTTP); 0 = none.
	edgeEvery int
	eps       [][]endpoint
	router    string // RouterConfig YAML; "" = none

	routeFiles map[int][]byte
	epFiles    map[int][]byte
	// ownCookie are routes with a sticky cookie name of their own, which
	// no spare backend of the pool has: adding one takes a reload.
	// removed are routes deleted from the tree.
	ownCookie, removed map[int]bool
	// hosts are routes moved to another host name (moveHost).
	hosts map[int]string
}

func newTree(namespace string, routes int, eps func(i int) []endpoint) *tree {
	t := &tree{namespace: namespace, routeFiles: map[int][]byte{}, epFiles: map[int][]byte{},
		ownCookie: map[int]bool{}, removed: map[int]bool{}, hosts: map[int]string{}}
	for i := range routes {
		t.eps = append(t.eps, eps(i))
	}
	return t
}

func routeName(i int) string   { return fmt.Sprintf("r-%05d", i) }
func serviceName(i int) string { return fmt.Sprintf("svc-%05d", i) }
func hostName(i int) string    { return fmt.Sprintf("r-%05d.bench.test", i) }

// key is the model key of route i.
func (t *tree) key(i int) model.RouteKey {
	return model.RouteKey{Namespace: t.namespace, Name: routeName(i)}
}

// setEndpoints replaces the endpoints of service i.
func (t *tree) setEndpoints(i int, eps []endpoint) {
	t.eps[i] = eps
	delete(t.epFiles, i/perFile)
}

// addRoute appends a route with its own service and returns its index.
func (t *tree) addRoute(eps []endpoint) int {
	i := len(t.eps)
	t.eps = append(t.eps, eps)
	delete(t.routeFiles, i/perFile)
	delete(t.epFiles, i/perFile)
	return i
}

// addReloadingRoute is addRoute for a route no spare backend fits.
func (t *tree) addReloadingRoute(eps []endpoint) int {
	i := t.addRoute(eps)
	t.ownCookie[i] = true
	return i
}

// moveHost gives route i the host name host.
func (t *tree) moveHost(i int, host string) {
	t.hosts[i] = host
	delete(t.routeFiles, i/perFile)
}

// host is route i's host name.
func (t *tree) host(i int) string {
	if h, ok := t.hosts[i]; ok {
		return h
	}
	return hostName(i)
}

// removeRoute deletes route i (its service's endpoints stay).
func (t *tree) removeRoute(i int) {
	t.removed[i] = true
	delete(t.routeFiles, i/perFile)
}

// files returns the whole generation, as publish.AtomicWriter takes it.
func (t *tree) files() map[string][]byte {
	out := map[string][]byte{}
	if t.router != "" {
		out["router.yaml"] = []byte(t.router)
	}
	for c := 0; c*perFile < len(t.eps); c++ {
		out[fmt.Sprintf("routes/routes-%03d.yaml", c)] = t.routeChunk(c)
		out[fmt.Sprintf("endpoints/endpoints-%03d.yaml", c)] = t.epChunk(c)
	}
	return out
}

// sourceFiles returns the generation as the snapshot reader hands it to
// the loader (no hashes: the loader computes them, as part of the cost).
func (t *tree) sourceFiles() []model.SourceFile {
	files := t.files()
	out := make([]model.SourceFile, 0, len(files))
	for path, data := range files {
		out = append(out, model.SourceFile{Path: path, Data: data})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

func (t *tree) routeChunk(c int) []byte {
	if data, ok := t.routeFiles[c]; ok {
		return data
	}
	var b strings.Builder
	for i := c * perFile; i < min((c+1)*perFile, len(t.eps)); i++ {
		if t.removed[i] {
			continue
		}
		annotations := ""
		if t.ownCookie[i] {
			// Not a balance algorithm: routes of one have spares once one
			// of them exists.
			annotations = fmt.Sprintf("  annotations:\n    router.openshift.io/cookie_name: c%d\n", i)
		}
		fmt.Fprintf(&b, `---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: %s
  namespace: %s
  creationTimestamp: "2026-01-02T03:04:05Z"
%s  labels:
    app: %s
spec:
  host: %s
  to:
    kind: Service
    name: %s
    weight: 100
  port:
    targetPort: http
`, routeName(i), t.namespace, annotations, serviceName(i), t.host(i), serviceName(i))
		if t.edgeEvery > 0 && i%t.edgeEvery == 0 {
			b.WriteString("  tls:\n    termination: edge\n    insecureEdgeTerminationPolicy: Redirect\n")
		}
	}
	data := []byte(b.String())
	t.routeFiles[c] = data
	return data
}

// epChunk writes one subset per distinct port, holding every address with
// that port: the shape kubectl prints for pods behind one targetPort.
func (t *tree) epChunk(c int) []byte {
	if data, ok := t.epFiles[c]; ok {
		return data
	}
	var b strings.Builder
	for i := c * perFile; i < min((c+1)*perFile, len(t.eps)); i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: %s\nsubsets:\n",
			serviceName(i), t.namespace)
		var ports []int
		ips := map[int][]string{}
		for _, ep := range t.eps[i] {
			if _, ok := ips[ep.port]; !ok {
				ports = append(ports, ep.port)
			}
			ips[ep.port] = append(ips[ep.port], ep.ip)
		}
		if len(ports) == 0 {
			b.WriteString("  []\n")
		}
		for _, port := range ports {
			b.WriteString("- addresses:\n")
			for _, ip := range ips[port] {
				fmt.Fprintf(&b, "  - ip: %s\n", ip)
			}
			fmt.Fprintf(&b, "  ports:\n  - name: http\n    port: %d\n    protocol: TCP\n", port)
		}
	}
	data := []byte(b.String())
	t.epFiles[c] = data
	return data
}

// routeServers returns how many servers route key has in d, and whether
// the route is admitted at all.
func routeServers(d *model.Desired, key model.RouteKey) (int, bool) {
	servers, ok := routeEndpoints(d, key)
	return len(servers), ok
}

// routeEndpoints returns the servers of route key in d, and whether the
// route is admitted. Routes are sorted by namespace then name.
func routeEndpoints(d *model.Desired, key model.RouteKey) ([]model.Server, bool) {
	if d == nil {
		return nil, false
	}
	i := sort.Search(len(d.Routes), func(i int) bool {
		k := d.Routes[i].Key
		return k.Namespace > key.Namespace || (k.Namespace == key.Namespace && k.Name >= key.Name)
	})
	if i == len(d.Routes) || d.Routes[i].Key != key {
		return nil, false
	}
	return d.Routes[i].Servers(), true
}
