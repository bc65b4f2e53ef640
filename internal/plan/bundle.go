package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// bundles compares the rendered files. Maps and certificates of files the
// running config already loads are runtime work; anything else that
// differs (the skeleton, the crt-list, CA files, files appearing or going
// away) needs a reload.
func (d *differ) bundles() {
	a, b := d.applied.Bundle, d.desired.Bundle
	d.skeletonChanged = !bytes.Equal(a.Skeleton, b.Skeleton)

	var crt crtListOps
	runtimeCrt := true
	if oldList, newList := fileData(a, render.CrtListFile), fileData(b, render.CrtListFile); !bytes.Equal(oldList, newList) {
		if crt, runtimeCrt = d.crtList(oldList, newList); runtimeCrt {
			d.add(Change{Mode: ModeRuntime, Kind: KindCrtList, Subject: render.CrtListFile,
				Detail: fmt.Sprintf("+%d -%d lines", len(crt.added)+len(crt.replaced), len(crt.replaced)+len(crt.deleted))})
		}
	}
	d.mapFiles(a.Maps, b.Maps)
	loads, unloads := d.certFiles(a.Certs, b.Certs, crt, runtimeCrt, func() map[string]bool { return sharedSNI(fileData(b, render.CrtListFile)) })
	if runtimeCrt {
		d.tlsOps(crt, loads, unloads)
	}
	d.otherFiles(a, b)
	d.acls(a, b)
}

// acls compares the pool spares' allowlists (render.Bundle.ACLs). A
// spare coming or going is the pool's own reload, which the skeleton
// shows; changed patterns are replaced at runtime: before the map entry
// routes to a route being bound, after it is gone for one being unbound
// (the ACL open again), so a route is never reachable beyond its
// allowlist.
func (d *differ) acls(a, b *render.Bundle) {
	// Both sides list the spares in the pool's order, which only a top-up
	// (a reload) changes: look the other side up only where it differs.
	var olds map[string][]string
	for i, acl := range b.ACLs {
		var old []string
		if i < len(a.ACLs) && a.ACLs[i].ID == acl.ID {
			old = a.ACLs[i].Patterns
		} else {
			if olds == nil {
				olds = make(map[string][]string, len(a.ACLs))
				for _, o := range a.ACLs {
					olds[o.ID] = o.Patterns
				}
			}
			old = olds[acl.ID]
		}
		if old == nil || slices.Equal(old, acl.Patterns) {
			continue
		}
		op := ACLReplace{Path: acl.ID, Patterns: acl.Patterns}
		if acl.Open() {
			d.removes = append(d.removes, op)
		} else {
			d.adds = append(d.adds, op)
		}
		d.add(Change{Mode: ModeRuntime, Kind: KindAllowlist, Subject: acl.ID, Detail: fmt.Sprintf("%d addresses", len(acl.Patterns))})
	}
}

func fileData(b *render.Bundle, name string) []byte {
	if f := b.File(name); f != nil {
		return f.Bytes()
	}
	return nil
}

// absPath is how haproxy.cfg, and so the runtime API, names a bundle file.
func absPath(dir, name string) string { return dir + "/" + name }

func (d *differ) mapFiles(olds, news []render.Map) {
	oldByName := make(map[string]*render.Map, len(olds))
	for i := range olds {
		oldByName[olds[i].Name] = &olds[i]
	}
	newNames := make(map[string]bool, len(news))
	for i := range news {
		m := &news[i]
		newNames[m.Name] = true
		old, ok := oldByName[m.Name]
		if !ok {
			d.add(Change{Mode: ModeReload, Kind: KindMapFile, Subject: m.Name, Detail: "added"})
			continue
		}
		if slices.Equal(old.Entries, m.Entries) {
			continue
		}
		// The entries a route change touches sit together, in route
		// order: the ends both sides share cannot differ in the count.
		o, n := trimCommon(old.Entries, m.Entries)
		added, removed, explained := d.entryDiff(o, n)
		if explained && !render.BackendMap(m.Name) {
			// Every difference belongs to a backend that appears or goes
			// away: the route change's reload rewrites this map anyway.
			continue
		}
		path := absPath(d.desired.Input.Dir, m.Name)
		d.mapOps(path, old, m)
		detail := fmt.Sprintf("+%d -%d entries", added, removed)
		if added == 0 && removed == 0 {
			detail = "entries reordered"
		}
		d.add(Change{Mode: ModeRuntime, Kind: KindMap, Subject: m.Name, Detail: detail})
	}
	for i := range olds {
		if !newNames[olds[i].Name] {
			d.add(Change{Mode: ModeReload, Kind: KindMapFile, Subject: olds[i].Name, Detail: "removed"})
		}
	}
}

