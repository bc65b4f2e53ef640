package model

import (
	"fmt"
	"slices"
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

	// field is the path of the field being decoded. eachPair and eachItem
	// extend it around the calls they make, so each decoding function
	// names only its own keys. It is bytes, not a string, so walking costs
	// no allocation: a string is made only for a diagnostic or, once per
	// distinct path, for a recorded position (names).
	field []byte
	// names interns recorded field paths: a cold load records the same
	// few dozen paths for thousands of objects. A position names its path
	// by index into table, which the chunk's objects share.
	names map[string]uint32
	table *fieldNames

	// Per object being decoded.
	unknown Severity          // of unknown fields: error for RouterConfig, else warning
	homes   map[string]string // where the kind's fields belong (misplaced); nil for none
	// slips are the misplaced fields of the object: its errors, not the
	// file's (Route.slips).
	slips  Diagnostics
	fields []fieldPos // positions recorded so far, reused across objects

	// broken are the objects that decoded with errors, which object took
	// out of objs, and explained the number of errors they account for.
	broken    []objectID
	explained int
}

// objectID names one object of a kind whose last good version can stand
// in for a broken one within a file: Route, Endpoints or EndpointSlice.
type objectID struct {
	kind            string
	namespace, name string
}

func routeID(r *Route) objectID {
	return objectID{"Route", namespaceOrDefault(r.Meta.Namespace), r.Meta.Name}
}

func endpointsID(e *Endpoints) objectID {
	return objectID{"Endpoints", namespaceOrDefault(e.Meta.Namespace), e.Meta.Name}
}

func sliceID(s *EndpointSlice) objectID {
	return objectID{"EndpointSlice", namespaceOrDefault(s.Meta.Namespace), s.Meta.Name}
}

// objectCounts are how many objects of each kind Objects holds.
type objectCounts struct{ routes, endpoints, slices, others int }

func (objs *Objects) counts() objectCounts {
	return objectCounts{len(objs.Routes), len(objs.Endpoints), len(objs.EndpointSlices), len(objs.RouterConfigs) + len(objs.Secrets)}
}

// dropNew takes out the one object added since before, and returns its
// identity, when that is a single Route, Endpoints or EndpointSlice with a
// name. Anything else (a List, a kind that keeps its file's last good
// content whole, an object without a name) is left as it is.
func (objs *Objects) dropNew(before objectCounts) (objectID, bool) {
	now := objs.counts()
	var id objectID
	switch {
	case now.others != before.others:
		return id, false
	case now == objectCounts{before.routes + 1, before.endpoints, before.slices, before.others}:
		id = routeID(objs.Routes[before.routes])
	case now == objectCounts{before.routes, before.endpoints + 1, before.slices, before.others}:
		id = endpointsID(objs.Endpoints[before.endpoints])
	case now == objectCounts{before.routes, before.endpoints, before.slices + 1, before.others}:
		id = sliceID(&objs.EndpointSlices[before.slices])
	default:
		return id, false
	}
	if id.name == "" {
		return objectID{}, false
	}
	objs.Routes = objs.Routes[:before.routes]
	objs.Endpoints = objs.Endpoints[:before.endpoints]
	objs.EndpointSlices = objs.EndpointSlices[:before.slices]
	return id, true
}

// fieldPos is one recorded field position. The path is the object's; the
// name is an index into its fieldNames. Objects keep their positions for
// life, about 35 for a route: at 24 bytes, with the name a string, they
// were 8 MB of the controller's heap at 10k routes.
type fieldPos struct {
	name      uint32
	line, col int32
}

// fieldNames is the table of field paths the positions of one chunk's
// objects index. The walker appends to it; after decoding it is read only.
type fieldNames struct{ list []string }

// enter appends key to the current field path and returns the length to
// leave back to.
func (w *walker) enter(key string) int {
	n := len(w.field)
	if n > 0 {
		w.field = append(w.field, '.')
	}
	w.field = append(w.field, key...)
	return n
}

