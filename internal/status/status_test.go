package status

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haroute/haroute/internal/model"
)

func sample() Status {
	applied := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	return Status{
		Ready:      true,
		Generation: 7,
		ConfigHash: "sha256:abc123",
		AppliedAt:  applied,
		Routes: []Route{
			{Key: "default/shop", Host: "shop.example.com", Path: "/", State: model.RouteAdmitted},
			{Key: "default/api", Host: "api.example.com", State: model.RouteAdmittedWithWarnings, Warnings: []string{"haproxy.router.openshift.io/balance: unknown algorithm \"fastest\", using leastconn"}},
			{Key: "team/dup", Host: "shop.example.com", Path: "/", State: model.RouteRejected, Reasons: []string{"host shop.example.com path / is claimed by default/shop (older)"}},
		},
		LastReload: &Reload{
			Time:     applied.Add(-time.Second),
			Duration: 123456789 * time.Nanosecond,
			Reasons:  []string{"route added: default/shop"},
			OK:       true,
		},
		Reloads:        3,
		RuntimeUpdates: 12,
		Fallbacks:      1,
		LastError:      &Error{Time: applied.Add(-time.Minute), Message: "routes/bad.yaml:3:5: error: spec.host: must be a DNS name"},
		HAProxy:        HAProxy{PID: 100, Workers: []int{120}, OldWorkers: []int{101, 110}},
	}
}

func TestStoreGetIsACopy(t *testing.T) {
	var st Store
	if got := st.Get(); got.Ready || got.Generation != 0 {
		t.Fatalf("zero store = %+v, want not ready, generation 0", got)
	}
	st.Set(func(s *Status) { *s = sample() })
	got := st.Get()
	got.Routes[1].Warnings[0] = "changed"
	got.LastReload.Reasons[0] = "changed"
	got.HAProxy.Workers[0] = 1
	again := st.Get()
	if !reflect.DeepEqual(again, sample()) {
		t.Errorf("store changed through a copy:\n%+v\nwant\n%+v", again, sample())
	}
}

func TestStoreConcurrent(t *testing.T) {
	var st Store
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				st.Set(func(s *Status) {
					s.Generation++
					s.Routes = append(s.Routes, Route{Key: "a/b"})
				})
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				_ = st.Get()
			}
		}()
	}
	wg.Wait()
	if g := st.Get().Generation; g != 800 {
		t.Errorf("generation = %d, want 800", g)
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String(), rec.Header().Get("Content-Type")
}

func TestHandler(t *testing.T) {
	var st Store
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "haroute_watch_events_total 1\n")
	})
	h := Handler(&st, metrics)

	tests := []struct {
		name   string
		set    func(*Status)
		path   string
		code   int
		body   string
		ctype  string
		prefix bool
	}{
		{name: "healthz", path: "/healthz", code: 200, body: "ok\n", ctype: "text/plain; charset=utf-8"},
		{name: "readyz before first sync", path: "/readyz", code: 503, body: "not ready: first sync not applied yet\n", ctype: "text/plain; charset=utf-8"},
		{name: "readyz with reason", set: func(s *Status) { s.NotReadyReason = "haproxy is not running" }, path: "/readyz", code: 503, body: "not ready: haproxy is not running\n", ctype: "text/plain; charset=utf-8"},
		{name: "readyz when ready", set: func(s *Status) { s.Ready = true; s.NotReadyReason = "" }, path: "/readyz", code: 200, body: "ok\n", ctype: "text/plain; charset=utf-8"},
		{name: "metrics", path: "/metrics", code: 200, body: "haroute_watch_events_total 1\n", ctype: "text/plain; charset=utf-8"},
		{name: "unknown path", path: "/nope", code: 404, body: "404 page not found\n", ctype: "text/plain; charset=utf-8"},
		{name: "status", set: func(s *Status) { s.Generation = 4 }, path: "/status", code: 200, body: "{\n  \"ready\": true,\n  \"generation\": 4,\n", ctype: "application/json", prefix: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.set != nil {
				st.Set(tt.set)
			}
			code, body, ctype := get(t, h, tt.path)
			if code != tt.code {
				t.Errorf("code = %d, want %d", code, tt.code)
			}
			if tt.prefix && !strings.HasPrefix(body, tt.body) || !tt.prefix && body != tt.body {
				t.Errorf("body = %q, want %q (prefix %v)", body, tt.body, tt.prefix)
			}
			if ctype != tt.ctype {
				t.Errorf("content type = %q, want %q", ctype, tt.ctype)
			}
		})
	}

	if code, _, _ := get(t, Handler(&st, nil), "/metrics"); code != 404 {
		t.Errorf("/metrics without a metrics handler: code %d, want 404", code)
	}
}

