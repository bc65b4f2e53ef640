package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

func TestVerify(t *testing.T) {
	desired := stateOf(t, testInput(baseDesired()))
	p := Plan{Ops: []Op{
		SetWeight{Backend: beAB, Server: "ck_127.0.0.1_18083", Weight: 100},
		MapReplace{Path: httpMap},
	}}
	backends, maps := p.Touched()
	exp := ExpectTouched(desired, backends, maps)
	if len(exp.Servers) != 1 || len(exp.Maps) != 1 {
		t.Fatalf("ExpectTouched(Touched()) kept %d backends and %d maps, want 1 and 1", len(exp.Servers), len(exp.Maps))
	}

	good := func() map[model.BackendName][]ObservedServer {
		return map[model.BackendName][]ObservedServer{beAB: {
			{Name: "ck_127.0.0.1_18083", Addr: "127.0.0.1", Port: 18083, Weight: 100, Admin: AdminReady, Checked: true},
			{Name: "ck_127.0.0.1_18084", Addr: "127.0.0.1", Port: 18084, Weight: 50, Admin: AdminReady, Checked: true},
			{Name: "ck_127.0.0.1_18089", Addr: "::ffff:127.0.0.1", Port: 18089, Weight: 50, Admin: AdminReady, Checked: true},
			// Drained, waiting for deletion: allowed.
			{Name: "ep_127.0.0.1_18070", Addr: "127.0.0.1", Port: 18070, Weight: 1, Admin: AdminMaint},
		}}
	}
	goodMaps := func() map[string][]render.MapEntry {
		i := slices.IndexFunc(desired.Bundle.Maps, func(m render.Map) bool { return m.Name == render.HTTPMap })
		return map[string][]render.MapEntry{httpMap: append([]render.MapEntry(nil), desired.Bundle.Maps[i].Entries...)}
	}

	tests := []struct {
		name    string
		edit    func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry)
		wantErr string
	}{
		{name: "matches", edit: func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry) {}},
		{
			name: "weight, state and health differ",
			edit: func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry) {
				s[beAB][0].Weight = 1
				s[beAB][1].Admin = AdminMaint
				s[beAB][2].Checked = false
			},
			wantErr: beAB + "/ck_127.0.0.1_18083: weight 1, want 100; " +
				beAB + "/ck_127.0.0.1_18084: state maint, want ready; " +
				beAB + "/ck_127.0.0.1_18089: health checks off, want on",
		},
		{
			name: "missing and unexpected servers",
			edit: func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry) {
				s[beAB] = s[beAB][1:]
				s[beAB][0].Port = 1
				s[beAB][2].Admin = AdminReady
			},
			wantErr: beAB + "/ck_127.0.0.1_18083: missing; " +
				beAB + "/ck_127.0.0.1_18084: address 127.0.0.1:1, want 127.0.0.1:18084; " +
				beAB + "/ep_127.0.0.1_18070: unexpected server in state ready",
		},
		{
			name: "map entry and length differ",
			edit: func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry) {
				m[httpMap][1].Value = "be_http:default:other"
			},
			wantErr: "map " + httpMap + `: entry 2 is "hello.example.com/ be_http:default:other", want "hello.example.com/ be_http:default:hello"`,
		},
		{
			name: "map shorter",
			edit: func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry) {
				m[httpMap] = m[httpMap][:2]
			},
			wantErr: "map " + httpMap + ": 2 entries, want 5",
		},
		{
			name: "not read back",
			edit: func(s map[model.BackendName][]ObservedServer, m map[string][]render.MapEntry) {
				delete(s, beAB)
				delete(m, httpMap)
			},
			wantErr: "backend " + beAB + ": not read back; map " + httpMap + ": not read back",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, m := good(), goodMaps()
			tt.edit(s, m)
			err := Verify(exp, s, m, nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Verify() error:\n got %q\nwant %q", got, tt.wantErr)
			}
		})
	}
}

func TestVerifyCapsMismatches(t *testing.T) {
	exp := Expectation{Servers: map[model.BackendName][]ExpectedServer{}}
	for i := range 7 {
		exp.Servers[model.BackendName(fmt.Sprintf("be%d", i))] = nil
	}
	err := Verify(exp, nil, nil, nil)
	want := "backend be0: not read back; backend be1: not read back; backend be2: not read back; " +
		"backend be3: not read back; backend be4: not read back; and 2 more"
	if err == nil || err.Error() != want {
		t.Errorf("Verify() = %v, want %q", err, want)
	}
}

func TestExpectHealth(t *testing.T) {
	exp := expect(stateOf(t, testInput(baseDesired())), nil, nil)
	for be, want := range map[model.BackendName]bool{beAB: true, beHello: false, bePair: true} {
		for _, s := range exp.Servers[be] {
			if s.Checked != want || s.Admin != AdminReady {
				t.Errorf("%s/%s: checked %v admin %s, want checked %v admin ready", be, s.Name, s.Checked, s.Admin, want)
			}
		}
	}
	if got := len(exp.Maps); got != 12 {
		t.Errorf("Expect has %d maps, want the 12 rendered ones", got)
	}
}

