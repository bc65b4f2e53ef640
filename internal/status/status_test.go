package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

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
			{Key: "default/shop", Host: "shop.example.com", Path: "/", State: model.RouteAdmitted,
				Notes:   []string{`spec.to.name: no Endpoints or EndpointSlice found for service "shop"; the route answers 503 until one appears`},
				Servers: &Servers{}},
			{Key: "default/api", Host: "api.example.com", State: model.RouteAdmittedWithWarnings, Warnings: []string{"haproxy.router.openshift.io/balance: unknown algorithm \"fastest\", using leastconn"},
				Servers: &Servers{Up: 1, Down: 1, Maint: 1}},
			{Key: "team/dup", Host: "shop.example.com", Path: "/", State: model.RouteRejected, Reasons: []string{"host shop.example.com path / is claimed by default/shop (older)"}, Source: "routes/dup.yaml:1:1"},
			{Key: "default/cart", Host: "cart.example.com", State: model.RouteStale, Reasons: []string{"routes/cart.yaml:7:11: spec.host: must not contain a port"}, Source: "routes/cart.yaml:1:1",
				Servers: &Servers{Unchecked: 1}},
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
		LastError:      &Error{Time: applied.Add(-time.Minute), LastSeen: applied, Message: "routes/cart.yaml:7:11: error: spec.host: must not contain a port"},
		RecentErrors: []Error{
			{Time: applied.Add(-time.Hour), Message: "reload failed (will retry): haproxy -c: exit status 1", Resolved: applied.Add(-50 * time.Minute)},
			{Time: applied.Add(-time.Minute), LastSeen: applied, Message: "routes/cart.yaml:7:11: error: spec.host: must not contain a port"},
		},
		InputProblems: InputProblems{Errors: 2, Warnings: 2, ErrorList: []string{"routes/cart.yaml:7:11: error: spec.host: must not contain a port"}},
		StaleObjects:  []string{"Endpoints default/cart: serving its last good version; the current one, in endpoints/cart.yaml, has errors"},
		DeletionGuard: &Guard{Since: applied.Add(-10 * time.Second), Dropped: 3, Of: 4, Reason: "the same routes must stay dropped for the quiet period before they are"},
		HeldFiles:     []string{"endpoints/new.yaml"},
		HAProxy:       HAProxy{PID: 100, Workers: []int{120}, OldWorkers: []int{101, 110}},
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
	got.Routes[3].Reasons[0] = "changed"
	got.LastReload.Reasons[0] = "changed"
	got.LastError.Message = "changed"
	got.InputProblems.ErrorList[0] = "changed"
	got.RecentErrors[0].Message = "changed"
	got.DeletionGuard.Dropped = 99
	got.HeldFiles[0] = "changed"
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
	h := Handler(&st, metrics, nil)

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
		// Stale routes serve their last good version: still ready.
		{name: "readyz with stale routes and errors", set: func(s *Status) {
			s.Routes = []Route{{Key: "a/b", State: model.RouteStale, Reasons: []string{"x.yaml:1:1: bad"}}}
			s.LastError = &Error{Message: "1 problem(s)"}
			s.InputProblems.Errors = 1
		}, path: "/readyz", code: 200, body: "ok\n", ctype: "text/plain; charset=utf-8"},
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

	if code, _, _ := get(t, Handler(&st, nil, nil), "/metrics"); code != 404 {
		t.Errorf("/metrics without a metrics handler: code %d, want 404", code)
	}
}

