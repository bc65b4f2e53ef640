package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// A `balance random` route takes endpoint additions at runtime: its
// servers carry a stable id (render.ServerID), which HAProxy 2.6 needs to
// place a server added by `add server` on the tree random picks from
// (without one, such servers got no traffic or too little).
func TestRandomBalanceEndpointAddIsRuntime(t *testing.T) {
	applied, desired := baseDesired(), baseDesired()
	routeByName(t, applied, "ab").Backend.Balance = model.BalanceRandom
	r := routeByName(t, desired, "ab")
	r.Backend.Balance = model.BalanceRandom
	added := srv("127.0.0.1", 18088, 50)
	r.Services[1].Servers = append(r.Services[1].Servers, added)

	p := Compute(stateOf(t, testInput(applied)), stateOf(t, testInput(desired)))
	if p.Reload {
		t.Fatalf("endpoint added to a random-balance route: plan %s, want runtime", p.Summary())
	}
	id := fmt.Sprintf(" id %d", render.ServerID(added.Name))
	if !slices.ContainsFunc(commands(p), func(c string) bool { return strings.HasPrefix(c, "add server ") && strings.HasSuffix(c, id) }) {
		t.Fatalf("commands %q: want an add server ending in%s", commands(p), id)
	}
}

// A passthrough route balances with source while one service takes the
// traffic and with roundrobin once a second one does (as OpenShift). The
// weight change that brings the second service in also changes the
// balance, which HAProxy cannot change at runtime: the plan reloads and
// says why.
func TestWeightChangeFlippingBalanceReloads(t *testing.T) {
	admit := func(altWeight int) *model.Desired {
		tree := fmt.Sprintf(`apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: tcp, namespace: default}
spec:
  host: tcp.example.com
  to: {kind: Service, name: a}
  alternateBackends: [{kind: Service, name: b, weight: %d}]
  tls: {termination: passthrough}
---
apiVersion: v1
kind: Endpoints
metadata: {name: a, namespace: default}
subsets: [{addresses: [{ip: 127.0.0.1}], ports: [{port: 18093}]}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: b, namespace: default}
subsets: [{addresses: [{ip: 127.0.0.1}], ports: [{port: 18094}]}]
`, altWeight)
		res := model.NewLoader().Load([]model.SourceFile{{Path: "tcp.yaml", Data: []byte(tree)}})
		if res.Diagnostics.HasErrors(false) {
			t.Fatalf("load: %v", res.Diagnostics)
		}
		return res.Desired
	}
	p := Compute(stateOf(t, testInput(admit(0))), stateOf(t, testInput(admit(50))))
	if !p.Reload {
		t.Fatalf("plan %s, want a reload", p.Summary())
	}
	want := `reload | backend settings changed | default/tcp | (balance) | balance source -> roundrobin`
	if got := changeLines(p); !slices.Contains(got, want) {
		t.Fatalf("changes:\n%s\nwant among them %q", strings.Join(got, "\n"), want)
	}
}

// A server added to a source or random backend whose id a draining
// server still holds (two names that hash alike) goes in by a reload:
// `add server` would be refused, and fall back to one anyway, as an
// error.
func TestAddedServerWhoseIDADrainingServerHoldsReloads(t *testing.T) {
	applied, desired := baseDesired(), baseDesired()
	routeByName(t, applied, "ab").Backend.Balance = model.BalanceSource
	r := routeByName(t, desired, "ab")
	r.Backend.Balance = model.BalanceSource
	added := srv("127.0.0.1", 18088, 50)
	r.Services[1].Servers = append(r.Services[1].Servers, added)
	state := stateOf(t, testInput(applied))
	id := fmt.Sprintf(" id %d", render.ServerID(added.Name))
	state.PendingDeletes = map[model.BackendName]map[model.ServerName]string{beAB: {"ck_127.0.0.9_1": "weight 0 check inter 5s" + id}}
	p := Compute(state, stateOf(t, testInput(desired)))
	if !p.Reload || !slices.ContainsFunc(changeLines(p), func(l string) bool { return strings.Contains(l, "its id is a draining server's") }) {
		t.Fatalf("plan %s (%q), want a reload saying a draining server holds the id", p.Summary(), changeLines(p))
	}
	// Another id: at runtime.
	state.PendingDeletes[beAB]["ck_127.0.0.9_1"] = "weight 0 check inter 5s id 1"
	if p := Compute(state, stateOf(t, testInput(desired))); p.Reload {
		t.Fatalf("plan %s, want runtime", p.Summary())
	}
}
