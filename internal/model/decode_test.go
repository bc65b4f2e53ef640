package model

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func diagStrings(ds Diagnostics) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

func int32p(v int32) *int32 { return &v }
func intp(v int) *int       { return &v }
func boolp(v bool) *bool    { return &v }

func TestDecodeGoodFile(t *testing.T) {
	data, err := os.ReadFile("testdata/good/route-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := decodeFile("route-full.yaml", data, DefaultLimits())
	if len(r.diags) != 0 || r.failed {
		t.Fatalf("diagnostics = %q, failed = %v; want none", diagStrings(r.diags), r.failed)
	}
	if len(r.objs.Routes) != 1 || len(r.objs.Endpoints) != 1 || len(r.objs.EndpointSlices) != 1 || len(r.objs.RouterConfigs) != 1 {
		t.Fatalf("objects = %d routes, %d endpoints, %d slices, %d router configs; want 1 each",
			len(r.objs.Routes), len(r.objs.Endpoints), len(r.objs.EndpointSlices), len(r.objs.RouterConfigs))
	}

	route := r.objs.Routes[0]
	wantMeta := ObjectMeta{
		Name:              "web",
		Namespace:         "shop",
		Labels:            map[string]string{"app": "web"},
		Annotations:       map[string]string{"haproxy.router.openshift.io/timeout": "5s"},
		CreationTimestamp: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
	}
	if !reflect.DeepEqual(route.Meta, wantMeta) {
		t.Errorf("route meta = %+v, want %+v", route.Meta, wantMeta)
	}
	wantSpec := RouteSpec{
		Host: "www.example.com",
		Path: "/shop",
		To:   RouteTargetReference{Kind: "Service", Name: "web", Weight: int32p(80)},
		AlternateBackends: []RouteTargetReference{
			{Kind: "Service", Name: "web-canary", Weight: int32p(20)},
		},
		Port: &RoutePort{TargetPort: IntOrString{IsString: true, Str: "http"}},
		TLS: &TLSConfig{
			Termination:                   TerminationEdge,
			Certificate:                   "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			Key:                           "KEY",
			InsecureEdgeTerminationPolicy: InsecurePolicyRedirect,
		},
		WildcardPolicy: WildcardPolicyNone,
	}
	if !reflect.DeepEqual(route.Spec, wantSpec) {
		t.Errorf("route spec = %+v, want %+v", route.Spec, wantSpec)
	}

	wantSubsets := []EndpointSubset{{
		Addresses:         []EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}},
		NotReadyAddresses: []EndpointAddress{{IP: "10.0.0.3"}},
		Ports:             []EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}},
	}}
	if got := r.objs.Endpoints[0].Subsets; !reflect.DeepEqual(got, wantSubsets) {
		t.Errorf("subsets = %+v, want %+v", got, wantSubsets)
	}

	slice := r.objs.EndpointSlices[0]
	wantEndpoints := []SliceEndpoint{
		{Addresses: []string{"10.0.1.1"}, Ready: boolp(true)},
		{Addresses: []string{"10.0.1.2"}, Ready: boolp(false)},
	}
	if slice.AddressType != "IPv4" || !reflect.DeepEqual(slice.Endpoints, wantEndpoints) ||
		slice.Meta.Labels[ServiceNameLabel] != "web-canary" {
		t.Errorf("slice = %+v", slice)
	}

	wantRC := RouterConfigSpec{
		BindOptions: BindOptions{Address: "127.0.0.1", Ports: BindPorts{HTTP: intp(8080), HTTPS: intp(8443), Stats: intp(9136)}},
		TuningOptions: TuningOptions{
			MaxConnections:      intp(20000),
			ReloadInterval:      "0",
			HealthCheckInterval: "10s",
			ClientTimeout:       "1m",
		},
		DynamicConfigManager: boolp(false),
		RouteSelector: &LabelSelector{
			MatchLabels:      map[string]string{"shard": "a"},
			MatchExpressions: []LabelSelectorRequirement{{Key: "env", Operator: "In", Values: []string{"prod", "staging"}}},
		},
		Namespaces:          []string{"shop", "blog"},
		AllowWildcardRoutes: true,
	}
	rc := r.objs.RouterConfigs[0]
	if !reflect.DeepEqual(rc.Spec, wantRC) || rc.Meta.Namespace != "default" {
		t.Errorf("router config = %+v (namespace %q), want %+v", rc.Spec, rc.Meta.Namespace, wantRC)
	}

	// Positions: every field validation may report on, in each kind.
	positions := []struct {
		src   Source
		field string
		want  string
	}{
		{route.Source, "", "route-full.yaml:2:1"},
		{route.Source, "metadata.name", "route-full.yaml:5:9"},
		{route.Source, "metadata.namespace", "route-full.yaml:6:14"},
		{route.Source, "metadata.annotations.haproxy.router.openshift.io/timeout", "route-full.yaml:20:42"},
		{route.Source, "metadata.labels.app", "route-full.yaml:18:10"},
		{route.Source, "metadata.creationTimestamp", "route-full.yaml:10:22"},
		{route.Source, "spec.host", "route-full.yaml:22:9"},
		{route.Source, "spec.path", "route-full.yaml:23:9"},
		{route.Source, "spec.to", "route-full.yaml:24:3"},
		{route.Source, "spec.to.name", "route-full.yaml:26:11"},
		{route.Source, "spec.to.weight", "route-full.yaml:27:13"},
		{route.Source, "spec.alternateBackends[0]", "route-full.yaml:29:5"},
		{route.Source, "spec.alternateBackends[0].name", "route-full.yaml:30:11"},
		{route.Source, "spec.alternateBackends[0].weight", "route-full.yaml:31:13"},
		{route.Source, "spec.port.targetPort", "route-full.yaml:33:17"},
		{route.Source, "spec.tls", "route-full.yaml:34:3"},
		{route.Source, "spec.tls.termination", "route-full.yaml:35:18"},
		{route.Source, "spec.tls.insecureEdgeTerminationPolicy", "route-full.yaml:36:36"},
		{route.Source, "spec.tls.certificate", "route-full.yaml:37:18"},
		{route.Source, "spec.tls.key", "route-full.yaml:41:10"},
		{route.Source, "spec.wildcardPolicy", "route-full.yaml:42:19"},
		{route.Source, "spec.tls.caCertificate", "route-full.yaml:2:1"}, // absent: the object
		{r.objs.Endpoints[0].Source, "", "route-full.yaml:48:1"},
		{r.objs.Endpoints[0].Source, "subsets[0].addresses[1].ip", "route-full.yaml:57:9"},
		{r.objs.Endpoints[0].Source, "subsets[0].notReadyAddresses[0].ip", "route-full.yaml:59:9"},
		{r.objs.Endpoints[0].Source, "subsets[0].ports[0].port", "route-full.yaml:62:11"},
		{slice.Source, "endpoints[1].addresses[0]", "route-full.yaml:76:15"},
		{slice.Source, "endpoints[0].conditions.ready", "route-full.yaml:74:23"},
		{slice.Source, "ports[0].port", "route-full.yaml:80:9"},
		{rc.Source, "spec.bindOptions.ports.https", "route-full.yaml:90:32"},
		{rc.Source, "spec.tuningOptions.reloadInterval", "route-full.yaml:93:21"},
		{rc.Source, "spec.routeSelector.matchExpressions[0].values[1]", "route-full.yaml:100:47"},
		{rc.Source, "spec.namespaces[1]", "route-full.yaml:101:22"},
		{rc.Source, "spec.allowWildcardRoutes", "route-full.yaml:102:24"},
	}
	for _, p := range positions {
		got := p.src.Pos
		if p.field != "" {
			got = p.src.At(p.field)
		}
		if got.String() != p.want {
			t.Errorf("At(%q) = %s, want %s", p.field, got, p.want)
		}
	}
}

