package render

import (
	"strings"
	"testing"
)

func TestQuoting(t *testing.T) {
	for _, c := range []struct{ in, arg, quoted, logFormat string }{
		{"sess", "sess", "'sess'", "'sess'"},
		{"a'b", `'a'\''b'`, `'a'\''b'`, `'a'\''b'`},
		{`a"b\c#d$e`, `'a"b\c#d$e'`, `'a"b\c#d$e'`, `'a"b\c#d$e'`},
		{"50%", "50%", "'50%'", "'50%%'"},
		{"''", `''\'''\'''`, `''\'''\'''`, `''\'''\'''`},
	} {
		if got := cfgArg(c.in); got != c.arg {
			t.Errorf("cfgArg(%q) = %s, want %s", c.in, got, c.arg)
		}
		if got, err := singleQuoted("x", c.in, false); err != nil || got != c.quoted {
			t.Errorf("singleQuoted(%q) = %s, %v, want %s", c.in, got, err, c.quoted)
		}
		if got, err := singleQuoted("x", c.in, true); err != nil || got != c.logFormat {
			t.Errorf("singleQuoted(%q, log-format) = %s, %v, want %s", c.in, got, err, c.logFormat)
		}
	}
	if _, err := singleQuoted("x", "a\nb", false); err == nil {
		t.Error("singleQuoted accepted a newline")
	}
	if got := regexpReplacement(`/a\1`); got != `/a\\1` {
		t.Errorf("regexpReplacement = %s, want /a\\\\1", got)
	}
}

// TestFileStemFitsAFileName: the longest valid namespace and name give a
// stem a file name can hold, still unique; short ones are left readable.
func TestFileStemFitsAFileName(t *testing.T) {
	ns := strings.Repeat("n", 63)
	long := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61)
	other := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("c", 61)
	a, b := fileStem(ns, long), fileStem(ns, other)
	if len(a) > maxFileStem || len(b) > maxFileStem {
		t.Errorf("stems of %d and %d bytes, want at most %d", len(a), len(b), maxFileStem)
	}
	if a == b {
		t.Errorf("two names share the stem %s", a)
	}
	if a != fileStem(ns, long) {
		t.Error("stem not stable")
	}
	if got := fileStem("shop", "web.v2"); got != "shop_web.v2" {
		t.Errorf("short stem %s, want shop_web.v2", got)
	}
}
