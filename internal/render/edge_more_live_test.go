package render

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Live tests of the RouterConfig's edge settings, continued.

// rawRequestTo is rawRequest to host:port.
func rawRequestTo(t *testing.T, host string, port int, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	out, _ := io.ReadAll(c)
	return string(out)
}

// TestLiveBindAddresses: with an IPv4 and an IPv6 address listed, the
// router answers on both, on every listener.
func TestLiveBindAddresses(t *testing.T) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	} else {
		ln.Close()
	}
	s := edgeSettings(t)
	s.BindAddresses = []string{"127.0.0.1", "::1"}
	startEdge(t, s, nil, route("t", "web", "web.example.com", "", svc("web", 100, echoBackend(t))))
	for _, host := range []string{"127.0.0.1", "::1"} {
		resp := rawRequestTo(t, host, s.HTTPPort, "GET /x HTTP/1.1\r\nHost: web.example.com\r\nConnection: close\r\n\r\n")
		if got := statusLine(resp); got != "HTTP/1.1 200 OK" || !strings.Contains(resp, "path=/x") {
			t.Errorf("HTTP on %s: %q, want 200 from the backend", host, got)
		}
		resp = rawRequestTo(t, host, s.StatsPort, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if got := statusLine(resp); got != "HTTP/1.1 200 OK" {
			t.Errorf("stats on %s: %q, want 200", host, got)
		}
		c, err := net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(s.HTTPSPort)))
		if err != nil {
			t.Errorf("HTTPS on %s: %v", host, err)
		} else {
			c.Close()
		}
	}
}
