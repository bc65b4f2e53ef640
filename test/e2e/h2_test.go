package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/testutil"
	"github.com/haroute/haroute/test/publish"
)

// protoHandler answers with name and the protocol the request came in.
func protoHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name+" "+r.Proto) })
}

// h2cBackend is a clear-text server on 127.0.0.1 that speaks HTTP/1.1 and
// HTTP/2 with prior knowledge (h2c), as a gRPC service would.
func h2cBackend(t *testing.T, name string) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: protoHandler(name), Protocols: &protos}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &backend{Name: name, Port: ln.Addr().(*net.TCPAddr).Port}
}

// endpointsAppProtocol is endpointsYAML with appProtocol on every port.
func endpointsAppProtocol(service, appProtocol string, bs ...*backend) string {
	return strings.ReplaceAll(endpointsYAML(service, bs...), "      - port: ",
		"      - appProtocol: "+appProtocol+"\n        port: ")
}

// An endpoint port with appProtocol h2c is spoken to in HTTP/2 (`proto
// h2`), from the config and when added at runtime, as OpenShift does; a
// port without it stays HTTP/1.1.
func TestH2CEndpointsSpeakHTTP2(t *testing.T) {
	r := newRouter(t)
	g1, g2, plain := h2cBackend(t, "g1"), h2cBackend(t, "g2"), h2cBackend(t, "plain")
	gen := func(grpc ...*backend) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig(""),
			"routes.yaml", join(routeYAML("grpc", "grpc.e2e.test", "", "grpc"), routeYAML("plain", "plain.e2e.test", "", "plain")),
			"endpoints.yaml", join(endpointsAppProtocol("grpc", "kubernetes.io/h2c", grpc...), endpointsYAML("plain", plain)),
		)
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen(g1)))
	r.start("atomic")
	r.serves("grpc.e2e.test", "/", "g1 HTTP/2.0")
	r.serves("plain.e2e.test", "/", "plain HTTP/1.1")

	before := r.reloads()
	must(t, w.Publish(gen(g1, g2)))
	r.eventually(20*time.Second, "runtime-added h2c endpoint answers in HTTP/2", func() error {
		got, err := r.get("grpc.e2e.test", "/")
		if err != nil || got != "g2 HTTP/2.0" {
			return fmt.Errorf("%q %v", got, err)
		}
		return nil
	})
	for range 10 {
		if got, err := r.get("grpc.e2e.test", "/"); err != nil || !strings.HasSuffix(got, " HTTP/2.0") {
			t.Fatalf("grpc answered %q, %v; want HTTP/2.0 from every server", got, err)
		}
	}
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding an h2c endpoint caused %d reloads, want 0", got)
	}
	if state := readShowServers(t, r, "be_http:e2e:grpc"); !strings.Contains(state, fmt.Sprintf("_%d ", g2.Port)) {
		t.Fatalf("g2 is not a server of the backend:\n%s", state)
	}
}

// h2TLSBackend is an HTTPS server on 127.0.0.1 presenting cert that offers
// h2 and http/1.1 by ALPN.
func h2TLSBackend(t *testing.T, name string, cert tls.Certificate) *backend {
	t.Helper()
	s := httptest.NewUnstartedServer(protoHandler(name))
	s.EnableHTTP2 = true
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return &backend{Name: name, Port: s.Listener.Addr().(*net.TCPAddr).Port}
}

// With http2 on, a reencrypt backend is offered h2 (`alpn h2,http/1.1`),
// from the config and for a server added at runtime, as OpenShift's
// template does; with http2 off it is spoken to in HTTP/1.1.
func TestReencryptBackendsGetH2WhenHTTP2IsOn(t *testing.T) {
	r := newRouter(t)
	ca := testutil.NewCA(t, "service CA")
	web1 := h2TLSBackend(t, "web1", ca.Issue(t, "web.e2e.svc"))
	web2 := h2TLSBackend(t, "web2", ca.Issue(t, "web.e2e.svc"))
	route := `apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: shop
  namespace: e2e
spec:
  host: shop.e2e.test
  to:
    kind: Service
    name: web
  tls:
    termination: reencrypt
`
	gen := func(http2 bool, eps ...*backend) map[string][]byte {
		return files(
			"router.yaml", r.routerConfig(fmt.Sprintf("  http2: %t\n  defaultDestinationCA: |\n%s", http2, indent(ca.PEM, 4))),
			"routes.yaml", route,
			"endpoints.yaml", endpointsYAML("web", eps...),
		)
	}
	servedAs := func(what, want string) {
		r.eventually(20*time.Second, what, func() error {
			status, body, err := r.getHTTPS("shop.e2e.test")
			if err != nil || status != 200 || body != want {
				return fmt.Errorf("%d %q %v", status, body, err)
			}
			return nil
		})
	}
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen(true, web1)))
	r.start("atomic")
	servedAs("reencrypt backend spoken to in h2", "web1 HTTP/2.0")

	before := r.reloads()
	must(t, w.Publish(gen(true, web1, web2)))
	servedAs("runtime-added reencrypt server spoken to in h2", "web2 HTTP/2.0")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("adding an endpoint caused %d reloads, want 0", got)
	}

	must(t, w.Publish(gen(false, web1)))
	servedAs("http2 off: reencrypt backend spoken to in HTTP/1.1", "web1 HTTP/1.1")
}

