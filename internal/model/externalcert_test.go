package model

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestExternalCertificate: spec.tls.externalCertificate names a v1 Secret
// of type kubernetes.io/tls in the route's namespace; its tls.crt and
// tls.key serve the route after the same checks as inline material.
func TestExternalCertificate(t *testing.T) {
	pair := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	other := genPair(t, "ecdsa", "pkcs8", "other.example.com")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := func(name, typ, crt, key string) string {
		return "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: shop\ntype: " + typ +
			"\ndata:\n  tls.crt: " + b64(crt) + "\n  tls.key: " + b64(key) + "\n"
	}
	route := func(tls string) string {
		return "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  host: shop.example.com\n  to:\n    name: web\n  tls:\n" + tls
	}
	ext := "    termination: edge\n    externalCertificate:\n      name: shop-tls\n"
	tests := []struct {
		name    string
		docs    string
		wantErr string
	}{
		{name: "resolved", docs: route(ext) + secret("shop-tls", SecretTypeTLS, pair.cert, pair.key)},
		{name: "missing secret", docs: route(ext),
			wantErr: `f.yaml:13:13: error: spec.tls.externalCertificate.name: secret "shop-tls" not found in namespace "shop": write it there as a v1 Secret of type kubernetes.io/tls`},
		{name: "secret of another type", docs: route(ext) + secret("shop-tls", "Opaque", pair.cert, pair.key),
			wantErr: `f.yaml:13:13: error: spec.tls.externalCertificate.name: secret "shop-tls" is of type "Opaque"; externalCertificate needs type kubernetes.io/tls`},
		{name: "key of another certificate", docs: route(ext) + secret("shop-tls", SecretTypeTLS, pair.cert, other.key),
			wantErr: `f.yaml:13:13: error: spec.tls.externalCertificate.name: secret "shop-tls": key does not match the certificate (subject "CN=shop.example.com")`},
		{name: "with an inline certificate too", docs: route(ext + "    certificate: x\n"),
			wantErr: "f.yaml:12:5: error: spec.tls.externalCertificate: cannot specify both tls.certificate and tls.externalCertificate\n" +
				"f.yaml:14:18: error: spec.tls.key: key is required when certificate is set"},
		{name: "passthrough", docs: route("    termination: passthrough\n    externalCertificate:\n      name: shop-tls\n"),
			wantErr: `f.yaml:12:5: error: spec.tls.externalCertificate: passthrough routes cannot have an externalCertificate: the backend terminates TLS`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeFile("f.yaml", []byte(tt.docs), DefaultLimits())
			if len(r.diags) > 0 {
				t.Fatalf("decode: %v", r.diags)
			}
			d, ds := Admit(r.objs, nil)
			var errs []string
			for _, x := range ds {
				if x.Severity == SeverityError {
					errs = append(errs, x.String())
				}
			}
			if got := strings.Join(errs, "\n"); got != tt.wantErr {
				t.Fatalf("errors:\n got %s\nwant %s", got, tt.wantErr)
			}
			if tt.wantErr != "" {
				if len(d.Routes) != 0 {
					t.Errorf("route admitted")
				}
				return
			}
			if len(d.Routes) != 1 || d.Routes[0].TLS.Certificate != pair.cert || d.Routes[0].TLS.Key != pair.key {
				t.Fatalf("route not served with the Secret's certificate: %+v", d.Routes)
			}
		})
	}
}

// A Secret that changes changes the route's certificate and nothing else:
// what plan turns into a runtime certificate update.
func TestExternalCertificateRotation(t *testing.T) {
	first := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	second := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	load := func(p testPair) *Desired {
		b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
		doc := "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  host: shop.example.com\n  to:\n    name: web\n  tls:\n    termination: edge\n    externalCertificate:\n      name: shop-tls\n" +
			"---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-tls\n  namespace: shop\ntype: kubernetes.io/tls\ndata:\n  tls.crt: " + b64(p.cert) + "\n  tls.key: " + b64(p.key) + "\n"
		res := NewLoader().Load([]SourceFile{{Path: "f.yaml", Data: []byte(doc)}})
		if res.Desired == nil || len(res.Desired.Routes) != 1 {
			t.Fatalf("not admitted: %v", res.Diagnostics)
		}
		return res.Desired
	}
	a, b := load(first).Routes[0], load(second).Routes[0]
	if a.TLS.Certificate == b.TLS.Certificate || b.TLS.Certificate != second.cert {
		t.Fatal("the new Secret's certificate is not the route's")
	}
	same := *b
	same.TLS = a.TLS
	if !a.SameOutput(&same) {
		t.Error("a Secret change changed more than the certificate")
	}
}