// /status reads each served route's servers from HAProxy when asked; a
// read that fails says why and leaves the rest of the status.
func TestHandlerReadsServers(t *testing.T) {
	var st Store
	st.Set(func(s *Status) {
		s.Routes = []Route{
			{Key: "ns/up", State: model.RouteAdmitted},
			{Key: "ns/gone", State: model.RouteRejected},
			{Key: "ns/new", State: model.RouteAdmitted}, // not yet in HAProxy's stats
		}
	})
	read := map[string]Servers{"ns/up": {Up: 2, Down: 1}, "ns/gone": {Up: 1}}
	var fail error
	h := Handler(&st, nil, func(context.Context) (map[string]Servers, error) { return read, fail })
	decode := func() Status {
		t.Helper()
		code, body, _ := get(t, h, "/status")
		var got Status
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil {
			t.Fatalf("/status: %d %v\n%s", code, err, body)
		}
		return got
	}
	got := decode()
	if s := got.Routes[0].Servers; s == nil || *s != (Servers{Up: 2, Down: 1}) {
		t.Errorf("ns/up servers = %+v, want 2 up, 1 down", s)
	}
	for _, r := range got.Routes[1:] {
		if r.Servers != nil {
			t.Errorf("%s (%s) has servers %+v: not served, or not read", r.Key, r.State, *r.Servers)
		}
	}
	if got.ServersError != "" {
		t.Errorf("servers error %q after a good read", got.ServersError)
	}
	if st.Get().Routes[0].Servers != nil {
		t.Error("the servers read for one request were written into the store")
	}

	fail = errors.New("admin socket: connection refused")
	got = decode()
	if got.ServersError != fail.Error() || got.Routes[0].Servers != nil || len(got.Routes) != 3 {
		t.Errorf("failed read: error %q, routes %+v", got.ServersError, got.Routes)
	}
	var b bytes.Buffer
	got.Format(&b)
	if !strings.Contains(b.String(), "servers:         not read (admin socket: connection refused)") {
		t.Errorf("Format of a failed read:\n%s", b.String())
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
	go func() { done <- ServeListener(ctx, ln, Handler(&st, nil, nil)) }()

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
	want := "haroute is not running at " + addr + " (connection refused); give --address if its metrics address is another"
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
	want := `ready:           yes
generation:      7
config hash:     sha256:abc123
applied:         2026-01-02T15:04:05Z
haproxy:         master pid 100, workers 120, old workers 101 110
reloads:         3 (runtime updates 12, fallbacks 1)
last reload:     2026-01-02T15:04:04Z ok in 123ms (route added: default/shop)
last error:      since 2026-01-02T15:03:05Z routes/cart.yaml:7:11: error: spec.host: must not contain a port
input problems:  2 errors, 2 warnings, 0 notes
                 routes/cart.yaml:7:11: error: spec.host: must not contain a port
                 … and 1 more: haroute check on the directory lists them
deletion guard:  holding a generation since 2026-01-02T15:03:55Z that drops 3 of 4 routes (the same routes must stay dropped for the quiet period before they are)
held files:      endpoints/new.yaml (changed without a final newline: the served version stays until each reads the same for the quiet period)
routes:          4 (1 admitted, 1 admitted-with-warnings, 1 stale, 1 rejected)
servers:         1 of 3 routes have no server up or unchecked (503; a passthrough route closes the connection): default/shop

ROUTE         HOST              PATH  STATE                   SERVERS                SOURCE
default/shop  shop.example.com  /     admitted                none                   -
default/api   api.example.com   -     admitted-with-warnings  1 up, 1 down, 1 maint  -
team/dup      shop.example.com  /     rejected                -                      routes/dup.yaml:1:1
default/cart  cart.example.com  -     stale                   1 unchecked            routes/cart.yaml:1:1
default/shop: note: spec.to.name: no Endpoints or EndpointSlice found for service "shop"; the route answers 503 until one appears
default/api: warning: haproxy.router.openshift.io/balance: unknown algorithm "fastest", using leastconn
team/dup: rejected: host shop.example.com path / is claimed by default/shop (older)
default/cart: stale, serving its last good version: routes/cart.yaml:7:11: spec.host: must not contain a port

STALE OBJECTS
Endpoints default/cart: serving its last good version; the current one, in endpoints/cart.yaml, has errors

RECENT ERRORS
2026-01-02T14:04:05Z, resolved 2026-01-02T14:14:05Z: reload failed (will retry): haproxy -c: exit status 1
2026-01-02T15:03:05Z (last 2026-01-02T15:04:05Z), standing: routes/cart.yaml:7:11: error: spec.host: must not contain a port
`
	if b.String() != want {
		t.Errorf("Format:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	Status{LastReload: &Reload{Time: time.Unix(0, 0), Duration: time.Second, OK: false, Error: "haproxy -c: exit status 1", Reasons: []string{"ports changed"}}}.Format(&b)
	want = `ready:           no (first sync not applied yet)
generation:      0
config hash:     -
applied:         -
haproxy:         not running
reloads:         0 (runtime updates 0, fallbacks 0)
last reload:     1970-01-01T00:00:00Z FAILED in 1s (ports changed): haproxy -c: exit status 1
last error:      -
input problems:  none
deletion guard:  -
routes:          0
`
	if b.String() != want {
		t.Errorf("Format of an empty status:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestRoutesFromAndCounts(t *testing.T) {
	in := []*model.RouteStatus{
		{Key: model.RouteKey{Namespace: "default", Name: "a"}, Host: "a.example.com", State: model.RouteAdmitted, Source: model.Position{Path: "routes/a.yaml", Line: 12, Col: 1}},
		{Key: model.RouteKey{Namespace: "ns", Name: "b"}, Host: "b.example.com", Path: "/x", State: model.RouteRejected, Reasons: []string{"bad certificate"}},
		{Key: model.RouteKey{Namespace: "ns", Name: "c"}, Host: "c.example.com", State: model.RouteStale,
			Reasons: []string{"routes/c.yaml:4:9: spec.host: must not contain a port"}, Source: model.Position{Path: "routes/c.yaml", Line: 1, Col: 1}},
	}
	got := RoutesFrom(in)
	want := []Route{
		// An admitted route names its file too: an operator looking
		// for where a host is served from needs it most.
		{Key: "default/a", Host: "a.example.com", State: model.RouteAdmitted, Source: "routes/a.yaml:12:1"},
		{Key: "ns/b", Host: "b.example.com", Path: "/x", State: model.RouteRejected, Reasons: []string{"bad certificate"}},
		{Key: "ns/c", Host: "c.example.com", State: model.RouteStale, Reasons: []string{"routes/c.yaml:4:9: spec.host: must not contain a port"}, Source: "routes/c.yaml:1:1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RoutesFrom = %+v, want %+v", got, want)
	}
	counts := RouteCounts(in)
	if !reflect.DeepEqual(counts, map[string]int{"admitted": 1, "rejected": 1, "stale": 1}) {
		t.Errorf("RouteCounts = %v", counts)
	}
	for _, r := range got {
		if want := r.State != model.RouteRejected; r.Serving() != want {
			t.Errorf("%s (%s): Serving() = %v, want %v", r.Key, r.State, r.Serving(), want)
		}
	}
}

// errorStep is one call on the store: record msg, or clear when msg is "".
type errorStep struct {
	at  int // minutes after t0
	msg string
}

func TestStoreErrors(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	tests := []struct {
		name   string
		steps  []errorStep
		last   *Error
		recent []Error
	}{
		{
			name:   "no error",
			steps:  nil,
			last:   nil,
			recent: nil,
		},
		{
			name:   "an error stands",
			steps:  []errorStep{{1, "bad host"}},
			last:   &Error{Time: at(1), Message: "bad host"},
			recent: []Error{{Time: at(1), Message: "bad host"}},
		},
		{
			name:   "cleared when the problem is gone",
			steps:  []errorStep{{1, "bad host"}, {3, ""}},
			last:   nil,
			recent: []Error{{Time: at(1), Message: "bad host", Resolved: at(3)}},
		},
		{
			name:   "a repeat keeps its start and updates last seen",
			steps:  []errorStep{{1, "bad host"}, {2, "bad host"}, {4, "bad host"}},
			last:   &Error{Time: at(1), LastSeen: at(4), Message: "bad host"},
			recent: []Error{{Time: at(1), LastSeen: at(4), Message: "bad host"}},
		},
		{
			name:  "alternating standing problems do not fill the history",
			steps: []errorStep{{1, "a"}, {1, "b"}, {2, "a"}, {2, "b"}, {3, "a"}},
			last:  &Error{Time: at(1), LastSeen: at(3), Message: "a"},
			recent: []Error{
				{Time: at(1), LastSeen: at(2), Message: "b"},
				{Time: at(1), LastSeen: at(3), Message: "a"},
			},
		},
		{
			name:  "clearing resolves every standing problem; a recurrence is a new entry",
			steps: []errorStep{{1, "a"}, {2, "b"}, {3, ""}, {4, ""}, {5, "a"}},
			last:  &Error{Time: at(5), Message: "a"},
			recent: []Error{
				{Time: at(1), Message: "a", Resolved: at(3)},
				{Time: at(2), Message: "b", Resolved: at(3)},
				{Time: at(5), Message: "a"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st Store
			for _, s := range tt.steps {
				if s.msg == "" {
					st.ClearError(at(s.at))
				} else {
					st.RecordError(at(s.at), s.msg)
				}
			}
			got := st.Get()
			if !reflect.DeepEqual(got.LastError, tt.last) {
				t.Errorf("LastError = %+v, want %+v", got.LastError, tt.last)
			}
			if !reflect.DeepEqual(got.RecentErrors, tt.recent) {
				t.Errorf("RecentErrors =\n%+v\nwant\n%+v", got.RecentErrors, tt.recent)
			}
		})
	}
}

func TestStoreErrorHistoryCapped(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var st Store
	for i := range 25 {
		st.RecordError(t0.Add(time.Duration(i)*time.Second), fmt.Sprintf("error %d", i))
		if i%2 == 1 {
			st.ClearError(t0.Add(time.Duration(i)*time.Second + time.Millisecond))
		}
	}
	got := st.Get()
	if len(got.RecentErrors) != maxRecentErrors {
		t.Fatalf("history holds %d errors, want %d", len(got.RecentErrors), maxRecentErrors)
	}
	// Newest last: errors 15..24.
	for i, e := range got.RecentErrors {
		if want := fmt.Sprintf("error %d", 15+i); e.Message != want {
			t.Errorf("RecentErrors[%d] = %q, want %q", i, e.Message, want)
		}
	}
	if got.LastError == nil || got.LastError.Message != "error 24" || !got.RecentErrors[9].Standing() {
		t.Errorf("LastError = %+v, want error 24 standing", got.LastError)
	}
	if got.RecentErrors[8].Standing() {
		t.Errorf("error 23 was cleared but stands: %+v", got.RecentErrors[8])
	}
}

// The JSON names are the /status contract that `haroute status` and
// scripts read.
func TestStatusJSONNames(t *testing.T) {
	body, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"lastError":{"time":`, `"message":`, `"lastSeen":`, `"recentErrors":[`, `"resolved":`,
		`"inputProblems":{"errors":2,"warnings":2,"notes":0,"errorList":["routes/cart.yaml:7:11: error: spec.host: must not contain a port"]}`, `"deletionGuard":{"since":`, `"dropped":3,"of":4`,
		`"state":"stale"`, `"source":"routes/cart.yaml:1:1"`, `"reasons":[`} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/status JSON lacks %s:\n%s", name, body)
		}
	}
	// Nothing standing: no lastError key at all.
	body, _ = json.Marshal(Status{})
	if strings.Contains(string(body), "lastError") || strings.Contains(string(body), "deletionGuard") {
		t.Errorf("empty status shows lastError or deletionGuard: %s", body)
	}
}

// Serve listens on addr and serves h until ctx is done (Listen, then
// ServeListener: what the daemon does, in one call for tests).
func Serve(ctx context.Context, addr string, h http.Handler) error {
	ln, err := Listen(addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, ln, h)
}

// RouteCache reuses its Routes while the statuses read the same, and
// converts afresh when any field of any status differs.
func TestRouteCacheReusesUnchangedRoutes(t *testing.T) {
	statuses := func(reason string) []*model.RouteStatus {
		return []*model.RouteStatus{
			{Key: model.RouteKey{Namespace: "a", Name: "one"}, Host: "one.test", State: model.RouteAdmitted},
			{Key: model.RouteKey{Namespace: "a", Name: "two"}, Host: "two.test", State: model.RouteRejected, Reasons: []string{reason},
				Source: model.Position{Path: "r.yaml", Line: 3, Col: 1}},
		}
	}
	var c RouteCache
	first := c.From(statuses("conflict"))
	if again := c.From(statuses("conflict")); &again[0] != &first[0] {
		t.Error("equal statuses converted again")
	}
	changed := c.From(statuses("another reason"))
	if &changed[0] == &first[0] || changed[1].Reasons[0] != "another reason" {
		t.Errorf("a changed reason reused the old routes: %+v", changed[1])
	}
	if unsafe.StringData(changed[0].Key) != unsafe.StringData(first[0].Key) {
		t.Error("the unchanged route was converted again")
	}
	if got := c.From(statuses("another reason")[:1]); len(got) != 1 {
		t.Errorf("a route fewer: %d routes", len(got))
	}
	// A route added before the others: they are reused where they moved.
	added := append([]*model.RouteStatus{{Key: model.RouteKey{Namespace: "a", Name: "a-new"}, Host: "new.test", State: model.RouteAdmitted}},
		statuses("another reason")...)
	got := c.From(added)
	if !reflect.DeepEqual(got, RoutesFrom(added)) {
		t.Errorf("after a route added: %+v, want %+v", got, RoutesFrom(added))
	}
	if unsafe.StringData(got[1].Key) != unsafe.StringData(first[0].Key) {
		t.Error("the route after the added one was converted again")
	}
}

// BenchmarkRouteCacheRouteAdded is a route added to 10k: every other
// route is reused, in its new place.
func BenchmarkRouteCacheRouteAdded(b *testing.B) {
	const n = 10000
	base := make([]*model.RouteStatus, n)
	for i := range base {
		base[i] = &model.RouteStatus{Key: model.RouteKey{Namespace: "bench", Name: fmt.Sprintf("r-%05d", i)},
			Host: fmt.Sprintf("r-%05d.bench.test", i), State: model.RouteAdmitted, Source: model.Position{Path: "routes.yaml", Line: i}}
	}
	added := append(slices.Clone(base), &model.RouteStatus{Key: model.RouteKey{Namespace: "bench", Name: "r-99999"}, Host: "new.test", State: model.RouteAdmitted})
	var c RouteCache
	c.From(base)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			c.From(added)
		} else {
			c.From(base)
		}
	}
}

// The Store converts the routes when the status is read, from the
// statuses of the last SetRoutes; counts go by runs of one state.
func TestStoreConvertsRoutesWhenRead(t *testing.T) {
	st := func(name string, state model.RouteState) *model.RouteStatus {
		return &model.RouteStatus{Key: model.RouteKey{Namespace: "ns", Name: name}, Host: name + ".test", State: state}
	}
	var s Store
	if got := s.Get().Routes; got != nil {
		t.Errorf("routes before any generation: %+v", got)
	}
	first := []*model.RouteStatus{st("a", model.RouteAdmitted), st("b", model.RouteAdmitted), st("c", model.RouteRejected), st("d", model.RouteAdmitted)}
	s.SetRoutes(first)
	if got := s.Get().Routes; !reflect.DeepEqual(got, RoutesFrom(first)) {
		t.Errorf("routes = %+v, want %+v", got, RoutesFrom(first))
	}
	second := []*model.RouteStatus{st("a", model.RouteAdmitted), st("d", model.RouteStale)}
	s.SetRoutes(second)
	got := s.Get()
	if !reflect.DeepEqual(got.Routes, RoutesFrom(second)) {
		t.Errorf("routes after the next generation = %+v, want %+v", got.Routes, RoutesFrom(second))
	}
	got.Routes[0].Host = "changed by a reader"
	if s.Get().Routes[0].Host != "a.test" {
		t.Error("a reader's copy changed the store")
	}
	s.SetRoutes(nil)
	if got := s.Get().Routes; got == nil || len(got) != 0 {
		t.Errorf("no routes: %#v, want an empty list", got)
	}
	if c := RouteCounts(first); !reflect.DeepEqual(c, map[string]int{"admitted": 3, "rejected": 1}) {
		t.Errorf("RouteCounts = %v", c)
	}
}

// /readyz stops saying ok once the daemon's loop has not come round for
// StallLimit: a hung HAProxy once held it while readiness said ok.
func TestReadyWhileTheLoopComesRound(t *testing.T) {
	var s Store
	s.Set(func(st *Status) { st.Ready = true })
	if ok, why := s.Ready(); !ok {
		t.Fatalf("ready before any beat: %v, %q", ok, why)
	}
	s.Beat()
	if ok, why := s.Ready(); !ok {
		t.Fatalf("ready after a beat: %v, %q", ok, why)
	}
	s.beat.Store(int64(time.Since(epoch)-StallLimit-time.Minute) + 1) // the last beat, 4 minutes ago
	if ok, why := s.Ready(); ok || !strings.Contains(why, "busy for 4m0s") {
		t.Fatalf("ready with the loop stuck: %v, %q", ok, why)
	}
	s.Beat()
	if ok, why := s.Ready(); !ok {
		t.Fatalf("ready once the loop came round again: %v, %q", ok, why)
	}
}

// Resolving returns what it resolved, for the daemon to log: an error in
// the journal followed by silence left open whether it still stood.
func TestResolvingReturnsWhatWasResolved(t *testing.T) {
	var st Store
	t0 := time.Unix(1_700_000_000, 0)
	st.RecordError(t0, "a.yaml:1:1: error: bad")
	st.RecordError(t0, "b.yaml:1:1: error: bad")
	got := st.ResolveErrors(t0.Add(time.Second), func(m string) bool { return strings.HasPrefix(m, "a.yaml") })
	if !slices.Equal(got, []string{"a.yaml:1:1: error: bad"}) {
		t.Fatalf("ResolveErrors = %q, want a.yaml's", got)
	}
	if got := st.ClearError(t0.Add(2 * time.Second)); !slices.Equal(got, []string{"b.yaml:1:1: error: bad"}) {
		t.Fatalf("ClearError = %q, want b.yaml's, the one still standing", got)
	}
	if got := st.ClearError(t0.Add(3 * time.Second)); len(got) != 0 {
		t.Fatalf("ClearError again = %q, want nothing", got)
	}
}