// An endpoint that comes back while its server still drains, with other
// options (here appProtocol h2c), is not re-enabled as it drained: the
// server that drains keeps the options it was added with, and would
// speak HTTP/1.1 where the files say HTTP/2. It goes in by a reload.
func TestEndpointBackWhileDrainingWithOtherOptions(t *testing.T) {
	r := newRouter(t)
	g1 := h2cBackend(t, "g1")
	// g2 also holds a stream open, so its server drains rather than goes.
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	mux := http.NewServeMux()
	mux.Handle("/", protoHandler("g2"))
	mux.HandleFunc("/stream", func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintln(w, "g2 "+req.Proto)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protos}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	g2 := &backend{Name: "g2", Port: ln.Addr().(*net.TCPAddr).Port}

	endpoints := func(g2Proto string, withG2 bool) string {
		y := "apiVersion: v1\nkind: Endpoints\nmetadata: {name: grpc, namespace: e2e}\nsubsets:\n" +
			fmt.Sprintf("  - addresses: [{ip: 127.0.0.1}]\n    ports: [{port: %d}]\n", g1.Port)
		if withG2 {
			y += fmt.Sprintf("  - addresses: [{ip: 127.0.0.1}]\n    ports: [{port: %d%s}]\n", g2.Port, g2Proto)
		}
		return y
	}
	gen := files("router.yaml", r.routerConfig(""), "route.yaml", annotated(routeYAML("grpc", "grpc.e2e.test", "", "grpc"),
		"haproxy.router.openshift.io/disable_cookies", `"true"`), "endpoints.yaml", endpoints("", true))
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen))
	r.start("atomic")
	r.serves("grpc.e2e.test", "/", "g2 HTTP/1.1")

	// A stream on g2, then g2 leaves: drained, not deleted.
	var stream *http.Response
	for i := 0; stream == nil; i++ {
		if i == 10 {
			t.Fatal("no stream reached g2 in 10 tries")
		}
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/stream", r.http), nil)
		req.Host = "grpc.e2e.test"
		resp, err := (&http.Client{}).Do(req)
		must(t, err)
		line, _ := bufio.NewReader(resp.Body).ReadString('\n')
		if strings.HasPrefix(line, "g2 ") {
			stream = resp
			t.Cleanup(func() { resp.Body.Close() })
		} else {
			resp.Body.Close()
		}
	}
	gen["endpoints.yaml"] = []byte(endpoints("", false))
	must(t, w.Publish(gen))
	r.eventually(20*time.Second, "g2 drained", func() error {
		for range 6 {
			if got, err := r.get("grpc.e2e.test", "/"); err != nil || got != "g1 HTTP/1.1" {
				return fmt.Errorf("answered %q, %v", got, err)
			}
		}
		return nil
	})

	// Back, now h2c.
	gen["endpoints.yaml"] = []byte(endpoints(", appProtocol: kubernetes.io/h2c", true))
	must(t, w.Publish(gen))
	r.serves("grpc.e2e.test", "/", "g2 HTTP/2.0")
	once.Do(func() { close(release) })
}

// With http2 on, a route's own certificate is offered with h2 only while
// no other route has the same certificate, as OpenShift's router offers
// it: a browser would otherwise send another host's requests over the
// connection it opened for this one (connection coalescing). A second
// route with the same certificate takes h2 off both, and deleting it
// gives h2 back, each at runtime.
func TestHTTP2OnlyOnACertificateOfItsOwn(t *testing.T) {
	r := newRouter(t)
	one := startBackend(t, "one")
	cert, key := makeCert(t, "a.h2.e2e.test", 4001)
	gen := files("router.yaml", r.routerConfig("  http2: true\n"),
		"a.yaml", ownCertRouteYAML("a", "a.h2.e2e.test", "one", cert, key),
		"c.yaml", routeYAML("c", "c.h2.e2e.test", "", "one"),
		"endpoints.yaml", endpointsYAML("one", one))
	w := publish.NewAtomicWriter(r.dir)
	must(t, w.Publish(gen))
	r.start("atomic")
	negotiates := func(host, want string) {
		t.Helper()
		r.eventually(20*time.Second, host+" negotiates "+want, func() error {
			conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.https),
				&tls.Config{ServerName: host, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
			if err != nil {
				return err
			}
			defer conn.Close()
			if got := conn.ConnectionState().NegotiatedProtocol; got != want {
				return fmt.Errorf("negotiated %q", got)
			}
			return nil
		})
	}
	negotiates("a.h2.e2e.test", "h2")

	before := r.reloads()
	gen["b.yaml"] = []byte(ownCertRouteYAML("b", "b.h2.e2e.test", "one", cert, key))
	must(t, w.Publish(gen))
	negotiates("b.h2.e2e.test", "http/1.1")
	negotiates("a.h2.e2e.test", "http/1.1")

	delete(gen, "b.yaml")
	must(t, w.Publish(gen))
	negotiates("a.h2.e2e.test", "h2")
	if got := r.reloads() - before; got != 0 {
		t.Fatalf("sharing a certificate and deleting the route that shared it took %d reloads, want 0", got)
	}
}
