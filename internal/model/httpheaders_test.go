package model

import (
	"strings"
	"testing"
)

// TestHTTPHeaderActions checks spec.httpHeaders.actions with OpenShift's
// rules (openshift/library-go pkg/route/validation), through the decoder,
// so every message carries its line.
func TestHTTPHeaderActions(t *testing.T) {
	head := "apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: r\n  namespace: ns\nspec:\n  host: r.example.com\n  to:\n    name: web\n"
	actions := func(req, res string) string {
		s := "  httpHeaders:\n    actions:\n"
		if req != "" {
			s += "      request:\n" + req
		}
		if res != "" {
			s += "      response:\n" + res
		}
		return s
	}
	set := func(name, value string) string {
		return "      - name: " + name + "\n        action:\n          type: Set\n          set:\n            value: " + value + "\n"
	}
	del := func(name string) string {
		return "      - name: " + name + "\n        action:\n          type: Delete\n"
	}
	tests := []struct {
		name    string
		spec    string
		want    []string // errors
		req     HeaderActions
		res     HeaderActions
		noRoute bool
		// routerRes are the RouterConfig's response actions.
		routerRes []HeaderAction
	}{
		{name: "set and delete", spec: actions(set("X-Client-Host", "'%[req.hdr(host),lower]'")+del("X-Debug"), set("X-Frame-Options", "DENY")+del("Server")),
			req: "Set\tX-Client-Host\t%[req.hdr(host),lower]\nDelete\tX-Debug\n", res: "Set\tX-Frame-Options\tDENY\nDelete\tServer\n"},
		{name: "one largest value fits", spec: actions(set("X-Big", strings.Repeat("x", maxHeaderValueSize)), ""),
			req: HeaderActions("Set\tX-Big\t" + strings.Repeat("x", maxHeaderValueSize) + "\n")},
		// Three of them were admitted, and HAProxy answered every
		// request of the route with 500.
		{name: "more than one largest value", spec: actions(set("X-Big0", strings.Repeat("x", maxHeaderValueSize))+set("X-Big1", strings.Repeat("x", maxHeaderValueSize))+set("X-Big2", "x"), ""), want: []string{
			`f.yaml:12:7: error: spec.httpHeaders.actions.request: the Set actions add 32799 bytes of headers, more than 16643 (one action with the longest name and value): HAProxy could not fit them into the message's buffer and would answer 500`,
		}},
		// Each within its limit, the route's and the RouterConfig's
		// together answered 500 to every request.
		{name: "with the RouterConfig's", spec: actions("", set("X-Big", strings.Repeat("r", 16000))),
			routerRes: []HeaderAction{{Name: "X-Router", Value: strings.Repeat("c", 16000)}}, want: []string{
				`f.yaml:12:7: error: spec.httpHeaders.actions.response: the Set actions add 16009 bytes of headers, and the RouterConfig's 16012 more: together more than 17412, which HAProxy could not fit into the message's buffer; it would answer 500`,
			}},
		{name: "beside the RouterConfig's, within the limit", spec: actions(set("X-Small", "one"), set("X-Big", strings.Repeat("r", 1000))),
			routerRes: []HeaderAction{{Name: "X-Router", Value: strings.Repeat("c", 16000)}, {Name: "X-Gone", Delete: true}},
			req:       "Set\tX-Small\tone\n", res: HeaderActions("Set\tX-Big\t" + strings.Repeat("r", 1000) + "\n")},
		{name: "a literal percent is written %%", spec: actions(set("X-Rate", "'100%%'"), ""), req: "Set\tX-Rate\t100%%\n"},
		{name: "forbidden header", spec: actions(del("Cookie"), set("Strict-Transport-Security", "max-age=1")), want: []string{
			`f.yaml:13:15: error: spec.httpHeaders.actions.request[0].name: header "Cookie" may not be modified here (not Strict-Transport-Security, Proxy, Cookie or Set-Cookie)`,
			`f.yaml:17:15: error: spec.httpHeaders.actions.response[0].name: header "Strict-Transport-Security" may not be modified here (not Strict-Transport-Security, Proxy, Cookie or Set-Cookie)`,
		}},
		{name: "duplicate name", spec: actions(del("X-A")+del("X-A"), ""), want: []string{
			`f.yaml:16:15: error: spec.httpHeaders.actions.request[1].name: header "X-A" already has an action in this list`,
		}},
		{name: "response fetch in a request", spec: actions(set("X-A", "'%[res.hdr(server)]'"), ""), want: []string{
			`f.yaml:17:20: error: spec.httpHeaders.actions.request[0].action.set.value: value "%[res.hdr(server)]" is not a valid header value: it may use HAProxy's %[] with the fetches req.hdr(name) and ssl_c_der and the converters lower and base64, '%%' for a literal '%', and no control characters`,
		}},
		{name: "bare percent", spec: actions("", set("X-A", "'50%'")), want: []string{
			`f.yaml:17:20: error: spec.httpHeaders.actions.response[0].action.set.value: value "50%" is not a valid header value: it may use HAProxy's %[] with the fetches res.hdr(name) and ssl_c_der and the converters lower and base64, '%%' for a literal '%', and no control characters`,
		}},
		{name: "bad name", spec: actions(del("X A"), ""), want: []string{
			`f.yaml:13:15: error: spec.httpHeaders.actions.request[0].name: name "X A" is not a valid HTTP header name (RFC 2616 token characters)`,
		}},
		{name: "Set without set", spec: actions("      - name: X-A\n        action:\n          type: Set\n", ""), want: []string{
			`f.yaml:14:9: error: spec.httpHeaders.actions.request[0].action.set: set is required when type is Set`,
		}},
		{name: "unknown type", spec: actions("      - name: X-A\n        action:\n          type: Append\n", ""), want: []string{
			`f.yaml:15:17: error: spec.httpHeaders.actions.request[0].action.type: type "Append" is not Set or Delete`,
		}},
		{name: "too many", spec: actions(strings.Repeat(del("X-A"), 21), ""), want: []string{
			`f.yaml:12:7: error: spec.httpHeaders.actions.request: at most 20 header actions are allowed, got 21`,
		}},
		{name: "not on passthrough", spec: "  tls:\n    termination: passthrough\n" + actions(del("X-A"), ""), want: []string{
			`f.yaml:11:18: error: spec.tls.termination: httpHeaders actions are not supported on passthrough routes: HAProxy does not see their HTTP (only edge, reencrypt and plain HTTP routes)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := decodeFile("f.yaml", []byte(head+tt.spec), DefaultLimits())
			if len(r.diags) > 0 {
				t.Fatalf("decode: %v", r.diags)
			}
			s := DefaultSettings()
			s.ResponseHeaderActions = tt.routerRes
			ar, c := validateRoute(r.objs.Routes[0], &s)
			var errs Diagnostics
			for _, d := range c.diags {
				if d.Severity == SeverityError {
					errs = append(errs, d)
				}
			}
			equalLines(t, errs, tt.want)
			if len(tt.want) == 0 && (ar.Backend.RequestHeaders != tt.req || ar.Backend.ResponseHeaders != tt.res) {
				t.Errorf("actions:\n req %q\nwant %q\n res %q\nwant %q", ar.Backend.RequestHeaders, tt.req, ar.Backend.ResponseHeaders, tt.res)
			}
		})
	}
}
