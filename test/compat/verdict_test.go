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

// verdictDir holds manifests modelled on OpenShift's own test suites and
// e2e fixtures (openshift/api route validation suites, openshift/origin
// router e2e testdata, openshift/library-go route validation,
// openshift/router admission), one case per file. Each file records where
// its case comes from and OpenShift's verdict:
//
//	# origin: <repository>[@<commit>] <path>
//	# case: <the case as the suite names it>
//	# openshift: admitted | rejected
const verdictDir = "testdata/openshift"

// minVerdicts guards against the corpus silently shrinking.
const minVerdicts = 30

// verdictRouter is the cluster around the manifests: an IngressController
// with a domain (for routes that give spec.subdomain) and OpenShift's
// defaults otherwise (Strict namespace ownership, no wildcard routes).
const verdictRouter = "apiVersion: haroute.io/v1alpha1\nkind: RouterConfig\nmetadata:\n  name: router\nspec:\n  domain: apps.example.test\n"

// TestOpenShiftVerdicts: haroute gives each manifest OpenShift's verdict.
// Admitted means every route in the file is admitted with no error;
// rejected means at least one route is rejected.
func TestOpenShiftVerdicts(t *testing.T) {
	entries, err := os.ReadDir(verdictDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		n++
		data, err := os.ReadFile(filepath.Join(verdictDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(e.Name(), func(t *testing.T) {
			origin, verdict := verdictHeader(data)
			if origin == "" || (verdict != "admitted" && verdict != "rejected") {
				t.Fatalf("the file must name its origin and OpenShift's verdict (admitted or rejected); got origin %q, verdict %q", origin, verdict)
			}
			res := model.NewLoader().Load([]model.SourceFile{
				{Path: "router.yaml", Data: []byte(verdictRouter)},
				{Path: e.Name(), Data: data},
			})
			if res.Desired == nil {
				t.Fatalf("no desired state: %v", res.Diagnostics)
			}
			if len(res.Desired.Statuses) == 0 {
				t.Fatal("the file holds no route")
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
			switch {
			case verdict == "admitted" && (rejected > 0 || len(errs) > 0):
				t.Errorf("OpenShift admits this (%s); haroute rejects %d route(s):\n%s", origin, rejected, strings.Join(errs, "\n"))
			case verdict == "rejected" && rejected == 0:
				t.Errorf("OpenShift rejects this (%s); haroute admits every route", origin)
			}
		})
	}
	if n < minVerdicts {
		t.Fatalf("%d verdict fixtures, want at least %d", n, minVerdicts)
	}
}

// verdictHeader reads the "# origin:" and "# openshift:" comment lines.
func verdictHeader(data []byte) (origin, verdict string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		if v, ok := strings.CutPrefix(line, "# origin: "); ok {
			origin = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "# openshift: "); ok {
			verdict = strings.TrimSpace(v)
		}
	}
	return origin, verdict
}
