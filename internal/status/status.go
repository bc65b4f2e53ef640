// Package status publishes what the daemon is doing — which configuration
// HAProxy runs, how each route fared, how reloads go, the last error — over
// a small HTTP endpoint, and reads it back for `haroute status`.
//
// The daemon owns the truth and writes it into a Store; the HTTP side only
// copies it out, so a slow client never holds up reconciling.
package status

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// Status is the daemon's published state. It is the JSON body of /status.
type Status struct {
	// Ready is true once the first snapshot has been applied and HAProxy is
	// up; /readyz answers 200 only then.
	Ready bool `json:"ready"`
	// NotReadyReason says what is still missing while Ready is false.
	NotReadyReason string `json:"notReadyReason,omitempty"`

	// Generation counts applied configurations, starting at 1.
	Generation uint64 `json:"generation"`
	// ConfigHash is the content hash of the config-dir snapshot whose
	// generation HAProxy runs (not of the rendered bundle).
	ConfigHash string    `json:"configHash,omitempty"`
	AppliedAt  time.Time `json:"appliedAt,omitzero"`

	Routes []Route `json:"routes"`

	LastReload *Reload `json:"lastReload,omitempty"`
	// Reloads, RuntimeUpdates and Fallbacks count since the daemon started.
	Reloads        uint64 `json:"reloads"`
	RuntimeUpdates uint64 `json:"runtimeUpdates"`
	Fallbacks      uint64 `json:"fallbacks"`

	// LastError is the newest problem that still stands, nil when none
	// does. RecentErrors keeps the last few (at most 10), newest last,
	// standing ones with a zero Resolved.
	LastError    *Error  `json:"lastError,omitempty"`
	RecentErrors []Error `json:"recentErrors,omitempty"`

	// InputProblems counts the diagnostics of the last generation read.
	InputProblems InputProblems `json:"inputProblems"`
	// StaleObjects lists the objects other than routes (which say so in
	// Routes) that serve their last good version.
	StaleObjects []string `json:"staleObjects,omitempty"`
	// DeletionGuard is set while a generation that drops routes is held
	// back until the same routes have stayed dropped for the quiet period.
	DeletionGuard *Guard `json:"deletionGuard,omitempty"`
	// HeldFiles are the files of a plain directory that changed and do
	// not end with a newline (a writer may have stalled mid-file): their
	// served versions stay until each reads the same for the quiet period.
	HeldFiles []string `json:"heldFiles,omitempty"`

	HAProxy HAProxy `json:"haproxy"`
	// ServersError says why the routes' servers could not be read from
	// HAProxy when the status was asked for.
	ServersError string `json:"serversError,omitempty"`
}

// Route is the admission outcome of one route.
type Route struct {
	// Key is "namespace/name".
	Key  string `json:"key"`
	Host string `json:"host"`
	Path string `json:"path,omitempty"`
	// State is admitted, admitted-with-warnings, rejected (never good, not
	// served) or stale (serving its last good version while the current
	// version has the errors in Reasons).
	State    model.RouteState `json:"state"`
	Warnings []string         `json:"warnings,omitempty"`
	// Notes say what the route serves that its file does not show (a
	// service without endpoints: it answers 503).
	Notes []string `json:"notes,omitempty"`
	// Reasons say why the route is rejected or stale, each at
	// file:line:col where the input has one.
	Reasons []string `json:"reasons,omitempty"`
	// Source is where the route's current version is, file:line:col.
	Source string `json:"source,omitempty"`
	// Servers are the route's servers as HAProxy has them when the status
	// is asked for; nil when they were not read (ServersError), or for a
	// route HAProxy does not serve.
	Servers *Servers `json:"servers,omitempty"`
}

// Servers counts a route's servers by the state HAProxy gives them: up,
// down (failing its health check), in maintenance (set so, draining, or
// of weight 0: taking no request) and unchecked (not health-checked, as a route's only endpoint is, so
// neither known up nor down). A route none of whose servers is up or
// unchecked answers 503.
type Servers struct {
	Up        int `json:"up"`
	Down      int `json:"down"`
	Maint     int `json:"maint"`
	Unchecked int `json:"unchecked"`
}