func TestParsePrepareReply(t *testing.T) {
	tests := []struct {
		reply, want, wantErr string
	}{
		{reply: "New version created: 3\n\n", want: "3"},
		{reply: "Unknown map identifier. Please use #<id> or <file>.\n", wantErr: `parse prepare reply "Unknown map identifier. Please use #<id> or <file>.": missing "New version created:"`},
		{reply: "New version created: x", wantErr: `parse prepare reply "New version created: x": bad version: strconv.ParseUint: parsing "x": invalid syntax`},
	}
	for _, tt := range tests {
		got, err := ParsePrepareReply(tt.reply)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.wantErr {
			t.Errorf("ParsePrepareReply(%q) = %q, %q; want %q, %q", tt.reply, got, gotErr, tt.want, tt.wantErr)
		}
	}
}

// A map too large for one payload goes as several, each within
// MaxPayload, the entries in order; ';' stays literal in a payload.
func TestMapCommandsPayloads(t *testing.T) {
	var entries []render.MapEntry
	for i := range 1000 {
		entries = append(entries, render.MapEntry{Key: fmt.Sprintf("host-%04d.example.com/a;b/", i), Value: "be_http:ns:r"})
	}
	cmds := MapReplace{Path: "/b/maps/x.map", Entries: entries}.Commands("7")
	if len(cmds) < 3 || cmds[len(cmds)-1] != "commit map @7 /b/maps/x.map" {
		t.Fatalf("%d commands, want several payloads then the commit: last %q", len(cmds), cmds[len(cmds)-1])
	}
	var lines []string
	for _, c := range cmds[:len(cmds)-1] {
		head, payload, _ := strings.Cut(c, "\n")
		if head != "add map @7 /b/maps/x.map <<" || len(payload) > MaxPayload {
			t.Errorf("command head %q, payload %d bytes (max %d)", head, len(payload), MaxPayload)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(payload, "\n"), "\n")...)
	}
	if len(lines) != len(entries) || lines[0] != "host-0000.example.com/a;b/ be_http:ns:r" || lines[999] != "host-0999.example.com/a;b/ be_http:ns:r" {
		t.Errorf("%d payload lines (first %q), want the %d entries in order", len(lines), lines[0], len(entries))
	}
}

// A PEM goes as a payload without blank lines or carriage returns, which
// would end it early or reach the certificate parser.
func TestCertPayload(t *testing.T) {
	got := SetCert{Path: "/c.pem", PEM: []byte("-----BEGIN A-----\r\nx\n-----END A-----\n\n \n-----BEGIN B-----\ny\n-----END B-----")}.Commands()
	want := []string{"set ssl cert /c.pem <<\n-----BEGIN A-----\nx\n-----END A-----\n-----BEGIN B-----\ny\n-----END B-----\n", "commit ssl cert /c.pem"}
	if !slices.Equal(got, want) {
		t.Errorf("Commands = %q\nwant %q", got, want)
	}
}

func TestDeleteServerCommand(t *testing.T) {
	if got, want := DeleteServerCommand(beAB, "ep_127.0.0.1_1"), "del server "+beAB+"/ep_127.0.0.1_1"; got != want {
		t.Errorf("DeleteServerCommand = %q, want %q", got, want)
	}
}

// ExpectTouched holds the full expectation of exactly the backends and maps
// asked for that exist.
func TestExpectTouchedFilters(t *testing.T) {
	st := stateOf(t, testInput(baseDesired()))
	all := expect(st, nil, nil)
	var backends []model.BackendName
	for i, r := range st.Desired.Routes {
		if i%2 == 0 {
			backends = append(backends, r.BackendName())
		}
	}
	mapPath := absPath(st.Input.Dir, render.HTTPMap)
	got := ExpectTouched(st, append(backends, "be_http:nope:nope"), []string{mapPath, "/no/such.map"})
	if len(got.Servers) != len(backends) || len(got.Maps) != 1 {
		t.Fatalf("ExpectTouched kept %d backends and %d maps, want %d and 1", len(got.Servers), len(got.Maps), len(backends))
	}
	for _, be := range backends {
		if !reflect.DeepEqual(got.Servers[be], all.Servers[be]) {
			t.Errorf("%s: %+v, want %+v", be, got.Servers[be], all.Servers[be])
		}
	}
	if !reflect.DeepEqual(got.Maps[mapPath], all.Maps[mapPath]) || len(all.Maps[mapPath]) == 0 {
		t.Errorf("map %s: %d entries, want the %d rendered", mapPath, len(got.Maps[mapPath]), len(all.Maps[mapPath]))
	}
}

