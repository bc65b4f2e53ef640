package model

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Buffers, HTTP timeouts and empty requests: the IngressController's
// tuningOptions.headerBuffer*, httpKeepAliveTimeout and
// httpEmptyRequestsPolicy, with the bounds its API enforces.

const (
	// minHeaderBufferBytes is the IngressController API's minimum; h2
	// needs 16 KiB frames to fit in a buffer.
	minHeaderBufferBytes           = 16384
	minHeaderBufferMaxRewriteBytes = 4096
	// maxHeaderBufferBytes bounds what one connection may reserve: two
	// buffers each way. The API sets no maximum; HAProxy's own checks
	// stop far above anything a request head needs.
	maxHeaderBufferBytes = 1 << 20
	maxHTTPKeepAlive     = 15 * time.Minute
	minHTTPKeepAlive     = time.Millisecond
)

// keepAlivePattern is the IngressController's pattern for
// httpKeepAliveTimeout: units ms, s and m only.
var keepAlivePattern = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m))+$`)

func (v *rcCheck) buffers(t *TuningOptions, s *Settings) {
	const (
		fb = "spec.tuningOptions.headerBufferBytes"
		fr = "spec.tuningOptions.headerBufferMaxRewriteBytes"
	)
	ok := true
	if p := t.HeaderBufferBytes; p != nil {
		switch {
		case *p < minHeaderBufferBytes:
			v.errorf(fb, "headerBufferBytes %d is below the minimum of %d", *p, minHeaderBufferBytes)
			ok = false
		case *p > maxHeaderBufferBytes:
			v.errorf(fb, "headerBufferBytes %d is above %d: each connection reserves it several times", *p, maxHeaderBufferBytes)
			ok = false
		default:
			s.HeaderBufferBytes = *p
		}
	}
	if p := t.HeaderBufferMaxRewriteBytes; p != nil {
		if *p < minHeaderBufferMaxRewriteBytes {
			v.errorf(fr, "headerBufferMaxRewriteBytes %d is below the minimum of %d", *p, minHeaderBufferMaxRewriteBytes)
			ok = false
		} else {
			s.HeaderBufferMaxRewriteBytes = *p
		}
	}
	// Requests are limited to the difference: it must leave room for
	// one. Only an explicit rewrite size can reach the buffer's minimum.
	if ok && s.HeaderBufferMaxRewriteBytes >= s.HeaderBufferBytes {
		v.errorf(fr, "headerBufferMaxRewriteBytes %d must be less than headerBufferBytes %d (requests may use only the difference)",
			s.HeaderBufferMaxRewriteBytes, s.HeaderBufferBytes)
	}
}

func (v *rcCheck) httpTimeouts(t *TuningOptions, s *Settings) {
	if raw := t.HTTPKeepAliveTimeout; raw != "" {
		const f = "spec.tuningOptions.httpKeepAliveTimeout"
		d, err := time.ParseDuration(raw)
		switch {
		case !keepAlivePattern.MatchString(raw) || err != nil:
			v.errorf(f, "httpKeepAliveTimeout %q must be a duration with units ms, s or m (e.g. 300ms, 1.5s, 2m45s)", raw)
		case d < minHTTPKeepAlive || d > maxHTTPKeepAlive:
			v.errorf(f, "httpKeepAliveTimeout %q is out of range 1ms-15m", raw)
		default:
			s.HTTPKeepAliveTimeout = d
		}
	}
	if d, ok := v.timeout("httpRequestTimeout", t.HTTPRequestTimeout); ok {
		s.HTTPRequestTimeout = d
	}
}

// toggle reads an enum of two values at field: off (also when unset)
// and on. It reports whether the value is on; any other is an error.
func (v *rcCheck) toggle(field, value, off, on string) bool {
	switch value {
	case "", off:
		return false
	case on:
		return true
	}
	name := field[strings.LastIndexByte(field, '.')+1:]
	v.errorf(field, "%s %q is not one of %s, %s", name, value, off, on)
	return false
}

func (v *rcCheck) publishing(e *EndpointPublishingStrategy, s *Settings) {
	const f = "spec.endpointPublishingStrategy"
	switch e.Type {
	case "", "HostNetwork":
	default:
		v.errorf(f+".type", "type %q is not supported: haroute listens on the host network (HostNetwork)", e.Type)
	}
	switch p := e.HostNetwork.Protocol; p {
	case "", "TCP":
	case "PROXY":
		s.ProxyProtocol = true
	default:
		v.errorf(f+".hostNetwork.protocol", "protocol %q is not one of TCP, PROXY", p)
	}
}

// mimeTypePattern is a media type as Content-Type carries it, with
// parameters if any ("text/css; charset=utf-8", as the IngressController
// documentation writes it). HAProxy compares each listed type with the
// start of a response's Content-Type.
var mimeTypePattern = regexp.MustCompile(`^(?i)(x-[a-z0-9!#$&^_.+-]+|application|audio|font|image|message|model|multipart|text|video)/[a-z0-9!#$&^_.+-]+(;[^[:cntrl:]]*)?$`)

// maxCompressionTypes is as many types as one `compression type` line
// holds: HAProxy reads at most 64 words of a line.
const maxCompressionTypes = 62

func (v *rcCheck) compression(types []string) []string {
	const f = "spec.httpCompression.mimeTypes"
	if len(types) > maxCompressionTypes {
		v.errorf(f, "at most %d media types are allowed, got %d", maxCompressionTypes, len(types))
		return nil
	}
	seen := map[string]bool{}
	ok := true
	for i, t := range types {
		switch {
		case !mimeTypePattern.MatchString(t):
			v.errorf(index(f, i), "%q is not a media type (type/subtype, e.g. text/html, application/json, text/css; charset=utf-8)", t)
			ok = false
		case seen[strings.ToLower(t)]:
			v.errorf(index(f, i), "%s is listed twice", t)
			ok = false
		}
		seen[strings.ToLower(t)] = true
	}
	if !ok || len(types) == 0 {
		return nil
	}
	return append([]string(nil), types...)
}

// AnnotationEnableHTTP2 turns HTTP/2 on for an IngressController.
const AnnotationEnableHTTP2 = "ingress.operator.openshift.io/default-enable-http2"

// http2 is spec.http2, else the IngressController's annotation.
func (v *rcCheck) http2(rc *RouterConfig) bool {
	if p := rc.Spec.HTTP2; p != nil {
		return *p
	}
	a, ok := rc.Meta.Annotations[AnnotationEnableHTTP2]
	if !ok {
		return false
	}
	on, err := strconv.ParseBool(a)
	if err != nil {
		v.errorf("metadata.annotations", "annotation %s: %q is not true or false", AnnotationEnableHTTP2, a)
	}
	return on
}
