// Package fastyaml parses the YAML that generators and kubectl write into
// the same yaml.Node trees yaml.v3 builds, several times faster, and
// declines everything else so the caller falls back to yaml.v3.
package fastyaml

import (
	"regexp"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"gopkg.in/yaml.v3"
)

// The fast path for the YAML that generators and kubectl write. yaml.v3 was
// more than half of a cold load (tokens, events, one heap object per
// node, a string per scalar); most input is plain block YAML that needs
// none of its generality. The fast parser builds the same yaml.Node trees
// for a deliberately small subset of YAML, and refuses anything else, so
// the caller hands the chunk to yaml.v3 as before. The subset:
//
//   - ASCII only, no tabs, no carriage returns; documents separated by
//     lines that are exactly "---"; comments only on lines of their own.
//   - Block mappings whose keys are plain words ([A-Za-z0-9._/-], not
//     starting with '-', with inner colons as in "f:spec"), block
//     sequences ("- "), including the "indentless" sequences kubectl
//     writes as mapping values.
//   - Single-line plain scalars without comment, flow or quote characters;
//     single-line quoted scalars without escapes; flow collections on one
//     line of plain keys and such scalars ("{kind: Service, name: web}",
//     "[{ip: 10.0.0.1}]", "{}"); literal block scalars ("|", "|-")
//     without blank lines inside.
//
// Everything outside it (anchors, aliases, tags, flow collections over
// several lines, empty values, multi-line plain scalars, errors of any
// kind) makes the parser decline, and yaml.v3 decides, with its own
// messages. Tests compare the trees of both parsers on every input the
// fast path accepts.

// fastMaxDepth bounds the nesting the fast path follows; deeper documents
// go to yaml.v3 (and checkTree's limit).
const fastMaxDepth = 64

// fastMaxKey is the longest key the fast path takes; YAML's simple keys
// are limited to 1024 characters.
const fastMaxKey = 256

// fastLine is one line of the input.
type fastLine struct {
	start, end int // byte offsets of the line, without its newline
	indent     int // columns before the content; may be raised past "- "
	kind       lineKind
}

type lineKind uint8

const (
	lineContent  lineKind = iota
	lineBlank             // spaces only
	lineComment           // "#" after spaces
	lineDocStart          // exactly "---"
)

// Parser parses chunks. One decoding goroutine reuses it from chunk to
// chunk: nodes and Content slices are carved out of slabs that are reused
// once the previous chunk's trees have been walked (nothing decoded keeps
// a node), so a chunk of documents costs a few allocations, not one per
// node.
type Parser struct {
	text  string
	lines []fastLine
	i     int // current line
	depth int

	nodes slab[yaml.Node]
	ptrs  slab[*yaml.Node]
	// stack holds the Content of collections being built, shared by all
	// levels: each collection's items are on top while it is parsed.
	stack []*yaml.Node

	// Strict makes a panic other than a decline propagate (tests);
	// otherwise such a bug in the fast path costs only the fast path.
	Strict bool
}

// slab hands out slices of large, reusable arrays.
type slab[T any] struct {
	all  [][]T
	next int // of all, the first not handed out since reset
	cur  []T
	// used is how many of all were handed out since the last release,
	// over all resets in between.
	used int
}

// slabSize is the number of items allocated at once.
const slabSize = 1024

// take returns n consecutive items (capacity-limited, so appending to
// them cannot reach a neighbour's).
func (s *slab[T]) take(n int) []T {
	if cap(s.cur)-len(s.cur) < n {
		s.cur = nil
		for s.next < len(s.all) && s.cur == nil {
			if c := s.all[s.next]; cap(c) >= n {
				s.cur = c[:0]
			}
			s.next++
		}
		if s.cur == nil {
			s.cur = make([]T, 0, max(slabSize, n))
			s.all = append(s.all, s.cur)
			s.next = len(s.all)
		}
	}
	start := len(s.cur)
	s.cur = s.cur[:start+n]
	return s.cur[start : start+n : start+n]
}

// reset makes every array available again: what was handed out must no
// longer be used.
func (s *slab[T]) reset() {
	s.used = max(s.used, s.next)
	s.next, s.cur = 0, nil
}

