package model

// TEMPORARY (validate engineer): checks testdata/bad want lines until the
// decoder engineer's corpus harness lands. To be deleted.

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestScratchBadCorpus(t *testing.T) {
	entries, _ := os.ReadDir("testdata/bad")
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			var files []string
			root := "testdata/bad"
			if e.IsDir() {
				root = filepath.Join(root, e.Name())
				m, _ := filepath.Glob(filepath.Join(root, "*.yaml"))
				for _, f := range m {
					files = append(files, filepath.Base(f))
				}
			} else {
				files = []string{e.Name()}
			}
			sort.Strings(files)
			var objs Objects
			var ds Diagnostics
			var wants []string
			for _, f := range files {
				data, err := os.ReadFile(filepath.Join(root, f))
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range strings.Split(string(data), "\n") {
					if w, ok := strings.CutPrefix(l, "# want: "); ok {
						wants = append(wants, w)
					}
				}
				r := decodeFile(f, data, DefaultLimits())
				objs.append(r.objs)
				ds = append(ds, r.diags...)
			}
			_, ads := Admit(objs, nil)
			ds = append(ds, ads...)
			for _, w := range wants {
				found := false
				for _, d := range ds {
					if strings.HasPrefix(d.String(), w) {
						found = true
					}
				}
				if !found {
					t.Errorf("want %q not found", w)
				}
			}
			for _, d := range ds {
				t.Log(d.String())
			}
		})
	}
}
