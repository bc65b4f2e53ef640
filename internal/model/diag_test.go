package model

import "testing"

// A file named with a newline does not forge a line of the log or of
// `haroute status`: its path is quoted.
func TestPositionQuotesControlCharacters(t *testing.T) {
	for path, want := range map[string]string{
		"routes/a.yaml":                   "routes/a.yaml:3:1",
		"x\nlast error:      - FAKE.yaml": `"x\nlast error:      - FAKE.yaml":3:1`,
	} {
		if got := (Position{Path: path, Line: 3, Col: 1}).String(); got != want {
			t.Errorf("Position{%q}.String() = %q, want %q", path, got, want)
		}
	}
}

// A diagnostic about the generation as a whole has no position: it reads
// without one, not as ":0:0:".
func TestDiagnosticWithoutPosition(t *testing.T) {
	d := Diagnostic{Severity: SeverityWarning, Field: "kind", Message: "no RouterConfig"}
	if got, want := d.String(), "warning: kind: no RouterConfig"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	d.Pos = Position{Path: "a.yaml", Line: 1, Col: 1}
	if got, want := d.String(), "a.yaml:1:1: warning: kind: no RouterConfig"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
