package publish

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"
)

func readlink(t *testing.T, p string) string {
	t.Helper()
	target, err := os.Readlink(p)
	if err != nil {
		t.Fatalf("readlink: %v", err)
	}
	return target
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(data)
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

var tsName = regexp.MustCompile(`^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d{9}(_\d+)?$`)

func TestAtomicWriterLayout(t *testing.T) {
	dir := t.TempDir()
	w := NewAtomicWriter(dir)
	if err := w.Publish(map[string][]byte{"a.yaml": []byte("a1"), "sub/b.yaml": []byte("b1")}); err != nil {
		t.Fatal(err)
	}
	first := readlink(t, filepath.Join(dir, "..data"))
	if !tsName.MatchString(first) {
		t.Fatalf("..data -> %q, want a relative timestamped name", first)
	}
	if got := readlink(t, filepath.Join(dir, "a.yaml")); got != "..data/a.yaml" {
		t.Errorf("a.yaml -> %q, want ..data/a.yaml", got)
	}
	if got := readlink(t, filepath.Join(dir, "sub")); got != "..data/sub" {
		t.Errorf("sub -> %q, want ..data/sub", got)
	}
	if got := readFile(t, filepath.Join(dir, "sub", "b.yaml")); got != "b1" {
		t.Errorf("sub/b.yaml = %q, want b1", got)
	}

	if err := w.Publish(map[string][]byte{"a.yaml": []byte("a2"), "c.yaml": []byte("c2")}); err != nil {
		t.Fatal(err)
	}
	second := readlink(t, filepath.Join(dir, "..data"))
	if second == first || !tsName.MatchString(second) {
		t.Fatalf("..data -> %q after second publish (first %q)", second, first)
	}
	want := []string{second, "..data", "a.yaml", "c.yaml"}
	sort.Strings(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Errorf("dir holds %q, want %q (old generation, sub link and ..data_tmp gone)", got, want)
	}
	if got := readFile(t, filepath.Join(dir, "a.yaml")); got != "a2" {
		t.Errorf("a.yaml = %q, want a2", got)
	}
}

func TestGitSyncLayout(t *testing.T) {
	root := t.TempDir()
	g := NewGitSync(root, "current")
	if g.Link() != filepath.Join(root, "current") {
		t.Fatalf("Link() = %q", g.Link())
	}
	if err := g.Publish(map[string][]byte{"r.yaml": []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	first := readlink(t, g.Link())
	if !regexp.MustCompile(`^\.worktrees/[0-9a-f]{40}$`).MatchString(first) {
		t.Fatalf("link -> %q, want .worktrees/<40 hex>", first)
	}
	if err := g.Publish(map[string][]byte{"r.yaml": []byte("v2")}); err != nil {
		t.Fatal(err)
	}
	second := readlink(t, g.Link())
	if second == first {
		t.Fatalf("link still -> %q", first)
	}
	if got := readFile(t, filepath.Join(g.Link(), "r.yaml")); got != "v2" {
		t.Errorf("r.yaml = %q, want v2", got)
	}
	if got, want := dirNames(t, root), []string{".worktrees", "current"}; !slices.Equal(got, want) {
		t.Errorf("root holds %q, want %q (no tmp-link left)", got, want)
	}
	if got, want := dirNames(t, filepath.Join(root, ".worktrees")), []string{filepath.Base(second)}; !slices.Equal(got, want) {
		t.Errorf("worktrees %q, want %q (old one removed)", got, want)
	}
}

func TestPlainRewritesAndRemoves(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "other.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := NewPlain(dir)
	if err := p.Publish(map[string][]byte{"a.yaml": []byte("1"), "d/b.yaml": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Publish(map[string][]byte{"a.yaml": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "a.yaml")); got != "2" {
		t.Errorf("a.yaml = %q, want 2", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "d", "b.yaml")); !os.IsNotExist(err) {
		t.Errorf("d/b.yaml still there: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "other.yaml")); got != "x" {
		t.Errorf("foreign file touched: %q", got)
	}
}

func TestInvalidNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"/abs.yaml", `publish: invalid file name "/abs.yaml" (want a clean relative path)`},
		{"a//b.yaml", `publish: invalid file name "a//b.yaml" (want a clean relative path)`},
		{"../up.yaml", `publish: invalid file name "../up.yaml" (elements must not start with "..")`},
		{"..data", `publish: invalid file name "..data" (elements must not start with "..")`},
		{"", `publish: invalid file name "" (want a clean relative path)`},
	} {
		err := NewAtomicWriter(t.TempDir()).Publish(map[string][]byte{tc.name: nil})
		if err == nil || err.Error() != tc.want {
			t.Errorf("Publish(%q) error = %v, want %s", tc.name, err, tc.want)
		}
	}
}

// TestThousandSwapsLeaveOneGeneration checks that rapid publishing (as the
// e2e tests do) never leaks generations or temporary links.
func TestThousandSwapsLeaveOneGeneration(t *testing.T) {
	dir := t.TempDir()
	w := NewAtomicWriter(dir)
	g := NewGitSync(t.TempDir(), "current")
	for n := range 1000 {
		files := map[string][]byte{"r.yaml": []byte(fmt.Sprint(n))}
		if err := w.Publish(files); err != nil {
			t.Fatalf("atomic publish %d: %v", n, err)
		}
		if err := g.Publish(files); err != nil {
			t.Fatalf("git-sync publish %d: %v", n, err)
		}
	}
	names := dirNames(t, dir)
	if len(names) != 3 || names[1] != "..data" || names[2] != "r.yaml" || !tsName.MatchString(names[0]) {
		t.Errorf("atomic dir holds %q, want one generation, ..data and r.yaml", names)
	}
	if got := readFile(t, filepath.Join(dir, "r.yaml")); got != "999" {
		t.Errorf("atomic r.yaml = %q, want 999", got)
	}
	if got := len(dirNames(t, filepath.Join(filepath.Dir(g.Link()), ".worktrees"))); got != 1 {
		t.Errorf("%d worktrees left, want 1", got)
	}
	if got := readFile(t, filepath.Join(g.Link(), "r.yaml")); got != "999" {
		t.Errorf("git-sync r.yaml = %q, want 999", got)
	}
}
