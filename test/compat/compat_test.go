// Package compat checks haroute against manifests in the shapes real tools
// write: `oc get route -o yaml`, `kubectl get endpoints -o yaml`,
// `kubectl get endpointslice -o json`, `helm template`, OpenShift's own
// router e2e fixtures, with every server-side field and stray field that
// comes with them. The corpus lives in internal/model/testdata/compat.
//
// Each fixture, and the whole directory at once, goes through the real
// pipeline (snapshot → model → render) and the rendered bundle must pass
// `haproxy -c`. Fixtures state the warnings they must produce in comment
// lines of the form
//
//	# want: <line>:<col>: warning: <field>: <message>
//
// and must produce no others, so a decoder that starts to complain about a
// field real manifests carry fails here. JSON files cannot hold comments
// and must produce no warnings at all.
package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/certgen"
	"github.com/haroute/haroute/internal/cli"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/snapshot"
	"github.com/haroute/haroute/internal/testutil"
)

// corpusDir is the fixture directory, relative to this package.
const corpusDir = "../../internal/model/testdata/compat"

// minFixtures guards against the corpus silently shrinking (a rename to an
// extension the reader skips, say).
const minFixtures = 15

const wantPrefix = "# want: "

// fixture is one corpus file.
type fixture struct {
	name  string // relative to corpusDir, as the snapshot reader names it
	data  []byte
	wants []string // expected warnings, in Diagnostic.String form
}

func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	var fs []fixture
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		data, err := os.ReadFile(filepath.Join(corpusDir, e.Name()))
		if err != nil {
			t.Fatalf("read fixture: %v", err)
		}
		fs = append(fs, fixture{name: e.Name(), data: data, wants: wantsOf(e.Name(), data)})
	}
	if len(fs) < minFixtures {
		t.Fatalf("corpus has %d fixtures, want at least %d", len(fs), minFixtures)
	}
	return fs
}

// wantsOf collects the `# want:` lines of a fixture as full diagnostic
// lines ("path:line:col: warning: field: message").
func wantsOf(name string, data []byte) []string {
	var wants []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), wantPrefix); ok {
			wants = append(wants, name+":"+rest)
		}
	}
	return wants
}

// TestFixtures loads each fixture on its own: it must decode and admit
// cleanly, and render to a configuration HAProxy accepts.
func TestFixtures(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			res := model.NewLoader().Load([]model.SourceFile{{Path: f.name, Data: f.data}})
			objs := res.Objects
			if len(objs.Routes)+len(objs.Endpoints)+len(objs.EndpointSlices) == 0 {
				t.Fatalf("fixture decodes to no Route, Endpoints or EndpointSlice; diagnostics:\n%s", lines(res.Diagnostics))
			}
			checkAdmission(t, res, f.wants)
			renderAndCheck(t, res.Desired)
		})
	}
}

// TestDirectory loads the corpus the way the daemon does, through the
// snapshot reader: every route must be admitted and reach at least one
// ready endpoint, which proves that the Endpoints and EndpointSlices in
// one file serve the routes in another, by port name or number.
func TestDirectory(t *testing.T) {
	fixtures := loadFixtures(t)
	var wants []string
	for _, f := range fixtures {
		wants = append(wants, f.wants...)
	}

	var r snapshot.Reader
	snap, err := r.Read(t.Context(), corpusDir, snapshot.ModePlain)
	if err != nil {
		t.Fatalf("read snapshot: %v", err)
	}
	if len(snap.Errors) != 0 {
		t.Fatalf("snapshot file errors: %v", snap.Errors)
	}
	if len(snap.Files) != len(fixtures) {
		t.Fatalf("snapshot read %d files, the corpus has %d", len(snap.Files), len(fixtures))
	}
	res := model.NewLoader().Load(snap.Files)
	checkAdmission(t, res, wants)

	notReady := notReadyAddresses(res.Objects)
	if len(notReady) == 0 {
		t.Fatal("the corpus lists no not-ready addresses; the check below would prove nothing")
	}
	for _, ar := range res.Desired.Routes {
		servers := ar.Servers()
		if len(servers) == 0 {
			t.Errorf("route %s resolved to no endpoints", ar.Key)
		}
		for _, s := range servers {
			if notReady[s.Address] {
				t.Errorf("route %s serves %s, which is only listed as not ready", ar.Key, s.Address)
			}
		}
	}
	renderAndCheck(t, res.Desired)
}

