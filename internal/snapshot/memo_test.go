package snapshot

import (
	"os"
	"path/filepath"
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
