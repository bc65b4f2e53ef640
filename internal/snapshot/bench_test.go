package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/haroute/haroute/test/publish"
)

// benchTree writes n files of size bytes each into dir; file 0 ends with
// the byte mark, so two trees differ in exactly one file.
func benchTree(b *testing.B, dir string, n, size int, mark byte) {
	b.Helper()
	for i := range n {
		data := bytes.Repeat([]byte("# padding line for the benchmark tree\n"), size/38+1)[:size]
		if i == 0 {
			data[size-1] = mark
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.yaml", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadOneFileChanged reads 200 files (6 MB) per op with one
// Reader, alternating between two generations that differ in one file,
// as the daemon's reader sees a one-endpoint change.
func BenchmarkReadOneFileChanged(b *testing.B) {
	const n, size = 200, 6 << 20 / 200
	var dirs [2]string
	for i := range dirs {
		dirs[i] = b.TempDir()
		benchTree(b, dirs[i], n, size, byte('a'+i))
	}
	var r Reader
	ctx := context.Background()
	if _, err := r.Read(ctx, dirs[1], ModePlain); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(n * size)
	i := 0
	for b.Loop() {
		s, err := r.Read(ctx, dirs[i%2], ModePlain)
		i++
		if err != nil || len(s.Files) != n {
			b.Fatalf("read %d files, error %v", len(s.Files), err)
		}
	}
}

// BenchmarkReadAtomicOneFileChanged is the same for the daemon's usual
// case: a kubelet-style AtomicWriter directory (the files of a generation
// behind ..data, in two subdirectories), alternating between two config
// dirs whose generations differ in one file.
func BenchmarkReadAtomicOneFileChanged(b *testing.B) {
	const n, size = 200, 6 << 20 / 200
	var dirs [2]string
	for i := range dirs {
		dirs[i] = b.TempDir()
		files := map[string][]byte{}
		for j := range n {
			data := bytes.Repeat([]byte("# padding line for the benchmark tree\n"), size/38+1)[:size]
			if j == 0 {
				data[size-1] = byte('a' + i)
			}
			files[fmt.Sprintf("%s/f%03d.yaml", []string{"routes", "endpoints"}[j%2], j)] = data
		}
		if err := publish.NewAtomicWriter(dirs[i]).Publish(files); err != nil {
			b.Fatal(err)
		}
	}
	var r Reader
	ctx := context.Background()
	if _, err := r.Read(ctx, dirs[1], ModeAtomic); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(n * size)
	i := 0
	for b.Loop() {
		s, err := r.Read(ctx, dirs[i%2], ModeAtomic)
		i++
		if err != nil || len(s.Files) != n {
			b.Fatalf("read %d files, error %v", len(s.Files), err)
		}
	}
}