const routeHead = "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n"

func TestDecodeDiagnostics(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		in     string
		want   []string
		failed bool
	}{
		{
			name: "empty file and empty documents",
			in:   "# nothing here\n---\n---\n...\n",
		},
		{
			name: "legacy route apiVersion",
			in:   "apiVersion: v1\nkind: Route\nmetadata: {name: r}\nspec: {host: a.example.com}\n",
		},
		{
			name:   "malformed YAML",
			in:     routeHead + "spec:\n  host: a: b\n",
			want:   []string{"f.yaml:6:3: error: invalid YAML: mapping values are not allowed in this context"},
			failed: true,
		},
		{
			name:   "tab indentation",
			in:     routeHead + "spec:\n\thost: a.example.com\n",
			want:   []string{"f.yaml:6:1: error: invalid YAML: found character that cannot start any token"},
			failed: true,
		},
		{
			name:   "bad indentation",
			in:     routeHead + "spec:\n    host: a.example.com\n  path: /x\n",
			want:   []string{"f.yaml:6:5: error: invalid YAML: did not find expected key"},
			failed: true,
		},
		{
			name:   "unterminated string",
			in:     routeHead + "spec:\n  host: \"a.example.com\n",
			want:   []string{"f.yaml:6:3: error: invalid YAML: found unexpected end of stream"},
			failed: true,
		},
		{
			name:   "weight is a string",
			in:     routeHead + "spec:\n  to:\n    name: s\n    weight: \"abc\"\n",
			want:   []string{`f.yaml:8:13: error: spec.to.weight: expected an integer, got string "abc"`},
			failed: true,
		},
		{
			name:   "weight is a float",
			in:     routeHead + "spec:\n  to: {name: s, weight: 1.5}\n",
			want:   []string{"f.yaml:6:25: error: spec.to.weight: expected an integer, got float 1.5"},
			failed: true,
		},
		{
			name:   "host is a map",
			in:     routeHead + "spec:\n  host:\n    name: x\n",
			want:   []string{"f.yaml:7:5: error: spec.host: expected a string, got a map"},
			failed: true,
		},
		{
			name:   "targetPort is a list",
			in:     routeHead + "spec:\n  port:\n    targetPort: [80]\n",
			want:   []string{"f.yaml:7:17: error: spec.port.targetPort: expected an integer or a string, got a list"},
			failed: true,
		},
		{
			name:   "alternateBackends is a map",
			in:     routeHead + "spec:\n  alternateBackends: {name: x}\n",
			want:   []string{"f.yaml:6:22: error: spec.alternateBackends: expected a list, got a map"},
			failed: true,
		},
		{
			name:   "weight out of range",
			in:     routeHead + "spec:\n  to: {name: s, weight: 99999999999}\n",
			want:   []string{"f.yaml:6:25: error: spec.to.weight: integer 99999999999 is out of range"},
			failed: true,
		},
		{
			name:   "annotation value is a boolean",
			in:     "apiVersion: v1\nkind: Route\nmetadata:\n  name: r\n  annotations:\n    haproxy.router.openshift.io/disable_cookies: true\n",
			want:   []string{"f.yaml:6:50: error: metadata.annotations.haproxy.router.openshift.io/disable_cookies: expected a string, got boolean true"},
			failed: true,
		},
		{
			name:   "endpoint port is a string",
			in:     "apiVersion: v1\nkind: Endpoints\nmetadata: {name: e}\nsubsets:\n- ports:\n  - port: abc\n",
			want:   []string{`f.yaml:6:11: error: subsets[0].ports[0].port: expected an integer, got string "abc"`},
			failed: true,
		},
		{
			name:   "slice ready is a string",
			in:     "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: s}\nendpoints:\n- addresses: [10.0.0.1]\n  conditions: {ready: \"yes\"}\n",
			want:   []string{`f.yaml:6:23: error: endpoints[0].conditions.ready: expected a boolean, got string "yes"`},
			failed: true,
		},
		{
			name: "unknown route fields are warnings",
			in:   routeHead + "  colour: blue\nspec:\n  host: a.example.com\n  hostt: b\n  tls: {termination: edge, keyy: x}\nextra: 1\n",
			want: []string{
				"f.yaml:5:3: warning: metadata.colour: unknown field",
				"f.yaml:8:3: warning: spec.hostt: unknown field: did you mean host?",
				"f.yaml:9:28: warning: spec.tls.keyy: unknown field: did you mean key?",
				"f.yaml:10:1: warning: extra: unknown field",
			},
		},
		{
			// Names several levels use (name, kind, weight) stay warnings.
			name: "an unknown field no level owns alone is a warning",
			in:   routeHead + "spec:\n  name: s\n  weight: 3\n",
			want: []string{"f.yaml:6:3: warning: spec.name: unknown field", "f.yaml:7:3: warning: spec.weight: unknown field"},
		},
		{
			name: "httpHeaders with a stray field",
			in:   routeHead + "spec:\n  httpHeaders:\n    action: {}\n",
			want: []string{"f.yaml:7:5: warning: spec.httpHeaders.action: unknown field"},
		},
		{
			name:   "unknown router config field is an error",
			in:     "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: rc}\nspec:\n  tuningOptions:\n    maxConnection: 10\n",
			want:   []string{"f.yaml:6:5: error: spec.tuningOptions.maxConnection: unknown field"},
			failed: true,
		},
		{
			name:   "router config port is a string",
			in:     "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: rc}\nspec:\n  bindOptions:\n    ports: {http: eighty}\n",
			want:   []string{`f.yaml:6:19: error: spec.bindOptions.ports.http: expected an integer, got string "eighty"`},
			failed: true,
		},
		{
			name: "router config port in octal",
			in:   "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: rc}\nspec:\n  bindOptions:\n    ports: {http: 0443, https: 0x1bb, stats: 1_936}\n",
			want: []string{
				`f.yaml:6:19: warning: spec.bindOptions.ports.http: integer 0443 is read as 291; write it in decimal`,
				`f.yaml:6:32: warning: spec.bindOptions.ports.https: integer 0x1bb is read as 443; write it in decimal`,
				`f.yaml:6:46: warning: spec.bindOptions.ports.stats: integer 1_936 is read as 1936; write it in decimal`,
			},
		},
		{
			name:   "missing kind",
			in:     "apiVersion: v1\nmetadata: {name: r}\n",
			want:   []string{"f.yaml:1:1: error: kind: required"},
			failed: true,
		},
		{
			name:   "missing apiVersion",
			in:     "\n\nkind: Route\nmetadata: {name: r}\n",
			want:   []string{"f.yaml:3:1: error: apiVersion: required"},
			failed: true,
		},
		{
			name:   "kind is a number",
			in:     "apiVersion: v1\nkind: 5\n",
			want:   []string{"f.yaml:2:7: error: kind: expected a string, got integer 5"},
			failed: true,
		},
		{
			name:   "unknown apiVersion for Route",
			in:     "apiVersion: route.openshift.io/v2\nkind: Route\nmetadata: {name: r}\n",
			want:   []string{`f.yaml:1:13: error: apiVersion: unsupported apiVersion "route.openshift.io/v2" for kind Route, want route.openshift.io/v1`},
			failed: true,
		},
		{
			name: "other kinds are skipped with a note",
			in:   "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n",
			want: []string{
				`f.yaml:1:1: note: skipped Service "web": haroute reads only Route, Endpoints, EndpointSlice and RouterConfig`,
				`f.yaml:6:1: note: skipped ConfigMap "cm": haroute reads only Route, Endpoints, EndpointSlice and RouterConfig`,
			},
		},
		{
			name:   "document is not a map",
			in:     "- a\n- b\n",
			want:   []string{"f.yaml:1:1: error: expected a Kubernetes object (a map), got a list"},
			failed: true,
		},
		{
			name:   "duplicate keys",
			in:     routeHead + "spec:\n  host: a.example.com\n  host: b.example.com\n",
			want:   []string{"f.yaml:7:3: error: spec.host: duplicate key, first written at line 6"},
			failed: true,
		},
		{
			name:   "empty metadata.name",
			in:     "apiVersion: v1\nkind: Route\nmetadata:\n  name: \"\"\n",
			want:   []string{"f.yaml:4:9: error: metadata.name: required"},
			failed: true,
		},
		{
			name:   "no metadata",
			in:     "apiVersion: v1\nkind: Route\nspec: {host: a.example.com}\n",
			want:   []string{"f.yaml:1:1: error: metadata.name: required"},
			failed: true,
		},
		{
			name: "list with a bad item",
			in: "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n" +
				"- apiVersion: v1\n  kind: Endpoints\n  metadata: {name: a}\n" +
				"- apiVersion: v1\n  kind: Endpoints\n  metadata: {name: b}\n  subsets: {}\n",
			want:   []string{"f.yaml:11:12: error: subsets: expected a list, got a map"},
			failed: true,
		},
		{
			name:   "bad creationTimestamp",
			in:     "apiVersion: v1\nkind: Route\nmetadata:\n  name: r\n  creationTimestamp: yesterday\n",
			want:   []string{`f.yaml:5:22: error: metadata.creationTimestamp: expected an RFC 3339 timestamp, got string "yesterday"`},
			failed: true,
		},
		{
			name: "merge keys",
			in: routeHead + "spec:\n  to: &to {kind: Service, name: s, weight: 5}\n" +
				"  alternateBackends:\n  - <<: *to\n    name: t\n",
		},
		{
			// A YAML library resolves it, so kind and apiVersion are there.
			name: "kind and apiVersion from a top-level merge",
			in: "base: &b {apiVersion: route.openshift.io/v1}\n<<: [*b, {kind: Route}]\n" +
				"metadata: {name: r, namespace: ns}\nspec:\n  to: {kind: Service, name: s}\n",
			want: []string{"f.yaml:1:1: warning: base: unknown field"},
		},
		{
			name:   "merge of a scalar",
			in:     routeHead + "spec:\n  to:\n    <<: 5\n",
			want:   []string{"f.yaml:7:9: error: spec.to.<<: expected a map or a list of maps to merge, got integer 5"},
			failed: true,
		},
		{
			name:   "JSON syntax error",
			path:   "f.json",
			in:     "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Endpoints\",,\n  \"metadata\": {\"name\": \"e\"}\n}\n",
			want:   []string{"f.json:3:23: error: invalid JSON: invalid character ',' looking for beginning of object key string"},
			failed: true,
		},
		{
			name:   "JSON wrong type",
			path:   "f.json",
			in:     "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"Endpoints\",\n\t\"metadata\": {\"name\": \"e\"},\n\t\"subsets\": [{\"ports\": [{\"port\": \"80\"}]}]\n}\n",
			want:   []string{`f.json:5:34: error: subsets[0].ports[0].port: expected an integer, got string "80"`},
			failed: true,
		},
		{
			name:   "binary garbage",
			in:     "apiVersion: v1\nkind: \x00\x01\xff",
			want:   []string{"f.yaml:2:7: error: NUL byte: not a text file"},
			failed: true,
		},
		{
			name:   "invalid UTF-8",
			in:     "apiVersion: v1\nkind: Ro\xffute\n",
			want:   []string{"f.yaml:2:9: error: invalid UTF-8: not a text file"},
			failed: true,
		},
		{
			name:   "control character",
			in:     "apiVersion: v1\n  \x1b[31m\n",
			want:   []string{"f.yaml:2:3: error: control character U+001B is not allowed"},
			failed: true,
		},
		{
			name:   "byte order mark before a later document",
			in:     "\ufeffapiVersion: v1\r\nkind: Endpoints\r\nmetadata: {name: e}\r\n---\r\n\ufeffapiVersion: v1\r\n",
			want:   []string{"f.yaml:5:1: error: byte order mark (U+FEFF) inside the file: only its first line may start with one"},
			failed: true,
		},
		{
			name:   "alias cycle",
			in:     "a: &a [*a]\n",
			want:   []string{"f.yaml:1:8: error: alias *a refers to its own anchor"},
			failed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = "f.yaml"
			}
			r := decodeFile(path, []byte(tt.in), DefaultLimits())
			got := diagStrings(r.diags)
			if !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("diagnostics:\n got %q\nwant %q", got, tt.want)
			}
			if r.failed != tt.failed {
				t.Errorf("failed = %v, want %v", r.failed, tt.failed)
			}
		})
	}
}

