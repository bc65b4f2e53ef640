package model

import "testing"

// appProtocol h2c (either spelling OpenShift reads) on an Endpoints or
// EndpointSlice port marks its servers H2C; other values change nothing.
func TestAppProtocolH2CMarksServers(t *testing.T) {
	files := []SourceFile{{Path: "all.yaml", Data: []byte(`apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: grpc, namespace: ns}
spec:
  host: grpc.example.com
  to: {kind: Service, name: grpc}
  port: {targetPort: grpc}
---
apiVersion: route.openshift.io/v1
kind: Route
metadata: {name: web, namespace: ns}
spec:
  host: web.example.com
  to: {kind: Service, name: web}
---
apiVersion: v1
kind: Endpoints
metadata: {name: grpc, namespace: ns}
subsets:
- addresses: [{ip: 10.0.0.1}]
  ports:
  - {name: grpc, port: 9000, appProtocol: h2c}
  - {name: metrics, port: 9100, appProtocol: http}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: grpc-abc
  namespace: ns
  labels: {kubernetes.io/service-name: grpc}
addressType: IPv4
endpoints:
- addresses: [10.0.0.2]
ports:
- {name: grpc, port: 9000, appProtocol: kubernetes.io/h2c}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: ns}
subsets:
- addresses: [{ip: 10.0.0.3}]
  ports:
  - {port: 8080, appProtocol: http}
`)}}
	res := NewLoader().Load(files)
	if res.Desired == nil || len(res.Desired.Routes) != 2 {
		t.Fatalf("desired %+v, diagnostics %v", res.Desired, res.Diagnostics)
	}
	want := map[string][]Server{
		"grpc": {{Name: "ck_10.0.0.1_9000", Address: "10.0.0.1", Port: 9000, Weight: 1, H2C: true},
			{Name: "ck_10.0.0.2_9000", Address: "10.0.0.2", Port: 9000, Weight: 1, H2C: true}},
		"web": {{Name: "ep_10.0.0.3_8080", Address: "10.0.0.3", Port: 8080, Weight: 1}},
	}
	for _, r := range res.Desired.Routes {
		got := r.Servers()
		if len(got) != len(want[r.Key.Name]) {
			t.Fatalf("%s: servers %+v, want %+v", r.Key, got, want[r.Key.Name])
		}
		for i := range got {
			if got[i] != want[r.Key.Name][i] {
				t.Errorf("%s: server %d = %+v, want %+v", r.Key, i, got[i], want[r.Key.Name][i])
			}
		}
	}
}
