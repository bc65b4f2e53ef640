package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Severity orders diagnostics: errors make `check` fail, warnings are shown
// and counted, notes explain harmless decisions (a skipped kind, say).
type Severity int

const (
	SeverityNote Severity = iota
	SeverityWarning
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	default:
		return "note"
	}
}

// Position names a place in an input file. Line and Col are 1-based; zero
// means unknown (the whole file).
type Position struct {
	Path string
	Line int
	Col  int
}

func positionLess(a, b Position) bool {
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Col < b.Col
}

func (p Position) String() string {
	path := p.Path
	if strings.ContainsFunc(path, unicode.IsControl) {
		// A file named with a newline must not forge a line of the
		// log or of `haroute status`.
		path = strconv.Quote(path)
	}
	return fmt.Sprintf("%s:%d:%d", path, p.Line, p.Col)
}

// Diagnostic is one problem found in the input. Its String form is the
// `path:line:col: severity: message` line that operators grep for.
type Diagnostic struct {
	Pos      Position
	Severity Severity
	// Field is the YAML path of the offending field, e.g. "spec.tls.key".
	Field   string
	Message string
}

func (d Diagnostic) String() string {
	var at string
	if d.Pos != (Position{}) {
		// A diagnostic about the generation as a whole (no RouterConfig
		// in it) has no place to name: ":0:0: " read like a bug.
		at = d.Pos.String() + ": "
	}
	if d.Field != "" {
		return fmt.Sprintf("%s%s: %s: %s", at, d.Severity, d.Field, d.Message)
	}
	return fmt.Sprintf("%s%s: %s", at, d.Severity, d.Message)
}

// Diagnostics is a list with helpers for the common questions.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error. Under strict
// checking, warnings count as errors too.
func (ds Diagnostics) HasErrors(strict bool) bool {
	for _, d := range ds {
		if d.Severity == SeverityError || (strict && d.Severity == SeverityWarning) {
			return true
		}
	}
	return false
}

// errorCount is how many diagnostics are errors.
func (ds Diagnostics) errorCount() int {
	n := 0
	for _, d := range ds {
		if d.Severity == SeverityError {
			n++
		}
	}
	return n
}

// Sort orders diagnostics by file, line, column, then message, so output
// is deterministic.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Pos != b.Pos {
			return positionLess(a.Pos, b.Pos)
		}
		return a.Message < b.Message
	})
}
