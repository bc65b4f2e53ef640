package model

import (
	"testing"
)

// TestRouteAdmissionSettings: spec.routeAdmission is read as the
// IngressController's: namespaceOwnership Strict (default) or
// InterNamespaceAllowed, and wildcardPolicy as another spelling of
// allowWildcardRoutes, which it must not contradict.
func TestRouteAdmissionSettings(t *testing.T) {
	tests := []struct {
		name      string
		spec      string
		interNS   bool
		wildcards bool
		diags     []string
	}{
		{name: "default is Strict, no wildcards"},
		{name: "InterNamespaceAllowed", spec: "  routeAdmission:\n    namespaceOwnership: InterNamespaceAllowed\n", interNS: true},
		{name: "Strict written", spec: "  routeAdmission:\n    namespaceOwnership: Strict\n"},
		{name: "WildcardsAllowed", spec: "  routeAdmission:\n    wildcardPolicy: WildcardsAllowed\n", wildcards: true},
		{name: "WildcardsDisallowed", spec: "  routeAdmission:\n    wildcardPolicy: WildcardsDisallowed\n"},
		{name: "agreeing spellings", spec: "  allowWildcardRoutes: true\n  routeAdmission:\n    wildcardPolicy: WildcardsAllowed\n", wildcards: true},
		{name: "contradicting spellings", spec: "  allowWildcardRoutes: true\n  routeAdmission:\n    wildcardPolicy: WildcardsDisallowed\n",
			diags: []string{`rc.yaml:9:21: error: spec.routeAdmission.wildcardPolicy: wildcardPolicy WildcardsDisallowed contradicts spec.allowWildcardRoutes: true; set one of them`}},
		{name: "unknown ownership", spec: "  routeAdmission:\n    namespaceOwnership: Loose\n",
			diags: []string{`rc.yaml:8:25: error: spec.routeAdmission.namespaceOwnership: namespaceOwnership "Loose" is not one of Strict, InterNamespaceAllowed`}},
		{name: "unknown field", spec: "  routeAdmission:\n    wildcards: yes\n",
			diags: []string{`rc.yaml:8:5: error: spec.routeAdmission.wildcards: unknown field`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: rc\nspec:\n  domain: apps.example.com\n" + tt.spec
			r := decodeFile("rc.yaml", []byte(text), DefaultLimits())
			d, ds := Admit(r.objs, nil)
			equalLines(t, append(r.diags, withoutNotes(ds)...), tt.diags)
			if len(tt.diags) > 0 {
				return
			}
			if d.Router.InterNamespaceAllowed != tt.interNS || d.Router.AllowWildcardRoutes != tt.wildcards {
				t.Errorf("interNamespaceAllowed=%v allowWildcardRoutes=%v, want %v %v",
					d.Router.InterNamespaceAllowed, d.Router.AllowWildcardRoutes, tt.interNS, tt.wildcards)
			}
		})
	}
}