// enterIndex appends the list index i to the current field path.
func (w *walker) enterIndex(i int) int {
	n := len(w.field)
	w.field = append(w.field, '[')
	w.field = strconv.AppendInt(w.field, int64(i), 10)
	w.field = append(w.field, ']')
	return n
}

// leave returns to the field path enter or enterIndex was called at.
func (w *walker) leave(n int) {
	w.field = w.field[:n]
}

func (w *walker) pos(n *yaml.Node) Position {
	return Position{Path: w.path, Line: n.Line + w.lineOff, Col: n.Column}
}

// diag makes a diagnostic about the current field.
func (w *walker) diag(sev Severity, n *yaml.Node, msg string) Diagnostic {
	return Diagnostic{Pos: w.pos(n), Severity: sev, Field: string(w.field), Message: msg}
}

func (w *walker) report(sev Severity, n *yaml.Node, format string, args ...any) {
	w.diags = append(w.diags, w.diag(sev, n, fmt.Sprintf(format, args...)))
}

// reportKey reports about key, a field under the current one.
func (w *walker) reportKey(key string, sev Severity, n *yaml.Node, format string, args ...any) {
	at := w.enter(key)
	w.report(sev, n, format, args...)
	w.leave(at)
}

// record notes where the current field was written, for Source.At.
func (w *walker) record(n *yaml.Node) {
	w.fields = append(w.fields, fieldPos{name: w.name(), line: int32(n.Line + w.lineOff), col: int32(n.Column)})
}

// name returns the index of the current field path in w.table.
func (w *walker) name() uint32 {
	// Objects of a file mostly share a shape, so the name recorded at this
	// place by an earlier object, still in w.fields' array, is likely
	// the one: comparing is cheaper than hashing the path.
	if i := len(w.fields); i < cap(w.fields) {
		if prev := w.fields[:i+1][i].name; w.table.list[prev] == string(w.field) {
			return prev
		}
	}
	// Neither the lookup nor the comparison above allocates.
	name, ok := w.names[string(w.field)]
	if !ok {
		if w.names == nil {
			w.names = make(map[string]uint32)
		}
		name = uint32(len(w.table.list))
		s := string(w.field)
		w.table.list = append(w.table.list, s)
		w.names[s] = name
	}
	return name
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
			src.Fields[w.table.list[f.name]] = Position{Path: w.path, Line: int(f.line), Col: int(f.col)}
		}
	case k > 0:
		// Exactly sized, one allocation an object: the object's
		// positions then live and die with it. Slabs shared by many
		// objects lived as long as any of them, and after changes held
		// mostly the positions of versions long gone.
		src.fields, src.names = slices.Clone(w.fields), w.table
	}
	w.fields = w.fields[:0]
	return src
}

func (w *walker) typeError(n *yaml.Node, want string) {
	w.report(SeverityError, n, "expected %s, got %s", want, describe(n))
}

// unknownField reports the key k of the current field.
func (w *walker) unknownField(k *yaml.Node) {
	if home, ok := w.misplaced(k.Value); ok {
		w.slips = append(w.slips, w.diag(SeverityError, k, fmt.Sprintf("unknown field here: %s belongs at %s; check its indentation", k.Value, home)))
		return
	}
	if like, ok := w.nearField(k.Value); ok {
		// A warning still (DESIGN §3), but one that says what was
		// meant: a "tsl" block served an edge route in clear.
		w.report(w.unknown, k, "unknown field: did you mean %s?", like)
		return
	}
	w.report(w.unknown, k, "unknown field")
}

// nearField returns the field of the kind's at the current level that key
// most likely misspells: one at most two edits away (w.homes).
func (w *walker) nearField(key string) (string, bool) {
	at := string(w.field)
	if i := strings.LastIndexByte(at, '.'); i >= 0 {
		at = at[:i]
	} else {
		at = ""
	}
	best := ""
	for field, home := range w.homes {
		if home == at && withinTwoEdits(strings.ToLower(key), strings.ToLower(field)) && (best == "" || field < best) {
			best = field // the first by name when several are near: the same every time
		}
	}
	return best, best != ""
}

