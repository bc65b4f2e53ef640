package model

import (
	"fmt"
	"iter"
	"regexp"
	"strconv"
	"strings"
)

// spec.httpHeaders.actions, validated by OpenShift's rules
// (openshift/library-go pkg/route/validation): at most 20 actions each for
// requests and responses, unique names of HTTP token characters up to 255
// bytes, never Strict-Transport-Security, Proxy, Cookie or Set-Cookie; Set
// takes a value of up to 16384 bytes, which may use HAProxy's %[] with the
// fetches req.hdr (res.hdr for responses) and ssl_c_der and the converters
// lower and base64; Delete takes none. Not on passthrough routes, whose
// HTTP HAProxy does not see.

// Limits of a Route's header actions (maxHeaderActions, 20, is shared
// with the RouterConfig's).
const (
	maxHeaderNameSize  = 255
	maxHeaderValueSize = 16384
)

// setHeaderBytes is what one Set action adds to a message: its header
// line. A list of actions may add as much as its one largest action can
// (maxSetBytes): HAProxy adds them in the message's buffer (tune.bufsize,
// 32 KiB by default), and beyond what the buffer holds beside the
// message it answers 500 to every request of the route (three 16 KiB
// values did). The fetches of a value may make it longer still; those
// cannot be bounded here.
func setHeaderBytes(name, value string) int { return len(name) + len(": ") + len(value) + len("\r\n") }

// maxSetBytes is the most a list of Set actions may add: one action with
// the longest name and value.
func maxSetBytes(maxName, maxValue int) int { return maxName + maxValue + len(": \r\n") }

var (
	headerNameRE = regexp.MustCompile("^[-!#$%&'*+.0-9A-Z^_`a-z|~]+$")
	// headerValueTemplate is OpenShift's; XYZ is req or res.
	headerValueTemplate   = `^(?:%(?:%|(?:\{[-+]?[QXE](?:,[-+]?[QXE])*\})?\[(?:XYZ\.hdr\([0-9A-Za-z-]+\)|ssl_c_der)(?:,(?:lower|base64))*\])|[^%[:cntrl:]])+$`
	requestHeaderValueRE  = regexp.MustCompile(strings.Replace(headerValueTemplate, "XYZ", "req", 1))
	responseHeaderValueRE = regexp.MustCompile(strings.Replace(headerValueTemplate, "XYZ", "res", 1))
)

// HeaderActions is a validated list of header actions, one per line:
// "Set\t<name>\t<value>" or "Delete\t<name>". Names and values hold no
// control characters, so the encoding is unambiguous; a string keeps
// BackendSettings comparable.
type HeaderActions string

// All yields the actions in order (substrings of the list, no allocation).
func (l HeaderActions) All() iter.Seq[HeaderAction] {
	return func(yield func(HeaderAction) bool) {
		for line := range strings.Lines(string(l)) {
			line = strings.TrimSuffix(line, "\n")
			typ, rest, _ := strings.Cut(line, "\t")
			name, value, _ := strings.Cut(rest, "\t")
			if !yield(HeaderAction{Delete: typ != "Set", Name: name, Value: value}) {
				return
			}
		}
	}
}

func (l HeaderActions) show() string {
	if l == "" {
		return "none"
	}
	var parts []string
	for a := range l.All() {
		if !a.Delete {
			parts = append(parts, "set "+a.Name+"="+strconv.Quote(a.Value))
		} else {
			parts = append(parts, "delete "+a.Name)
		}
	}
	return strings.Join(parts, ", ")
}

// notAllowedHeaders may not be modified through spec.httpHeaders.
var notAllowedHeaders = []string{"strict-transport-security", "proxy", "cookie", "set-cookie"}

// validateHTTPHeaders checks spec.httpHeaders and returns the request and
// response actions of a valid route. The RouterConfig's actions in
// settings are added to the same messages.
func validateHTTPHeaders(c *routeCheck, spec *RouteSpec, term Termination, settings *Settings) (req, res HeaderActions) {
	h := spec.HTTPHeaders
	if h == nil || len(h.Request)+len(h.Response) == 0 {
		return "", ""
	}
	if term == TerminationPassthrough {
		c.add(SeverityError, c.pos("spec.tls.termination", "spec.tls"), "spec.tls.termination",
			"httpHeaders actions are not supported on passthrough routes: HAProxy does not see their HTTP (only edge, reencrypt and plain HTTP routes)")
	}
	req = headerList(c, "spec.httpHeaders.actions.request", h.Request, requestHeaderValueRE, "req", routerSetBytes(settings.RequestHeaderActions))
	res = headerList(c, "spec.httpHeaders.actions.response", h.Response, responseHeaderValueRE, "res", routerSetBytes(settings.ResponseHeaderActions))
	return req, res
}

