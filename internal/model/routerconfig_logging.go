package model

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Access logging (spec.logging.access), validated as the
// IngressController validates it, with two haroute readings: the
// Container destination is HAProxy's stdout, which haroute logs; a Syslog
// address may be a unix datagram socket's absolute path.

const (
	defaultLogMaxLength = 1024
	defaultLogFacility  = "local1"
	minLogMaxLength     = 480
	maxSyslogMaxLength  = 4096
	maxStdoutMaxLength  = 8192
	maxCookieCapture    = 1024
	// maxHeaderCapture bounds a captured header: HAProxy keeps every
	// capture of a request in its pools, for each request in flight.
	maxHeaderCapture = 16384
	maxLogFormat     = 4096
)

// syslogFacilities are the IngressController's allowed facilities.
var syslogFacilities = []string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron",
	"auth2", "ftp", "ntp", "audit", "alert", "cron2", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}

// logFormatPattern is the IngressController's pattern for
// httpHeaders.uniqueId.format, a log-format string too: every '%' starts
// '%%', an alias or a sample expression, and nothing is a control
// character. Applied to httpLogFormat as well, so that a format HAProxy
// would refuse is an error at its field rather than a failed reload.
var logFormatPattern = regexp.MustCompile(`^(%(%|(\{[-+]?[QXE](,[-+]?[QXE])*\})?([A-Za-z]+|\[[.0-9A-Z_a-z]+(\([^)]+\))?(,[.0-9A-Z_a-z]+(\([^)]+\))?)*\]))|[^%[:cntrl:]])*$`)

func (v *rcCheck) accessLog(a *AccessLogging) *AccessLog {
	const f = "spec.logging.access"
	if a == nil {
		return nil
	}
	out := &AccessLog{Facility: defaultLogFacility, MaxLength: defaultLogMaxLength}
	ok := v.logDestination(&a.Destination, out)

	if fm := a.HTTPLogFormat; fm != "" {
		switch {
		case len(fm) > maxLogFormat:
			v.errorf(f+".httpLogFormat", "httpLogFormat is longer than %d characters", maxLogFormat)
		case !logFormatPattern.MatchString(fm):
			v.errorf(f+".httpLogFormat", "httpLogFormat %q is not an HAProxy log format: every %% must start %%%%, an alias (%%ci) or a sample (%%[src]), and control characters are not allowed", fm)
		default:
			out.Format = fm
		}
	}
	out.CaptureRequestHeaders = v.captureHeaders(f+".httpCaptureHeaders.request", a.HTTPCaptureHeaders.Request)
	out.CaptureResponseHeaders = v.captureHeaders(f+".httpCaptureHeaders.response", a.HTTPCaptureHeaders.Response)
	out.CaptureCookie = v.captureCookie(a.HTTPCaptureCookies)
	switch a.LogEmptyRequests {
	case "", "Log":
	case "Ignore":
		out.IgnoreEmpty = true
	default:
		v.errorf(f+".logEmptyRequests", "logEmptyRequests %q is not one of Log, Ignore", a.LogEmptyRequests)
	}
	if !ok {
		return nil
	}
	return out
}

func (v *rcCheck) logDestination(d *LoggingDestination, out *AccessLog) bool {
	const f = "spec.logging.access.destination"
	switch d.Type {
	case "Container":
		out.Target = "stdout"
		if d.Container != nil {
			out.MaxLength = v.logMaxLength(f+".container.maxLength", d.Container.MaxLength, maxStdoutMaxLength)
		}
		if d.Syslog != nil {
			v.errorf(f+".syslog", "syslog is set but type is Container")
		}
		return true
	case "Syslog":
		const sf = f + ".syslog"
		sl := d.Syslog
		if sl == nil {
			v.errorf(f+".type", "type Syslog needs destination.syslog with an address")
			return false
		}
		if d.Container != nil {
			v.errorf(f+".container", "container is set but type is Syslog")
		}
		out.MaxLength = v.logMaxLength(sf+".maxLength", sl.MaxLength, maxSyslogMaxLength)
		if fc := sl.Facility; fc != "" {
			if !slices.Contains(syslogFacilities, fc) {
				v.errorf(sf+".facility", "facility %q is not one of %s", fc, strings.Join(syslogFacilities, ", "))
			} else {
				out.Facility = fc
			}
		}
		return v.syslogTarget(sl, out)
	case "":
		v.errorf(f, "destination.type is required: Container or Syslog")
	default:
		v.errorf(f+".type", "type %q is not one of Container, Syslog", d.Type)
	}
	return false
}

