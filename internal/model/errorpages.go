package model

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"
)

// Custom error pages (spec.httpErrorCodePages): files holding a whole
// HTTP response each, which HAProxy sends as they are, named as the
// IngressController's ConfigMap keys.

// ErrorPageFiles maps the status codes haroute serves custom pages for to
// their file names in the directory, as OpenShift names them.
var ErrorPageFiles = map[int]string{
	503: "error-page-503.http",
	404: "error-page-404.http",
}

// CheckErrorPage judges the page for code: a complete HTTP/1.x response
// with that status, a body as long as its Content-Length says, small
// enough for HAProxy to hold in one buffer (maxSize: the buffer less the
// space kept for rewrites).
func CheckErrorPage(code int, data []byte, maxSize int) error {
	if len(data) > maxSize {
		return fmt.Errorf("is %d bytes; HAProxy sends error pages from one buffer of %d bytes (headerBufferBytes - headerBufferMaxRewriteBytes)", len(data), maxSize)
	}
	r, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), nil)
	if err != nil {
		return fmt.Errorf("is not an HTTP response: %w", err)
	}
	r.Body.Close()
	switch {
	case r.ProtoMajor != 1:
		return fmt.Errorf("is an %s response; want HTTP/1.0 or HTTP/1.1", r.Proto)
	case r.StatusCode != code:
		return fmt.Errorf("has status %d; the page for %d must answer %d", r.StatusCode, code, code)
	case len(r.TransferEncoding) > 0:
		return fmt.Errorf("has Transfer-Encoding %v; give the body with a Content-Length", r.TransferEncoding)
	}
	if cl := r.Header.Get("Content-Length"); cl != "" {
		if n, err := strconv.Atoi(cl); err != nil || n != len(data)-headLength(data) {
			return fmt.Errorf("says Content-Length %s but its body is %d bytes", cl, len(data)-headLength(data))
		}
	}
	return nil
}

// headLength is the length of a response's status line and headers: up to
// the first empty line, whichever line ending it has (as HAProxy and Go's
// parser read it; preferring CRLF CRLF anywhere counted a body holding one
// as headers, and HAProxy refused the page).
func headLength(data []byte) int {
	end := len(data)
	for _, sep := range []string{"\r\n\r\n", "\n\n", "\n\r\n"} {
		if i := bytes.Index(data, []byte(sep)); i >= 0 && i+len(sep) < end {
			end = i + len(sep)
		}
	}
	return end
}
