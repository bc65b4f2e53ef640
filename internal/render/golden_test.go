package render

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// Fixed paths keep goldens stable; haproxy -c runs on a copy rendered
// with real temporary paths.
const (
	goldenDir    = "/var/lib/haroute/bundle"
	goldenRunDir = "/run/haroute"
	goldenRoot   = "testdata/golden"
)

func TestGolden(t *testing.T) {
	tc := loadTestCerts(t)
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Desired: c.desired(tc), DefaultCertificate: []byte(tc.Default)}
			if c.defaultDestinationCA {
				in.DefaultDestinationCA = []byte(tc.CA)
			}
			in.StatsCredentials = c.statsCredentials
			in.ErrorPages = c.errorPages
			if c.spares != nil {
				in.Spares = c.spares(&in.Desired.Router)
			}
			checkGolden(t, filepath.Join(goldenRoot, c.name), in)
		})
	}
}

// TestGoldenYAML renders the cases whose input is YAML (testdata/golden/
// <case>/input, and examples/config) through the real loader.
func TestGoldenYAML(t *testing.T) {
	tc := loadTestCerts(t)
	cases := map[string]string{"examples": "../../examples/config"}
	dirs, _ := filepath.Glob(filepath.Join(goldenRoot, "*", "input"))
	for _, d := range dirs {
		cases[filepath.Base(filepath.Dir(d))] = d
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			d := loadYAML(t, cases[name])
			in := Input{Desired: d, DefaultCertificate: []byte(tc.Default)}
			if d.Router.DefaultCertificate != "" {
				in.DefaultCertificate = []byte(d.Router.DefaultCertificate)
			}
			if d.Router.DefaultDestinationCA != "" {
				in.DefaultDestinationCA = []byte(d.Router.DefaultDestinationCA)
			}
			if c := d.Router.ClientTLS; c != nil {
				in.ClientCA = []byte(c.CA)
			}
			checkGolden(t, filepath.Join(goldenRoot, name), in)
		})
	}
}

// loadYAML reads every YAML file below dir through model.NewLoader.
func loadYAML(t *testing.T, dir string) *model.Desired {
	t.Helper()
	var files []model.SourceFile
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, model.SourceFile{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res := model.NewLoader().Load(files)
	if res.Diagnostics.HasErrors(false) {
		t.Fatalf("input does not load cleanly: %v", res.Diagnostics)
	}
	if res.Desired == nil {
		t.Fatal("loader returned no desired state")
	}
	return res.Desired
}

// checkGolden compares the bundle rendered with the golden paths against
// dir (or rewrites dir under -update), then renders in with real paths
// into a temporary directory and has haproxy -c accept it.
func checkGolden(t *testing.T, dir string, in Input) {
	t.Helper()
	in.Dir, in.RunDir = goldenDir, goldenRunDir
	b, err := Render(in)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if *update {
		writeGolden(t, dir, b)
	}
	want := readGolden(t, dir)
	got := map[string][]byte{}
	for _, f := range b.Files {
		got[f.Name] = f.Bytes()
	}
	for name, data := range got {
		w, ok := want[name]
		if !ok {
			t.Errorf("%s: rendered but not in %s (run go test ./internal/render -update)", name, dir)
			continue
		}
		if !bytes.Equal(data, w) {
			t.Errorf("%s differs from %s/%s (run go test ./internal/render -update):\n%s", name, dir, name, lineDiff(string(w), string(data)))
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s/%s expected but not rendered", dir, name)
		}
	}
	haproxyCheck(t, in)
}

func writeGolden(t *testing.T, dir string, b *Bundle) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "input" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range b.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readGolden(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel == "input" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(p)
		out[rel] = data
		return err
	})
	if err != nil {
		t.Fatalf("read golden %s: %v (run go test ./internal/render -update)", dir, err)
	}
	return out
}

// writeBundle writes b below dir as the daemon would (modes included).
func writeBundle(t testing.TB, dir string, b *Bundle) {
	t.Helper()
	for _, f := range b.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Bytes(), f.Mode); err != nil {
			t.Fatal(err)
		}
	}
}

// haproxyCheck renders in with real temporary paths and runs haproxy -c;
// warnings fail the test too, since they usually mean a rule does not do
// what it says. A refusal also shows the lines HAProxy names, so the
// route at fault can be found in a config of many.
func haproxyCheck(t *testing.T, in Input) {
	t.Helper()
	bin := testutil.HAProxy(t)
	// Not t.TempDir: fuzz seeds are named "seed#N", and '#' is no
	// character for a bundle dir.
	tmp := testutil.ShortTempDir(t)
	in.Dir, in.RunDir = tmp+"/b", tmp+"/r"
	b, err := Render(in)
	if err != nil {
		t.Fatalf("Render with real paths: %v", err)
	}
	writeBundle(t, in.Dir, b)
	if err := os.MkdirAll(in.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-c", "-f", filepath.Join(in.Dir, ConfigFile)).CombinedOutput()
	if err == nil && !bytes.Contains(out, []byte("[WARNING]")) && !bytes.Contains(out, []byte("[ALERT]")) {
		return
	}
	t.Errorf("haproxy -c rejected or warned: %v\n%s", err, out)
	lines := strings.Split(string(b.File(ConfigFile).Bytes()), "\n")
	for _, m := range cfgLineRef.FindAllStringSubmatch(string(out), 20) {
		var n int
		fmt.Sscan(m[1], &n)
		if n >= 1 && n <= len(lines) {
			t.Errorf("haproxy.cfg:%d: %.300q", n, lines[n-1])
		}
	}
}

// cfgLineRef finds the haproxy.cfg lines HAProxy's messages name.
var cfgLineRef = regexp.MustCompile(`haproxy\.cfg:(\d+)\]`)

// lineDiff shows the first differing lines, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl + "\n")
			if shown++; shown == 10 {
				b.WriteString("…\n")
				break
			}
		}
	}
	return b.String()
}

// TestOneConverterPerMap: every map file is read by converters of one
// kind. Two kinds (map_str_int beside map_str) index the file as two
// pattern expressions, and HAProxy 2.6 then keeps an entry_cnt that no
// longer counts entries once a `del map` ran: the read-back of a runtime
// map edit refuses it and the change falls back to a reload.
func TestOneConverterPerMap(t *testing.T) {
	tc := loadTestCerts(t)
	conv := regexp.MustCompile(`\b(map_[a-z_]+)\(([^)]+)\)`)
	for _, c := range goldenCases() {
		in := Input{Desired: c.desired(tc), DefaultCertificate: []byte(tc.Default), Dir: goldenDir, RunDir: goldenRunDir}
		if c.spares != nil {
			in.Spares = c.spares(&in.Desired.Router)
		}
		cfg := mustRender(t, in).File(ConfigFile).Bytes()
		kinds := map[string]map[string]bool{} // map file → converters
		for _, m := range conv.FindAllSubmatch(cfg, -1) {
			file := string(m[2])
			if kinds[file] == nil {
				kinds[file] = map[string]bool{}
			}
			kinds[file][string(m[1])] = true
		}
		if len(kinds) == 0 {
			t.Fatalf("%s: no map converter in the config", c.name)
		}
		for file, ks := range kinds {
			if len(ks) > 1 {
				t.Errorf("%s: %s is read by %d kinds of converter (%v): one pattern expression each", c.name, file, len(ks), ks)
			}
		}
	}
}
