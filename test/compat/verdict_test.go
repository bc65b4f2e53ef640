package compat

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
)

// verdictDirs hold manifests from OpenShift's own test suites and e2e
// fixtures, one case per file: openshift holds cases modelled on them
// (openshift/api route validation suites, openshift/origin router e2e
// testdata, openshift/library-go route validation, openshift/router
// admission); openshift-suites the test tables of those suites written
// out whole (its README). Each file records where its case comes from and
// OpenShift's verdict, and where haroute deliberately differs, its own
// verdict and why:
//
//	# origin: <repository>[@<commit>] <path>
//	# case: <the case as the suite names it>
//	# openshift: admitted | rejected
//	# haroute: admitted | rejected (deliberate: <why>)
var verdictDirs = []string{"testdata/openshift", "testdata/openshift-suites"}

// minVerdicts guards against the corpus silently shrinking.
const minVerdicts = 250

// verdictRouter is the cluster around the manifests: an IngressController
// with a domain (for routes that give spec.subdomain) and OpenShift's
// defaults otherwise (Strict namespace ownership, no wildcard routes).
const verdictRouter = "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  domain: apps.example.test\n"

// TestOpenShiftVerdicts: haroute gives each manifest OpenShift's verdict,
// or the one its file says haroute deliberately gives. Admitted means
// every route in the file is admitted with no error; rejected means at
// least one route is rejected, or a route is refused before admission.
func TestOpenShiftVerdicts(t *testing.T) {
	n, agree := 0, 0
	for _, dir := range verdictDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if filepath.Ext(e.Name()) != ".yaml" {
				continue
			}
			n++
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			h := verdictHeader(data)
			if h.origin == "" || !isVerdict(h.openshift) || h.haroute != "" && (!isVerdict(h.haroute) || h.haroute == h.openshift) {
				t.Errorf("%s: the file must name its origin and OpenShift's verdict, and haroute's only where it differs; got %+v", e.Name(), h)
				continue
			}
			want := h.openshift
			if h.haroute != "" {
				want = h.haroute
			} else {
				agree++
			}
			t.Run(e.Name(), func(t *testing.T) {
				res := model.NewLoader().Load([]model.SourceFile{
					{Path: "router.yaml", Data: []byte(verdictRouter)},
					{Path: e.Name(), Data: data},
				})
				if res.Desired == nil {
					t.Fatalf("no desired state: %v", res.Diagnostics)
				}
				rejected := 0
				for _, st := range res.Desired.Statuses {
					if st.State == model.RouteRejected {
						rejected++
					}
				}
				var errs []string
				for _, d := range res.Diagnostics {
					if d.Severity == model.SeverityError {
						errs = append(errs, d.String())
					}
				}
				if len(res.Desired.Statuses) == 0 {
					// A route that never reaches admission (no name, say)
					// is rejected by its errors.
					if len(errs) == 0 {
						t.Fatal("the file holds no route")
					}
					rejected = 1
				}
				switch {
				case want == "admitted" && (rejected > 0 || len(errs) > 0):
					t.Errorf("want admitted (%s, OpenShift: %s); haroute rejects %d route(s):\n%s", h.origin, h.openshift, rejected, strings.Join(errs, "\n"))
				case want == "rejected" && rejected == 0:
					t.Errorf("want rejected (%s, OpenShift: %s); haroute admits every route", h.origin, h.openshift)
				}
			})
		}
	}
	if n < minVerdicts {
		t.Fatalf("%d verdict fixtures, want at least %d", n, minVerdicts)
	}
	t.Logf("haroute gives OpenShift's verdict on %d of %d cases (%.1f%%); the others differ deliberately", agree, n, 100*float64(agree)/float64(n))
}

func isVerdict(v string) bool { return v == "admitted" || v == "rejected" }

// header is what a verdict file's leading comments say.
type header struct{ origin, openshift, haroute string }

// verdictHeader reads the "# origin:", "# openshift:" and "# haroute:"
// comment lines (the last up to its reason).
func verdictHeader(data []byte) header {
	var h header
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		if v, ok := strings.CutPrefix(line, "# origin: "); ok {
			h.origin = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "# openshift: "); ok {
			h.openshift = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "# haroute: "); ok {
			h.haroute, _, _ = strings.Cut(strings.TrimSpace(v), " ")
		}
	}
	return h
}