func (v *rcCheck) syslogTarget(sl *SyslogDestination, out *AccessLog) bool {
	const sf = "spec.logging.access.destination.syslog"
	addr := sl.Address
	switch {
	case addr == "":
		v.errorf(sf, "syslog.address is required: an IP address with a port, or a unix socket's absolute path")
		return false
	case strings.HasPrefix(addr, "/"):
		if sl.Port != nil {
			v.errorf(sf+".port", "port is set but address %q is a unix socket", addr)
			return false
		}
		// The path goes on a config line as one word.
		for _, c := range addr {
			if c <= ' ' || c == 0x7f || strings.ContainsRune(`#'"\$`, c) {
				v.errorf(sf+".address", "unix socket path %q holds a character haroute does not write in haproxy.cfg (%q)", addr, c)
				return false
			}
		}
		out.Target = addr
		return true
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		v.errorf(sf+".address", "address %q is neither an IP address nor a unix socket's absolute path", addr)
		return false
	}
	if sl.Port == nil {
		v.errorf(sf+".address", "address %q needs a port (1-65535)", addr)
		return false
	}
	if p := *sl.Port; p < 1 || p > 65535 {
		v.errorf(sf+".port", "port %d is out of range 1-65535", p)
		return false
	}
	out.Target = net.JoinHostPort(ip.String(), strconv.Itoa(*sl.Port))
	return true
}

func (v *rcCheck) logMaxLength(field string, p *int, hi int) int {
	if p == nil {
		return defaultLogMaxLength
	}
	if *p < minLogMaxLength || *p > hi {
		v.errorf(field, "maxLength %d is out of range %d-%d", *p, minLogMaxLength, hi)
		return defaultLogMaxLength
	}
	return *p
}

func (v *rcCheck) captureHeaders(field string, hs []CaptureHTTPHeader) []CaptureHeader {
	var out []CaptureHeader
	for i, h := range hs {
		fi := index(field, i)
		if !isToken(h.Name) {
			v.errorf(fi+".name", "header name %q is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)", h.Name)
			continue
		}
		if h.MaxLength == nil {
			v.errorf(fi, "maxLength is required, 1-%d", maxHeaderCapture)
			continue
		}
		if *h.MaxLength < 1 || *h.MaxLength > maxHeaderCapture {
			v.errorf(fi+".maxLength", "maxLength %d is out of range 1-%d", *h.MaxLength, maxHeaderCapture)
			continue
		}
		out = append(out, CaptureHeader{Name: h.Name, MaxLength: *h.MaxLength})
	}
	return out
}

func (v *rcCheck) captureCookie(cs []CaptureHTTPCookie) *CaptureCookie {
	const f = "spec.logging.access.httpCaptureCookies"
	if len(cs) == 0 {
		return nil
	}
	if len(cs) > 1 {
		v.errorf(index(f, 1), "at most one cookie can be captured")
		return nil
	}
	c, fi := cs[0], index(f, 0)
	out := &CaptureCookie{}
	switch c.MatchType {
	case "Exact":
		if !isToken(c.Name) {
			v.errorf(fi+".name", "matchType Exact needs name, an HTTP token; got %q", c.Name)
			return nil
		}
		out.Name = c.Name + "="
	case "Prefix":
		if !isToken(c.NamePrefix) {
			v.errorf(fi+".namePrefix", "matchType Prefix needs namePrefix, an HTTP token; got %q", c.NamePrefix)
			return nil
		}
		out.Name = c.NamePrefix
	default:
		v.errorf(fi+".matchType", "matchType %q is not one of Exact, Prefix", c.MatchType)
		return nil
	}
	if c.MaxLength == nil {
		v.errorf(fi, "maxLength is required, 1-%d", maxCookieCapture)
		return nil
	}
	if *c.MaxLength < 1 || *c.MaxLength > maxCookieCapture {
		v.errorf(fi+".maxLength", "maxLength %d is out of range 1-%d", *c.MaxLength, maxCookieCapture)
		return nil
	}
	out.MaxLength = *c.MaxLength
	return out
}

// String describes where the log goes, for plans.
func (a *AccessLog) String() string {
	if a == nil {
		return "off"
	}
	return fmt.Sprintf("%s %s", a.Target, a.Facility)
}
