package fastyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// fastParse parses data with a strict fast parser of its own: a bug that
// panics fails the test rather than fall back to yaml.v3.
func fastParse(data []byte) ([]*yaml.Node, bool) {
	p := Parser{Strict: true}
	return p.Parse(data)
}

// parseDocument is yaml.v3's Decode with its panics turned into errors,
// as the model's decoder calls it.
func parseDocument(dec *yaml.Decoder, root *yaml.Node) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("yaml parser failure: %v", v)
		}
	}()
	return dec.Decode(root)
}

// inputs are the YAML files of the model's test data and the
// compatibility corpus: what the fast path must read as yaml.v3 does.
func inputs(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	for _, root := range []string{"../testdata", "../../../test/compat/testdata"} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
				return err
			}
			data, err := os.ReadFile(p)
			out[p] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// generated is what the benchmarks load: routes and endpoints as a
// generator writes them.
func generated(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: app-%d
  namespace: ns-%d
  creationTimestamp: "2024-05-01T10:00:00Z"
  annotations:
    haproxy.router.openshift.io/timeout: 30s
spec:
  host: app-%d.apps.example.com
  path: /
  to:
    kind: Service
    name: app-%d
    weight: 100
  port:
    targetPort: http
  tls:
    termination: edge
    insecureEdgeTerminationPolicy: Redirect
---
apiVersion: v1
kind: Endpoints
metadata:
  name: app-%d
  namespace: ns-%d
subsets:
- addresses:
  - ip: 10.%d.%d.1
  ports:
  - name: http
    port: 8080
    protocol: TCP
`, i, i%50, i, i, i, i%50, i/256, i%256)
	}
	return []byte(b.String())
}

// yamlDocs parses data with yaml.v3 the way decodeChunk does.
func yamlDocs(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var root yaml.Node
		err := parseDocument(dec, &root)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, &root)
	}
}

// sameTree returns how a and b differ in what decoding reads (kind, tag,
// value, position, anchors, aliases, children), or "".
func sameTree(a, b *yaml.Node, at string) string {
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Anchor != b.Anchor ||
		(a.Alias == nil) != (b.Alias == nil) || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: fast {kind %d tag %s value %q anchor %q content %d}, yaml.v3 {kind %d tag %s value %q anchor %q content %d}",
			at, a.Kind, a.Tag, a.Value, a.Anchor, len(a.Content), b.Kind, b.Tag, b.Value, b.Anchor, len(b.Content))
	}
	if a.Kind != yaml.DocumentNode && (a.Line != b.Line || a.Column != b.Column) {
		return fmt.Sprintf("%s (%q): fast at %d:%d, yaml.v3 at %d:%d", at, a.Value, a.Line, a.Column, b.Line, b.Column)
	}
	for i := range a.Content {
		if d := sameTree(a.Content[i], b.Content[i], fmt.Sprintf("%s/%d", at, i)); d != "" {
			return d
		}
	}
	return ""
}

// checkFastParse fails t if fastParse accepts data but yaml.v3 does not,
// or builds a different tree. It reports whether the fast path accepted.
func checkFastParse(t *testing.T, name string, data []byte) bool {
	t.Helper()
	fast, ok := fastParse(data)
	if !ok {
		return false
	}
	slow, err := yamlDocs(data)
	if err != nil {
		t.Errorf("%s: fast path accepted what yaml.v3 refuses: %v", name, err)
		return true
	}
	if len(fast) != len(slow) {
		t.Errorf("%s: fast path found %d documents, yaml.v3 %d", name, len(fast), len(slow))
		return true
	}
	for i := range fast {
		if d := sameTree(fast[i], slow[i], fmt.Sprintf("doc %d", i)); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
	return true
}

func TestFastParseMatchesYAMLv3(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		accept bool
	}{
		{"empty", "", true},
		{"comments only", "# a\n# b\n", true},
		{"empty documents", "---\n---\n", true},
		{"trailing empty document", "a: 1\n---\n", true},
		{"helm source comment", "---\n# Source: chart/templates/route.yaml\napiVersion: v1\nkind: Route\n", true},
		{"nested", "a:\n  b:\n    c: d\n  e: f\ng: h\n", true},
		{"indentless sequence", "subsets:\n- addresses:\n  - ip: 10.0.0.1\n  - ip: 10.0.0.2\n  ports:\n  - name: http\n    port: 8080\n", true},
		{"indented sequence", "a:\n  - x\n  -   y\nb: 1\n", true},
		{"scalars", "a: 8080\nb: true\nc: null\nd: ~\ne: 1.5\nf: 0x1F\ng: 0o17\nh: 0b101\ni: -12\nj: 2026-01-02T03:04:05Z\nk: 2026-01-02\nl: 10.0.0.1\nm: fd00::1\nn: .5\no: .inf\np: 1_000\nq: 1e3\nr: 99999999999999999999\ns: -0b11\n", true},
		{"quoted", "a: \"x y\"\nb: 'z: #'\nc: \"\"\nd: ''\n", true},
		{"flow empty", "status: {}\nitems: []\n", true},
		{"literal", "a: |\n  line 1\n    indented\n  line 3\nb: |-\n  x\n\nc: 1\n", true},
		{"literal in sequence", "a:\n- |\n  x\n- y\n", true},
		{"int keys", "80: a\ntrue: b\n", true},
		{"trailing spaces", "a: b  \nc:   d\n", true},
		{"no final newline", "a: b", true},
		{"column-1 comment inside", "a:\n# c\n  b: 1\n", true},

		{"anchor", "a: &x 1\nb: *x\n", false},
		{"tag", "a: !!str 1\n", false},
		{"flow", "a: {b: 1}\n", true},
		{"flow route and endpoints", "spec: {host: a.example.com, to: {kind: Service, name: web, weight: 100}}\nsubsets:\n- addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}]\n  ports: [{port: 8080, name: http}]\n", true},
		{"flow spaces", "a: { b: 1 ,  c: [ x , y ] }\n", true},
		{"flow quoted", "a: {b: \"x, y\", c: 'z: w'}\n", true},
		{"flow in sequence", "a:\n- {b: 1}\n- [1, 2]\n", true},
		{"flow empty with spaces", "a: { }\nb: [ ]\n", true},
		{"flow scalars", "a: [true, null, ~, 1.5, 0x1F, 2026-01-02, -1, 10.0.0.1, fd00--1]\n", true},
		{"flow multi-line", "a: {b: 1,\n  c: 2}\n", false},
		{"flow trailing comma", "a: [1, 2,]\n", false},
		{"flow empty entry", "a: [1,,2]\n", false},
		{"flow colon in value", "a: {b: c:d}\n", false},
		{"flow key without value", "a: {b}\n", false},
		{"flow text after", "a: {b: 1} x\n", false},
		{"flow comment", "a: {b: 1} # c\n", false},
		{"flow doubled quote", "a: ['it''s']\n", false},
		{"flow escape", "a: [\"x\\ty\"]\n", false},
		{"flow quoted key", "a: {\"b\": 1}\n", false},
		{"flow url", "a: [http://x]\n", false},
		{"flow unclosed", "a: [1, 2\n", false},
		{"flow mismatched", "a: [1, 2}\n", false},
		{"empty value", "a:\nb: 1\n", false},
		{"multi-line plain", "a: b\n  c\n", false},
		{"trailing comment", "a: b # c\n", false},
		{"indented comments", "a:\n  # c\n  b: 1\n    # d\n  e:\n  # f\n  - 1\n      # g\n", true},
		{"comment in literal", "a: |\n  # not a comment\n  x\n", true},
		{"comment after literal", "a: |\n    x\n  # c\nb: 1\n", true},
		{"comment after blank after literal", "a: |\n    x\n\n # c\nb: 1\n", true},
		{"escape", "a: \"x\\ty\"\n", false},
		{"tab", "a:\tb\n", false},
		{"crlf", "a: b\r\n", false},
		{"bad indentation", "a:\n    b: 1\n  c: 2\n", false},
		{"document end", "a: 1\n...\n", false},
		{"directive", "%YAML 1.2\n---\na: 1\n", false},
		{"folded", "a: >\n  x\n", false},
		{"literal blank line inside", "a: |\n  x\n\n  y\n", false},
		{"literal at end without newline", "a: |\n  x", false},
		{"sequence root", "- a\n", false},
		{"scalar root", "a\n", false},
		{"nested sequence", "a:\n- - x\n", false},
		{"key with space", "a b: c\n", false},
		{"colon in value", "a: b: c\n", false},
		{"lone quote", "a: \"\n", false},
		{"non-ascii", "a: é\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkFastParse(t, tt.name, []byte(tt.in)); got != tt.accept {
				t.Errorf("fast path accepted = %v, want %v", got, tt.accept)
			}
		})
	}
}

// Every YAML file of the test data, and generated files:
// whatever the fast path accepts, it must parse as yaml.v3 does.
func TestFastParseTestdata(t *testing.T) {
	accepted := 0
	for p, data := range inputs(t) {
		if checkFastParse(t, p, data) {
			accepted++
		}
	}
	if accepted < 20 {
		t.Errorf("fast path accepted only %d testdata files", accepted)
	}
	if !checkFastParse(t, "generated", generated(500)) {
		t.Error("fast path declined generated YAML")
	}
}

// FuzzFastParse: whatever the fast path accepts, yaml.v3 parses to the
// same tree.
func FuzzFastParse(f *testing.F) {
	for _, data := range inputs(f) {
		f.Add(data, false)
	}
	for _, s := range []string{
		"a:\n- b: |\n    x\n  c: 'd'\n",
		"---\na: 1\n---\nb: [ ]\n",
		"k: v\n  # c\n",
		"subsets:\n- addresses:\n  - ip: 10.0.0.1\n  ports:\n  - name: http\n    port: 8080\n    protocol: TCP\n",
		"a:\n  b:\n  - c: |-\n      x\n       y\n    d: \"e\"\n  f: {}\n# x\ng: -1\n",
		"---\n# c\n---\na:\n    - 1\n    -  2\nb: 2026-01-02\n",
		"spec: {to: {kind: Service, name: a}, port: {targetPort: 80}}\nx: [{ip: 10.0.0.1}, 'b', \"c\"]\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, _ bool) {
		checkFastParse(t, "input", data)
	})
}

// TestFastParseGenerated writes random block YAML near the edges of the
// subset (indentation, comments, blank lines, literals, quoting, keys
// with colons, values that resolve to every tag) and compares whatever
// the fast path accepts with yaml.v3. The seed is fixed: failures repeat.
func TestFastParseGenerated(t *testing.T) {
	if accepted := checkGenerated(t, 1, 4000); accepted < 500 {
		t.Errorf("fast path accepted only %d of 4000 generated documents", accepted)
	}
}

// checkGenerated runs checkFastParse on n documents generated from seed
// and returns how many the fast path accepted.
func checkGenerated(t *testing.T, seed uint64, n int) int {
	rng := rand.New(rand.NewPCG(seed, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	scalars := []string{"x", "8080", "-1", "0x1F", "1_000", "1e3", ".5", "true", "False", "null", "~", "",
		"10.0.0.1", "fd00::1", "2026-01-02", "2026-01-02T03:04:05Z", "a b", "a:b", "http://h/p", "'q'", `"d q"`,
		"''", `""`, "{}", "[]", "-x", "+1", "0o17", "0b11", ".inf", "<<", "a#b", "a,b", "it's"}
	keys := []string{"a", "b", "f:spec", "app.kubernetes.io/name", "80", "true", "null", ".", "k-1", "x_y"}
	var gen func(b *strings.Builder, indent, depth int)
	pad := func(n int) string { return strings.Repeat(" ", n) }
	noise := func(b *strings.Builder, indent int) {
		switch rng.IntN(8) {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString(pad(rng.IntN(indent+3)) + "# c\n")
		case 2:
			b.WriteString(pad(rng.IntN(4)) + "\n")
		}
	}
	value := func(b *strings.Builder, indent, depth int) {
		switch r := rng.IntN(10); {
		case r < 5 || depth > 4:
			b.WriteString(" " + pick(scalars...) + pick("", "", " ") + "\n")
		case r == 5:
			b.WriteString(" " + pick("|", "|-", "|+", ">") + "\n")
			in := indent + 1 + rng.IntN(3)
			for range 1 + rng.IntN(3) {
				b.WriteString(pad(in+rng.IntN(2)) + pick("line", "# x", "a: b", "- y") + "\n")
				noise(b, in)
			}
		default:
			b.WriteString("\n")
			noise(b, indent)
			gen(b, indent+pick2(rng, 0, 2, 4), depth+1)
		}
	}
	gen = func(b *strings.Builder, indent, depth int) {
		seq := rng.IntN(3) == 0
		for range 1 + rng.IntN(3) {
			noise(b, indent)
			if seq {
				b.WriteString(pad(indent) + "-")
				if rng.IntN(2) == 0 {
					b.WriteString(" " + pick(keys...) + ":")
					value(b, indent+2, depth+1)
				} else {
					value(b, indent, depth+1)
				}
				continue
			}
			b.WriteString(pad(indent) + pick(keys...) + ":")
			value(b, indent, depth)
		}
	}
	accepted := 0
	for i := range n {
		var b strings.Builder
		if rng.IntN(4) == 0 {
			b.WriteString("---\n")
		}
		gen(&b, 0, 0)
		if rng.IntN(4) == 0 {
			b.WriteString("---\n")
			gen(&b, 0, 0)
		}
		if checkFastParse(t, fmt.Sprintf("case %d:\n%s", i, b.String()), []byte(b.String())) {
			accepted++
		}
	}
	return accepted
}

func pick2(rng *rand.Rand, xs ...int) int { return xs[rng.IntN(len(xs))] }

// A parser kept from load to load (the model's decoder pools them) is
// released after each: it must then hold nothing of the text it parsed,
// keep a bounded amount of memory, and parse the next text as a new
// parser would.
func TestReleasedParserKeepsNoText(t *testing.T) {
	var big strings.Builder
	for i := range 2000 { // many slabs of nodes
		fmt.Fprintf(&big, "---\nkind: Endpoints\nmetadata:\n  name: svc-%d\nsubsets:\n- addresses:\n  - ip: 10.0.0.%d\n", i, i%250)
	}
	p := Parser{Strict: true}
	if _, ok := p.Parse([]byte(big.String())); !ok {
		t.Fatal("the fast path declined the test's own text")
	}
	if len(p.nodes.all) <= keptSlabs {
		t.Fatalf("the text took %d slabs of nodes; the test needs more than %d", len(p.nodes.all), keptSlabs)
	}
	// A smaller chunk next, as the decoder parses one after another
	// before the release: the arrays the first one alone used hold stale
	// nodes too.
	if _, ok := p.Parse([]byte("kind: Route\n")); !ok {
		t.Fatal("the fast path declined a one-line document")
	}
	p.Release()
	if p.text != "" {
		t.Error("a released parser still refers to the text")
	}
	for what, n := range map[string]int{"nodes": len(p.nodes.all), "pointers": len(p.ptrs.all)} {
		if n > keptSlabs {
			t.Errorf("a released parser keeps %d slabs of %s, want at most %d", n, what, keptSlabs)
		}
	}
	for _, c := range p.nodes.all {
		for i, n := range c[:cap(c)] {
			if n.Value != "" || n.Content != nil {
				t.Fatalf("a kept node (%d) still holds %q", i, n.Value)
			}
		}
	}
	next := "apiVersion: v1\nkind: Route\nspec:\n  host: a.example.com\n  to: {kind: Service, name: web}\n"
	got, ok := p.Parse([]byte(next))
	fresh := Parser{Strict: true}
	want, ok2 := fresh.Parse([]byte(next))
	if !ok || !ok2 || len(got) != 1 || len(want) != 1 {
		t.Fatalf("parsing %q: released parser %d documents (%v), new parser %d (%v)", next, len(got), ok, len(want), ok2)
	}
	if d := sameTree(got[0], want[0], "doc"); d != "" {
		t.Fatalf("a released parser read %q differently from a new one: %s", next, d)
	}
}

// A parse that the fast path declines part way (here an anchor after
// many documents, which yaml.v3 then reads) leaves nodes in the slabs
// too: a release after it keeps none of that text either.
func TestReleaseAfterDeclinedParse(t *testing.T) {
	var text strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&text, "---\nkind: Endpoints\nmetadata:\n  name: svc-%d\n", i)
	}
	text.WriteString("---\na: &x 1\nb: *x\n")
	p := Parser{}
	if _, ok := p.Parse([]byte(text.String())); ok {
		t.Fatal("the fast path read an anchor; the test needs a decline")
	}
	p.Release()
	if p.text != "" {
		t.Error("a released parser still refers to the declined text")
	}
	for _, c := range p.nodes.all {
		for i, n := range c[:cap(c)] {
			if n.Value != "" || n.Content != nil {
				t.Fatalf("a kept node (%d) still holds %q", i, n.Value)
			}
		}
	}
}
