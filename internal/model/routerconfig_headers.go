package model

import "strings"

// Router-level HTTP headers (spec.httpHeaders), as the IngressController's.

// UniqueID is spec.httpHeaders.uniqueId, validated.
type UniqueID struct {
	Header string
	// Format is a log-format string, with OpenShift's "\ " (its
	// config escape for a space) already read as a space.
	Format string
}

const (
	// defaultUniqueIDFormat is the IngressController's default format.
	defaultUniqueIDFormat = `%{+X}o %ci:%cp_%fi:%fp_%Ts_%rt:%pid`
	maxUniqueIDLength     = 1024
)

func (v *rcCheck) uniqueID(u *UniqueIDHeader) *UniqueID {
	const f = "spec.httpHeaders.uniqueId"
	if u.Name == "" {
		if u.Format != "" {
			v.errorf(f+".format", "format is set but name is empty: no header would carry the id")
		}
		return nil
	}
	ok := true
	if !isToken(u.Name) || len(u.Name) > maxUniqueIDLength {
		v.errorf(f+".name", "name %q is not an HTTP header name (a token of at most %d characters)", u.Name, maxUniqueIDLength)
		ok = false
	}
	format := strings.ReplaceAll(u.Format, `\ `, " ")
	switch {
	case u.Format == "":
		format = defaultUniqueIDFormat
	case len(u.Format) > maxUniqueIDLength:
		v.errorf(f+".format", "format is longer than %d characters", maxUniqueIDLength)
		ok = false
	case !logFormatPattern.MatchString(u.Format):
		v.errorf(f+".format", "format %q is not an HAProxy log format: every %% must start %%%%, an alias (%%ci) or a sample (%%[src]), and control characters are not allowed", u.Format)
		ok = false
	}
	if !ok {
		return nil
	}
	return &UniqueID{Header: u.Name, Format: format}
}

// String describes the setting for plans.
func (u *UniqueID) String() string {
	if u == nil {
		return "off"
	}
	return u.Header + " " + u.Format
}