// release zeroes what was handed out since the last release (by every
// parse since: a chunk may use fewer arrays than the one before it), so
// that no stale item keeps the text it points into alive, and keeps at
// most keep arrays for the next parse.
func (s *slab[T]) release(keep int) {
	s.reset()
	kept := min(keep, len(s.all))
	for _, c := range s.all[:min(s.used, kept)] {
		clear(c[:cap(c)])
	}
	clear(s.all[kept:])
	s.all, s.used = s.all[:kept], 0
}

// keptSlabs bounds what an idle parser keeps: enough for a file of a few
// hundred objects, the usual size of one change, without holding on to
// what the largest chunk of a cold load needed.
const keptSlabs = 4

// Release ends the use of the last documents parsed: it drops the
// parser's references to their text and keeps its arrays, within bounds,
// for the next Parse. A parser kept between loads is released first.
func (p *Parser) Release() {
	p.nodes.release(keptSlabs)
	p.ptrs.release(keptSlabs)
	clear(p.stack[:cap(p.stack)])
	p.text, p.stack = "", p.stack[:0]
}

// errDecline is the parser's only failure: not in the subset.
type errDecline struct{}

// Parse returns the documents of data, or ok = false when data is not
// entirely in the subset. The documents are valid until the next call;
// the strings in them share data's memory, which must therefore never
// change afterwards. At 10k routes a copy of the text, kept alive by the
// decoded strings beside the file bytes the snapshot keeps anyway, was
// 4 MB of the controller's live heap.
func (p *Parser) Parse(data []byte) (docs []*yaml.Node, ok bool) {
	for _, b := range data {
		if b >= 0x80 || b == '\t' || b == '\r' || (b < 0x20 && b != '\n') || b == 0x7f {
			return nil, false
		}
	}
	defer func() {
		if v := recover(); v != nil {
			if _, decline := v.(errDecline); !decline && p.Strict {
				panic(v)
			}
			docs, ok = nil, false
		}
	}()
	p.nodes.reset()
	p.ptrs.reset()
	clear(p.stack)
	p.text, p.lines, p.i, p.depth, p.stack = unsafe.String(unsafe.SliceData(data), len(data)), p.lines[:0], 0, 0, p.stack[:0]
	p.splitLines()
	return p.stream(), true
}

func decline() { panic(errDecline{}) }

func (p *Parser) splitLines() {
	t := p.text
	for start := 0; start < len(t); {
		end := strings.IndexByte(t[start:], '\n')
		next := start + end + 1
		if end < 0 {
			end, next = len(t)-start, len(t)
		}
		end += start
		l := fastLine{start: start, end: end}
		for l.indent < end-start && t[start+l.indent] == ' ' {
			l.indent++
		}
		switch s := t[start:end]; {
		case l.indent == end-start:
			l.kind = lineBlank
		case s == "---":
			l.kind = lineDocStart
		case t[start+l.indent] == '#':
			l.kind = lineComment
		case strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") || s[0] == '%':
			decline() // document markers with content, ends, directives
		}
		p.lines = append(p.lines, l)
		start = next
	}
}

// skip moves past blank and comment lines.
func (p *Parser) skip() {
	for p.i < len(p.lines) && (p.lines[p.i].kind == lineBlank || p.lines[p.i].kind == lineComment) {
		p.i++
	}
}

// peek returns the next content line, or nil at the end of the document.
func (p *Parser) peek() *fastLine {
	p.skip()
	if p.i == len(p.lines) || p.lines[p.i].kind == lineDocStart {
		return nil
	}
	return &p.lines[p.i]
}

func (p *Parser) node(kind yaml.Kind, tag, value string, line, col int) *yaml.Node {
	n := &p.nodes.take(1)[0]
	*n = yaml.Node{Kind: kind, Tag: tag, Value: value, Line: line, Column: col}
	return n
}

// content moves the items pushed since mark into n's Content.
func (p *Parser) content(n *yaml.Node, mark int) {
	items := p.stack[mark:]
	if len(items) > 0 {
		n.Content = p.ptrs.take(len(items))
		copy(n.Content, items)
	}
	clear(items)
	p.stack = p.stack[:mark]
}

