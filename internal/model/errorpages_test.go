package model

import "testing"

func TestCheckErrorPage(t *testing.T) {
	const ok503 = "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nsorry"
	for _, c := range []struct {
		name, page string
		code, max  int
		want       string
	}{
		{"complete", ok503, 503, 1000, ""},
		{"without Content-Length", "HTTP/1.1 404 Not Found\nConnection: close\n\n<h1>gone</h1>\n", 404, 1000, ""},
		{"not HTTP", "<html>sorry</html>", 503, 1000, `is not an HTTP response: malformed HTTP response "<html>sorry</html>"`},
		{"another status", ok503, 404, 1000, "has status 503; the page for 404 must answer 404"},
		{"length too long", "HTTP/1.0 503 X\r\nContent-Length: 6\r\n\r\nsorry", 503, 1000, "says Content-Length 6 but its body is 5 bytes"},
		{"empty line with LF before a CRLF one in the body", "HTTP/1.1 503 X\nContent-Length: 3\n\nabcd\r\n\r\nxyz", 503, 1000, "says Content-Length 3 but its body is 11 bytes"},
		{"length too short", "HTTP/1.0 503 X\r\nContent-Length: 4\r\n\r\nsorry", 503, 1000, "says Content-Length 4 but its body is 5 bytes"},
		{"chunked", "HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nsorry\r\n0\r\n\r\n", 503, 1000, "has Transfer-Encoding [chunked]; give the body with a Content-Length"},
		{"too large", ok503, 503, 50, "is 85 bytes; HAProxy sends error pages from one buffer of 50 bytes (headerBufferBytes - headerBufferMaxRewriteBytes)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if err := CheckErrorPage(c.code, []byte(c.page), c.max); err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
