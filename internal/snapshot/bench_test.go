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

// The trees of the read benchmarks: 200 files, 6 MB in all, in two
// generations that differ in one file.
const benchFiles, benchSize = 200, 6 << 20 / 200

// BenchmarkReadOneFileChanged reads the files of a plain directory per op
// with one Reader, alternating between two generations, as the daemon's
// reader sees a one-endpoint change.
func BenchmarkReadOneFileChanged(b *testing.B) {
	var dirs [2]string
	for i := range dirs {
		dirs[i] = b.TempDir()
		benchTree(b, dirs[i], benchFiles, benchSize, byte('a'+i))
	}
	benchmarkRead(b, dirs, ModePlain)
}

// BenchmarkReadAtomicOneFileChanged is the same for the daemon's usual
// case: a kubelet-style AtomicWriter directory (the files of a generation
// behind ..data, in two subdirectories).
func BenchmarkReadAtomicOneFileChanged(b *testing.B) {
	var dirs [2]string
	for i := range dirs {
		dirs[i] = b.TempDir()
		files := map[string][]byte{}
		for j := range benchFiles {
			data := bytes.Repeat([]byte("# padding line for the benchmark tree\n"), benchSize/38+1)[:benchSize]
			if j == 0 {
				data[benchSize-1] = byte('a' + i)
			}
			files[fmt.Sprintf("%s/f%03d.yaml", []string{"routes", "endpoints"}[j%2], j)] = data
		}
		if err := publish.NewAtomicWriter(dirs[i]).Publish(files); err != nil {
			b.Fatal(err)
		}
	}
	benchmarkRead(b, dirs, ModeAtomic)
}

// benchmarkRead reads dirs in turn with one Reader, warmed on the second.
func benchmarkRead(b *testing.B, dirs [2]string, mode Mode) {
	var r Reader
	ctx := context.Background()
	if _, err := r.Read(ctx, dirs[1], mode); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(benchFiles * benchSize)
	i := 0
	for b.Loop() {
		s, err := r.Read(ctx, dirs[i%2], mode)
		i++
		if err != nil || len(s.Files) != benchFiles {
			b.Fatalf("read %d files, error %v", len(s.Files), err)
		}
	}
}