// routerSetBytes is what the Set actions of a RouterConfig's list add to
// a message.
func routerSetBytes(list []HeaderAction) int {
	n := 0
	for _, a := range list {
		if !a.Delete {
			n += setHeaderBytes(a.Name, a.Value)
		}
	}
	return n
}

// maxCombinedSetBytes bounds what a route's Set actions and the
// RouterConfig's add to one message together: as much as the
// RouterConfig's list alone may. Each list within its own limit, both
// together answered 500 to every request of the route (an audit: 16 KiB
// values in each).
var maxCombinedSetBytes = maxSetBytes(maxHeaderActionName, maxHeaderActionValue)

func headerList(c *routeCheck, field string, list []HTTPHeaderAction, valueRE *regexp.Regexp, fetch string, routerBytes int) HeaderActions {
	if len(list) == 0 {
		return ""
	}
	if len(list) > maxHeaderActions {
		c.errorf(field, "at most %d header actions are allowed, got %d", maxHeaderActions, len(list))
		return ""
	}
	var b strings.Builder
	bad := false
	for i, h := range list {
		f := field + "[" + strconv.Itoa(i) + "]"
		nameField := f + ".name"
		errorf := func(field, format string, args ...any) {
			bad = true
			c.add(SeverityError, c.pos(field, f+".action", f), field, fmt.Sprintf(format, args...))
		}
		for _, o := range list[:i] {
			if o.Name == h.Name && h.Name != "" {
				errorf(nameField, "header %q already has an action in this list", h.Name)
				break
			}
		}
		switch {
		case h.Name == "":
			errorf(nameField, "name is required")
		case len(h.Name) > maxHeaderNameSize:
			errorf(nameField, "name is %d bytes long, more than %d", len(h.Name), maxHeaderNameSize)
		case isNotAllowedHeader(h.Name):
			errorf(nameField, "header %s may not be modified here (not Strict-Transport-Security, Proxy, Cookie or Set-Cookie)", shortQuote(h.Name))
		case !headerNameRE.MatchString(h.Name):
			errorf(nameField, "name %s is not a valid HTTP header name (RFC 2616 token characters)", shortQuote(h.Name))
		}
		switch h.Type {
		case "Set":
			if !h.HasSet {
				errorf(f+".action.set", "set is required when type is Set")
			}
		case "Delete":
			if h.HasSet {
				errorf(f+".action.set", "set is allowed only when type is Set")
			}
		default:
			errorf(f+".action.type", "type %q is not Set or Delete", h.Type)
		}
		if h.HasSet {
			valueField := f + ".action.set.value"
			switch {
			case h.Value == "":
				errorf(valueField, "value is required")
			case len(h.Value) > maxHeaderValueSize:
				errorf(valueField, "value is %d bytes long, more than %d", len(h.Value), maxHeaderValueSize)
			case !valueRE.MatchString(h.Value):
				errorf(valueField, "value %s is not a valid header value: it may use HAProxy's %%[] with the fetches %s.hdr(name) and ssl_c_der and the converters lower and base64, '%%%%' for a literal '%%', and no control characters",
					shortQuote(h.Value), fetch)
			}
		}
		if h.Type == "Set" {
			b.WriteString("Set\t" + h.Name + "\t" + h.Value + "\n")
		} else {
			b.WriteString("Delete\t" + h.Name + "\n")
		}
	}
	size := setBytes(list)
	switch limit := maxSetBytes(maxHeaderNameSize, maxHeaderValueSize); {
	case bad:
	case size > limit:
		bad = true
		c.errorf(field, "the Set actions add %d bytes of headers, more than %d (one action with the longest name and value): HAProxy could not fit them into the message's buffer and would answer 500", size, limit)
	case size > 0 && size+routerBytes > maxCombinedSetBytes:
		bad = true
		c.errorf(field, "the Set actions add %d bytes of headers, and the RouterConfig's %d more: together more than %d, which HAProxy could not fit into the message's buffer; it would answer 500", size, routerBytes, maxCombinedSetBytes)
	}
	if bad {
		return ""
	}
	return HeaderActions(b.String())
}

// setBytes is what the Set actions of list add to a message.
func setBytes(list []HTTPHeaderAction) int {
	n := 0
	for _, h := range list {
		if h.Type == "Set" {
			n += setHeaderBytes(h.Name, h.Value)
		}
	}
	return n
}

func isNotAllowedHeader(name string) bool {
	for _, n := range notAllowedHeaders {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}
