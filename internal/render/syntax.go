package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// checkWord rejects a value that would break, or change the meaning of, an
// unquoted word in haproxy.cfg, a map file or the crt-list. Upstream
// validation already refuses such values; this is the last line of defence,
// so a bad value is an error here rather than a corrupt config.
func checkWord(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", what)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '#' || c == '\'' || c == '"' || c == '\\' {
			return fmt.Errorf("%s %q contains a character not allowed in haproxy syntax (%q)", what, s, c)
		}
	}
	return nil
}

// singleQuoted quotes s as one haproxy.cfg argument. Inside single quotes
// HAProxy does no escaping and no environment expansion; a single quote
// itself ends the quoted part, so it is written as a closing quote, an
// escaped quote and an opening quote, which HAProxy's line parser joins
// into one word as a shell does. When s is also a log-format string
// (set-header values, replace-path replacements), '%' is doubled so it
// stays literal. Control characters cannot be written on a config line
// at all.
func singleQuoted(what, s string, logFormat bool) (string, error) {
	if err := checkQuotable(what, s); err != nil {
		return "", err
	}
	return string(appendQuoted(make([]byte, 0, len(s)+8), s, logFormat)), nil
}

// checkQuotable rejects what no quoting can put on a config line.
func checkQuotable(what, s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return fmt.Errorf("%s %q contains a control character (%q)", what, s, c)
		}
	}
	return nil
}

// appendQuoted appends s single-quoted (see singleQuoted) to b; s must
// have passed checkQuotable.
func appendQuoted(b []byte, s string, logFormat bool) []byte {
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			b = append(b, `'\''`...)
		case c == '%' && logFormat:
			b = append(b, "%%"...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '\'')
}

// cfgArg returns s as one haproxy.cfg argument: as is when every byte is
// one HAProxy's line parser takes literally outside quotes (the common
// case, which keeps the config readable and costs no allocation), else
// single-quoted. s must have passed checkQuotable.
func cfgArg(s string) string {
	for i := 0; i < len(s); i++ {
		if !isBareByte(s[i]) {
			return string(appendQuoted(make([]byte, 0, len(s)+8), s, false))
		}
	}
	return s
}

// isBareByte reports whether c means itself in an unquoted haproxy.cfg
// word: not white space, a quote, '\' (escapes), '#' (comment) or '$'
// (environment variables), nor a control or non-ASCII byte.
func isBareByte(c byte) bool {
	return c > ' ' && c < 0x7f && c != '\'' && c != '"' && c != '\\' && c != '#' && c != '$'
}

// regexpReplacement escapes a literal for the replacement of replace-path
// and similar actions, where HAProxy reads '\' followed by a digit as a
// back-reference and '\' followed by anything else as that character.
func regexpReplacement(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.ReplaceAll(s, `\`, `\\`)
}

// duration renders d in the largest HAProxy time unit that is exact, so
// the config reads "5s" and "1h" rather than "5000ms". Sub-millisecond
// values round up to 1ms: HAProxy's timers count milliseconds.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	default:
		ms := (d + time.Millisecond - 1) / time.Millisecond
		return strconv.FormatInt(int64(ms), 10) + "ms"
	}
}

// HostPort renders an address as bind and server lines and `add server`
// take it; IPv6 literals are bracketed, which HAProxy 2.6 accepts and
// which keeps the port unambiguous.
func HostPort(host string, port int) string {
	return string(appendHostPort(make([]byte, 0, len(host)+8), host, port))
}

// appendHostPort appends HostPort(host, port) to b.
func appendHostPort(b []byte, host string, port int) []byte {
	if strings.Contains(host, ":") {
		b = append(b, '[')
		b = append(b, host...)
		b = append(b, ']')
	} else {
		b = append(b, host...)
	}
	b = append(b, ':')
	return strconv.AppendInt(b, int64(port), 10)
}

// fileStem derives a file name stem from a route's namespace and name.
// Both are DNS-1123 after validation, which makes the "_" separator
// unambiguous; anything else is replaced so a derived path can never
// contain "/" or ".." and escape its directory. Collisions caused by such
// replacements are detected by the caller.
func fileStem(namespace, name string) string {
	stem := safeSegment(namespace) + "_" + safeSegment(name)
	if len(stem) <= maxFileStem {
		return stem
	}
	// The longest valid names (63 + 253 bytes) exceed what a file name
	// may hold: cut, and made unique again by a hash of the whole.
	return stem[:maxFileStem-33] + "-" + hashHex("haroute-file-stem", stem)
}

// maxFileStem bounds a derived file name stem. Linux allows 255 bytes in
// a file name; the stem gets ".pem", and the atomic writer's temporary
// name (".<name>.tmp-<random>") adds about 20 more.
const maxFileStem = 200

func safeSegment(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
		if !ok {
			b[i] = '-'
		}
	}
	out := strings.ReplaceAll(string(b), "..", "--")
	if out == "" || out[0] == '.' {
		out = "-" + out
	}
	return out
}

// parentDomain returns the domain a wildcard route serves: "example.com"
// for "www.example.com". ok is false for a single-label host.
func parentDomain(host string) (string, bool) {
	i := strings.IndexByte(host, '.')
	if i < 0 || i == len(host)-1 {
		return "", false
	}
	return host[i+1:], true
}

// routeKeys returns the map keys of a route for host and path (see the
// package documentation): host + "/" for the whole host; host + path when
// the path ends with "/"; else host + path + "?" (exactly the path) and,
// weaker, host + path + "/" (below it), which a route for path + "/" takes
// over. Both keys share one allocation: render makes them for every route.
func routeKeys(host, path string) (key, weakKey string) {
	switch {
	case strings.Trim(path, "/") == "":
		return host + "/", ""
	case strings.HasSuffix(path, "/"):
		return host + path, ""
	default:
		keys := host + path + keyEnd + host + path + "/"
		n := len(host) + len(path) + len(keyEnd)
		return keys[:n], keys[n:]
	}
}

// keyEnd ends every request's lookup key: '?' never occurs in a path.
const keyEnd = "?"

// hashHex is a short, stable identifier derived from s.
func hashHex(salt, s string) string {
	// Hashed from a stack buffer when it fits: cookies hash every
	// backend's name twice per render.
	var buf [256]byte
	sum := sha256.Sum256(append(append(append(buf[:0], salt...), 0), s...))
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(out[:])
}

// checkAllowEntry accepts an IP or a CIDR, as HAProxy's src ACL does.
func checkAllowEntry(s string) error {
	if net.ParseIP(s) != nil {
		return nil
	}
	if _, _, err := net.ParseCIDR(s); err == nil {
		return nil
	}
	return fmt.Errorf("ip allowlist entry %q is neither an IP nor a CIDR", s)
}

// quoteRegexp escapes a literal for an HAProxy (PCRE) regex.
func quoteRegexp(s string) string { return regexp.QuoteMeta(s) }