// misplaced reports where key, unknown at the current field, belongs when
// it is a field of the kind's elsewhere (w.homes). Unknown fields of a
// Route are warnings (DESIGN §3: manifests in the wild carry stray
// fields), but a field of the Route's own one level off is no stray: it
// is an indentation slip, and ignoring it changes what the route does (a
// tls block under spec.to served the route in clear, alternateBackends
// under spec.to sent all its traffic to one service). As an error of the
// route's (validateRoute), the route keeps its last good version, and
// only it: as an error of the file's, the file failed, and at the first
// start of a haroute with this rule a file that had served with such a
// slip had no last good content left, taking every route in it down.
func (w *walker) misplaced(key string) (string, bool) {
	home, ok := w.homes[key]
	if !ok {
		return "", false
	}
	at := string(w.field)
	if i := strings.LastIndexByte(at, '.'); i >= 0 {
		at = at[:i]
	} else {
		at = ""
	}
	want := key
	if home != "" {
		want = home + "." + key
	}
	return want, at != home
}

// routeFieldHomes are the fields of a Route whose name no other level of
// it uses, by the path of the field they belong under.
var routeFieldHomes = map[string]string{
	"metadata": "", "spec": "",
	"annotations": "metadata", "labels": "metadata", "namespace": "metadata",
	"host": "spec", "path": "spec", "to": "spec", "alternateBackends": "spec", "port": "spec",
	"tls": "spec", "wildcardPolicy": "spec", "subdomain": "spec", "httpHeaders": "spec",
	"targetPort":  "spec.port",
	"termination": "spec.tls", "certificate": "spec.tls", "key": "spec.tls", "caCertificate": "spec.tls",
	"destinationCACertificate": "spec.tls", "insecureEdgeTerminationPolicy": "spec.tls", "externalCertificate": "spec.tls",
}

// unsupported reports a field that exists in the Kubernetes/OpenShift API
// but that haroute does not implement: ignoring it quietly would surprise.
func (w *walker) unsupported(k *yaml.Node) {
	w.report(w.unknown, k, "not supported by haroute, ignored")
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

func index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// mapping returns n as a mapping; null (an unset field) is not an error.
func (w *walker) mapping(n *yaml.Node) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind == yaml.MappingNode {
		return n, true
	}
	if !isNull(n) {
		w.typeError(n, "a map")
	}
	return nil, false
}

// list returns the items of n; null is an empty list.
func (w *walker) list(n *yaml.Node) []*yaml.Node {
	n = resolve(n)
	if n.Kind == yaml.SequenceNode {
		return n.Content
	}
	if !isNull(n) {
		w.typeError(n, "a list")
	}
	return nil
}

// eachItem calls fn for every item, with the item's index in the field
// path.
func (w *walker) eachItem(items []*yaml.Node, fn func(item *yaml.Node)) {
	for i, item := range items {
		at := w.enterIndex(i)
		fn(item)
		w.leave(at)
	}
}

// bigMapping is the key count above which duplicate keys are found with a
// map rather than by scanning: quadratic scans of hostile input are slow.
const bigMapping = 32

// eachPair calls fn for every key of mapping m, with the key in the field
// path, reporting duplicate and non-scalar keys. Merge keys ("<<: *base")
// are expanded, keys written in m itself taking precedence, then earlier
// merged maps over later ones.
func (w *walker) eachPair(m *yaml.Node, fn func(key string, k, v *yaml.Node)) {
	w.pairs(m, nil, fn)
}

// mergeScope holds the keys given by a map that has merge keys, and by
// the maps it is itself merged into: a merged key is delivered only where
// none of them has it. It is a parameter rather than a closure around fn
// so that fn, called for every pair of every object, does not escape (a
// closure per eachPair call was nearly half of a cold load's allocations).
type mergeScope struct {
	delivered map[string]bool
	outer     *mergeScope
}

