package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/haproxy"
	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
	"github.com/haroute/haroute/internal/testutil"
)

// TestRuntimePlanOnHAProxy applies a runtime plan to a real HAProxy and
// checks that every command is accepted, that the read-back passes Verify,
// and that the servers end up exactly as a fresh HAProxy started from the
// desired files (plus the health fixup the daemon applies after a start)
// has them: the runtime path and the reload path must agree.
func TestRuntimePlanOnHAProxy(t *testing.T) {
	bin := testutil.HAProxy(t)
	certA, certB := testutil.SelfSignedPEM(t, "a.example", 1), testutil.SelfSignedPEM(t, "b.example", 1)

	small := func() *model.Desired {
		d := baseDesired()
		d.Routes = slices.DeleteFunc(d.Routes, func(r *model.AdmittedRoute) bool {
			return r.Termination != model.TerminationNone // fake PEMs: keep plain HTTP routes
		})
		d.Router.MaxConnections = 1000 // within the test's file descriptor limit
		return d
	}
	old, cur := small(), small()
	// Runtime changes of every kind at once.
	// A checked route gains a server (added with check) and loses one;
	// crossing between one and two endpoints reloads (TestCompute).
	pair := routeByName(t, cur, "pair")
	pair.Services[0].Servers = append(pair.Services[0].Servers[:1:1], srv("127.0.0.1", 18082, 256))
	routeByName(t, cur, "ab").Services[0].Servers[0].Weight = 7
	routeByName(t, cur, "other").Host, routeByName(t, cur, "ab").Host = "ab.example.com", "other.example.com"

	live := startHAProxy(t, bin, old, certA)
	cur.Router.HTTPPort, cur.Router.HTTPSPort, cur.Router.StatsPort = old.Router.HTTPPort, old.Router.HTTPSPort, old.Router.StatsPort
	plan := Compute(live.state, stateFor(t, cur, certB, live.dir, live.runDir))
	if plan.Reload {
		t.Fatalf("plan reloads: %v", reasonStrings(plan))
	}
	live.apply(t, plan)

	desired := stateFor(t, cur, certB, live.dir, live.runDir)
	exp := Expect(desired, plan)
	if len(exp.Edited) == 0 {
		t.Fatal("the plan edits no map in place: the probes go untested")
	}
	observed, observedMaps, edited := live.readBack(t, exp)
	if err := Verify(exp, observed, observedMaps, edited); err != nil {
		t.Fatalf("Verify after runtime plan: %v", err)
	}
	// The probes see what the edit did wrong, through HAProxy itself: a
	// probed key changed behind the plan's back, or an entry left over.
	for path, e := range exp.Edited {
		p := e.Probes[0]
		live.mustCmd(t, "add map "+path+" zz-left-over.example.com/ x")
		_, _, edited := live.readBack(t, exp)
		if err := Verify(exp, observed, observedMaps, edited); err == nil || !strings.Contains(err.Error(), "entries, want") {
			t.Errorf("%s: a left-over entry passes Verify: %v", path, err)
		}
		live.mustCmd(t, "del map "+path+" zz-left-over.example.com/")
		if p.Want != nil {
			live.mustCmd(t, "set map "+path+" "+p.Key+" be_wrong")
			_, _, edited := live.readBack(t, exp)
			if err := Verify(exp, observed, observedMaps, edited); err == nil || !strings.Contains(err.Error(), "be_wrong") {
				t.Errorf("%s: key %s set to another value passes Verify: %v", path, p.Key, err)
			}
			live.mustCmd(t, "set map "+path+" "+p.Key+" "+p.Want.Value)
		}
	}
	if _, _, edited := live.readBack(t, exp); Verify(exp, observed, observedMaps, edited) != nil {
		t.Errorf("Verify after the map was restored: %v", Verify(exp, observed, observedMaps, edited))
	}
	t.Logf("probed maps: %+v", exp.Edited)
	if got := live.cmd(t, "show ssl cert "+desired.Input.Dir+"/"+render.DefaultCertFile); !strings.Contains(got, "b.example") {
		t.Errorf("default certificate not rotated:\n%s", got)
	}

	t.Logf("applied %d ops:\n%s", len(plan.Ops), strings.Join(commands(plan), "\n"))
	t.Logf("read back: %+v", observed)

	fresh := startHAProxy(t, bin, cur, certB)
	backends, _ := plan.Touched()
	want, _, _ := fresh.readBack(t, Expectation{Servers: exp.Servers})
	for _, be := range backends {
		got := slices.DeleteFunc(observed[be], func(s ObservedServer) bool { return s.Admin == AdminMaint })
		if !slices.Equal(got, want[be]) {
			t.Errorf("%s after runtime plan:\n %+v\nafter a fresh start:\n %+v", be, got, want[be])
		}
	}
}

type liveHAProxy struct {
	dir, runDir string
	state       State
	rt          *haproxy.Runtime
}

