package publish

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// sortedNames returns the keys of files in order, after checking that each
// is a clean relative slash path that stays inside the directory.
func sortedNames(files map[string][]byte) ([]string, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		if name == "" || path.IsAbs(name) || path.Clean(name) != name {
			return nil, fmt.Errorf("publish: invalid file name %q (want a clean relative path)", name)
		}
		// Like kubelet, reserve names starting with ".." (..data and the
		// timestamped directories) and refuse to escape the directory.
		for _, elem := range strings.Split(name, "/") {
			if strings.HasPrefix(elem, "..") {
				return nil, fmt.Errorf("publish: invalid file name %q (elements must not start with \"..\")", name)
			}
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// writeTree writes files below dir, creating subdirectories as needed.
func writeTree(dir string, files map[string][]byte, names []string) error {
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("publish: create directory for %s: %w", name, err)
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return fmt.Errorf("publish: write %s: %w", name, err)
		}
	}
	return nil
}

// topLevel returns the distinct first path elements of names, in order.
func topLevel(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, name := range names {
		first, _, _ := strings.Cut(name, "/")
		if !seen[first] {
			seen[first] = true
			out = append(out, first)
		}
	}
	return out
}