// mapOps plans the commands that bring the loaded map old to m. A map
// keyed by backend is edited in two steps around the routing maps: its
// new and changed entries first, its deleted ones last. A route bound to
// a spare thus has its timeouts before the routing entry that leads to
// it, and keeps them until that entry is gone. A map sent whole (HSTS
// values hold ';', which no single-entry command takes) is sent the same
// way: first with both versions' keys, then as it is to be (T47).
func (d *differ) mapOps(path string, old, m *render.Map) {
	edit, ok := safeEdit(path, old, m, render.ExactMap(m.Name))
	switch {
	case !render.BackendMap(m.Name) && ok:
		d.maps = append(d.maps, edit)
	case !render.BackendMap(m.Name):
		d.maps = append(d.maps, MapReplace{Path: path, Entries: m.Entries})
	case !ok:
		both := withOldKeys(m.Entries, old.Entries)
		if !slices.Equal(both, old.Entries) {
			d.settingsAdds = append(d.settingsAdds, MapReplace{Path: path, Entries: both})
		}
		if len(both) > len(m.Entries) {
			d.settingsDels = append(d.settingsDels, MapReplace{Path: path, Entries: m.Entries})
		}
	default:
		if len(edit.Set)+len(edit.Add) > 0 {
			d.settingsAdds = append(d.settingsAdds, MapEdit{Path: path, Set: edit.Set, Add: edit.Add})
		}
		if len(edit.Del) > 0 {
			d.settingsDels = append(d.settingsDels, MapEdit{Path: path, Del: edit.Del})
		}
	}
}

// withOldKeys returns the entries of now followed by those of old whose
// keys now lacks: a map keyed by backend (matched exactly, each key once)
// that serves what both versions route to.
func withOldKeys(now, old []render.MapEntry) []render.MapEntry {
	keys := make(map[string]bool, len(now))
	for _, e := range now {
		keys[e.Key] = true
	}
	out := slices.Clone(now)
	for _, e := range old {
		if !keys[e.Key] {
			out = append(out, e)
		}
	}
	return out
}

// entryDiff counts the entries only one side has, and reports whether all
// of them point at backends that an added, deleted or re-terminated route
// creates or removes.
func (d *differ) entryDiff(olds, news []render.MapEntry) (added, removed int, explained bool) {
	oldSet := make(map[render.MapEntry]int, len(olds))
	for _, e := range olds {
		oldSet[e]++
	}
	explained = true
	for _, e := range news {
		if oldSet[e] > 0 {
			oldSet[e]--
			continue
		}
		added++
		if !d.newBackends[model.BackendName(e.Value)] {
			explained = false
		}
	}
	for e, n := range oldSet {
		if n == 0 {
			continue
		}
		removed += n
		be := model.BackendName(e.Value)
		if d.isRouteBackend(be) || e.Value == render.RedirectValue || e.Value == render.HTTPSOnlyValue || d.spare(d.desired, &d.desiredSpares, be) != nil {
			explained = false
		}
	}
	return added, removed, explained && added+removed > 0
}

// trimCommon drops the entries a and b share at their start and at their
// end.
func trimCommon(a, b []render.MapEntry) ([]render.MapEntry, []render.MapEntry) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	a, b = a[i:], b[i:]
	j := 0
	for j < len(a) && j < len(b) && a[len(a)-1-j] == b[len(b)-1-j] {
		j++
	}
	return a[:len(a)-j], b[:len(b)-j]
}