// pairs is eachPair for a map merged into the maps of scope.
func (w *walker) pairs(m *yaml.Node, scope *mergeScope, fn func(key string, k, v *yaml.Node)) {
	var seen map[string]*yaml.Node
	if len(m.Content) > 2*bigMapping {
		seen = make(map[string]*yaml.Node, len(m.Content)/2)
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kr := resolve(k)
		if kr.Kind != yaml.ScalarNode {
			w.report(SeverityError, k, "expected a string key, got %s", describe(kr))
			continue
		}
		if kr.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if first := w.firstKey(m, i, kr.Value, seen); first != nil {
			w.reportKey(kr.Value, SeverityError, k, "duplicate key, first written at line %d", first.Line+w.lineOff)
			continue
		}
		if scope.takes(kr.Value) {
			at := w.enter(kr.Value)
			fn(kr.Value, k, v)
			w.leave(at)
		}
	}
	if len(merges) == 0 {
		return
	}
	inner := &mergeScope{delivered: make(map[string]bool), outer: scope}
	for i := 0; i+1 < len(m.Content); i += 2 {
		inner.delivered[resolve(m.Content[i]).Value] = true
	}
	for _, src := range merges {
		w.eachMerged(src, inner, fn)
	}
}

// takes tells whether key, from a map merged into those of s, is to be
// delivered, noting it as given from the innermost map out to the first
// that already has it.
func (s *mergeScope) takes(key string) bool {
	for ; s != nil; s = s.outer {
		if s.delivered[key] {
			return false
		}
		s.delivered[key] = true
	}
	return true
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
func (w *walker) eachMerged(src *yaml.Node, scope *mergeScope, fn func(key string, k, v *yaml.Node)) {
	r := resolve(src)
	switch r.Kind {
	case yaml.MappingNode:
		w.pairs(r, scope, fn)
		return
	case yaml.SequenceNode:
		for _, item := range r.Content {
			if ir := resolve(item); ir.Kind == yaml.MappingNode {
				w.pairs(ir, scope, fn)
			} else {
				w.reportKey("<<", SeverityError, item, "expected a map to merge, got %s", describe(ir))
			}
		}
		return
	}
	w.reportKey("<<", SeverityError, src, "expected a map or a list of maps to merge, got %s", describe(r))
}

// str decodes a string field. Unset (null) yields "", false.
//
// The string is a copy: the parser's values are pieces of the file's
// text, and an object kept beyond its file's version (a host kept as a
// key, a route's output cached while the route reads the same, a
// binding of the pool) kept the whole text alive with it, a version per
// object. Under churn at 1500 routes the heap grew about 50 kB a change
// (audit T21).
func (w *walker) str(n *yaml.Node) (string, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!str", "!!timestamp":
			// A timestamp-looking plain scalar is still text to Kubernetes.
			w.record(n)
			return strings.Clone(n.Value), true
		case "!!null":
			w.record(n)
			return "", false
		}
	}
	w.typeError(n, "a string")
	return "", false
}

// durationText decodes a duration written as text. Numbers are taken as
// written ("reloadInterval: 0" is common); validation parses the text.
func (w *walker) durationText(n *yaml.Node) string {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
		w.record(n)
		return strings.Clone(n.Value) // see str
	}
	s, _ := w.str(n)
	return s
}

// integer decodes an integer field within [lo, hi].
func (w *walker) integer(n *yaml.Node, lo, hi int64) (int64, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!int":
			w.record(n)
			v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
			if err != nil || v < lo || v > hi {
				w.report(SeverityError, n, "integer %s is out of range", describe(n)[len("integer "):])
				return 0, false
			}
			if dec := strconv.FormatInt(v, 10); n.Value != dec {
				// YAML reads 0443 as octal, as Kubernetes does: a port
				// written so is 291, with no hint of it otherwise.
				w.report(SeverityWarning, n, "integer %s is read as %s; write it in decimal", n.Value, dec)
			}
			return v, true
		case "!!null":
			w.record(n)
			return 0, false
		}
	}
	w.typeError(n, "an integer")
	return 0, false
}

