package render

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// A file in parts reads, compares and writes like the same content in one
// slice, however it is split.
func TestFileParts(t *testing.T) {
	whole := &File{Name: ConfigFile, Data: []byte("global\n\nbackend a\n\nbackend b\n")}
	split := &File{Name: ConfigFile, Parts: [][]byte{[]byte("global\n"), []byte("\nbackend a\n"), []byte("\nbackend b\n")}}
	other := &File{Name: ConfigFile, Parts: [][]byte{[]byte("global\n\n"), []byte("backend a\n\nbackend b\n")}}
	changed := &File{Name: ConfigFile, Parts: [][]byte{[]byte("global\n"), []byte("\nbackend a\n"), []byte("\nbackend c\n")}}

	if !bytes.Equal(split.Bytes(), whole.Data) || split.Size() != len(whole.Data) {
		t.Fatalf("Bytes = %q (size %d), want %q", split.Bytes(), split.Size(), whole.Data)
	}
	var buf bytes.Buffer
	if n, err := split.WriteTo(&buf); err != nil || n != int64(len(whole.Data)) || buf.String() != string(whole.Data) {
		t.Fatalf("WriteTo wrote %q (%d, %v)", buf.String(), n, err)
	}
	for _, c := range []struct {
		a, b *File
		want bool
	}{
		{split, whole, true}, {whole, split, true}, {split, other, true}, {split, split, true},
		{split, changed, false}, {changed, whole, false}, {whole, &File{Data: []byte("global\n")}, false},
	} {
		if got := c.a.Equal(c.b); got != c.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.a.Bytes(), c.b.Bytes(), got, c.want)
		}
	}
}

// Equal compares content however each side is split, empty parts
// included, without joining: random splits of the same bytes are equal,
// and a one-byte change anywhere makes them differ.
func TestFileEqualAnySplit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 2026))
	split := func(b []byte) *File {
		f := &File{Parts: [][]byte{}}
		for len(b) > 0 {
			n := r.IntN(min(len(b), 9) + 1) // 0 makes an empty part
			f.Parts, b = append(f.Parts, b[:n]), b[n:]
		}
		return f
	}
	for range 500 {
		content := make([]byte, 1+r.IntN(60))
		for i := range content {
			content[i] = byte('a' + r.IntN(3))
		}
		a, b := split(content), split(content)
		if !a.Equal(b) || !b.Equal(&File{Data: content}) {
			t.Fatalf("%q split as %q and %q: not equal", content, a.Parts, b.Parts)
		}
		changed := bytes.Clone(content)
		changed[r.IntN(len(changed))] = 'z'
		if c := split(changed); a.Equal(c) || c.Equal(&File{Data: content}) {
			t.Fatalf("%q and %q compare equal", content, changed)
		}
	}
}

// A rendered map gives each key once, in compareKeys order, and Has finds
// by binary search exactly the keys a set of them would hold: the runtime
// path's map edits rely on both (plan.safeEdit).
func TestMapHasMatchesItsKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 2026))
	hosts := []string{"a.example", "a.example.test", "a.exampl", "b.example", "*.example", "x"}
	paths := []string{"", "/", "/a", "/a/", "/ab", "/a/b", "/b", "/%2F", "/a b"}
	key := func() string { return hosts[r.IntN(len(hosts))] + paths[r.IntN(len(paths))] }
	for round := range 200 {
		var es []MapEntry
		for i := range r.IntN(30) {
			es = append(es, MapEntry{Key: key(), Value: fmt.Sprint("be", i)})
		}
		kept, _ := sortEntries(es)
		m := Map{Entries: kept}
		want := map[string]bool{}
		for i, e := range m.Entries {
			if want[e.Key] {
				t.Fatalf("round %d: key %q twice: %v", round, e.Key, m.Entries)
			}
			want[e.Key] = true
			if i > 0 {
				h1, p1 := splitKey(m.Entries[i-1].Key)
				h2, p2 := splitKey(e.Key)
				if compareKeys(h1, p1, h2, p2) >= 0 {
					t.Fatalf("round %d: %q before %q", round, m.Entries[i-1].Key, e.Key)
				}
			}
		}
		for range 50 {
			k := key()
			if m.Has(k) != want[k] {
				t.Fatalf("round %d: Has(%q) = %v, the keys say %v: %v", round, k, m.Has(k), want[k], m.Entries)
			}
		}
	}
}
