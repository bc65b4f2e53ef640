package model

import (
	"strings"
	"testing"
)

// defaultingSource positions the fields the defaulting rules report at.
func defaultingSource() Source {
	s := Source{Pos: Position{Path: "r.yaml", Line: 1, Col: 1}, Fields: map[string]Position{}}
	for f, line := range map[string]int{"metadata.name": 4, "spec": 6, "spec.subdomain": 7,
		"spec.wildcardPolicy": 8, "spec.tls": 9, "spec.tls.termination": 10} {
		s.Fields[f] = Position{Path: "r.yaml", Line: line, Col: 3}
	}
	return s
}

// TestHostGeneration: a route without spec.host gets OpenShift's host in
// the RouterConfig's domain, with a note saying so; without a domain it is
// rejected with an error naming the fields to set.
func TestHostGeneration(t *testing.T) {
	tests := []struct {
		name      string
		routeName string
		ns        string
		host      string
		subdomain string
		wildcard  bool
		domain    string
		wantHost  string
		want      []string
	}{
		{name: "name and namespace", domain: "apps.example.com", wantHost: "shop-front.apps.example.com", want: []string{
			`r.yaml:4:3: note: spec.host: host not set: generated shop-front.apps.example.com, as OpenShift does`,
		}},
		{name: "dots in the name become dashes", routeName: "v1.shop", domain: "apps.example.com", wantHost: "v1-shop-front.apps.example.com", want: []string{
			`r.yaml:4:3: note: spec.host: host not set: generated v1-shop-front.apps.example.com, as OpenShift does`,
		}},
		{name: "subdomain", subdomain: "store", domain: "apps.example.com", wantHost: "store.apps.example.com", want: []string{
			`r.yaml:7:3: note: spec.host: host not set: generated store.apps.example.com, as OpenShift does`,
		}},
		{name: "host wins over subdomain", host: "shop.example.com", subdomain: "store", domain: "apps.example.com", wantHost: "shop.example.com", want: []string{
			`r.yaml:7:3: note: spec.subdomain: spec.host is set; spec.subdomain is ignored`,
		}},
		{name: "no domain", want: []string{
			`r.yaml:6:3: error: spec.host: host is required: set spec.host in the route, or spec.domain in the RouterConfig to generate <name>-<namespace>.<domain>`,
		}},
		{name: "subdomain without domain", subdomain: "store", want: []string{
			`r.yaml:7:3: error: spec.subdomain: subdomain needs a domain to generate the host <subdomain>.<domain>: set spec.domain in the RouterConfig, or spec.host in the route`,
		}},
		{name: "invalid subdomain", subdomain: "Store", domain: "apps.example.com", want: []string{
			`r.yaml:7:3: error: spec.subdomain: subdomain "Store": label "Store" is not a DNS-1123 label (1-63 lowercase letters, digits and '-', starting and ending alphanumeric)`,
		}},
		{name: "generated label too long", routeName: strings.Repeat("a", 60), domain: "apps.example.com", want: []string{
			`r.yaml:4:3: error: metadata.name: generated host "` + strings.Repeat("a", 60) + `-front.apps.example.com" is not valid: host label "` +
				strings.Repeat("a", 60) + `-front" is 66 characters long, more than 63; set spec.host`,
			`r.yaml:4:3: note: spec.host: host not set: generated ` + strings.Repeat("a", 60) + `-front.apps.example.com, as OpenShift does`,
		}},
		{name: "wildcard needs a host", wildcard: true, domain: "apps.example.com", want: []string{
			`r.yaml:6:3: error: spec.host: host is required for wildcardPolicy Subdomain: no host is generated for wildcard routes`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, ns := "shop", "front"
			if tt.routeName != "" {
				name = tt.routeName
			}
			r := testRoute(ns, name, tt.host)
			r.Spec.Subdomain = tt.subdomain
			if tt.wildcard {
				r.Spec.WildcardPolicy = WildcardPolicySubdomain
			}
			r.Source = defaultingSource()
			s := DefaultSettings()
			s.Domain, s.AllowWildcardRoutes = tt.domain, true
			ar, c := validateRoute(&r, &s)
			equalLines(t, c.diags, tt.want)
			if wantBad := tt.wantHost == "" || strings.Contains(strings.Join(tt.want, "\n"), "error"); c.bad != wantBad {
				t.Errorf("rejected = %v, want %v", c.bad, wantBad)
			}
			if tt.wantHost != "" && ar.Host != tt.wantHost {
				t.Errorf("host = %q, want %q", ar.Host, tt.wantHost)
			}
		})
	}
}

// TestLoaderGeneratesHosts loads YAML as the daemon does: spec.subdomain
// and the RouterConfig's spec.domain are read, the generated host is what
// the route serves and shows in its status, and a new domain generates
// again although the route's file did not change.
func TestLoaderGeneratesHosts(t *testing.T) {
	routes := SourceFile{Path: "routes.yaml", Data: []byte(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: shop
  namespace: front
spec:
  to: {name: web}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: store
  namespace: front
spec:
  subdomain: store
  to: {name: web}
`)}
	rc := func(domain string) SourceFile {
		return SourceFile{Path: "router.yaml", Data: []byte("apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: r}\nspec:\n  domain: " + domain + "\n")}
	}
	l := NewLoader()
	for _, domain := range []string{"apps.example.com", "apps.example.org"} {
		res := l.Load([]SourceFile{routes, rc(domain)})
		if res.Diagnostics.HasErrors(false) {
			t.Fatalf("domain %s: %v", domain, res.Diagnostics)
		}
		var hosts, statusHosts []string
		for _, r := range res.Desired.Routes {
			hosts = append(hosts, r.Host)
		}
		for _, s := range res.Desired.Statuses {
			statusHosts = append(statusHosts, s.Host)
		}
		want := []string{"shop-front." + domain, "store." + domain}
		if strings.Join(hosts, " ") != strings.Join(want, " ") || strings.Join(statusHosts, " ") != strings.Join(want, " ") {
			t.Errorf("domain %s: hosts %v, statuses %v, want %v", domain, hosts, statusHosts, want)
		}
	}
}
