// Package systemd ships haroute's hardened systemd unit. The unit file is
// the single source: packaging installs it as is, and `haroute service
// install` embeds it from here and only swaps the ExecStart= line, so the
// hardening cannot drift between the two.
package systemd

import (
	_ "embed"
	"fmt"
	"path/filepath"
	"strings"
)

//go:embed haroute.service
var unit string

// UnitName is the name the unit is installed under.
const UnitName = "haroute.service"

// UnitWithCommand returns the unit with its ExecStart= line running exe
// with args. exe must be absolute: systemd does not search PATH for it
// (before v239) and a relative path would be resolved against nothing.
func UnitWithCommand(exe string, args []string) (string, error) {
	if !filepath.IsAbs(exe) {
		return "", fmt.Errorf("unit ExecStart: executable %q is not an absolute path", exe)
	}
	line := "ExecStart=" + CommandLine(append([]string{exe}, args...))
	lines := strings.Split(unit, "\n")
	replaced := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "ExecStart=") {
			lines[i] = line
			replaced++
		}
	}
	if replaced != 1 {
		return "", fmt.Errorf("unit ExecStart: embedded unit has %d ExecStart= lines, want 1", replaced)
	}
	return strings.Join(lines, "\n"), nil
}

// CommandLine joins words into a systemd command line that systemd splits
// back into exactly those words: '%' (specifiers) and '$' (environment
// expansion) are doubled, and words with blanks, quotes, backslashes,
// semicolons or control characters are double-quoted with C escapes.
func CommandLine(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = quoteWord(w)
	}
	return strings.Join(quoted, " ")
}

func quoteWord(w string) string {
	w = strings.ReplaceAll(w, "%", "%%")
	w = strings.ReplaceAll(w, "$", "$$")
	if w != "" && !strings.ContainsFunc(w, needsQuote) {
		return w
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range w {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\x%02x`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func needsQuote(r rune) bool {
	switch r {
	case ' ', '"', '\'', '\\', ';':
		return true
	}
	return r < 0x20 || r == 0x7f
}
