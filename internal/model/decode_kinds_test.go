package model

import (
	"reflect"
	"regexp"
	"testing"
)

// TestNearMissKinds: a document that looks like one of haroute's kinds but
// is not is a warning at its kind (so `check --strict` fails), whichever
// parser reads it; a kind of someone else's is a note.
func TestNearMissKinds(t *testing.T) {
	tests := []struct {
		name string
		in   string // block YAML: the fast path reads it
		want string // the one diagnostic; "" for none
	}{
		{"typo in Route", "apiVersion: route.openshift.io/v1\nkind: Rout\nmetadata:\n  name: r\n",
			`f.yaml:2:7: warning: kind: Rout "r" (route.openshift.io/v1) is not a kind haroute reads but looks like Route (route.openshift.io/v1): the object is skipped`},
		{"typo in Route, legacy apiVersion", "apiVersion: v1\nkind: Ruote\nmetadata:\n  name: r\n",
			`f.yaml:2:7: warning: kind: Ruote "r" (v1) is not a kind haroute reads but looks like Route (route.openshift.io/v1): the object is skipped`},
		{"lowercase route, any apiVersion", "apiVersion: example.com/v1\nkind: route\nmetadata:\n  name: r\n",
			`f.yaml:2:7: warning: kind: route "r" (example.com/v1) is not a kind haroute reads but looks like Route (route.openshift.io/v1): the object is skipped`},
		{"unknown kind in route.openshift.io", "apiVersion: route.openshift.io/v1\nkind: Ingress\nmetadata:\n  name: r\n",
			`f.yaml:2:7: warning: kind: Ingress "r" (route.openshift.io/v1) is not a kind haroute reads but looks like Route (route.openshift.io/v1): the object is skipped`},
		{"Endpoint for Endpoints", "apiVersion: v1\nkind: Endpoint\nmetadata:\n  name: web\n",
			`f.yaml:2:7: warning: kind: Endpoint "web" (v1) is not a kind haroute reads but looks like Endpoints (v1): the object is skipped`},
		{"EndpointSlices", "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlices\nmetadata:\n  name: web\n",
			`f.yaml:2:7: warning: kind: EndpointSlices "web" (discovery.k8s.io/v1) is not a kind haroute reads but looks like EndpointSlice (discovery.k8s.io/v1): the object is skipped`},
		{"RouterConfig typo", "apiVersion: haroute.io/v1alpha1\nkind: RouterConfg\nmetadata:\n  name: rc\n",
			`f.yaml:2:7: warning: kind: RouterConfg "rc" (haroute.io/v1alpha1) is not a kind haroute reads but looks like RouterConfig (haroute.io/v1alpha1): the object is skipped`},
		{"ROUTERCONFIG", "apiVersion: haroute.io/v1\nkind: ROUTERCONFIG\nmetadata:\n  name: rc\n",
			`f.yaml:2:7: warning: kind: ROUTERCONFIG "rc" (haroute.io/v1) is not a kind haroute reads but looks like RouterConfig (haroute.io/v1alpha1): the object is skipped`},
		{"typo inside a typed list", "apiVersion: route.openshift.io/v1\nkind: RoutList\nitems:\n- metadata:\n    name: r\n",
			`f.yaml:4:3: warning: kind: Rout "r" (route.openshift.io/v1) is not a kind haroute reads but looks like Route (route.openshift.io/v1): the object is skipped`},
		// A known kind under an apiVersion it does not have stays an error.
		{"Route v2", "apiVersion: route.openshift.io/v2\nkind: Route\nmetadata:\n  name: r\n",
			`f.yaml:1:13: error: apiVersion: unsupported apiVersion "route.openshift.io/v2" for kind Route, want route.openshift.io/v1`},
		// An OpenShift Template holds routes: skipping it is a warning.
		{"Template", "apiVersion: template.openshift.io/v1\nkind: Template\nmetadata:\n  name: app\n",
			"f.yaml:2:7: warning: kind: Template \"app\" is skipped: haroute does not process OpenShift templates; run `oc process` and write its output here instead"},
		// Kinds of others, some within two edits of ours, stay notes.
		{"rbac Role", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: x\n",
			`f.yaml:1:1: note: skipped Role "x": haroute reads only Route, Endpoints, EndpointSlice and RouterConfig`},
		{"Node", "apiVersion: v1\nkind: Node\nmetadata:\n  name: x\n",
			`f.yaml:1:1: note: skipped Node "x": haroute reads only Route, Endpoints, EndpointSlice and RouterConfig`},
	}
	for _, tt := range tests {
		for _, style := range []struct{ name, in string }{
			{"block", tt.in},
			// Flow style is beyond the fast path: yaml.v3 reads it.
			{"flow", flowMetadata.ReplaceAllString(tt.in, "metadata: {name: $1}\n")},
		} {
			t.Run(tt.name+"/"+style.name, func(t *testing.T) {
				r := decodeFile("f.yaml", []byte(style.in), DefaultLimits())
				got := diagStrings(r.diags)
				var want []string
				if tt.want != "" {
					want = []string{tt.want}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("diagnostics:\n got %q\nwant %q", got, want)
				}
				if n := len(r.objs.Routes) + len(r.objs.Endpoints) + len(r.objs.EndpointSlices) + len(r.objs.RouterConfigs); n != 0 {
					t.Errorf("decoded %d objects, want none", n)
				}
			})
		}
	}
}

var flowMetadata = regexp.MustCompile(`metadata:\n +name: (\S+)\n`)

// TestNearMissKindsFalsePositives: kinds commonly found next to routes, in
// their own apiVersions, are skipped with a note only.
func TestNearMissKindsFalsePositives(t *testing.T) {
	for _, k := range []struct{ kind, api string }{
		{"Service", "v1"}, {"Pod", "v1"}, {"Node", "v1"}, {"Secret", "v1"}, {"ConfigMap", "v1"},
		{"Namespace", "v1"}, {"Event", "v1"}, {"ServiceAccount", "v1"}, {"Binding", "v1"},
		{"PodTemplate", "v1"}, {"LimitRange", "v1"}, {"ResourceQuota", "v1"},
		{"Deployment", "apps/v1"}, {"Role", "rbac.authorization.k8s.io/v1"},
		{"RoleBinding", "rbac.authorization.k8s.io/v1"}, {"Ingress", "networking.k8s.io/v1"},
		{"Router", "example.com/v1"}, {"IngressController", "operator.openshift.io/v1"},
	} {
		if like, ok := nearMissKind(k.kind, k.api); ok {
			t.Errorf("%s %s taken for %s", k.api, k.kind, like.kind)
		}
	}
}