// Answers reports whether a server may answer the route's requests.
func (s Servers) Answers() bool { return s.Up+s.Unchecked > 0 }

// Serving reports whether HAProxy serves the route: every state but
// rejected. A stale route serves its last good version.
func (r Route) Serving() bool { return r.State != model.RouteRejected }

// Reload describes one reload attempt.
type Reload struct {
	Time     time.Time     `json:"time"`
	Duration time.Duration `json:"duration"`
	Reasons  []string      `json:"reasons"`
	OK       bool          `json:"ok"`
	Error    string        `json:"error,omitempty"`
}

// Error is a problem the daemon handled (and kept serving through).
type Error struct {
	// Time is when the problem was first seen.
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
	// LastSeen is when it was last reported again, zero if only once.
	LastSeen time.Time `json:"lastSeen,omitzero"`
	// Resolved is when the problem was gone; zero while it stands.
	Resolved time.Time `json:"resolved,omitzero"`
}

// Standing reports whether the problem has not been resolved.
func (e Error) Standing() bool { return e.Resolved.IsZero() }

// HAProxy describes the supervised HAProxy processes.
type HAProxy struct {
	// PID is the master process.
	PID int `json:"pid"`
	// Workers are the current worker PIDs; OldWorkers are workers of earlier
	// generations still draining long-lived connections.
	Workers    []int `json:"workers"`
	OldWorkers []int `json:"oldWorkers"`
	// From the worker's `show info`: the version running, the connection
	// limit it honours (lowered when the fd limit is short) and load.
	Version   string `json:"version,omitempty"`
	MaxConn   int    `json:"maxConn,omitempty"`
	CurrConns int    `json:"currConns"`
}

// RoutesFrom converts admission results into their published form.
func RoutesFrom(statuses []*model.RouteStatus) []Route {
	out := make([]Route, len(statuses))
	for i, s := range statuses {
		out[i] = routeFrom(s)
	}
	return out
}

func routeFrom(s *model.RouteStatus) Route {
	return Route{
		Key:      s.Key.String(),
		Host:     s.Host,
		Path:     s.Path,
		State:    s.State,
		Warnings: slices.Clone(s.Warnings),
		Notes:    slices.Clone(s.Notes),
		Reasons:  slices.Clone(s.Reasons),
		Source:   source(s),
	}
}

// RouteCache converts statuses to Routes, reusing its last result while
// the statuses are the same: most changes (endpoints, weights) change
// none, and converting 10k routes cost about 3 ms and 10k allocations on
// every change. When some changed (a route added, deleted, moved), the
// Routes of the unchanged ones are reused, so a change costs a copy of
// the list rather than a conversion of every route. The Routes returned
// are shared and must not be modified.
type RouteCache struct {
	statuses []*model.RouteStatus
	routes   []Route
}

// From returns RoutesFrom(statuses).
func (c *RouteCache) From(statuses []*model.RouteStatus) []Route {
	// Admission hands on the very slice when no status changed (and
	// never writes to one it handed out): then there is nothing to compare.
	same := len(statuses) > 0 && len(statuses) == len(c.statuses) && &statuses[0] == &c.statuses[0]
	if c.routes != nil && (same || slices.EqualFunc(statuses, c.statuses, sameStatus)) {
		return c.routes
	}
	// Both lists are in key order, as admission gives them; out of
	// order, fewer Routes are reused, never a wrong one.
	out := make([]Route, len(statuses))
	j := 0
	for i, s := range statuses {
		for j < len(c.statuses) && c.statuses[j].Key.Compare(s.Key) < 0 {
			j++
		}
		if j < len(c.statuses) && sameStatus(c.statuses[j], s) {
			out[i] = c.routes[j]
			j++
			continue
		}
		out[i] = routeFrom(s)
	}
	c.statuses, c.routes = statuses, out
	return out
}

