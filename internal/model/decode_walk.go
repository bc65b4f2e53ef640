package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// walker decodes the documents of one chunk against the resource schemas,
// reporting every problem at the line:col of the node it is about. Field
// names in diagnostics are YAML paths relative to the object
// ("spec.to.weight", "subsets[0].addresses[1].ip"), the same names
// Source.At answers for.
type walker struct {
	path    string
	lineOff int
	objs    *Objects
	diags   Diagnostics

	// Per object being decoded.
	unknown Severity   // of unknown fields: error for RouterConfig, else warning
	fields  []fieldPos // positions recorded so far, reused across objects
	// slab is where completed objects' positions are copied: objects
	// share it (each Source keeps its own capacity-limited part), so
	// many objects cost one allocation rather than a map each.
	slab *[]fieldPos
}

// fieldSlabSize is the number of positions allocated at once for Sources.
const fieldSlabSize = 4096

// fieldPos is one recorded field position. The path is the object's.
type fieldPos struct {
	name      string
	line, col int32
}

func (w *walker) pos(n *yaml.Node) Position {
	return Position{Path: w.path, Line: n.Line + w.lineOff, Col: n.Column}
}

func (w *walker) diag(sev Severity, n *yaml.Node, field, msg string) Diagnostic {
	return Diagnostic{Pos: w.pos(n), Severity: sev, Field: field, Message: msg}
}

func (w *walker) report(sev Severity, n *yaml.Node, field, format string, args ...any) {
	w.diags = append(w.diags, w.diag(sev, n, field, fmt.Sprintf(format, args...)))
}

// record notes where field was written, for Source.At.
func (w *walker) record(field string, n *yaml.Node) {
	w.fields = append(w.fields, fieldPos{name: field, line: int32(n.Line + w.lineOff), col: int32(n.Column)})
}

// indexedFields is the number of recorded fields above which an object's
// positions go in a map: Lookup scans the compact form, and an Endpoints
// with thousands of bad addresses looks up one position per address.
const indexedFields = 64

// source completes the Source of the object at n from the recorded fields.
func (w *walker) source(n *yaml.Node) Source {
	src := Source{Pos: w.pos(n)}
	switch k := len(w.fields); {
	case k > indexedFields:
		src.Fields = make(map[string]Position, k)
		for _, f := range w.fields {
			src.Fields[f.name] = Position{Path: w.path, Line: int(f.line), Col: int(f.col)}
		}
	case k > 0:
		if w.slab == nil {
			w.slab = new([]fieldPos)
		}
		slab := *w.slab
		if cap(slab)-len(slab) < k {
			slab = make([]fieldPos, 0, fieldSlabSize)
		}
		start := len(slab)
		slab = append(slab, w.fields...)
		src.fields = slab[start:len(slab):len(slab)]
		*w.slab = slab
	}
	w.fields = w.fields[:0]
	return src
}

func (w *walker) typeError(n *yaml.Node, field, want string) {
	w.report(SeverityError, n, field, "expected %s, got %s", want, describe(n))
}

func (w *walker) unknownField(k *yaml.Node, field string) {
	w.report(w.unknown, k, field, "unknown field")
}

// unsupported reports a field that exists in the Kubernetes/OpenShift API
// but that haroute does not implement: ignoring it quietly would surprise.
func (w *walker) unsupported(k *yaml.Node, field string) {
	w.report(w.unknown, k, field, "not supported by haroute, ignored")
}

// resolve follows aliases. checkTree has ruled out cycles.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
	default:
		return "nothing"
	}
	v := n.Value
	if utf8.RuneCountInString(v) > 40 {
		v = string([]rune(v)[:37]) + "..."
	}
	switch n.Tag {
	case "!!str":
		return "string " + strconv.Quote(v)
	case "!!int":
		return "integer " + v
	case "!!float":
		return "float " + v
	case "!!bool":
		return "boolean " + v
	case "!!null":
		return "null"
	case "!!timestamp":
		return "timestamp " + v
	default:
		return n.Tag + " " + strconv.Quote(v)
	}
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// mapping returns n as a mapping; null (an unset field) is not an error.
func (w *walker) mapping(n *yaml.Node, field string) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind == yaml.MappingNode {
		return n, true
	}
	if !isNull(n) {
		w.typeError(n, field, "a map")
	}
	return nil, false
}

