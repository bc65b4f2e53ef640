package daemon

import (
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// An edge or reencrypt route that also serves plain HTTP (Allow) renders
// its sticky cookie without Secure, as OpenShift does, so it needs spares
// of its own class: its backend reads like theirs and not like the others'.
func TestAllowRoutesHaveTheirOwnSpares(t *testing.T) {
	s := model.DefaultSettings()
	for _, term := range []model.Termination{model.TerminationEdge, model.TerminationReencrypt} {
		route := model.SpareRoute(term, false, "x", &s)
		route.Key, route.Slot, route.InsecurePolicy = model.RouteKey{Namespace: "ns", Name: "r"}, "", model.InsecurePolicyAllow
		plain := model.SpareRoute(term, false, "be_pool:"+model.BackendName(term)+":1", &s)
		allow := model.SpareRoute(term, true, "be_pool:"+model.BackendName(term)+"-allow:2", &s)
		in := render.Input{Desired: &model.Desired{Router: s}}
		if render.SameBackend(route, plain, in) {
			t.Errorf("%s Allow route reads like a spare without Allow", term)
		}
		if !render.SameBackend(route, allow, in) {
			t.Errorf("%s Allow route does not read like an Allow spare", term)
		}
		if got, want := poolClass(classOf(&route)), string(term)+"-allow"; got != want {
			t.Errorf("class %q, want %q", got, want)
		}
	}
}