func TestDecodeMergeKeys(t *testing.T) {
	in := routeHead + "spec:\n  to: &to {kind: Service, name: s, weight: 5}\n" +
		"  alternateBackends:\n  - <<: *to\n    name: t\n"
	r := decodeFile("f.yaml", []byte(in), DefaultLimits())
	if len(r.diags) != 0 || len(r.objs.Routes) != 1 {
		t.Fatalf("diagnostics %q, %d routes; want none, 1", diagStrings(r.diags), len(r.objs.Routes))
	}
	want := []RouteTargetReference{{Kind: "Service", Name: "t", Weight: int32p(5)}}
	if got := r.objs.Routes[0].Spec.AlternateBackends; !reflect.DeepEqual(got, want) {
		t.Errorf("alternateBackends = %+v, want %+v", got, want)
	}
	// The merged weight is reported where it was written: in the anchor.
	if got := r.objs.Routes[0].Source.At("spec.alternateBackends[0].weight").String(); got != "f.yaml:6:44" {
		t.Errorf("merged weight at %s, want f.yaml:6:44", got)
	}
}

// A null annotation is there, empty, as Kubernetes decodes it: left out,
// an `ip_allowlist: ~` was dropped without the warning an empty one gets,
// and served the route to every client with `check --strict` silent.
func TestDecodeNullAnnotationIsEmpty(t *testing.T) {
	in := "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n  annotations:\n" +
		"    haproxy.router.openshift.io/ip_allowlist: ~\n    haproxy.router.openshift.io/timeout:\n" +
		"spec:\n  to: {kind: Service, name: s}\n"
	r := decodeFile("f.yaml", []byte(in), DefaultLimits())
	if len(r.diags) != 0 || len(r.objs.Routes) != 1 {
		t.Fatalf("diagnostics %q, %d routes; want none, 1", diagStrings(r.diags), len(r.objs.Routes))
	}
	want := map[string]string{AnnotationIPAllowlist: "", AnnotationTimeout: ""}
	if got := r.objs.Routes[0].Meta.Annotations; !reflect.DeepEqual(got, want) {
		t.Errorf("annotations = %q, want %q", got, want)
	}
}

