package render

import (
	"bytes"
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