func TestServeFetchRoundTrip(t *testing.T) {
	var st Store
	st.Set(func(s *Status) { *s = sample() })
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, ln, Handler(&st, nil)) }()

	got, err := Fetch(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if !reflect.DeepEqual(got, sample()) {
		t.Errorf("fetched\n%+v\nwant\n%+v", got, sample())
	}
	// ":port" means this host.
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := Fetch(context.Background(), ":"+port); err != nil {
		t.Errorf("fetch :%s: %v", port, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after cancel")
	}
}

func TestServeAddressInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Serve(ctx, addr, http.NotFoundHandler())
	want := "metrics address " + addr + ": address already in use"
	if err == nil || err.Error() != want {
		t.Fatalf("Serve on a busy address = %v, want %q", err, want)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("error does not wrap EADDRINUSE")
	}
	if ctx.Err() != nil {
		t.Errorf("Serve did not fail fast")
	}
}

func TestFetchNotRunning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	_, err = Fetch(context.Background(), addr)
	want := "haroute is not running at " + addr + " (connection refused)"
	if err == nil || err.Error() != want {
		t.Fatalf("Fetch = %v, want %q", err, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error does not wrap ECONNREFUSED")
	}
}

func TestFetchBadAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusForbidden)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, err := Fetch(context.Background(), addr)
	want := "haroute at " + addr + " answered 403 Forbidden: nope"
	if err == nil || err.Error() != want {
		t.Errorf("Fetch = %v, want %q", err, want)
	}
}

func TestStatusURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:9191", "http://127.0.0.1:9191/status"},
		{":9191", "http://127.0.0.1:9191/status"},
		{"0.0.0.0:9191", "http://127.0.0.1:9191/status"},
		{"[::]:9191", "http://[::1]:9191/status"},
		{"[::1]:9191", "http://[::1]:9191/status"},
		{"router.local:9191", "http://router.local:9191/status"},
		{"http://10.0.0.1:9191/", "http://10.0.0.1:9191/status"},
	}
	for _, tt := range tests {
		if got := statusURL(tt.in); got != tt.want {
			t.Errorf("statusURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	var b bytes.Buffer
	sample().Format(&b)
	want := `ready:        yes
generation:   7
config hash:  sha256:abc123
applied:      2026-01-02T15:04:05Z
haproxy:      master pid 100, workers 120, old workers 101 110
reloads:      3 (runtime updates 12, fallbacks 1)
last reload:  2026-01-02T15:04:04Z ok in 123ms (route added: default/shop)
last error:   2026-01-02T15:03:05Z routes/bad.yaml:3:5: error: spec.host: must be a DNS name
routes:       3 (1 admitted, 1 admitted-with-warnings, 1 rejected)

ROUTE         HOST              PATH  STATE
default/shop  shop.example.com  /     admitted
default/api   api.example.com   -     admitted-with-warnings
team/dup      shop.example.com  /     rejected
default/api: warning: haproxy.router.openshift.io/balance: unknown algorithm "fastest", using leastconn
team/dup: rejected: host shop.example.com path / is claimed by default/shop (older)
`
	if b.String() != want {
		t.Errorf("Format:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	Status{LastReload: &Reload{Time: time.Unix(0, 0), Duration: time.Second, OK: false, Error: "haproxy -c: exit status 1", Reasons: []string{"ports changed"}}}.Format(&b)
	want = `ready:        no (first sync not applied yet)
generation:   0
config hash:  -
applied:      -
haproxy:      not running
reloads:      0 (runtime updates 0, fallbacks 0)
last reload:  1970-01-01T00:00:00Z FAILED in 1s (ports changed): haproxy -c: exit status 1
last error:   -
routes:       0
`
	if b.String() != want {
		t.Errorf("Format of an empty status:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestRoutesFromAndCounts(t *testing.T) {
	in := []model.RouteStatus{
		{Key: model.RouteKey{Namespace: "default", Name: "a"}, Host: "a.example.com", State: model.RouteAdmitted},
		{Key: model.RouteKey{Namespace: "ns", Name: "b"}, Host: "b.example.com", Path: "/x", State: model.RouteRejected, Reasons: []string{"bad certificate"}},
	}
	got := RoutesFrom(in)
	want := []Route{
		{Key: "default/a", Host: "a.example.com", State: model.RouteAdmitted},
		{Key: "ns/b", Host: "b.example.com", Path: "/x", State: model.RouteRejected, Reasons: []string{"bad certificate"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RoutesFrom = %+v, want %+v", got, want)
	}
	counts := RouteCounts(got)
	if !reflect.DeepEqual(counts, map[string]int{"admitted": 1, "rejected": 1}) {
		t.Errorf("RouteCounts = %v", counts)
	}
}