// Objects of one file that differ in shape record each its own fields,
// however the walk reuses names between them; a List's items record theirs
// relative to the item, and the List's own fields after the items keep
// their names.
func TestDecodeFieldNamesPerObject(t *testing.T) {
	in := routeHead + "spec:\n  tls:\n    termination: edge\n  to: {kind: Service, name: a}\n" +
		"---\n" + routeHead + "spec:\n  port:\n    targetPort: 8080\n  to: {kind: Service, name: b}\n" +
		"---\napiVersion: v1\nkind: List\nitems:\n" +
		"- {apiVersion: v1, kind: Endpoints, metadata: {name: e}, subsets: [{addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]}]}\n" +
		"bogus: 1\n"
	r := decodeFile("f.yaml", []byte(in), DefaultLimits())
	if got, want := diagStrings(r.diags), []string{"f.yaml:23:1: warning: bogus: unknown field"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("diagnostics = %q, want %q", got, want)
	}
	if len(r.objs.Routes) != 2 || len(r.objs.Endpoints) != 1 {
		t.Fatalf("%d routes, %d endpoints; want 2, 1", len(r.objs.Routes), len(r.objs.Endpoints))
	}
	tests := []struct {
		src   Source
		field string
		want  string // "" for not recorded
	}{
		{r.objs.Routes[0].Source, "spec.tls.termination", "f.yaml:7:18"},
		{r.objs.Routes[0].Source, "spec.to.name", "f.yaml:8:29"},
		{r.objs.Routes[0].Source, "spec.port.targetPort", ""},
		{r.objs.Routes[1].Source, "spec.port.targetPort", "f.yaml:16:17"},
		{r.objs.Routes[1].Source, "spec.to.name", "f.yaml:17:29"},
		{r.objs.Routes[1].Source, "spec.tls.termination", ""},
		{r.objs.Routes[1].Source, "spec.tls", ""},
		{r.objs.Endpoints[0].Source, "subsets[0].addresses[1].ip", "f.yaml:22:102"},
		{r.objs.Endpoints[0].Source, "items[0].subsets[0].addresses[1].ip", ""},
	}
	for _, tt := range tests {
		got := ""
		if p, ok := tt.src.Lookup(tt.field); ok {
			got = p.String()
		}
		if got != tt.want {
			t.Errorf("Lookup(%q) = %q, want %q", tt.field, got, tt.want)
		}
	}
}

