package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fuzzSeeds adds every input file under testdata and a few inline
// documents that exercise aliases, merges, lists and JSON.
func fuzzSeeds(f *testing.F) {
	err := filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isInput(p) {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data, strings.HasSuffix(p, ".json"))
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"",
		"---\n---\n...\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Endpoints\n  metadata: {name: e}\n  subsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80}]}]\n",
		"apiVersion: v1\nkind: Route\nmetadata: &m {name: r, labels: {a: b}}\nspec:\n  to: &t {name: s, weight: 1}\n  alternateBackends: [{<<: *t, name: u}, *t]\n",
		"apiVersion: v1\nkind: Route\nmetadata: {name: r}\nspec: {<<: [*x]}\n",
		"a: &a [*a]\n",
		"apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata: {name: rc}\nspec: {tuningOptions: {reloadInterval: 0}, routeSelector: {matchExpressions: [{key: a, operator: In, values: [b]}]}}\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}, "subsets": [{"ports": [{"port": 1}]}]}`), true)
}

// FuzzDecode checks that no input makes decoding panic, and that every
// diagnostic names a place in the file.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		path := "f.yaml"
		if json {
			path = "f.json"
		}
		r := decodeFile(path, data, DefaultLimits())
		for _, d := range r.diags {
			if d.Pos.Path != path || d.Pos.Line < 1 || d.Pos.Col < 1 || d.Message == "" {
				t.Errorf("diagnostic without a proper position or message: %q", d.String())
			}
		}
		if r.failed != r.diags.HasErrors(false) {
			t.Errorf("failed = %v, but errors = %v", r.failed, r.diags.HasErrors(false))
		}
		for _, rt := range r.objs.Routes {
			if rt.Source.Pos.Line < 1 || rt.Meta.Namespace == "" {
				t.Errorf("route %+v without a position or namespace", rt.Meta)
			}
		}
	})
}

// FuzzLoad runs whole loads, admission included, over two generations of
// the same path, so the keep-last-good path is exercised too.
func FuzzLoad(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, json bool) {
		path := "f.yaml"
		if json {
			path = "f.json"
		}
		l := NewLoader()
		first := load(t, l, []SourceFile{{Path: path, Data: data}})
		second := load(t, l, []SourceFile{{Path: path, Data: append(data[:len(data):len(data)], '\n')}})
		if len(first.Objects.Routes) > 0 && len(second.Objects.Routes) == 0 {
			t.Errorf("routes lost on the second load: %q", diagStrings(second.Diagnostics))
		}
	})
}