// certFiles compares the certificate files. A changed one is replaced at
// runtime; one that comes or goes with its crt-list line, when the
// crt-list changes at runtime (crt), is loaded or unloaded with it: those
// ops are returned for tlsOps to order. Any other file appearing or going
// away needs a reload.
//
// A certificate whose SNI another line shares (shared returns those
// paths; the crt-list is parsed only once a certificate changed) is
// replaced by a reload: at load the first line in the file wins the name,
// but `set ssl cert` re-inserts the replaced one behind the other, which
// then served the name until the next reload, the runtime state no longer
// what the files give.
func (d *differ) certFiles(olds, news []render.Cert, crt crtListOps, runtimeCrt bool, shared func() map[string]bool) (loads, unloads []Op) {
	var sharedPaths map[string]bool
	withLine := func(lines []crtLine, path string) bool {
		for _, l := range lines {
			if l.cert == path {
				return true
			}
		}
		return false
	}
	oldByName := make(map[string]*render.Cert, len(olds))
	for i := range olds {
		oldByName[olds[i].Name] = &olds[i]
	}
	newNames := make(map[string]bool, len(news))
	for i := range news {
		c := &news[i]
		newNames[c.Name] = true
		old, ok := oldByName[c.Name]
		path := absPath(d.desired.Input.Dir, c.Name)
		switch {
		case ok && bytes.Equal(old.PEM, c.PEM):
		case ok && func() bool {
			if sharedPaths == nil {
				sharedPaths = shared()
			}
			return sharedPaths[path]
		}():
			d.add(Change{Mode: ModeReload, Kind: KindCertificate, Subject: c.Name,
				Detail: "another crt-list line serves its SNI too: which one wins is the file's order, which only a reload keeps"})
		case len(certPayload(c.PEM)) > MaxPayload:
			d.add(Change{Mode: ModeReload, Kind: KindCertificate, Subject: c.Name,
				Detail: fmt.Sprintf("PEM of %d bytes exceeds the %d one runtime payload can carry", len(c.PEM), MaxPayload)})
		case ok:
			d.certs = append(d.certs, SetCert{Path: path, PEM: c.PEM})
			d.add(Change{Mode: ModeRuntime, Kind: KindCertificate, Subject: c.Name})
		case runtimeCrt && withLine(crt.added, path):
			loads = append(loads, AddCert{Path: path, PEM: c.PEM})
			d.add(Change{Mode: ModeRuntime, Kind: KindCertificateFile, Subject: c.Name, Detail: "added"})
		default:
			// A new file the config itself names: only a reload loads it.
			d.add(Change{Mode: ModeReload, Kind: KindCertificateFile, Subject: c.Name, Detail: "added"})
		}
	}
	for i := range olds {
		if newNames[olds[i].Name] {
			continue
		}
		if path := absPath(d.applied.Input.Dir, olds[i].Name); runtimeCrt && withLine(crt.deleted, path) {
			unloads = append(unloads, DeleteCert{Path: path})
			d.add(Change{Mode: ModeRuntime, Kind: KindCertificateFile, Subject: olds[i].Name, Detail: "removed"})
			continue
		}
		d.add(Change{Mode: ModeReload, Kind: KindCertificateFile, Subject: olds[i].Name, Detail: "removed"})
	}
	return loads, unloads
}

// otherFiles compares the files that are neither haproxy.cfg, the crt-list,
// a map nor a certificate: the CA files and error pages. A route's own
// destination CA that comes or goes with the route is loaded or unloaded
// at runtime (its servers name it); any other such file is read at
// startup only.
func (d *differ) otherFiles(a, b *render.Bundle) {
	// Maps live under maps/ and certificates under certs/ (render's
	// layout); telling them by name keeps this free of per-change sets of
	// thousands of certificate names.
	skip := func(name string) bool {
		return name == render.ConfigFile || name == render.CrtListFile ||
			strings.HasPrefix(name, "maps/") || strings.HasPrefix(name, "certs/")
	}
	kind := func(name string) Kind {
		if strings.HasPrefix(name, "cas/") {
			return KindCAFile
		}
		return KindFile
	}
	i, j := 0, 0
	for i < len(a.Files) || j < len(b.Files) {
		switch {
		case i < len(a.Files) && skip(a.Files[i].Name):
			i++
		case j < len(b.Files) && skip(b.Files[j].Name):
			j++
		case j == len(b.Files) || (i < len(a.Files) && a.Files[i].Name < b.Files[j].Name):
			f := &a.Files[i]
			if render.IsRouteCAFile(f.Name) {
				d.tlsRemoves = append(d.tlsRemoves, DeleteCAFile{Path: absPath(d.applied.Input.Dir, f.Name)})
				d.add(Change{Mode: ModeRuntime, Kind: KindCAFile, Subject: f.Name, Detail: "removed"})
			} else {
				d.add(Change{Mode: ModeReload, Kind: kind(f.Name), Subject: f.Name, Detail: "removed"})
			}
			i++
		case i == len(a.Files) || a.Files[i].Name > b.Files[j].Name:
			f := &b.Files[j]
			switch data := f.Bytes(); {
			case !render.IsRouteCAFile(f.Name):
				d.add(Change{Mode: ModeReload, Kind: kind(f.Name), Subject: f.Name, Detail: "added"})
			case len(certPayload(data)) > MaxPayload:
				d.add(Change{Mode: ModeReload, Kind: KindCAFile, Subject: f.Name,
					Detail: fmt.Sprintf("%d bytes exceed the %d one runtime payload can carry", len(data), MaxPayload)})
			default:
				d.tlsAdds = append(d.tlsAdds, AddCAFile{Path: absPath(d.desired.Input.Dir, f.Name), PEM: data})
				d.add(Change{Mode: ModeRuntime, Kind: KindCAFile, Subject: f.Name, Detail: "added"})
			}
			j++
		default:
			if !a.Files[i].Equal(&b.Files[j]) {
				d.add(Change{Mode: ModeReload, Kind: kind(b.Files[j].Name), Subject: b.Files[j].Name, Detail: "content"})
			}
			i++
			j++
		}
	}
}