func (p *Parser) stream() []*yaml.Node {
	var docs []*yaml.Node
	for {
		p.skip()
		if p.i == len(p.lines) {
			return docs
		}
		l := &p.lines[p.i]
		line := p.i + 1
		if l.kind == lineDocStart {
			p.i++
			if p.peek() == nil {
				// An explicit document with nothing in it holds a null,
				// placed where the next token (document or stream end) is.
				doc := p.node(yaml.DocumentNode, "", "", line, 1)
				mark := len(p.stack)
				p.stack = append(p.stack, p.node(yaml.ScalarNode, "!!null", "", p.i+1, 1))
				p.content(doc, mark)
				docs = append(docs, doc)
				continue
			}
			l = &p.lines[p.i]
		}
		if l.indent != 0 {
			decline()
		}
		doc := p.node(yaml.DocumentNode, "", "", p.i+1, 1)
		mark := len(p.stack)
		p.stack = append(p.stack, p.mapping(0))
		p.content(doc, mark)
		docs = append(docs, doc)
		if p.peek() != nil {
			decline() // content after the root mapping ended
		}
	}
}

func (p *Parser) enter() {
	if p.depth++; p.depth > fastMaxDepth {
		decline()
	}
}

// mapping parses the block mapping whose keys are at column indent.
func (p *Parser) mapping(indent int) *yaml.Node {
	p.enter()
	defer func() { p.depth-- }()
	l := p.peek()
	m := p.node(yaml.MappingNode, "!!map", "", p.i+1, indent+1)
	mark := len(p.stack)
	for ; l != nil && l.indent >= indent; l = p.peek() {
		if l.indent > indent {
			decline()
		}
		line := p.i + 1
		s := p.text[l.start+indent : l.end]
		n := keyLen(s)
		if n == 0 || n > fastMaxKey || n == len(s) || s[n] != ':' || (n+1 < len(s) && s[n+1] != ' ') {
			decline() // not "key:" or "key: …" (a sequence entry, say)
		}
		key := s[:n]
		p.stack = append(p.stack, p.node(yaml.ScalarNode, plainTag(key), key, line, indent+1))
		rest, col := afterSpaces(s, n+1, indent)
		if rest != "" {
			p.stack = append(p.stack, p.inline(rest, line, col, indent))
			continue
		}
		p.i++
		next := p.peek()
		switch {
		case next == nil || next.indent < indent:
			decline() // an empty value
		case next.indent == indent:
			if !p.isEntry(next) {
				decline() // an empty value
			}
			p.stack = append(p.stack, p.sequence(indent)) // kubectl's indentless sequence
		case p.isEntry(next):
			p.stack = append(p.stack, p.sequence(next.indent))
		default:
			p.stack = append(p.stack, p.mapping(next.indent))
		}
	}
	p.content(m, mark)
	return m
}

// isEntry reports whether l starts a sequence entry at its indent.
func (p *Parser) isEntry(l *fastLine) bool {
	s := p.text[l.start+l.indent : l.end]
	return s[0] == '-' && (len(s) == 1 || s[1] == ' ')
}

// sequence parses the block sequence whose "-" are at column indent.
func (p *Parser) sequence(indent int) *yaml.Node {
	p.enter()
	defer func() { p.depth-- }()
	seq := p.node(yaml.SequenceNode, "!!seq", "", p.i+1, indent+1)
	mark := len(p.stack)
	for l := p.peek(); l != nil && l.indent >= indent; l = p.peek() {
		if l.indent > indent {
			decline()
		}
		if !p.isEntry(l) {
			break // a key of the mapping an indentless sequence is in
		}
		line := p.i + 1
		s := p.text[l.start:l.end]
		rest, col := afterSpaces(s, indent+1, 0)
		if rest == "" || (rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ')) {
			decline() // an empty entry, or a sequence in a sequence
		}
		if n := keyLen(rest); n > 0 && n < len(rest) && rest[n] == ':' {
			// "- key: …" starts a mapping at the key's column: from
			// here on the line reads as if "- " were indentation.
			l.indent = col - 1
			p.stack = append(p.stack, p.mapping(col-1))
			continue
		}
		p.stack = append(p.stack, p.inline(rest, line, col, indent))
	}
	p.content(seq, mark)
	return seq
}

// keyLen returns the length of the plain word key at the start of s. A
// colon belongs to the key when a word character follows it, as in the
// "f:metadata" keys of managedFields.
func keyLen(s string) int {
	if s == "" || !keyChar(s[0]) || s[0] == '-' {
		return 0
	}
	n := 1
	for n < len(s) && (keyChar(s[n]) || (s[n] == ':' && n+1 < len(s) && keyChar(s[n+1]))) {
		n++
	}
	return n
}

func keyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-'
}

// afterSpaces returns s from i on, past spaces, and its 1-based column
// (s starts at column base+1).
func afterSpaces(s string, i, base int) (string, int) {
	i = skipSpaces(s, i)
	return s[i:], base + i + 1
}

// inline parses a value written on the line of its key or "-": rest is the
// text from column col to the end of the line; the enclosing collection is
// at column indent. It consumes the line, and a block scalar's lines.
func (p *Parser) inline(rest string, line, col, indent int) *yaml.Node {
	p.i++
	value := strings.TrimRight(rest, " ")
	switch c := value[0]; {
	case c == '"' || c == '\'':
		text, next := quoted(value, 0)
		if next != len(value) {
			decline() // text after the closing quote
		}
		return p.node(yaml.ScalarNode, "!!str", text, line, col)
	case c == '{' || c == '[':
		n, end := p.flow(value, 0, line, col)
		if end != len(value) {
			decline() // text after the collection
		}
		return n
	case value == "|" || value == "|-":
		return p.literal(value == "|", line, col, indent)
	case !plainScalar(value):
		decline()
	}
	return p.node(yaml.ScalarNode, plainTag(value), value, line, col)
}

// flow parses the flow collection starting at s[i] ("{" or "["), s
// starting at column col of line, and returns it with the index past its
// end. The subset: on one line; keys are plain words; values are flow
// collections, quoted scalars without escapes, or plain scalars without
// ':' or flow indicators; no empty entries, trailing commas or comments.
// That is how people write "to: {kind: Service, name: web}" and
// "addresses: [{ip: 10.0.0.1}]".
func (p *Parser) flow(s string, i, line, col int) (*yaml.Node, int) {
	p.enter()
	defer func() { p.depth-- }()
	open := s[i]
	n := p.node(yaml.MappingNode, "!!map", "", line, col+i)
	closing := byte('}')
	if open == '[' {
		n.Kind, n.Tag, closing = yaml.SequenceNode, "!!seq", ']'
	}
	n.Style = yaml.FlowStyle
	mark := len(p.stack)
	i = skipSpaces(s, i+1)
	if i < len(s) && s[i] == closing {
		return n, i + 1
	}
	for {
		if open == '{' {
			k := keyLen(s[i:])
			key := s[i : i+k]
			if k == 0 || strings.IndexByte(key, ':') >= 0 || i+k+1 >= len(s) || s[i+k] != ':' || s[i+k+1] != ' ' {
				decline() // not "key: value"
			}
			p.stack = append(p.stack, p.node(yaml.ScalarNode, plainTag(key), key, line, col+i))
			i = skipSpaces(s, i+k+1)
		}
		var v *yaml.Node
		v, i = p.flowItem(s, i, line, col)
		p.stack = append(p.stack, v)
		i = skipSpaces(s, i)
		switch {
		case i < len(s) && s[i] == closing:
			p.content(n, mark)
			return n, i + 1
		case i < len(s) && s[i] == ',':
			i = skipSpaces(s, i+1)
			if i == len(s) || s[i] == closing || s[i] == ',' {
				decline() // a trailing comma or an empty entry
			}
		default:
			decline() // the line ends inside the collection, or junk
		}
	}
}

// flowItem parses the value at s[i] inside a flow collection.
func (p *Parser) flowItem(s string, i, line, col int) (*yaml.Node, int) {
	if i == len(s) {
		decline()
	}
	switch c := s[i]; c {
	case '{', '[':
		return p.flow(s, i, line, col)
	case '"', '\'':
		text, next := quoted(s, i)
		return p.node(yaml.ScalarNode, "!!str", text, line, col+i), next
	}
	j := i
	for j < len(s) && strings.IndexByte(",[]{}:#\"'`", s[j]) < 0 {
		j++
	}
	value := strings.TrimRight(s[i:j], " ")
	if value == "" || !plainScalar(value) {
		decline()
	}
	return p.node(yaml.ScalarNode, plainTag(value), value, line, col+i), j
}

// quoted reads the quoted scalar starting at s[i] (its quote character)
// and returns its text and the index past the closing quote. Escapes are
// outside the subset: a backslash, or a doubled quote, declines.
func quoted(s string, i int) (string, int) {
	q := s[i]
	end := strings.IndexByte(s[i+1:], q)
	if end < 0 || strings.IndexByte(s[i+1:i+1+end], '\\') >= 0 {
		decline()
	}
	next := i + 1 + end + 1
	if next < len(s) && s[next] == q {
		decline() // a doubled quote, which is an escape
	}
	return s[i+1 : i+1+end], next
}