func TestDecodeJSONWithTabs(t *testing.T) {
	in := "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"List\",\n\t\"items\": [\n\t\t{\"apiVersion\": \"v1\", \"kind\": \"Endpoints\",\n" +
		"\t\t \"metadata\": {\"name\": \"e\", \"namespace\": \"ns\"},\n\t\t \"subsets\": [{\"addresses\": [{\"ip\": \"10.0.0.1\"}], \"ports\": [{\"port\": 80}]}]}\n\t]\n}\n"
	r := decodeFile("list.json", []byte(in), DefaultLimits())
	if len(r.diags) != 0 || len(r.objs.Endpoints) != 1 {
		t.Fatalf("diagnostics %q, %d endpoints; want none, 1", diagStrings(r.diags), len(r.objs.Endpoints))
	}
	e := r.objs.Endpoints[0]
	if e.Meta.Namespace != "ns" || e.Subsets[0].Addresses[0].IP != "10.0.0.1" || e.Subsets[0].Ports[0].Port != 80 {
		t.Errorf("endpoints = %+v", e)
	}
	if got := e.Source.At("subsets[0].addresses[0].ip").String(); got != "list.json:7:38" {
		t.Errorf("ip at %s, want list.json:7:38", got)
	}
}

func TestDecodeLimits(t *testing.T) {
	// Billion laughs: nine levels of nine aliases would expand to 10^9 nodes.
	var bomb strings.Builder
	bomb.WriteString("apiVersion: v1\nkind: Route\nmetadata:\n  name: r\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&bomb, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	deep := "apiVersion: v1\nkind: Route\nmetadata: {name: r}\nspec: {host: " + strings.Repeat("[", 150) + strings.Repeat("]", 150) + "}\n"
	big := "# " + strings.Repeat("x", MaxFileSize) + "\n"

	tests := []struct {
		name string
		in   string
		want string
	}{
		{"alias bomb", bomb.String(), "f.yaml:10:12: error: aliases expand to more than 100000 nodes"},
		{"deep nesting", deep, "f.yaml:4:112: error: nesting deeper than 100 levels"},
		{"file too big", big, "f.yaml:1:1: error: file is 8388611 bytes, more than the limit of 8388608"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeFile("f.yaml", []byte(tt.in), DefaultLimits())
			if got := diagStrings(r.diags); len(got) != 1 || got[0] != tt.want {
				t.Errorf("diagnostics = %q, want [%q]", got, tt.want)
			}
			if !r.failed {
				t.Error("failed = false, want true")
			}
		})
	}
}