// list returns the items of n; null is an empty list.
func (w *walker) list(n *yaml.Node, field string) []*yaml.Node {
	n = resolve(n)
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	if !isNull(n) {
		w.typeError(n, field, "a list")
	}
	return nil
}

// bigMapping is the key count above which duplicate keys are found with a
// map rather than by scanning: quadratic scans of hostile input are slow.
const bigMapping = 32

// eachPair calls fn for every key of mapping m, reporting duplicate and
// non-scalar keys. Merge keys ("<<: *base") are expanded, keys written in
// m itself taking precedence, then earlier merged maps over later ones.
func (w *walker) eachPair(m *yaml.Node, field string, fn func(key string, k, v *yaml.Node)) {
	var seen map[string]*yaml.Node
	if len(m.Content) > 2*bigMapping {
		seen = make(map[string]*yaml.Node, len(m.Content)/2)
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kr := resolve(k)
		if kr.Kind != yaml.ScalarNode {
			w.report(SeverityError, k, field, "expected a string key, got %s", describe(kr))
			continue
		}
		if kr.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if first := w.firstKey(m, i, kr.Value, seen); first != nil {
			w.report(SeverityError, k, join(field, kr.Value), "duplicate key, first written at line %d", first.Line+w.lineOff)
			continue
		}
		fn(kr.Value, k, v)
	}
	if len(merges) == 0 {
		return
	}
	delivered := make(map[string]bool)
	for i := 0; i+1 < len(m.Content); i += 2 {
		delivered[resolve(m.Content[i]).Value] = true
	}
	for _, src := range merges {
		w.eachMerged(src, field, func(key string, k, v *yaml.Node) {
			if !delivered[key] {
				delivered[key] = true
				fn(key, k, v)
			}
		})
	}
}

// firstKey returns the earlier key node equal to key among the first i
// entries of m, or nil. seen, when not nil, indexes big mappings.
func (w *walker) firstKey(m *yaml.Node, i int, key string, seen map[string]*yaml.Node) *yaml.Node {
	if seen != nil {
		if first, ok := seen[key]; ok {
			return first
		}
		seen[key] = m.Content[i]
		return nil
	}
	for j := 0; j < i; j += 2 {
		if kj := resolve(m.Content[j]); kj.Kind == yaml.ScalarNode && kj.Tag != "!!merge" && kj.Value == key {
			return m.Content[j]
		}
	}
	return nil
}

// eachMerged walks the value of a merge key: a map or a list of maps.
func (w *walker) eachMerged(src *yaml.Node, field string, fn func(key string, k, v *yaml.Node)) {
	r := resolve(src)
	switch r.Kind {
	case yaml.MappingNode:
		w.eachPair(r, field, fn)
		return
	case yaml.SequenceNode:
		for _, item := range r.Content {
			if ir := resolve(item); ir.Kind == yaml.MappingNode {
				w.eachPair(ir, field, fn)
			} else {
				w.report(SeverityError, item, join(field, "<<"), "expected a map to merge, got %s", describe(ir))
			}
		}
		return
	}
	w.report(SeverityError, src, join(field, "<<"), "expected a map or a list of maps to merge, got %s", describe(r))
}

// str decodes a string field. Unset (null) yields "", false.
func (w *walker) str(n *yaml.Node, field string) (string, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!str", "!!timestamp":
			// A timestamp-looking plain scalar is still text to Kubernetes.
			w.record(field, n)
			return n.Value, true
		case "!!null":
			w.record(field, n)
			return "", false
		}
	}
	w.typeError(n, field, "a string")
	return "", false
}

