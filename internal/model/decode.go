package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/haroute/haroute/internal/model/fastyaml"
	"github.com/haroute/haroute/internal/parallel"
)

// Decoding happens in three steps per file:
//
//  1. checkText rejects what is not YAML text at all (too big, NUL bytes,
//     invalid UTF-8, control characters), with the position of the first
//     offending byte.
//  2. splitDocuments cuts the file at document markers into chunks, so the
//     documents of one big file parse in parallel: yaml.v3 is the slow part
//     of a cold load, and parsing is independent per document.
//  3. Each chunk is parsed into yaml.Node trees (which carry line:col for
//     everything) — by the fast path for plain block YAML (package fastyaml),
//     else by yaml.v3 — each tree is bounded (depth, alias expansion), then
//     walked against the schema of its kind (decode_kinds.go).

// fileResult is what one file contributes: its objects in document order
// and its diagnostics. failed means the file must not replace the objects
// its path held in the last good load.
type fileResult struct {
	objs   Objects
	diags  Diagnostics
	failed bool
	// broken are the objects that decoded with errors (taken out of
	// objs); partial is set when they explain every error of the file,
	// so that its other objects can apply (Loader.decodeWithMemos).
	broken  []objectID
	partial bool
}

// chunk is a run of whole documents of one file.
type chunk struct {
	file    int // index into the files being decoded
	data    []byte
	lineOff int // lines of the file before the chunk
}

// chunkTarget is the size above which documents are cut into a new chunk.
// Small enough that a few-MiB file feeds every core, large enough that the
// parser's per-chunk setup stays negligible.
const chunkTarget = 256 << 10

// decodeFile decodes one file. It is decodeFiles for a single file, kept for
// tests and callers that have one file at hand.
func decodeFile(path string, data []byte, lim Limits) fileResult {
	return decodeFiles([]SourceFile{{Path: path, Data: data}}, lim)[0]
}

// decodeFiles decodes files, parsing their chunks on all cores. Results are
// indexed like files and independent of scheduling.
func decodeFiles(files []SourceFile, lim Limits) []fileResult {
	results := make([]fileResult, len(files))
	textOK := make([]bool, len(files))
	parallel.For(len(files), 16, func(i int) {
		var d Diagnostic
		if d, textOK[i] = checkText(files[i].Path, files[i].Data, lim); !textOK[i] {
			results[i] = fileResult{diags: Diagnostics{d}, failed: true}
		}
	})
	var chunks []chunk
	for i, f := range files {
		if textOK[i] {
			chunks = append(chunks, splitDocuments(i, f.Path, f.Data)...)
		}
	}

	out := make([]chunkResult, len(chunks))
	decode := func(j int, sc *scratch) {
		c := chunks[j]
		out[j] = decodeChunk(files[c.file].Path, c, lim, sc)
	}
	var mu sync.Mutex
	var taken []*scratch
	parallel.ForWith(len(chunks), func() *scratch {
		sc := scratches.Get().(*scratch)
		mu.Lock()
		taken = append(taken, sc)
		mu.Unlock()
		return sc
	}, decode)
	for _, sc := range taken {
		sc.fast.Release()
		scratches.Put(sc)
	}

	// Chunks are in file order, then document order.
	explained := make([]int, len(files))
	for j, c := range chunks {
		r := &results[c.file]
		r.objs.append(out[j].objs)
		r.diags = append(r.diags, out[j].diags...)
		r.broken = append(r.broken, out[j].broken...)
		explained[c.file] += out[j].explained
	}
	for i := range results {
		r := &results[i]
		if errs := r.diags.errorCount(); errs > 0 {
			r.failed = true
			r.partial = textOK[i] && len(r.broken) > 0 && errs == explained[i]
		}
	}
	return results
}

// append adds o's objects after those of objs. Where objs has no room at
// all it takes o's slices as they are (capacity-limited, so a later append
// copies rather than write into o): most files are one chunk, merged
// without a copy.
func (objs *Objects) append(o Objects) {
	objs.Routes = appendShared(objs.Routes, o.Routes)
	objs.Endpoints = appendShared(objs.Endpoints, o.Endpoints)
	objs.EndpointSlices = appendShared(objs.EndpointSlices, o.EndpointSlices)
	objs.RouterConfigs = appendShared(objs.RouterConfigs, o.RouterConfigs)
	objs.Secrets = appendShared(objs.Secrets, o.Secrets)
}

func appendShared[T any](dst, src []T) []T {
	if len(src) == 0 {
		return dst
	}
	if cap(dst) == 0 {
		return src[:len(src):len(src)]
	}
	return append(dst, src...)
}