// sameStatus compares two statuses; admission hands an unchanged one on
// as the same pointer.
func sameStatus(a, b *model.RouteStatus) bool { return a == b || a.Same(b) }

// source is where a route is written. (Admitted routes once got none, to
// spare 10k positions formatted on every change; RouteCache now converts
// only the statuses that changed, and only when status is asked for.)
func source(s *model.RouteStatus) string {
	if s.Source.Path == "" {
		return ""
	}
	return s.Source.String()
}

// InputProblems counts diagnostics by severity, and lists the errors.
type InputProblems struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Notes    int `json:"notes"`
	// ErrorList is each error as file:line:col: message, the first
	// MaxListedErrors of them: the last error names only the first, and
	// a file that cannot be parsed names no object to find it under.
	ErrorList []string `json:"errorList,omitempty"`
}

// MaxListedErrors bounds InputProblems.ErrorList: a tree that is broken
// everywhere must not make status megabytes long.
const MaxListedErrors = 50

// Guard describes a generation held back by the deletion guard.
type Guard struct {
	// Since is when the held generation was first read.
	Since time.Time `json:"since"`
	// Dropped routes of Of served ones would go if it were applied.
	Dropped int    `json:"dropped"`
	Of      int    `json:"of"`
	Reason  string `json:"reason"`
}

// maxRecentErrors bounds the error history.
const maxRecentErrors = 10

// RecordError reports msg as a standing problem at now and makes it the
// last error. A message that already stands is not added again (the daemon
// reports standing problems on every pass); it only gets LastSeen = now, so
// a few problems that recur cannot push the rest out of the history. The
// history keeps the newest maxRecentErrors entries.
func (s *Store) RecordError(now time.Time, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.status
	i := slices.IndexFunc(st.RecentErrors, func(e Error) bool { return e.Standing() && e.Message == msg })
	if i >= 0 {
		e := st.RecentErrors[i]
		e.LastSeen = now
		// Newest last: the problem just seen moves to the end.
		st.RecentErrors = append(slices.Delete(st.RecentErrors, i, i+1), e)
	} else {
		st.RecentErrors = append(st.RecentErrors, Error{Time: now, Message: msg})
		if n := len(st.RecentErrors); n > maxRecentErrors {
			st.RecentErrors = slices.Clone(st.RecentErrors[n-maxRecentErrors:])
		}
	}
	last := st.RecentErrors[len(st.RecentErrors)-1]
	st.LastError = &last
}

// ResolveErrors records that the standing entries of the history for
// which gone returns true are over, at now: a problem of the input that
// was fixed while another still stands. A LastError among them gives way
// to the newest entry still standing, or to none.
func (s *Store) ResolveErrors(now time.Time, gone func(msg string) bool) (resolved []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.status
	for i := range st.RecentErrors {
		if e := &st.RecentErrors[i]; e.Standing() && gone(e.Message) {
			e.Resolved = now
			resolved = append(resolved, e.Message)
		}
	}
	if st.LastError == nil || !gone(st.LastError.Message) {
		return resolved
	}
	st.LastError = nil
	for i := len(st.RecentErrors) - 1; i >= 0; i-- {
		if e := st.RecentErrors[i]; e.Standing() {
			st.LastError = &e
			break
		}
	}
	return resolved
}

// ClearError records that no problem stands any more: every standing
// entry of the history is resolved at now, and LastError becomes nil.
func (s *Store) ClearError(now time.Time) (resolved []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.status
	st.LastError = nil
	for i := range st.RecentErrors {
		if st.RecentErrors[i].Standing() {
			st.RecentErrors[i].Resolved = now
			resolved = append(resolved, st.RecentErrors[i].Message)
		}
	}
	return resolved
}

// RouteCounts counts routes by state, in the shape metrics.SetRoutes takes.
// Statuses come in runs of one state (nearly all admitted): a run is one
// map update, not one per route.
func RouteCounts(statuses []*model.RouteStatus) map[string]int {
	counts := make(map[string]int)
	for i := 0; i < len(statuses); {
		j := i + 1
		for j < len(statuses) && statuses[j].State == statuses[i].State {
			j++
		}
		counts[string(statuses[i].State)] += j - i
		i = j
	}
	return counts
}