// TestDecodeSplitFile checks that a file big enough to be parsed in
// chunks reports the same positions as if it were parsed whole.
func TestDecodeSplitFile(t *testing.T) {
	var b strings.Builder
	const n = 3000
	badLine := 0
	line := 1
	for i := range n {
		weight := "10"
		if i == n-10 {
			weight = `"ten"`
		}
		doc := fmt.Sprintf("---\napiVersion: v1\nkind: Route\nmetadata:\n  name: r%d\nspec:\n  host: r%d.example.com\n  to:\n    name: s\n    weight: %s\n  # a comment to pad the document a little more than it needs\n", i, i, weight)
		if i == n-10 {
			badLine = line + 9
		}
		line += strings.Count(doc, "\n")
		b.WriteString(doc)
	}
	data := []byte(b.String())
	if chunks := splitDocuments(0, "f.yaml", data); len(chunks) < 2 {
		t.Fatalf("%d bytes split into %d chunks; the test needs several", len(data), len(chunks))
	}
	r := decodeFile("f.yaml", data, DefaultLimits())
	want := fmt.Sprintf(`f.yaml:%d:13: error: spec.to.weight: expected an integer, got string "ten"`, badLine)
	if got := diagStrings(r.diags); len(got) != 1 || got[0] != want {
		t.Errorf("diagnostics = %q, want [%q]", got, want)
	}
	// The broken route is taken out and named, and explains the error.
	if want := []objectID{{"Route", "default", fmt.Sprintf("r%d", n-10)}}; !reflect.DeepEqual(r.broken, want) || !r.partial || !r.failed {
		t.Errorf("broken %v, partial %t, failed %t; want %v, partial and failed", r.broken, r.partial, r.failed, want)
	}
	if len(r.objs.Routes) != n-1 {
		t.Fatalf("%d routes, want %d", len(r.objs.Routes), n-1)
	}
	for j, rt := range r.objs.Routes {
		i := j
		if j >= n-10 {
			i++
		}
		if rt.Meta.Name != fmt.Sprintf("r%d", i) || rt.Source.Pos.Line != 2+11*i {
			t.Fatalf("route %d is %q at %s, want r%d at line %d", j, rt.Meta.Name, rt.Source.Pos, i, 2+11*i)
		}
	}
}