// startHAProxy writes d's bundle, with the pool's spares if any, and
// starts HAProxy on free ports.
func startHAProxy(t *testing.T, bin string, d *model.Desired, cert []byte, spares ...model.AdmittedRoute) *liveHAProxy {
	t.Helper()
	root := testutil.ShortTempDir(t)
	d.Router.HTTPPort, d.Router.HTTPSPort, d.Router.StatsPort = testutil.FreePort(t), testutil.FreePort(t), testutil.FreePort(t)
	h := &liveHAProxy{dir: root + "/b", runDir: root + "/r"}
	h.state = stateFor(t, d, cert, h.dir, h.runDir, spares...)
	if err := os.MkdirAll(h.runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range h.state.Bundle.Files {
		path := filepath.Join(h.dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.Bytes(), f.Mode); err != nil {
			t.Fatal(err)
		}
	}
	admin := filepath.Join(h.runDir, render.AdminSocket)
	testutil.StartHAProxy(t, bin, []string{"-db", "-f", filepath.Join(h.dir, render.ConfigFile)}, testutil.Ready{AdminSocket: admin})
	h.rt = haproxy.NewRuntime(admin)
	return h
}

func stateFor(t *testing.T, d *model.Desired, cert []byte, dir, runDir string, spares ...model.AdmittedRoute) State {
	return stateOf(t, render.Input{Desired: d, Dir: dir, RunDir: runDir, DefaultCertificate: cert, Spares: spares})
}

// apply sends a plan's ops as the daemon does (daemon.execute), failing
// on the first command HAProxy refuses and on an op it cannot send.
func (h *liveHAProxy) apply(t *testing.T, p Plan) {
	t.Helper()
	for _, op := range p.Ops {
		if q, ok := Queried(op); ok {
			h.mustCmd(t, q.Before()...)
			after, err := q.After(h.cmd(t, q.Query()))
			if err != nil {
				t.Fatal(err)
			}
			h.mustCmd(t, after...)
		} else if c, ok := op.(CommandOp); ok {
			h.mustCmd(t, c.Commands()...)
		} else {
			t.Fatalf("unknown op %T", op)
		}
	}
}

// cmd sends one command and returns the reply.
func (h *liveHAProxy) cmd(t *testing.T, command string) string {
	t.Helper()
	resps, err := h.rt.Execute(t.Context(), []string{command})
	if err != nil {
		t.Fatal(err)
	}
	return resps[0].Output
}

// mustCmd sends commands as the daemon does (haproxy.Runtime.Apply) and
// fails on the first HAProxy refuses.
func (h *liveHAProxy) mustCmd(t *testing.T, commands ...string) {
	t.Helper()
	if _, err := h.rt.Apply(t.Context(), commands); err != nil {
		t.Fatal(err)
	}
}

// readBack reads what exp names with the daemon's reader (haproxy
// package) and converts it as daemon.verify does.
func (h *liveHAProxy) readBack(t *testing.T, exp Expectation) (map[model.BackendName][]ObservedServer, map[string][]render.MapEntry, map[string]ObservedMap) {
	t.Helper()
	backends := sortedKeys(exp.Servers)
	names := make([]string, len(backends))
	for i, be := range backends {
		names[i] = string(be)
	}
	states, err := h.rt.ServersStates(t.Context(), names)
	if err != nil {
		t.Fatal(err)
	}
	servers := make(map[model.BackendName][]ObservedServer)
	for _, be := range backends {
		list := []ObservedServer{}
		for _, st := range states[string(be)] {
			admin := AdminReady
			if st.AdminState.Maint() {
				admin = AdminMaint
			}
			list = append(list, ObservedServer{Name: model.ServerName(st.Name), Addr: st.Address, Port: st.Port,
				Weight: st.Weight, Admin: admin, Checked: st.CheckState&haproxy.CheckEnabled != 0})
		}
		slices.SortFunc(list, func(a, b ObservedServer) int { return strings.Compare(string(a.Name), string(b.Name)) })
		servers[be] = list
	}
	out := make(map[string][]render.MapEntry)
	for m := range exp.Maps {
		entries, err := h.rt.ShowMap(t.Context(), m)
		if err != nil {
			t.Fatal(err)
		}
		list := []render.MapEntry{}
		for _, e := range entries {
			list = append(list, render.MapEntry{Key: e.Key, Value: e.Value})
		}
		out[m] = list
	}
	keys := make(map[string][]string, len(exp.Edited))
	for path, e := range exp.Edited {
		keys[path] = e.Keys()
	}
	probes, err := h.rt.ProbeMaps(t.Context(), keys)
	if err != nil {
		t.Fatal(err)
	}
	edited := make(map[string]ObservedMap, len(probes))
	for path, p := range probes {
		o := ObservedMap{Entries: p.Entries}
		for _, m := range p.Matches {
			var e *render.MapEntry
			if m != nil {
				e = &render.MapEntry{Key: m.Key, Value: m.Value}
			}
			o.Matches = append(o.Matches, e)
		}
		edited[path] = o
	}
	return servers, out, edited
}