// checkText rejects input that is too big or is not text YAML can hold. The
// YAML parser would reject most of it too, but without a position, and a
// file that is binary garbage deserves a message saying so.
func checkText(path string, data []byte, lim Limits) (Diagnostic, bool) {
	if len(data) > lim.MaxFileSize {
		return Diagnostic{
			Pos:      Position{Path: path, Line: 1, Col: 1},
			Severity: SeverityError,
			Message:  fmt.Sprintf("file is %d bytes, more than the limit of %d", len(data), lim.MaxFileSize),
		}, false
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark is fine
	line, lineStart := 1, 0
	for i := 0; i < len(data); {
		b := data[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '\n':
				line, lineStart = line+1, i+1
			case b == 0:
				return textError(path, data, line, lineStart, i, "NUL byte: not a text file"), false
			case (b < 0x20 && b != '\t' && b != '\r') || b == 0x7f:
				return textError(path, data, line, lineStart, i, fmt.Sprintf("control character %U is not allowed", rune(b))), false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return textError(path, data, line, lineStart, i, "invalid UTF-8: not a text file"), false
		case r >= 0x80 && r <= 0x9f && r != 0x85, r == 0xfffe, r == 0xffff:
			return textError(path, data, line, lineStart, i, fmt.Sprintf("control character %U is not allowed", r)), false
		case r == 0xfeff && i == lineStart:
			// YAML allows one before any document of a stream, but the
			// parser reads it as content, and the document then lacked
			// its apiVersion, which said nothing of the real cause.
			return textError(path, data, line, lineStart, i, "byte order mark (U+FEFF) inside the file: only its first line may start with one"), false
		}
		i += size
	}
	return Diagnostic{}, true
}

func textError(path string, data []byte, line, lineStart, off int, msg string) Diagnostic {
	col := utf8.RuneCount(data[lineStart:off]) + 1
	return Diagnostic{Pos: Position{Path: path, Line: line, Col: col}, Severity: SeverityError, Message: msg}
}

// splitDocuments cuts data before document start markers ("---" at the
// start of a line) into chunks of about chunkTarget bytes. Such a marker
// always starts a new document in YAML, even inside a block scalar, so the
// cut never changes the meaning of valid input. Directives ("%YAML") bind
// to the document after them; files using them are not split.
func splitDocuments(file int, path string, data []byte) []chunk {
	if len(data) <= chunkTarget || strings.HasSuffix(path, ".json") || hasDirective(data) {
		return []chunk{{file: file, data: data}}
	}
	var chunks []chunk
	start, startLine := 0, 0
	line := 0 // lines before offset i
	for i := 0; i < len(data); {
		if i-start >= chunkTarget && isDocumentStart(data[i:]) {
			chunks = append(chunks, chunk{file: file, data: data[start:i], lineOff: startLine})
			start, startLine = i, line
		}
		nl := bytes.IndexByte(data[i:], '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
		line++
	}
	return append(chunks, chunk{file: file, data: data[start:], lineOff: startLine})
}

func isDocumentStart(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\n' || line[3] == '\r'
}

func hasDirective(data []byte) bool {
	return (len(data) > 0 && data[0] == '%') || bytes.Contains(data, []byte("\n%"))
}

// scratch is what one decoding goroutine carries from chunk to chunk.
type scratch struct {
	fast fastyaml.Parser
}

// scratches keeps scratch from load to load. A change decodes a file or
// two, and new parser arrays for them were 0.75 of the 2 MB one endpoint
// change allocated at 10k routes: garbage the collector then scanned the
// whole heap to reclaim, every few changes.
var scratches = sync.Pool{New: func() any { return new(scratch) }}

// chunkResult is what the documents of one chunk decoded to.
type chunkResult struct {
	objs      Objects
	diags     Diagnostics
	broken    []objectID
	explained int
}

// decodeChunk parses the documents of c and decodes each. A syntax error
// ends the chunk: the parser cannot resynchronise after one.
func decodeChunk(path string, c chunk, lim Limits, sc *scratch) chunkResult {
	var res chunkResult
	w := walker{path: path, lineOff: c.lineOff, objs: &res.objs, table: &fieldNames{}}
	if !strings.HasSuffix(path, ".json") {
		if docs, ok := sc.fast.Parse(c.data); ok {
			for _, root := range docs {
				w.checkedDocument(root, lim)
			}
			res.diags, res.broken, res.explained = w.diags, w.broken, w.explained
			return res
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(c.data))
	for {
		var root yaml.Node
		err := parseDocument(dec, &root)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.diags = append(w.diags, syntaxError(path, c, err))
			break
		}
		w.checkedDocument(&root, lim)
	}
	res.diags, res.broken, res.explained = w.diags, w.broken, w.explained
	return res
}

// checkedDocument decodes one parsed document if it is within the limits.
func (w *walker) checkedDocument(root *yaml.Node, lim Limits) {
	if d, ok := checkTree(root, lim); !ok {
		w.diags = append(w.diags, w.diag(SeverityError, d.node, d.msg))
		return
	}
	w.document(root)
}

// parseDocument parses the next document. yaml.v3 signals some internal
// failures by panicking; they become errors, as the input is not trusted.
func parseDocument(dec *yaml.Decoder, root *yaml.Node) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("yaml parser failure: %v", v)
		}
	}()
	return dec.Decode(root)
}

