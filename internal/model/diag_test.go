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
