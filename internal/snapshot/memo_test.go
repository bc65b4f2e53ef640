package snapshot

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReaderReuseMatchesFresh reads a sequence of edits with one Reader
// (which reuses the last snapshot's hashes and buffers) and checks every
// snapshot against a fresh Reader's, and that earlier snapshots keep
// their contents while later reads reuse the scratch buffer.
func TestReaderReuseMatchesFresh(t *testing.T) {
	dir := t.TempDir()
	steps := []struct {
		name   string
		write  map[string]string
		remove []string
		want   string
	}{
		{name: "initial", write: map[string]string{"a.yaml": "aaaa", "b.yaml": "bbbb", "sub/c.yml": "cc"},
			want: "a.yaml=aaaa\nb.yaml=bbbb\nsub/c.yml=cc\n"},
		{name: "same size edit", write: map[string]string{"a.yaml": "aaaX"},
			want: "a.yaml=aaaX\nb.yaml=bbbb\nsub/c.yml=cc\n"},
		{name: "grow", write: map[string]string{"b.yaml": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
			want: "a.yaml=aaaX\nb.yaml=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\nsub/c.yml=cc\n"},
		{name: "shrink to empty", write: map[string]string{"b.yaml": ""},
			want: "a.yaml=aaaX\nb.yaml=\nsub/c.yml=cc\n"},
		{name: "remove and add", write: map[string]string{"d.json": "{}"}, remove: []string{"a.yaml"},
			want: "b.yaml=\nd.json={}\nsub/c.yml=cc\n"},
		{name: "back", write: map[string]string{"a.yaml": "aaaa", "b.yaml": "bbbb"}, remove: []string{"d.json"},
			want: "a.yaml=aaaa\nb.yaml=bbbb\nsub/c.yml=cc\n"},
		{name: "too large", write: map[string]string{"a.yaml": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
			want: "b.yaml=bbbb\nsub/c.yml=cc\n!a.yaml: file is 71 bytes, limit 64 bytes\n"},
		{name: "fits again", write: map[string]string{"a.yaml": "aaaa"},
			want: "a.yaml=aaaa\nb.yaml=bbbb\nsub/c.yml=cc\n"},
	}
	r := &Reader{MaxFileSize: 64}
	type seen struct {
		snap *Snapshot
		want string
	}
	var earlier []seen
	for _, st := range steps {
		write(t, dir, st.write)
		for _, name := range st.remove {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		got := read(t, r, dir, ModePlain)
		fresh := read(t, &Reader{MaxFileSize: 64}, dir, ModePlain)
		if c := contents(t, got); c != st.want {
			t.Errorf("%s: reused reader read\n%s\nwant\n%s", st.name, c, st.want)
		}
		if c := contents(t, fresh); c != st.want {
			t.Errorf("%s: fresh reader read\n%s\nwant\n%s", st.name, c, st.want)
		}
		if got.Hash != fresh.Hash {
			t.Errorf("%s: snapshot hash %s, fresh reader's %s", st.name, got.Hash, fresh.Hash)
		}
		earlier = append(earlier, seen{got, st.want})
	}
	for i, e := range earlier {
		if c := contents(t, e.snap); c != e.want {
			t.Errorf("snapshot %d changed after later reads:\n%s\nwant\n%s", i, c, e.want)
		}
	}
}

// TestManyFilesReadTogether covers the parallel read of a large directory
// (readFiles): over a series of edits, a reused Reader gives what a fresh
// one gives and what is on disk, a file over the limit is an error of its
// own, unchanged files keep the previous snapshot's buffers, and the total
// limit still fails the read when the files that exceed it are spread over
// the workers.
func TestManyFilesReadTogether(t *testing.T) {
	const n = 3*minParallelFiles + 1
	dir := t.TempDir()
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f%03d.yaml", i)] = strings.Repeat(string(rune('a'+i%26)), 10+i)
	}
	write(t, dir, files)
	expect := func(skip string) string {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if name != skip {
				fmt.Fprintf(&b, "%s=%s\n", name, files[name])
			}
		}
		return b.String()
	}
	r := &Reader{MaxFileSize: 100}
	first := read(t, r, dir, ModePlain)
	if got, want := contents(t, first), expect(""); got != want {
		t.Fatalf("first read:\n%s\nwant\n%s", got, want)
	}

	files["f007.yaml"] = "edited"
	files["f040.yaml"] = strings.Repeat("x", 101)
	write(t, dir, map[string]string{"f007.yaml": files["f007.yaml"], "f040.yaml": files["f040.yaml"]})
	second := read(t, r, dir, ModePlain)
	want := expect("f040.yaml") + "!f040.yaml: file is 101 bytes, limit 100 bytes\n"
	if got := contents(t, second); got != want {
		t.Errorf("second read:\n%s\nwant\n%s", got, want)
	}
	if fresh := read(t, &Reader{MaxFileSize: 100}, dir, ModePlain); fresh.Hash != second.Hash {
		t.Errorf("reused reader's hash %s, fresh reader's %s", second.Hash, fresh.Hash)
	}
	before := map[string][]byte{}
	for _, f := range first.Files {
		before[f.Path] = f.Data
	}
	for _, f := range second.Files {
		if f.Path == "f007.yaml" {
			continue
		}
		if &f.Data[0] != &before[f.Path][0] {
			t.Errorf("%s: unchanged file not kept from the last snapshot", f.Path)
		}
	}

	// Each file fits; together they pass the total: whichever worker
	// crosses it, the read fails.
	_, err := (&Reader{MaxFileSize: 100, MaxTotalSize: 1000}).Read(context.Background(), dir, ModePlain)
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("total limit over %d files: %v, want ErrTooLarge", n, err)
	}
}