// A Secret whose new version cannot serve keeps its last good material:
// the route is stale with the Secret's error at the Secret's file, which
// alone is a stale path (the route's own file is current and keeps being
// saved as it is). Fixed, the route is admitted with the new material.
func TestExternalCertificateSecretLastGood(t *testing.T) {
	good := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	other := genPair(t, "ecdsa", "pkcs8", "other.example.com")
	fixed := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	route := SourceFile{Path: "routes.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  host: shop.example.com\n  to:\n    name: web\n  tls:\n    termination: edge\n    externalCertificate:\n      name: shop-tls\n")}
	secret := func(crt, key string) SourceFile {
		return SourceFile{Path: "secret.yaml", Data: []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-tls\n  namespace: shop\ntype: kubernetes.io/tls\ndata:\n  tls.crt: " + b64(crt) + "\n  tls.key: " + b64(key) + "\n")}
	}
	l := NewLoader()
	if res := l.Load([]SourceFile{route, secret(good.cert, good.key)}); len(res.Desired.Routes) != 1 {
		t.Fatalf("not admitted: %v", res.Diagnostics)
	}
	res := l.Load([]SourceFile{route, secret(good.cert, other.key)})
	if len(res.Desired.Routes) != 1 || res.Desired.Routes[0].TLS.Key != good.key {
		t.Fatalf("the last good material does not serve: %+v %v", res.Desired.Routes, res.Diagnostics)
	}
	st := res.Desired.Statuses[0]
	if st.State != RouteStale || len(st.Reasons) != 1 || !strings.HasPrefix(st.Reasons[0], "secret.yaml:") {
		t.Errorf("status %s %q, want stale with the Secret's error at its file", st.State, st.Reasons)
	}
	if !res.Diagnostics.HasErrors(false) {
		t.Error("the broken Secret is no input error")
	}
	if paths := res.StalePaths(); !paths["secret.yaml"] || paths["routes.yaml"] {
		t.Errorf("stale paths %v, want the Secret's file alone", paths)
	}
	res = l.Load([]SourceFile{route, secret(fixed.cert, fixed.key)})
	if len(res.Desired.Routes) != 1 || res.Desired.Routes[0].TLS.Key != fixed.key || res.Desired.Statuses[0].State != RouteAdmitted {
		t.Fatalf("fixed: %+v %v", res.Desired.Statuses[0], res.Diagnostics)
	}
}

// TestRefusedSecretMaterialKeepsTheLastGood: when HAProxy refuses a route
// whose Secret's material changed since the last good state, the Secret is
// at fault, not the route: its last good material keeps serving, and a
// new version of the Secret is tried afresh. With the last good material
// in force, the route itself is refused.
func TestRefusedSecretMaterialKeepsTheLastGood(t *testing.T) {
	good := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	refused := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	fixed := genPair(t, "ecdsa", "pkcs8", "shop.example.com")
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	route := SourceFile{Path: "routes.yaml", Data: []byte("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  host: shop.example.com\n  to:\n    name: web\n  tls:\n    termination: edge\n    externalCertificate:\n      name: shop-tls\n")}
	secret := func(p testPair) SourceFile {
		return SourceFile{Path: "secret.yaml", Data: []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: shop-tls\n  namespace: shop\ntype: kubernetes.io/tls\ndata:\n  tls.crt: " + b64(p.cert) + "\n  tls.key: " + b64(p.key) + "\n")}
	}
	key := RouteKey{Namespace: "shop", Name: "web"}
	l := NewLoader()
	if res := l.Load([]SourceFile{route, secret(good)}); len(res.Desired.Routes) != 1 {
		t.Fatalf("not admitted: %v", res.Diagnostics)
	}

	// The Secret rotates to material Go takes and HAProxy refuses.
	if res := l.Evaluate([]SourceFile{route, secret(refused)}); len(res.Desired.Routes) != 1 || res.Desired.Routes[0].TLS.Key != refused.key {
		t.Fatalf("the new material is not tried: %v", res.Diagnostics)
	}
	if !l.Refuse(key, "unable to load SSL certificate") {
		t.Fatal("route not found")
	}
	res := l.Evaluate([]SourceFile{route, secret(refused)})
	if len(res.Desired.Routes) != 1 || res.Desired.Routes[0].TLS.Key != good.key {
		t.Fatalf("the Secret's last good material does not serve: %+v %v", res.Desired.Routes, res.Diagnostics)
	}
	if st := res.Desired.Statuses[0]; st.State != RouteStale || len(st.Reasons) != 1 || !strings.Contains(st.Reasons[0], "refused by HAProxy: unable to load SSL certificate") {
		t.Errorf("status %s %q, want stale, naming HAProxy's refusal", st.State, st.Reasons)
	}
	l.Commit(res)

	// A fixed Secret is tried afresh and serves.
	res = l.Load([]SourceFile{route, secret(fixed)})
	if len(res.Desired.Routes) != 1 || res.Desired.Routes[0].TLS.Key != fixed.key || res.Desired.Statuses[0].State != RouteAdmitted {
		t.Fatalf("fixed: %+v %v", res.Desired.Statuses[0], res.Diagnostics)
	}

	// Refused with the material of the last good state: the route is at fault.
	l.Evaluate([]SourceFile{route, secret(fixed)})
	l.Refuse(key, "something of the route")
	res = l.Evaluate([]SourceFile{route, secret(fixed)})
	if st := res.Desired.Statuses[0]; st.State == RouteAdmitted || !strings.Contains(strings.Join(st.Reasons, " "), "HAProxy refused this route: something of the route") {
		t.Errorf("status %s %q, want the route refused", st.State, st.Reasons)
	}
}