// durationText decodes a duration written as text. Numbers are taken as
// written ("reloadInterval: 0" is common); validation parses the text.
func (w *walker) durationText(n *yaml.Node, field string) string {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		w.record(field, n)
		return n.Value
	}
	s, _ := w.str(n, field)
	return s
}

// integer decodes an integer field within [lo, hi].
func (w *walker) integer(n *yaml.Node, field string, lo, hi int64) (int64, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!int":
			w.record(field, n)
			v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
			if err != nil || v < lo || v > hi {
				w.report(SeverityError, n, field, "integer %s is out of range", describe(n)[len("integer "):])
				return 0, false
			}
			return v, true
		case "!!null":
			w.record(field, n)
			return 0, false
		}
	}
	w.typeError(n, field, "an integer")
	return 0, false
}

const (
	minInt32 = -1 << 31
	maxInt32 = 1<<31 - 1
)

func (w *walker) int32Ptr(n *yaml.Node, field string) *int32 {
	if v, ok := w.integer(n, field, minInt32, maxInt32); ok {
		i := int32(v)
		return &i
	}
	return nil
}

func (w *walker) intPtr(n *yaml.Node, field string) *int {
	if v, ok := w.integer(n, field, minInt32, maxInt32); ok {
		i := int(v)
		return &i
	}
	return nil
}

func (w *walker) boolean(n *yaml.Node, field string) (bool, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!bool":
			w.record(field, n)
			v, err := strconv.ParseBool(strings.ToLower(n.Value))
			if err != nil {
				w.typeError(n, field, "a boolean")
				return false, false
			}
			return v, true
		case "!!null":
			w.record(field, n)
			return false, false
		}
	}
	w.typeError(n, field, "a boolean")
	return false, false
}

func (w *walker) boolPtr(n *yaml.Node, field string) *bool {
	if v, ok := w.boolean(n, field); ok {
		return &v
	}
	return nil
}

// intOrString decodes a port given by number or by name.
func (w *walker) intOrString(n *yaml.Node, field string) IntOrString {
	r := resolve(n)
	if r.Kind == yaml.ScalarNode && r.Tag == "!!int" {
		v, _ := w.integer(r, field, minInt32, maxInt32)
		return IntOrString{Int: int32(v)}
	}
	if r.Kind == yaml.ScalarNode && (r.Tag == "!!str" || r.Tag == "!!null") {
		s, ok := w.str(r, field)
		return IntOrString{IsString: ok, Str: s}
	}
	w.typeError(r, field, "an integer or a string")
	return IntOrString{}
}

func (w *walker) timestamp(n *yaml.Node, field string) time.Time {
	r := resolve(n)
	if r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
		w.record(field, r)
		return time.Time{}
	}
	if r.Kind == yaml.ScalarNode && (r.Tag == "!!str" || r.Tag == "!!timestamp") {
		w.record(field, r)
		t, err := time.Parse(time.RFC3339, r.Value)
		if err != nil {
			w.typeError(r, field, "an RFC 3339 timestamp")
		}
		return t
	}
	w.typeError(r, field, "an RFC 3339 timestamp")
	return time.Time{}
}

// stringMap decodes labels and annotations, recording each value's position
// as field.key.
func (w *walker) stringMap(n *yaml.Node, field string) map[string]string {
	m, ok := w.mapping(n, field)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m.Content)/2)
	w.eachPair(m, field, func(key string, _, v *yaml.Node) {
		if s, ok := w.str(v, field+"."+key); ok {
			out[key] = s
		}
	})
	return out
}

// stringList decodes a list of strings, recording field[i].
func (w *walker) stringList(n *yaml.Node, field string) []string {
	items := w.list(n, field)
	if len(items) == 0 {
		return nil
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		if s, ok := w.str(item, index(field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}
