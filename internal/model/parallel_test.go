package model

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// onOneCore runs fn with GOMAXPROCS 1, where forEach and the decoding
// workers run everything in order on the calling goroutine.
func onOneCore(fn func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fn()
}

// Admission spreads routes over the cores; its outcome must be the one a
// single core produces, conflicts, rejections and warnings included.
func TestAdmitSameOnAllCores(t *testing.T) {
	var objs Objects
	for i := range 1500 {
		r := testRoute(fmt.Sprintf("ns%d", i%7), fmt.Sprintf("r%04d", i), fmt.Sprintf("h%d.example.com", i%900))
		switch i % 11 {
		case 3:
			r.Spec.Host = "Bad_Host"
		case 5:
			r.Spec.To.Name = "missing"
		case 7:
			r.Meta.Annotations = map[string]string{AnnotationTimeout: "soon"}
		}
		objs.Routes = append(objs.Routes, &r)
	}
	for ns := range 7 {
		ep := testEndpoints(fmt.Sprintf("ns%d", ns), "web", "10.0.0.3", "10.0.0.1", "fd00::2")
		objs.Endpoints = append(objs.Endpoints, &ep)
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: nothing runs in parallel")
	}
	var one *Desired
	var oneDiags Diagnostics
	onOneCore(func() { one, oneDiags = Admit(objs, nil) })
	all, allDiags := Admit(objs, nil)
	if !reflect.DeepEqual(one, all) {
		t.Errorf("Admit on all cores differs from Admit on one")
	}
	if !reflect.DeepEqual(lines(oneDiags), lines(allDiags)) {
		t.Errorf("diagnostics on all cores differ from those on one")
	}
	if len(all.Routes) < 500 || len(allDiags) < 500 {
		t.Errorf("%d routes admitted, %d diagnostics: the input should exercise both", len(all.Routes), len(allDiags))
	}
}

// Decoding reuses each worker's buffers from chunk to chunk; mixing files
// the fast path takes with files only yaml.v3 reads must not let one
// chunk's trees leak into another's objects.
func TestDecodeSameOnAllCores(t *testing.T) {
	files := gen10k() // big files: several chunks each
	files = append(files,
		SourceFile{Path: "flow.yaml", Data: []byte("apiVersion: v1\nkind: Endpoints\nmetadata: {name: flow, namespace: ns-1}\nsubsets: [{addresses: [{ip: 10.9.9.9}], ports: [{port: 80}]}]\n")},
		SourceFile{Path: "broken.yaml", Data: []byte("apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: [x\n")},
		SourceFile{Path: "list.json", Data: []byte(`{"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "j"}, "subsets": []}`)},
	)
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: nothing runs in parallel")
	}
	var one []fileResult
	onOneCore(func() { one = decodeFiles(files, DefaultLimits()) })
	all := decodeFiles(files, DefaultLimits())
	if !reflect.DeepEqual(one, all) {
		t.Errorf("decoding on all cores differs from decoding on one")
	}
	if n := len(all[len(files)-3].objs.Endpoints); n != 1 || all[len(files)-3].objs.Endpoints[0].Meta.Name != "flow" {
		t.Errorf("flow.yaml decoded to %d Endpoints", n)
	}
	if !all[len(files)-2].failed {
		t.Errorf("broken.yaml did not fail")
	}
}