// Store holds the current Status behind a lock. The zero value is ready to
// use and reports "not ready".
//
// The routes are kept as admission gave them (SetRoutes) and converted to
// Routes when the status is read: at 10k routes the conversion cost about
// 2 ms of every route added or deleted, for a list read only when someone
// asks.
type Store struct {
	mu       sync.RWMutex
	status   Status
	statuses []*model.RouteStatus
	routes   RouteCache
	// beat is when the daemon's loop last came round (Beat), in
	// nanoseconds of the monotonic clock since epoch, plus one; 0: never.
	beat atomic.Int64
}

// epoch anchors Beat on the monotonic clock: a wall clock set back or
// forward must not read as a stalled loop.
var epoch = time.Now()

// StallLimit is how long the daemon's loop may be busy with one thing (a
// check of 10k routes, the search for the routes HAProxy refuses, a
// runtime session at its timeout) before /readyz says it is stuck: it said
// ok while a hung HAProxy held the loop, changes unapplied.
const StallLimit = 3 * time.Minute

// Beat records that the daemon's loop came round.
func (s *Store) Beat() { s.beat.Store(int64(time.Since(epoch)) + 1) }

// stalled is how long the loop has been busy past StallLimit, 0 if not.
func (s *Store) stalled() time.Duration {
	b := s.beat.Load()
	if b == 0 {
		return 0
	}
	if busy := time.Since(epoch) - time.Duration(b-1); busy > StallLimit {
		return busy
	}
	return 0
}

// SetRoutes publishes the admission results of the generation HAProxy
// runs, in key order; the Store keeps the slice, which admission never
// writes to once handed out.
func (s *Store) SetRoutes(statuses []*model.RouteStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = statuses
	if statuses == nil {
		s.statuses = []*model.RouteStatus{}
	}
}

// Set changes the status under the lock. f must not keep the pointer.
func (s *Store) Set(f func(*Status)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.status)
}

// Get returns a deep copy, so callers may read it while the daemon goes on
// updating the store.
func (s *Store) Get() Status {
	s.mu.Lock() // the route cache is updated too
	defer s.mu.Unlock()
	if s.statuses != nil {
		s.status.Routes = s.routes.From(s.statuses)
	}
	return s.status.clone()
}

// Ready reports readiness and, when not ready, why, without copying the
// status: /readyz is probed every few seconds, and Get copies every route.
func (s *Store) Ready() (bool, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if busy := s.stalled(); busy > 0 {
		return false, fmt.Sprintf("the daemon's loop has been busy for %s; changes wait", busy.Round(time.Second))
	}
	return s.status.Ready, s.status.NotReadyReason
}

func (s Status) clone() Status {
	c := s
	if s.Routes != nil {
		c.Routes = make([]Route, len(s.Routes))
		for i, r := range s.Routes {
			r.Warnings = slices.Clone(r.Warnings)
			r.Notes = slices.Clone(r.Notes)
			r.Reasons = slices.Clone(r.Reasons)
			c.Routes[i] = r
		}
	}
	if s.LastReload != nil {
		r := *s.LastReload
		r.Reasons = slices.Clone(r.Reasons)
		c.LastReload = &r
	}
	if s.LastError != nil {
		e := *s.LastError
		c.LastError = &e
	}
	c.RecentErrors = slices.Clone(s.RecentErrors)
	c.StaleObjects = slices.Clone(s.StaleObjects)
	c.HeldFiles = slices.Clone(s.HeldFiles)
	c.InputProblems.ErrorList = slices.Clone(s.InputProblems.ErrorList)
	if s.DeletionGuard != nil {
		g := *s.DeletionGuard
		c.DeletionGuard = &g
	}
	c.HAProxy.Workers = slices.Clone(s.HAProxy.Workers)
	c.HAProxy.OldWorkers = slices.Clone(s.HAProxy.OldWorkers)
	return c
}
