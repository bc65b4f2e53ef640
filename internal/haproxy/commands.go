package haproxy

import (
	"errors"
	"fmt"
	"strings"
)

// MaxPayload bounds one payload command's bytes. HAProxy reads a payload
// into one buffer (tune.bufsize, 16 KiB by default) and HAProxy 2.6.12
// drops the connection when a payload does not fit, so map payloads are
// split well below that; the margin leaves room for the command line.
const MaxPayload = 12 << 10

// MapEntry is one line of a map: key, then value (which may contain
// spaces; `show map` prints it as the rest of the line).
type MapEntry struct {
	Key   string
	Value string
}

// SSLCertCommand builds `set ssl cert <path> <<` with pem as payload. Empty
// lines, legal between PEM blocks, are dropped: one would end the payload.
func SSLCertCommand(certPath, pem string) (string, error) {
	var b strings.Builder
	b.WriteString("set ssl cert " + certPath + " <<\n")
	n := 0
	for _, line := range strings.Split(pem, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(line + "\n")
		n += len(line) + 1
	}
	if n == 0 {
		return "", fmt.Errorf("set ssl cert %s: empty certificate", certPath)
	}
	if n > MaxPayload {
		return "", fmt.Errorf("set ssl cert %s: PEM of %d bytes exceeds the %d bytes one runtime payload can carry", certPath, n, MaxPayload)
	}
	return b.String(), nil
}

// AddMapCommands builds the `add map @<version> <mapPath> <<` commands that
// load entries into a prepared map version, as few as the payload limit
// allows. HAProxy 2.6.12 accepts the payload form for `add map` (checked in
// TestMapTransaction), which is far faster than one command per entry.
func AddMapCommands(version, mapPath string, entries []MapEntry) ([]string, error) {
	head := fmt.Sprintf("add map @%s %s <<\n", version, mapPath)
	var cmds []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			cmds = append(cmds, head+b.String())
			b.Reset()
		}
	}
	for _, e := range entries {
		if err := checkMapEntry(e); err != nil {
			return nil, fmt.Errorf("map %s: %w", mapPath, err)
		}
		line := e.Key + " " + e.Value + "\n"
		if b.Len()+len(line) > MaxPayload {
			flush()
		}
		b.WriteString(line)
	}
	flush()
	return cmds, nil
}

func checkMapEntry(e MapEntry) error {
	switch {
	case e.Key == "":
		return errors.New("empty key")
	case strings.ContainsAny(e.Key, " \t\r\n"):
		return fmt.Errorf("key %q contains white space", e.Key)
	case e.Value == "":
		return fmt.Errorf("empty value for %q", e.Key)
	case strings.ContainsAny(e.Value, "\r\n"):
		return fmt.Errorf("value of %q contains a line break", e.Key)
	case strings.TrimSpace(e.Value) != e.Value:
		return fmt.Errorf("value of %q has leading or trailing white space, which HAProxy would drop", e.Key)
	}
	return nil
}

// MapVersion extracts the version `prepare map` created from its reply
// ("New version created: 3").
func MapVersion(r Response) (string, error) {
	if err := r.Err(); err != nil {
		return "", err
	}
	v, ok := strings.CutPrefix(r.Output, "New version created: ")
	v = strings.TrimSpace(v)
	if !ok || v == "" || strings.Trim(v, "0123456789") != "" {
		return "", fmt.Errorf("prepare map: unexpected reply %q", r.Output)
	}
	return v, nil
}
