package model

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A Loader that keeps its endpoint index across loads (epindex.go), and
// whose routes skip looking up services the index names unchanged, admits
// exactly what a Loader admits with the index built afresh at each load
// (its last good versions alike), over a long run
// of random endpoint changes: addresses changed, objects removed and
// added back, an object moved to another service, a service served by
// Endpoints and EndpointSlices at once, and a bad address now and then
// (an object with a diagnostic, which builds the index afresh).
func TestEndpointIndexKeptMatchesFresh(t *testing.T) {
	const services, files, steps = 40, 4, 400
	rng := rand.New(rand.NewPCG(1, 2))
	type object struct {
		service string // "" when absent
		slice   bool
		ips     []string
		bad     bool
	}
	objs := make([]object, services+services/4)
	for i := range objs {
		objs[i] = object{service: fmt.Sprintf("s%02d", i%services), slice: i >= services, ips: []string{fmt.Sprintf("10.0.%d.1", i)}}
	}
	var routes strings.Builder
	for i := range services {
		fmt.Fprintf(&routes, "---\napiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r%02d\n  namespace: ns\nspec:\n  host: r%02d.example.test\n  to:\n    kind: Service\n    name: s%02d\n", i, i, i)
	}
	render := func() []SourceFile {
		out := []SourceFile{{Path: "routes.yaml", Data: []byte(routes.String())}}
		parts := make([]strings.Builder, files)
		for i, o := range objs {
			if o.service == "" {
				continue
			}
			b := &parts[i%files]
			ips := slices.Clone(o.ips)
			if o.bad {
				ips = append(ips, "10.0.0.300")
			}
			if o.slice {
				fmt.Fprintf(b, "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: %s-x%d\n  namespace: ns\n  labels:\n    kubernetes.io/service-name: %s\naddressType: IPv4\nports:\n- port: 8080\nendpoints:\n", o.service, i, o.service)
				for _, ip := range ips {
					fmt.Fprintf(b, "- addresses: [%q]\n", ip)
				}
				continue
			}
			fmt.Fprintf(b, "---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: %s\n  namespace: ns\nsubsets:\n- addresses:\n", o.service)
			for _, ip := range ips {
				fmt.Fprintf(b, "  - ip: %s\n", ip)
			}
			b.WriteString("  ports:\n  - port: 8080\n")
		}
		for f := range parts {
			out = append(out, SourceFile{Path: fmt.Sprintf("ep%d.yaml", f), Data: []byte(parts[f].String())})
		}
		return out
	}
	served := func(d *Desired) map[RouteKey][]string {
		out := map[RouteKey][]string{}
		for _, r := range d.Routes {
			for _, svc := range r.Services {
				for _, s := range svc.Servers {
					out[r.Key] = append(out[r.Key], fmt.Sprintf("%s %s:%d", svc.Name, s.Address, s.Port))
				}
			}
		}
		return out
	}

	// The steps' inputs first, then the kept Loader through all of them
	// (so that its indexes follow each other, and its routes resolve
	// against the services the last index changed alone), then a fresh
	// index for each.
	var inputs [][]SourceFile
	bad := -1 // the object with a bad address, if any
	// pick is a service for object k. An Endpoints is named for its
	// service, and a second one of a service is a duplicate (reported,
	// which keeps the index from being kept): an Endpoints object takes
	// a service no other Endpoints has, or none ("").
	pick := func(k int) string {
		svc := fmt.Sprintf("s%02d", rng.IntN(services))
		if objs[k].slice {
			return svc
		}
		for i, o := range objs {
			if i != k && !o.slice && o.service == svc {
				return ""
			}
		}
		return svc
	}
	for range steps {
		k := rng.IntN(len(objs))
		o := &objs[k]
		switch rng.IntN(12) {
		case 0, 1:
			o.ips = []string{fmt.Sprintf("10.%d.%d.%d", rng.IntN(4), rng.IntN(250), 1+rng.IntN(250))}
		case 2:
			o.ips = append(o.ips, fmt.Sprintf("10.9.%d.%d", rng.IntN(250), 1+rng.IntN(250)))
		case 3:
			if o.service == "" {
				o.service = pick(k)
			} else {
				o.service = ""
			}
		case 4:
			o.service = pick(k)
		case 5:
			if bad < 0 {
				o.bad, bad = true, k
			} else {
				objs[bad].bad, bad = false, -1
			}
		default:
			o.ips = []string{fmt.Sprintf("10.%d.%d.%d", rng.IntN(4), rng.IntN(250), 1+rng.IntN(250))}
		}
		inputs = append(inputs, render())
	}
	kept := NewLoader()
	results := make([]Result, steps)
	incremental, named := 0, 0
	for step, in := range inputs {
		wasKept := kept.scratch.epIndex.idx != nil
		results[step] = kept.Load(in)
		if wasKept && kept.scratch.epIndex.idx != nil {
			incremental++
		}
		if kept.scratch.epIndex.delta.updated {
			named++
		}
	}
	fresh := NewLoader()
	for step, in := range inputs {
		fresh.scratch.epIndex = epIndexCache{} // built afresh every time
		got, want := results[step], fresh.Load(in)
		if g, w := served(got.Desired), served(want.Desired); !reflect.DeepEqual(g, w) {
			t.Fatalf("step %d: the kept index serves\n%v\nwant, as an index built afresh does,\n%v", step, g, w)
		}
		if g, w := lines(got.Diagnostics), lines(want.Diagnostics); !slices.Equal(g, w) {
			t.Fatalf("step %d: diagnostics\n%v\nwant\n%v", step, g, w)
		}
	}
	t.Logf("the index was kept across %d loads of %d, naming what it changed at %d", incremental, steps, named)
	// Not a test of nothing: many loads kept the index, and named what
	// changed for the routes to resolve against.
	if incremental < steps/3 || named < steps/3 {
		t.Fatalf("the index was kept after %d loads of %d, naming its changes at %d", incremental, steps, named)
	}
}
