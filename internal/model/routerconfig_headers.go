package model

import (
	"regexp"
	"slices"
	"strings"
)

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
	switch lower := strings.ToLower(u.Name); {
	case !isToken(u.Name) || len(u.Name) > maxUniqueIDLength:
		v.errorf(f+".name", "name %q is not an HTTP header name (a token of at most %d characters)", u.Name, maxUniqueIDLength)
		ok = false
	case slices.Contains(reservedHeaders, lower) || slices.Contains(framingHeaders, lower):
		// HAProxy adds the header beside the client's own: a second
		// Host reached the backend, which many servers answer with 400.
		v.errorf(f+".name", "name %q may not carry the unique id: the router or HTTP itself uses that header", u.Name)
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

func (v *rcCheck) forwardedPolicy(p string, s *Settings) {
	switch p {
	case "", "Append":
	case "Replace":
		s.ForwardedHeaderPolicy = "replace"
	case "IfNone":
		s.ForwardedHeaderPolicy = "if-none"
	case "Never":
		s.ForwardedHeaderPolicy = "never"
	default:
		v.errorf("spec.httpHeaders.forwardedHeaderPolicy", "forwardedHeaderPolicy %q is not one of Append, Replace, IfNone, Never", p)
	}
}

// HeaderAction sets a header (Value is an HAProxy log-format string) or,
// with Delete, removes it.
type HeaderAction struct {
	Name   string
	Delete bool
	Value  string
}

const (
	maxHeaderActions     = 20
	maxHeaderActionName  = 1024
	maxHeaderActionValue = 16384
)

// headerActionValues are the IngressController's patterns for set
// values: literal text, "%%", and samples of the request (or response)
// headers and the client certificate with the lower and base64
// converters only.
var headerActionValues = map[string]*regexp.Regexp{
	"request":  regexp.MustCompile(`^(?:%(?:%|(?:\{[-+]?[QXE](?:,[-+]?[QXE])*\})?\[(?:req\.hdr\([0-9A-Za-z-]+\)|ssl_c_der)(?:,(?:lower|base64))*\])|[^%[:cntrl:]])+$`),
	"response": regexp.MustCompile(`^(?:%(?:%|(?:\{[-+]?[QXE](?:,[-+]?[QXE])*\})?\[(?:res\.hdr\([0-9A-Za-z-]+\)|ssl_c_der)(?:,(?:lower|base64))*\])|[^%[:cntrl:]])+$`),
}

// reservedHeaders may not be set or deleted by actions: the router
// manages them (HSTS per route, Host for routing, Proxy removed always,
// cookies for sticky sessions).
var reservedHeaders = []string{"strict-transport-security", "proxy", "host", "cookie", "set-cookie"}

// framingHeaders say how a message is framed and carried: a unique id in
// one would change that.
var framingHeaders = []string{"content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive"}

func (v *rcCheck) headerActions(which string, as []HTTPHeaderAction) []HeaderAction {
	f := "spec.httpHeaders.actions." + which
	if len(as) > maxHeaderActions {
		v.errorf(index(f, maxHeaderActions), "at most %d %s header actions are allowed", maxHeaderActions, which)
		return nil
	}
	var out []HeaderAction
	seen := map[string]bool{}
	ok := true
	for i, a := range as {
		fi := index(f, i)
		bad := func(field, format string, args ...any) {
			v.errorf(field, format, args...)
			ok = false
		}
		lower := strings.ToLower(a.Name)
		switch {
		case !isToken(a.Name) || len(a.Name) > maxHeaderActionName:
			bad(fi+".name", "name %q is not an HTTP header name (a token of at most %d characters)", a.Name, maxHeaderActionName)
			continue
		case slices.Contains(reservedHeaders, lower):
			bad(fi+".name", "%s may not be set or deleted by header actions", lower)
			continue
		case seen[lower]:
			bad(fi+".name", "header %s has an action already: names must be unique", a.Name)
			continue
		}
		seen[lower] = true
		switch a.Type {
		case "Delete":
			if a.HasSet {
				bad(fi+".action.set", "set is only allowed when type is Set")
				continue
			}
			out = append(out, HeaderAction{Name: a.Name, Delete: true})
		case "Set":
			switch {
			case !a.HasSet || a.Value == "":
				bad(fi+".action", "type Set needs set.value")
			case len(a.Value) > maxHeaderActionValue:
				bad(fi+".action.set.value", "value is longer than %d characters", maxHeaderActionValue)
			case !headerActionValues[which].MatchString(a.Value):
				bad(fi+".action.set.value", "value %q is not allowed: literal text, %%%% and %%[...] with %s and ssl_c_der, converted only by lower and base64", a.Value, headerFetch(which))
			default:
				out = append(out, HeaderAction{Name: a.Name, Value: a.Value})
			}
		default:
			bad(fi+".action.type", "type %q is not one of Set, Delete", a.Type)
		}
	}
	if size, limit := setBytes(as), maxSetBytes(maxHeaderActionName, maxHeaderActionValue); size > limit && ok {
		v.errorf(f, "the Set actions add %d bytes of headers, more than %d (one action with the longest name and value): HAProxy could not fit them into the message's buffer and would answer 500", size, limit)
		return nil
	}
	if !ok {
		return nil
	}
	return out
}

func headerFetch(which string) string {
	if which == "response" {
		return "res.hdr(name)"
	}
	return "req.hdr(name)"
}

// HeaderActionsSummary describes actions for plans: what each does to
// which header, without values.
func HeaderActionsSummary(as []HeaderAction) string {
	parts := make([]string, len(as))
	for i, a := range as {
		if a.Delete {
			parts[i] = "delete " + a.Name
		} else {
			parts[i] = "set " + a.Name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