// syntaxError turns a yaml.v3 error ("yaml: line 3: did not find expected
// key") into a diagnostic. yaml.v3 reports lines only; the column is that of
// the line's first non-blank character, which is where the construct the
// parser was reading starts.
func syntaxError(path string, c chunk, err error) Diagnostic {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ": "); ok {
			if n, convErr := strconv.Atoi(num); convErr == nil {
				line, msg = n, tail
			}
		}
	}
	if strings.HasSuffix(path, ".json") {
		// yaml.v3 reports the line where the enclosing flow collection
		// started, which for JSON is nearly always line 1. encoding/json
		// knows the offset of the offending byte.
		var syn *json.SyntaxError
		if errors.As(json.Unmarshal(c.data, &json.RawMessage{}), &syn) && syn.Offset > 0 {
			line, col := lineCol(c.data, int(syn.Offset-1))
			return Diagnostic{
				Pos:      Position{Path: path, Line: line + c.lineOff, Col: col},
				Severity: SeverityError,
				Message:  "invalid JSON: " + syn.Error(),
			}
		}
	}
	line = min(max(line, 1), lastLine(c.data))
	return Diagnostic{
		Pos:      Position{Path: path, Line: line + c.lineOff, Col: firstNonBlankCol(c.data, line)},
		Severity: SeverityError,
		Message:  "invalid YAML: " + msg,
	}
}

// lineCol returns the 1-based line and column (in characters) of offset.
func lineCol(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	before := data[:off]
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[lineStart:]) + 1
}

// lastLine returns the number of the last line that holds anything.
func lastLine(data []byte) int {
	return max(bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n"))+1, 1)
}

// firstNonBlankCol returns the 1-based column of the first character of
// line (1-based) that is not a space, or 1.
func firstNonBlankCol(data []byte, line int) int {
	for l := 1; l < line; l++ {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return 1
		}
		data = data[nl+1:]
	}
	if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
		data = data[:nl]
	}
	trimmed := bytes.TrimLeft(data, " ") // a tab in indentation is itself the error
	if len(trimmed) == 0 {
		return 1
	}
	return utf8.RuneCount(data[:len(data)-len(trimmed)]) + 1
}

// treeProblem is why checkTree refused a document, and where.
type treeProblem struct {
	node *yaml.Node
	msg  string
}

// checkTree bounds a parsed document before anything walks it: nesting
// depth, alias cycles and the number of nodes aliases expand to. Expanded
// sizes of anchored nodes are memoized, so the check costs one pass over
// the document as written, however far its aliases would expand.
func checkTree(root *yaml.Node, lim Limits) (treeProblem, bool) {
	t := treeCheck{lim: lim}
	t.measure(root, 0)
	if t.problem.node != nil {
		return t.problem, false
	}
	return treeProblem{}, true
}

type treeCheck struct {
	lim     Limits
	anchors map[*yaml.Node]measured // nil until the first anchor
	extra   int                     // nodes added by aliases so far
	problem treeProblem
}

// measured is an anchored node's expanded size and height; inProgress marks
// a node being measured, so an alias to it is a cycle.
type measured struct {
	size, height int
	inProgress   bool
}

// sizeCap keeps saturating sizes far from overflow; anything near it is far
// beyond every limit anyway.
const sizeCap = 1 << 50

func (t *treeCheck) fail(n *yaml.Node, format string, args ...any) {
	if t.problem.node == nil {
		t.problem = treeProblem{node: n, msg: fmt.Sprintf(format, args...)}
	}
}

// measure returns the expanded size and height of n, found at depth.
func (t *treeCheck) measure(n *yaml.Node, depth int) (size, height int) {
	if t.problem.node != nil {
		return 0, 0
	}
	if depth > t.lim.MaxDepth {
		t.fail(n, "nesting deeper than %d levels", t.lim.MaxDepth)
		return 0, 0
	}
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		m, seen := t.anchors[target]
		if seen && m.inProgress {
			t.fail(n, "alias *%s refers to its own anchor", n.Value)
			return 0, 0
		}
		if !seen {
			m.size, m.height = t.measure(target, depth)
		}
		if depth+m.height > t.lim.MaxDepth {
			t.fail(n, "alias *%s nests deeper than %d levels", n.Value, t.lim.MaxDepth)
			return 0, 0
		}
		t.extra = min(t.extra+m.size, sizeCap)
		if t.extra > t.lim.MaxAliasExpansion {
			t.fail(n, "aliases expand to more than %d nodes", t.lim.MaxAliasExpansion)
			return 0, 0
		}
		return m.size, m.height
	}
	if n.Anchor != "" {
		if t.anchors == nil {
			t.anchors = make(map[*yaml.Node]measured)
		}
		t.anchors[n] = measured{inProgress: true}
	}
	size = 1
	for _, c := range n.Content {
		s, h := t.measure(c, depth+1)
		size = min(size+s, sizeCap)
		height = max(height, h+1)
	}
	if n.Anchor != "" {
		t.anchors[n] = measured{size: size, height: height}
	}
	return size, height
}