// skipSpaces returns the index of the first non-space at or after i.
func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// plainScalar reports whether s is a one-line plain scalar of the subset.
func plainScalar(s string) bool {
	c := s[0]
	start := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("/._+~$=(^;", c) >= 0 || (c == '-' && len(s) > 1 && s[1] != ' ')
	if !start {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '#', ',', '[', ']', '{', '}', '"', '\'', '`':
			return false
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				return false
			}
		}
	}
	return true
}

// literal parses the lines of a literal block scalar ("|" keeps one final
// newline, "|-" none) whose collection is at column indent.
func (p *Parser) literal(clip bool, line, col, indent int) *yaml.Node {
	first := p.i
	if first == len(p.lines) || p.lines[first].kind == lineBlank || p.lines[first].indent <= indent {
		decline() // empty, or starting with blank lines
	}
	in := p.lines[first].indent
	var b strings.Builder
	for ; p.i < len(p.lines); p.i++ {
		l := p.lines[p.i]
		if l.kind == lineBlank || l.indent < in {
			break
		}
		if p.i > first {
			b.WriteByte('\n')
		}
		b.WriteString(p.text[l.start+in : l.end])
	}
	if p.i == len(p.lines) && !strings.HasSuffix(p.text, "\n") {
		decline() // no final line break to clip to
	}
	// Blank lines may end the scalar, not sit inside it; nor may lines
	// of spaces as deep as its content, which would be content.
	for j := p.i; j < len(p.lines) && p.lines[j].kind == lineBlank; j++ {
		if p.lines[j].indent >= in ||
			(j+1 < len(p.lines) && p.lines[j+1].kind != lineBlank && p.lines[j+1].indent >= in) {
			decline()
		}
	}
	if clip {
		b.WriteByte('\n')
	}
	return p.node(yaml.ScalarNode, "!!str", b.String(), line, col)
}

// plainTag resolves the tag of an untagged plain scalar exactly as
// yaml.v3 (v3.0.1, resolve.go) does.
func plainTag(in string) string {
	switch in {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case "", "~", "null", "Null", "NULL":
		return "!!null"
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return "!!float"
	case "<<":
		return "!!merge"
	}
	c := in[0]
	switch {
	case c == '.':
		if _, err := strconv.ParseFloat(in, 64); err == nil {
			return "!!float"
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if yamlTimestamp(in) {
			return "!!timestamp"
		}
		plain := strings.ReplaceAll(in, "_", "")
		// Failed parses allocate their errors: try only what may parse.
		if onlyBytes(plain, "0123456789abcdefABCDEFxXoO+-") {
			if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
				return "!!int"
			}
			if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
				return "!!int"
			}
		}
		if onlyBytes(plain, "0123456789+-.eE") && yamlStyleFloat.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return "!!float"
			}
		}
		if !strings.Contains(plain, "0b") && !strings.Contains(plain, "0o") {
			break
		}
		for _, pre := range []struct {
			prefix string
			base   int
		}{{"0b", 2}, {"0o", 8}} {
			if digits, ok := strings.CutPrefix(plain, pre.prefix); ok {
				if _, err := strconv.ParseInt(digits, pre.base, 64); err == nil {
					return "!!int"
				}
				if _, err := strconv.ParseUint(digits, pre.base, 64); err == nil {
					return "!!int"
				}
			} else if digits, ok := strings.CutPrefix(plain, "-"+pre.prefix); ok {
				if _, err := strconv.ParseInt("-"+digits, pre.base, 64); err == nil {
					return "!!int"
				}
			}
		}
	}
	return "!!str"
}

// onlyBytes reports whether every byte of s is in set.
func onlyBytes(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// yamlTimestamp is yaml.v3's parseTimestamp, answering only whether s is one.
func yamlTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, format := range []string{
		"2006-1-2T15:4:5.999999999Z07:00",
		"2006-1-2t15:4:5.999999999Z07:00",
		"2006-1-2 15:4:5.999999999",
		"2006-1-2",
	} {
		if _, err := time.Parse(format, s); err == nil {
			return true
		}
	}
	return false
}