// TestCheckCommand runs `haroute check` on the corpus: it must exit 0 and
// print exactly the deliberate warnings; with --strict those warnings make
// it fail.
func TestCheckCommand(t *testing.T) {
	fixtures := loadFixtures(t)
	var wants []string
	routes := 0
	for _, f := range fixtures {
		wants = append(wants, f.wants...)
		res := model.NewLoader().Load([]model.SourceFile{{Path: f.name, Data: f.data}})
		routes += len(res.Objects.Routes)
	}
	slices.Sort(wants)
	if len(wants) == 0 {
		t.Fatal("the corpus has no `# want:` lines; it must exercise stray fields")
	}

	var stdout, stderr bytes.Buffer
	if code := cli.Run(t.Context(), []string{"check", corpusDir}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("check exited %d, want %d\nstdout:\n%s\nstderr:\n%s", code, cli.ExitOK, &stdout, &stderr)
	}
	// check prints notes too (skipped kinds, unsupported annotations);
	// the corpus' `# want:` lines name the warnings.
	var got, notes []string
	for _, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if strings.Contains(line, ": note: ") {
			notes = append(notes, line)
			continue
		}
		got = append(got, line)
	}
	if !slices.ContainsFunc(notes, func(l string) bool { return strings.Contains(l, "note: skipped Service") }) {
		t.Errorf("check printed no note about skipped kinds:\n%s", &stdout)
	}
	if !slices.Equal(got, wants) {
		t.Errorf("check printed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wants, "\n"))
	}
	if want := fmt.Sprintf("%s: valid (%d routes admitted)\n", corpusDir, routes); stderr.String() != want {
		t.Errorf("check summary = %q, want %q", stderr.String(), want)
	}

	stdout.Reset()
	stderr.Reset()
	if code := cli.Run(t.Context(), []string{"check", "--strict", corpusDir}, &stdout, &stderr); code != cli.ExitInvalid {
		t.Errorf("check --strict exited %d, want %d: the stray fields must fail strict checking", code, cli.ExitInvalid)
	}
}

// checkAdmission asserts that res has no errors, exactly the wanted
// warnings, and every route admitted.
func checkAdmission(t *testing.T, res model.Result, wants []string) {
	t.Helper()
	var errs model.Diagnostics
	var warnings []string
	for _, d := range res.Diagnostics {
		switch d.Severity {
		case model.SeverityError:
			errs = append(errs, d)
		case model.SeverityWarning:
			warnings = append(warnings, d.String())
		}
	}
	if len(errs) > 0 {
		t.Errorf("errors:\n%s", lines(errs))
	}
	slices.Sort(warnings)
	wants = slices.Sorted(slices.Values(wants))
	if !slices.Equal(warnings, wants) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(wants, "\n"))
	}

	if res.Desired == nil {
		t.Fatal("no desired state")
	}
	if got, want := len(res.Desired.Statuses), len(res.Objects.Routes); got != want {
		t.Errorf("%d route statuses for %d routes", got, want)
	}
	for _, st := range res.Desired.Statuses {
		if st.State == model.RouteRejected {
			t.Errorf("route %s rejected: %s", st.Key, strings.Join(st.Reasons, "; "))
		}
	}
	if got, want := len(res.Desired.Routes), len(res.Objects.Routes); got != want {
		t.Errorf("%d routes admitted of %d", got, want)
	}
}

// renderAndCheck renders d into a temporary directory, as the daemon
// would, and requires `haproxy -c` to accept it without warnings, with one
// backend per admitted route.
func renderAndCheck(t *testing.T, d *model.Desired) {
	t.Helper()
	bin := testutil.HAProxy(t)
	// Short paths: the run dir holds unix sockets (107-byte limit).
	tmp := testutil.ShortTempDir(t)
	dir, runDir := filepath.Join(tmp, "b"), filepath.Join(tmp, "r")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := certgen.SelfSigned(time.Now(), nil)
	if err != nil {
		t.Fatalf("default certificate: %v", err)
	}
	b, err := render.Render(render.Input{
		Desired:            d,
		Dir:                dir,
		RunDir:             runDir,
		DefaultCertificate: append(certPEM, keyPEM...),
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	for _, f := range b.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Bytes(), f.Mode); err != nil {
			t.Fatal(err)
		}
	}

	cfgPath := filepath.Join(dir, render.ConfigFile)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// Warnings fail too (haproxy.Check, the daemon's, lets them pass): a
	// warning usually means a rendered rule does not do what it says.
	out, err := exec.CommandContext(ctx, bin, "-c", "-f", cfgPath).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("[WARNING]")) {
		t.Errorf("haproxy -c warned:\n%s", out)
	}

	cfg := string(b.File(render.ConfigFile).Bytes())
	for _, r := range d.Routes {
		if !strings.Contains(cfg, "\nbackend "+string(r.BackendName())+" from ") {
			t.Errorf("haproxy.cfg has no backend %s for route %s", r.BackendName(), r.Key)
		}
	}
}

// notReadyAddresses returns the addresses the input lists only as not
// ready: Endpoints' notReadyAddresses and EndpointSlice endpoints with
// ready: false, minus any listed as ready elsewhere.
func notReadyAddresses(objs model.Objects) map[string]bool {
	notReady, ready := map[string]bool{}, map[string]bool{}
	for _, ep := range objs.Endpoints {
		for _, s := range ep.Subsets {
			for _, a := range s.NotReadyAddresses {
				notReady[a.IP] = true
			}
			for _, a := range s.Addresses {
				ready[a.IP] = true
			}
		}
	}
	for _, sl := range objs.EndpointSlices {
		for _, e := range sl.Endpoints {
			for _, a := range e.Addresses {
				if e.Ready != nil && !*e.Ready {
					notReady[a] = true
				} else {
					ready[a] = true
				}
			}
		}
	}
	for a := range ready {
		delete(notReady, a)
	}
	return notReady
}

func lines(ds model.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}
