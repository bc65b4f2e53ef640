package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// section is one top-level block of haproxy.cfg: its header line without
// the defaults it takes ("backend be_http:ns:name" for "backend
// be_http:ns:name from routes_http") and everything up to the next header.
type section struct {
	header string
	body   []byte
}

// sections splits a config into its top-level blocks. A header is any line
// that starts without indentation and is not a comment.
func sections(cfg []byte) []section {
	var out []section
	start := -1
	header := ""
	pos := 0
	for pos < len(cfg) {
		end := bytes.IndexByte(cfg[pos:], '\n')
		if end < 0 {
			end = len(cfg)
		} else {
			end += pos + 1
		}
		line := cfg[pos:end]
		if len(line) > 0 && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && len(bytes.TrimSpace(line)) > 0 {
			if start >= 0 {
				out = append(out, section{header: header, body: cfg[start:pos]})
			}
			start = pos
			header, _, _ = strings.Cut(string(bytes.TrimSpace(line)), " from ")
		}
		pos = end
	}
	if start >= 0 {
		out = append(out, section{header: header, body: cfg[start:]})
	}
	return out
}

// maxConfigChanges bounds the reasons an unexplained skeleton change gives.
const maxConfigChanges = 10

// configChanges names the sections of haproxy.cfg that differ, for a
// skeleton change that no model change explains.
func configChanges(old, cur []byte) []Change {
	oldSecs := sections(old)
	oldBody := make(map[string][]byte, len(oldSecs))
	for _, s := range oldSecs {
		oldBody[s.header] = s.body
	}
	var out []Change
	seen := make(map[string]bool)
	for _, s := range sections(cur) {
		seen[s.header] = true
		body, ok := oldBody[s.header]
		switch {
		case !ok:
			out = append(out, Change{Mode: ModeReload, Kind: KindConfig, Subject: s.header, Detail: "added"})
		case !sameBody(body, s.body):
			out = append(out, Change{Mode: ModeReload, Kind: KindConfig, Subject: s.header, Detail: "changed"})
		}
	}
	for _, s := range oldSecs {
		if !seen[s.header] {
			out = append(out, Change{Mode: ModeReload, Kind: KindConfig, Subject: s.header, Detail: "removed"})
		}
	}
	if len(out) == 0 {
		// Same sections, same bodies: only the order moved. Backends may
		// move (a spare of the pool becomes a route's backend, rendered
		// among the routes): HAProxy does not care where they are.
		if sameOrderBut(oldSecs, sections(cur), "backend ") {
			return nil
		}
		out = append(out, Change{Mode: ModeReload, Kind: KindConfig, Subject: "section order"})
	}
	if len(out) > maxConfigChanges {
		rest := len(out) - maxConfigChanges + 1
		out = append(out[:maxConfigChanges-1], Change{Mode: ModeReload, Kind: KindConfig,
			Subject: fmt.Sprintf("%d more sections", rest)})
	}
	return out
}

// sameOrderBut reports whether a and b list the same sections in the same
// order once sections whose header starts with prefix are left out.
func sameOrderBut(a, b []section, prefix string) bool {
	keep := func(ss []section) []string {
		var out []string
		for _, s := range ss {
			if !strings.HasPrefix(s.header, prefix) {
				out = append(out, s.header)
			}
		}
		return out
	}
	return slices.Equal(keep(a), keep(b))
}

// sameBody reports whether two section bodies hold the same lines, blank
// lines and comments aside: HAProxy ignores those, and a route's comment
// ends up in whatever section precedes its backend.
func sameBody(a, b []byte) bool {
	next := func(s []byte) (line, rest []byte) {
		for len(s) > 0 {
			i := bytes.IndexByte(s, '\n')
			if i < 0 {
				i = len(s) - 1
			}
			line, s = s[:i+1], s[i+1:]
			t := bytes.TrimSpace(line)
			if len(t) > 0 && t[0] != '#' {
				return bytes.TrimRight(line, "\n"), s
			}
		}
		return nil, nil
	}
	for {
		la, ra := next(a)
		lb, rb := next(b)
		if !bytes.Equal(la, lb) {
			return false
		}
		if la == nil {
			return true
		}
		a, b = ra, rb
	}
}