// A read-back of one backend at 10k routes costs the same as at one route:
// no backend name is made for each route that was not touched (it was a
// string per route and change), spare-bound routes included.
func TestExpectTouchedCostsTheTouchedOnly(t *testing.T) {
	d := &model.Desired{Router: model.DefaultSettings()}
	for i := range 10000 {
		r := httpRoute(fmt.Sprintf("r%05d", i), fmt.Sprintf("r%05d.example.com", i), svc("s", 100, srv("10.0.0.1", 8080, 128)))
		if i%10 == 0 {
			r.Slot = model.BackendName(fmt.Sprintf("be_http_spare:%d", i))
		}
		d.Routes = append(d.Routes, &r)
	}
	st := State{Desired: d}
	for _, be := range []model.BackendName{d.Routes[5001].BackendName(), d.Routes[5000].BackendName()} {
		var exp Expectation
		allocs := testing.AllocsPerRun(5, func() { exp = ExpectTouched(st, []model.BackendName{be}, nil) })
		if len(exp.Servers[be]) != 1 || len(exp.Servers) != 1 {
			t.Fatalf("%s: expectation %+v, want its one server", be, exp.Servers)
		}
		if allocs > 20 {
			t.Errorf("%s: ExpectTouched of one backend made %.0f allocations at 10k routes, want a handful", be, allocs)
		}
	}
}

// ExpectTouched finds each touched backend's route however it is named:
// a route's own backend by its key, a spare by the route bound to it, a
// pool name that reads like a route's key (namespace "http", name "2")
// not as that route, and a route bound to a spare not by its own name.
func TestExpectTouchedFindsEveryBackend(t *testing.T) {
	d := &model.Desired{Router: model.DefaultSettings()}
	add := func(ns, name string, slot model.BackendName) {
		r := httpRoute(name, name+"."+ns+".example.com", svc("s", 100, srv("10.0.0.1", 8080, 128)))
		r.Key.Namespace, r.Slot = ns, slot
		d.Routes = append(d.Routes, &r)
	}
	add("a", "one", "")
	add("a", "two", "be_pool:http:2")
	add("http", "2", "")
	add("http", "3", "be_pool:http-leastconn:3")
	add("z", "last", "")
	slices.SortFunc(d.Routes, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
	st := State{Desired: d}
	all := expect(st, nil, nil)
	if len(all.Servers) != len(d.Routes) {
		t.Fatalf("%d backends expected in all, want %d", len(all.Servers), len(d.Routes))
	}
	for be := range all.Servers {
		got := ExpectTouched(st, []model.BackendName{be}, nil)
		if len(got.Servers) != 1 || !reflect.DeepEqual(got.Servers[be], all.Servers[be]) {
			t.Errorf("%s: %+v, want %+v", be, got.Servers, all.Servers[be])
		}
	}
	for _, be := range []model.BackendName{"be_http:a:two", "be_pool:http:9", "be_http:nope:nope"} {
		if got := ExpectTouched(st, []model.BackendName{be}, nil); len(got.Servers) != 0 {
			t.Errorf("%s: %+v, want nothing", be, got.Servers)
		}
	}
}

// An edited map passes when every probe matches as the edit intends and
// the count is right; each way an edit can go wrong is named.
func TestVerifyEditedMap(t *testing.T) {
	added := render.MapEntry{Key: "a.example.com/", Value: "be_pool:http:1"}
	exp := Expectation{Edited: map[string]EditedMap{httpMap: {Entries: 3, Probes: []MapProbe{
		{Key: added.Key, Want: &added},
		{Key: "gone.example.com/"},
	}}}}
	shorter := &render.MapEntry{Key: "gone.example.com", Value: "be_x"}
	tests := []struct {
		name string
		got  ObservedMap
		want string
	}{
		{name: "matches", got: ObservedMap{Entries: 3, Matches: []*render.MapEntry{&added, nil}}},
		{name: "a shorter prefix matches the deleted key", got: ObservedMap{Entries: 3, Matches: []*render.MapEntry{&added, shorter}}},
		{name: "added key missing", got: ObservedMap{Entries: 3, Matches: []*render.MapEntry{nil, nil}},
			want: `key "a.example.com/" matches nothing, want "be_pool:http:1"`},
		{name: "added key shadowed", got: ObservedMap{Entries: 3, Matches: []*render.MapEntry{{Key: "a.example.com", Value: "be_y"}, nil}},
			want: `key "a.example.com/" matches "a.example.com be_y", want "a.example.com/ be_pool:http:1"`},
		{name: "deleted key still there", got: ObservedMap{Entries: 3, Matches: []*render.MapEntry{&added, {Key: "gone.example.com/", Value: "be_z"}}},
			want: `deleted key "gone.example.com/" still matches (value "be_z")`},
		{name: "an entry too many", got: ObservedMap{Entries: 4, Matches: []*render.MapEntry{&added, nil}},
			want: "4 entries, want 3"},
		{name: "lookups missing", got: ObservedMap{Entries: 3},
			want: "0 lookups read back, want 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(exp, nil, nil, map[string]ObservedMap{httpMap: tt.got})
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), "map "+httpMap+": ")
			}
			if got != tt.want {
				t.Errorf("Verify() error:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	if err := Verify(exp, nil, nil, nil); err == nil || err.Error() != "map "+httpMap+": not read back" {
		t.Errorf("Verify() without the probes = %v, want not read back", err)
	}
}