// maxMapEdit is the largest change sent as single entries rather than as a
// whole new version of the map.
const maxMapEdit = 64

// safeEdit returns the change from old to new as single-entry edits,
// when it is small and appending the added entries cannot change what a
// lookup finds: a map matched by prefix (map_beg, exact false) takes the
// longest key first, so an added key must not have another key of the
// map as a proper prefix (that one, earlier in the live map, would win).
//
// Only the entries between the ends the two versions share are compared:
// each key appears once in a rendered map (render.Map), so a key in the
// middle of one version is nowhere in the shared ends of the other. A
// route change thus costs a look at its own entries, not a set of all
// 10k keys of each version.
func safeEdit(path string, old, new *render.Map, exact bool) (MapEdit, bool) {
	if len(old.Entries) == 0 {
		return MapEdit{}, false // nothing to keep: replace
	}
	olds, news := trimCommon(old.Entries, new.Entries)
	oldVal := make(map[string]string, len(olds))
	for _, e := range olds {
		if _, dup := oldVal[e.Key]; dup {
			return MapEdit{}, false // del map would delete both
		}
		oldVal[e.Key] = e.Value
	}
	edit := MapEdit{Path: path}
	keys := make(map[string]bool, len(news))
	for _, e := range news {
		if keys[e.Key] {
			return MapEdit{}, false
		}
		keys[e.Key] = true
		v, ok := oldVal[e.Key]
		switch {
		case ok && v == e.Value:
			continue
		case ok:
			edit.Set = append(edit.Set, e) // in place: its position stays
		default:
			edit.Add = append(edit.Add, e)
		}
		if len(edit.Set)+len(edit.Add) > maxMapEdit {
			return MapEdit{}, false
		}
	}
	for _, e := range olds {
		if !keys[e.Key] {
			edit.Del = append(edit.Del, e.Key)
		}
	}
	if len(edit.Set)+len(edit.Del)+len(edit.Add) > maxMapEdit {
		return MapEdit{}, false
	}
	for _, k := range edit.Del {
		if !cliSafe(k) {
			return MapEdit{}, false
		}
	}
	for _, e := range edit.Set {
		if !cliSafe(e.Key) || !cliSafe(e.Value) {
			return MapEdit{}, false
		}
	}
	for _, e := range edit.Add {
		if !cliSafe(e.Key) || !cliSafe(e.Value) {
			return MapEdit{}, false
		}
		for i := 1; i < len(e.Key) && !exact; i++ {
			if new.Has(e.Key[:i]) {
				return MapEdit{}, false
			}
		}
	}
	return edit, true
}

// cliSafe reports whether s can be one word of a runtime API command as
// is: the CLI splits on spaces and ';' and reads '\\' and quotes. Other
// values go through MapReplace, whose payload is taken literally.
func cliSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ' || c >= 0x7f, c == ';', c == '\\', c == '\'', c == '"', c == '#':
			return false
		}
	}
	return s != ""
}
