package render

import (
	"bytes"
	"strings"
	"testing"
)

// Backends are rendered in parts on several goroutines; the config must
// read as if they had been written one after another, for any number of
// routes around the part size.
func TestBackendsInPartsKeepOrder(t *testing.T) {
	for _, n := range []int{0, 1, backendsPerPart - 1, backendsPerPart, backendsPerPart + 1, 2*backendsPerPart + 7} {
		in := bench10k(t)
		in.Desired.Routes = in.Desired.Routes[:n]
		b := mustRender(t, in)

		var want cfgWriter
		for i := range in.Desired.Routes {
			want.line("")
			backend(&want, in.Desired.Routes[i], in)
		}
		full := b.File(ConfigFile).Bytes()
		if !bytes.HasSuffix(full, want.full) || !bytes.HasSuffix(b.Skeleton, want.skel) {
			t.Errorf("%d routes: backends differ from one-by-one rendering", n)
		}
		if got := bytes.Count(full, []byte("\n# route ")); got != n {
			t.Errorf("%d routes: %d route backends rendered", n, got)
		}
		var stripped []string
		for _, l := range strings.SplitAfter(string(full), "\n") {
			if !strings.HasPrefix(l, "  server ep_") {
				stripped = append(stripped, l)
			}
		}
		if strings.Join(stripped, "") != string(b.Skeleton) {
			t.Errorf("%d routes: skeleton is not the config minus route server lines", n)
		}
	}
}
