// Command demobackend serves small named backends for `make run` and the
// end-to-end tests: every listener answers each request with its own name,
// so a curl through the router shows which backend served it.
//
//	demobackend hello=127.0.0.1:18081 api=127.0.0.1:18082 \
//	            tls:secure=127.0.0.1:18443:cert.pem:key.pem
//
// A "tls:" listener speaks HTTPS with the given certificate (for reencrypt
// and passthrough routes).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "demobackend:", err)
		os.Exit(1)
	}
}

func run(specs []string) error {
	if len(specs) == 0 {
		return errors.New("usage: demobackend name=addr:port [tls:name=addr:port:cert:key]…")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, len(specs))
	for _, spec := range specs {
		srv, ln, err := listen(spec)
		if err != nil {
			return err
		}
		fmt.Printf("demobackend: %s listening on %s\n", spec, ln.Addr())
		go func() { errc <- srv.Serve(ln) }()
		defer srv.Close()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

func listen(spec string) (*http.Server, net.Listener, error) {
	secure := strings.HasPrefix(spec, "tls:")
	spec = strings.TrimPrefix(spec, "tls:")
	name, rest, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return nil, nil, fmt.Errorf("bad listener %q: want name=addr:port", spec)
	}
	addr := rest
	var certFile, keyFile string
	if secure {
		// addr:port:cert:key, cut from the right: an IPv6 address
		// ([::1]:8443) has colons of its own.
		var ok bool
		if addr, keyFile, ok = cutLast(rest, ":"); ok {
			addr, certFile, ok = cutLast(addr, ":")
		}
		if _, _, err := net.SplitHostPort(addr); !ok || err != nil || certFile == "" || keyFile == "" {
			return nil, nil, fmt.Errorf("bad tls listener %q: want tls:name=addr:port:cert:key", spec)
		}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		fmt.Fprintf(w, "%s\n", name)
	})
	srv := &http.Server{Handler: handler}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listener %s: %w", name, err)
	}
	if secure {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("listener %s: %w", name, err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	return srv, ln, nil
}

// cutLast slices s around the last instance of sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
