package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// defaultNotReady is what /readyz says before the daemon set a reason.
const defaultNotReady = "first sync not applied yet"

// Handler serves the health, readiness, status and metrics endpoints:
//
//	/healthz  200 "ok" while the process is alive and serving HTTP
//	/readyz   200 "ok" once the first sync is applied and HAProxy is up,
//	          503 "not ready: <reason>" before that
//	/status   the Status as JSON, each served route with its servers'
//	          states read from servers (when not nil) at that moment
//	/metrics  the metrics handler given (404 when nil)
func Handler(store *Store, metrics http.Handler, servers ServersSource) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, reason := store.Ready()
		if ready {
			writeText(w, http.StatusOK, "ok")
			return
		}
		if reason == "" {
			reason = defaultNotReady
		}
		writeText(w, http.StatusServiceUnavailable, "not ready: "+reason)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, req *http.Request) {
		st := store.Get()
		if servers != nil && len(st.Routes) > 0 {
			st.withServers(req.Context(), servers)
		}
		body, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			// Status holds only plain values; this cannot happen short of
			// a programming error, which the client should see.
			http.Error(w, "encode status: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(body, '\n'))
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return mux
}

// ServersSource reads from HAProxy the servers of every route it serves,
// by route key ("namespace/name").
type ServersSource func(ctx context.Context) (map[string]Servers, error)

// serversTimeout bounds the read of the servers' states, well within
// Fetch's own timeout: a wedged HAProxy leaves the rest of the status
// to be shown.
const serversTimeout = 4 * time.Second

// withServers sets each route's servers as source reads them, or
// ServersError.
func (s *Status) withServers(ctx context.Context, source ServersSource) {
	ctx, cancel := context.WithTimeout(ctx, serversTimeout)
	defer cancel()
	byRoute, err := source(ctx)
	if err != nil {
		s.ServersError = err.Error()
		return
	}
	for i := range s.Routes {
		if c, ok := byRoute[s.Routes[i].Key]; ok && s.Routes[i].Serving() {
			s.Routes[i].Servers = &c
		}
	}
}

func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// Listen opens the status/metrics address. It is separate from Serve so the
// daemon can fail fast — before it starts HAProxy — when the address is
// taken, and so tests can listen on 127.0.0.1:0 and learn the port.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// The net.OpError text repeats the address and adds "bind:";
			// operators only need to know which flag to change.
			return nil, fmt.Errorf("metrics address %s: %w", addr, syscall.EADDRINUSE)
		}
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	return ln, nil
}

// shutdownGrace bounds how long in-flight requests may take at shutdown.
const shutdownGrace = 5 * time.Second

// ServeListener serves h on ln until ctx is done. It returns nil after a
// shutdown caused by ctx, and the error otherwise.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve status on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		<-errc // http.ErrServerClosed
		return nil
	}
}

// fetchTimeout applies when the caller's context has no deadline, so
// `haroute status` never hangs on a wedged daemon.
const fetchTimeout = 10 * time.Second

// Fetch asks the daemon listening on addr for its status. addr is what was
// given to --metrics-address: "host:port", ":port" (meaning this host) or a
// URL.
func Fetch(ctx context.Context, addr string) (Status, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fetchTimeout)
		defer cancel()
	}
	url := statusURL(addr)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Status{}, fmt.Errorf("ask haroute at %s: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return Status{}, fmt.Errorf("haroute is not running at %s (%w); give --address if its metrics address is another", addr, syscall.ECONNREFUSED)
		}
		return Status{}, fmt.Errorf("ask haroute at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	// A status document of a large router is big, but not this big.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return Status{}, fmt.Errorf("read status from %s: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Status{}, fmt.Errorf("haroute at %s answered %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	var s Status
	if err := json.Unmarshal(body, &s); err != nil {
		return Status{}, fmt.Errorf("decode status from %s: %w", addr, err)
	}
	return s, nil
}

// statusURL turns a listen address into the URL of /status on it. A
// wildcard or empty host means the daemon listens everywhere, which
// includes loopback.
func statusURL(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimSuffix(addr, "/") + "/status"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/status"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/status"
}
