package model

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The bad-input corpus: every file (or directory of files) under
// testdata/bad is a case that must fail to load, and states which
// diagnostics it must produce in its own comment lines:
//
//	# want: <file>:<line>:<col>: <severity>: <field>: <message substring>
//	# strict    (warnings count as errors, as with `check --strict`)
//
// JSON cannot hold comments, so x.json takes its lines from x.json.want.
// A directory case loads all its files together; paths are relative to it.

// corpusWant is one expected diagnostic.
type corpusWant struct {
	line string // as written, for messages
	path string
	ln   int
	col  int
	sev  string
	rest string // "<field>: <message substring>" or "<message substring>"
}

func parseWant(s string) (corpusWant, error) {
	w := corpusWant{line: s}
	loc, rest, ok := strings.Cut(s, ": ")
	if !ok {
		return w, fmt.Errorf("no position in %q", s)
	}
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return w, fmt.Errorf("position %q is not file:line:col", loc)
	}
	var err1, err2 error
	w.path = strings.Join(parts[:len(parts)-2], ":")
	w.ln, err1 = strconv.Atoi(parts[len(parts)-2])
	w.col, err2 = strconv.Atoi(parts[len(parts)-1])
	if err1 != nil || err2 != nil {
		return w, fmt.Errorf("position %q is not file:line:col", loc)
	}
	w.sev, w.rest, ok = strings.Cut(rest, ": ")
	if !ok || (w.sev != "error" && w.sev != "warning" && w.sev != "note") {
		return w, fmt.Errorf("no severity in %q", s)
	}
	return w, nil
}

func (w corpusWant) matches(d Diagnostic) bool {
	if d.Pos.Path != w.path || d.Pos.Line != w.ln || d.Pos.Col != w.col || d.Severity.String() != w.sev {
		return false
	}
	if d.Field != "" {
		if msg, ok := strings.CutPrefix(w.rest, d.Field+": "); ok {
			return strings.Contains(d.Message, msg)
		}
	}
	return strings.Contains(d.Message, w.rest)
}

// corpusCase is one case: its files and what it expects.
type corpusCase struct {
	files  []SourceFile
	wants  []corpusWant
	strict bool
}

func isInput(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// readCase reads the input files at paths (relative to root) and their
// expectations.
func readCase(root string, paths []string) (corpusCase, error) {
	var c corpusCase
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return c, err
		}
		c.files = append(c.files, SourceFile{Path: filepath.ToSlash(p), Data: data})
		spec := data
		if strings.HasSuffix(p, ".json") {
			if spec, err = os.ReadFile(filepath.Join(root, p+".want")); err != nil {
				if os.IsNotExist(err) {
					continue
				}
				return c, err
			}
		}
		sc := bufio.NewScanner(bytes.NewReader(spec))
		sc.Buffer(nil, MaxFileSize+1)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			if line == "# strict" {
				c.strict = true
			}
			if s, ok := strings.CutPrefix(line, "# want: "); ok {
				w, err := parseWant(s)
				if err != nil {
					return c, fmt.Errorf("%s: %w", p, err)
				}
				c.wants = append(c.wants, w)
			}
		}
	}
	return c, nil
}

// corpusCases lists the cases under dir by name.
func corpusCases(t *testing.T, dir string) map[string]corpusCase {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := make(map[string]corpusCase)
	for _, e := range entries {
		var c corpusCase
		switch {
		case e.IsDir():
			root := filepath.Join(dir, e.Name())
			var paths []string
			err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && isInput(p) {
					rel, relErr := filepath.Rel(root, p)
					paths = append(paths, rel)
					return relErr
				}
				return err
			})
			if err == nil {
				sort.Strings(paths)
				c, err = readCase(root, paths)
			}
		case isInput(e.Name()):
			c, err = readCase(dir, []string{e.Name()})
		default:
			continue
		}
		if err != nil {
			t.Fatalf("case %s: %v", e.Name(), err)
		}
		cases[e.Name()] = c
	}
	return cases
}

func TestCorpus(t *testing.T) {
	cases := corpusCases(t, "testdata/bad")
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			if len(c.wants) == 0 {
				t.Fatal("case has no `# want:` lines")
			}
			res := load(t, NewLoader(), c.files)
			if !res.Diagnostics.HasErrors(c.strict) {
				t.Errorf("loaded without errors (strict=%v); diagnostics:\n%s", c.strict, strings.Join(diagStrings(res.Diagnostics), "\n"))
			}
			for _, w := range c.wants {
				found := false
				for _, d := range res.Diagnostics {
					if w.matches(d) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("missing diagnostic %q; got:\n%s", w.line, strings.Join(diagStrings(res.Diagnostics), "\n"))
				}
			}
		})
	}
}
