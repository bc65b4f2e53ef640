package testutil

import (
	"os"
	"testing"
)

// ShortTempDir returns a new directory under the system temp dir with a
// short name (/tmp/hr…), removed when the test ends. Unix socket paths
// must fit in 108 bytes, which t.TempDir()'s long names can exceed.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