// gen10k returns 10k routes and their 10k Endpoints (two addresses each)
// in four files, the shape of a large real config tree.
func gen10k() []SourceFile {
	var files []SourceFile
	for part := range 2 {
		var routes, eps strings.Builder
		for i := part * 5000; i < (part+1)*5000; i++ {
			fmt.Fprintf(&routes, `---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: app-%d
  namespace: ns-%d
  creationTimestamp: "2024-05-01T10:00:00Z"
  annotations:
    haproxy.router.openshift.io/timeout: 30s
spec:
  host: app-%d.apps.example.com
  path: /
  to:
    kind: Service
    name: app-%d
    weight: 100
  port:
    targetPort: http
  tls:
    termination: edge
    insecureEdgeTerminationPolicy: Redirect
`, i, i%50, i, i)
			fmt.Fprintf(&eps, `---
apiVersion: v1
kind: Endpoints
metadata:
  name: app-%d
  namespace: ns-%d
subsets:
- addresses:
  - ip: 10.%d.%d.1
  - ip: 10.%d.%d.2
  ports:
  - name: http
    port: 8080
    protocol: TCP
`, i, i%50, i/256, i%256, i/256, i%256)
		}
		files = append(files,
			SourceFile{Path: fmt.Sprintf("routes-%d.yaml", part), Data: []byte(routes.String())},
			SourceFile{Path: fmt.Sprintf("endpoints-%d.yaml", part), Data: []byte(eps.String())})
	}
	return files
}

// BenchmarkDecode10k measures a cold decode of 10k routes and 10k
// Endpoints: every file parsed, as at daemon start.
func BenchmarkDecode10k(b *testing.B) {
	files := gen10k()
	size := 0
	for _, f := range files {
		size += len(f.Data)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		objs, diags := NewLoader().decode(files)
		if len(objs.Routes) != 10000 || len(objs.Endpoints) != 10000 || len(diags) != 0 {
			b.Fatalf("%d routes, %d endpoints, diagnostics %q", len(objs.Routes), len(objs.Endpoints), diagStrings(diags))
		}
	}
}

// BenchmarkDecode10kUnchanged measures a resync in which no file changed:
// hashes match, nothing is parsed.
func BenchmarkDecode10kUnchanged(b *testing.B) {
	files := gen10k()
	l := NewLoader()
	l.decode(files)
	b.ReportAllocs()
	for b.Loop() {
		if objs, _ := l.decode(files); len(objs.Routes) != 10000 {
			b.Fatalf("%d routes", len(objs.Routes))
		}
	}
}
