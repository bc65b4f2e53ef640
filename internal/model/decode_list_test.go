package model

import (
	"strings"
	"testing"
)

// A typed list serialised by the API server (oc get --raw) leaves kind and
// apiVersion off its items; a generic List must still carry them.
func TestTypedListItemsTakeTheListsType(t *testing.T) {
	typed := `{"kind":"RouteList","apiVersion":"route.openshift.io/v1","metadata":{"resourceVersion":"1"},` +
		`"items":[{"metadata":{"name":"a","namespace":"x"},"spec":{"host":"a.example.com","to":{"kind":"Service","name":"a"}}}]}`
	res := NewLoader().Load([]SourceFile{{Path: "r.json", Data: []byte(typed), Hash: "1"}})
	if res.Diagnostics.HasErrors(false) {
		t.Fatalf("typed list: %v", res.Diagnostics)
	}
	if len(res.Desired.Routes) != 1 || res.Desired.Routes[0].Key.String() != "x/a" {
		t.Fatalf("typed list admitted %+v, want x/a", res.Desired.Statuses)
	}

	generic := `{"kind":"List","apiVersion":"v1","items":[{"metadata":{"name":"a"}}]}`
	res = NewLoader().Load([]SourceFile{{Path: "g.json", Data: []byte(generic), Hash: "2"}})
	var msgs []string
	for _, d := range res.Diagnostics {
		msgs = append(msgs, d.String())
	}
	want := "g.json:1:43: error: kind: required"
	if !strings.Contains(strings.Join(msgs, "\n"), want) {
		t.Fatalf("generic list item without kind: got %q, want %q", msgs, want)
	}
}