const (
	minInt32 = -1 << 31
	maxInt32 = 1<<31 - 1
)

func (w *walker) int32Ptr(n *yaml.Node) *int32 {
	if v, ok := w.integer(n, minInt32, maxInt32); ok {
		i := int32(v)
		return &i
	}
	return nil
}

func (w *walker) intPtr(n *yaml.Node) *int {
	if v, ok := w.integer(n, minInt32, maxInt32); ok {
		i := int(v)
		return &i
	}
	return nil
}

func (w *walker) boolean(n *yaml.Node) (bool, bool) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode {
		switch n.Tag {
		case "!!bool":
			w.record(n)
			v, err := strconv.ParseBool(strings.ToLower(n.Value))
			if err != nil {
				w.typeError(n, "a boolean")
				return false, false
			}
			return v, true
		case "!!null":
			w.record(n)
			return false, false
		}
	}
	w.typeError(n, "a boolean")
	return false, false
}

func (w *walker) boolPtr(n *yaml.Node) *bool {
	if v, ok := w.boolean(n); ok {
		return &v
	}
	return nil
}

// intOrString decodes a port given by number or by name.
func (w *walker) intOrString(n *yaml.Node) IntOrString {
	r := resolve(n)
	if r.Kind == yaml.ScalarNode && r.Tag == "!!int" {
		v, _ := w.integer(r, minInt32, maxInt32)
		return IntOrString{Int: int32(v)}
	}
	if r.Kind == yaml.ScalarNode && (r.Tag == "!!str" || r.Tag == "!!null") {
		s, ok := w.str(r)
		return IntOrString{IsString: ok, Str: s}
	}
	w.typeError(r, "an integer or a string")
	return IntOrString{}
}

func (w *walker) timestamp(n *yaml.Node) time.Time {
	r := resolve(n)
	if r.Kind == yaml.ScalarNode && r.Tag == "!!null" {
		w.record(r)
		return time.Time{}
	}
	if r.Kind == yaml.ScalarNode && (r.Tag == "!!str" || r.Tag == "!!timestamp") {
		w.record(r)
		t, err := time.Parse(time.RFC3339, r.Value)
		if err != nil {
			w.typeError(r, "an RFC 3339 timestamp")
		}
		return t
	}
	w.typeError(r, "an RFC 3339 timestamp")
	return time.Time{}
}

// eachString calls fn for every key of the map n whose value is a string,
// recording each value's position as field.key.
func (w *walker) eachString(n *yaml.Node, fn func(key string, k *yaml.Node, s string)) {
	m, ok := w.mapping(n)
	if !ok {
		return
	}
	w.eachPair(m, func(key string, k, v *yaml.Node) {
		if s, ok := w.str(v); ok {
			fn(key, k, s)
		}
	})
}

// stringMap decodes labels and annotations. A null value is "", as
// Kubernetes decodes it: left out, an `ip_allowlist: ~` vanished without
// the warning an empty one gets.
func (w *walker) stringMap(n *yaml.Node) map[string]string {
	m, ok := w.mapping(n)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m.Content)/2)
	w.eachPair(m, func(key string, _, v *yaml.Node) {
		if s, ok := w.str(v); ok || resolve(v).Tag == "!!null" {
			out[strings.Clone(key)] = s // see str
		}
	})
	return out
}

// stringList decodes a list of strings, recording field[i].
func (w *walker) stringList(n *yaml.Node) []string {
	items := w.list(n)
	if len(items) == 0 {
		return nil
	}
	out := make([]string, 0, len(items))
	w.eachItem(items, func(item *yaml.Node) {
		if s, ok := w.str(item); ok {
			out = append(out, s)
		}
	})
	return out
}
