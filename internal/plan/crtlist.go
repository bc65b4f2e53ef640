package plan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/haroute/haroute/internal/render"
)

// The crt-list at runtime. Every TLS bind shares one crt-list; a route
// with its own certificate has one line in it, naming its certificate
// file. Lines that come and go with such routes are runtime work: the
// certificate is loaded (`new ssl cert`) before its line is added, and
// unloaded after its line is deleted. Runtime appends lines while the file
// lists them in route order, so a line is only added at runtime when its
// SNI filter is unique in the list: then the order decides nothing, and a
// restart from the file serves every name with the same certificate.

// crtLine is one line of the crt-list: "<cert> [options] <sni>".
type crtLine struct {
	text string
	cert string // the certificate's path, the line's first word
	sni  string // the filter, the line's last word ("" when none)
}

func parseCrtList(data []byte) []crtLine {
	var out []crtLine
	for line := range bytes.Lines(data) {
		text := strings.TrimSpace(string(line))
		if text == "" || text[0] == '#' {
			continue
		}
		f := strings.Fields(text)
		l := crtLine{text: text, cert: f[0]}
		if last := f[len(f)-1]; len(f) > 1 && !strings.HasSuffix(last, "]") {
			l.sni = last
		}
		out = append(out, l)
	}
	return out
}

// sharedSNI returns the certificate paths of a crt-list whose SNI filter
// another line has too.
func sharedSNI(data []byte) map[string]bool {
	lines := parseCrtList(data)
	count := make(map[string]int, len(lines))
	for _, l := range lines {
		count[l.sni]++
	}
	out := map[string]bool{}
	for _, l := range lines {
		if l.sni != "" && count[l.sni] > 1 {
			out[l.cert] = true
		}
	}
	return out
}

// crtListOps is the runtime work of a crt-list change.
type crtListOps struct {
	// replaced are the lines of certificates that keep their file but
	// move to another host or change options; added are the lines added;
	// deleted are the lines of certificates that go away.
	replaced       []lineMove
	added, deleted []crtLine
}

// lineMove is a certificate's crt-list line as it was and as it is to be.
type lineMove struct{ was, now crtLine }

// crtList diffs two crt-lists that differ. It returns the runtime work
// and whether the change can be made at runtime at all; when not, it has
// added a reload change saying why.
func (d *differ) crtList(oldData, newData []byte) (crtListOps, bool) {
	olds, news := parseCrtList(oldData), parseCrtList(newData)
	oldLines := make(map[string]int, len(olds))
	oldCerts := make(map[string]int, len(olds))
	for _, l := range olds {
		oldLines[l.text]++
		oldCerts[l.cert]++
	}
	newLines := make(map[string]int, len(news))
	newCerts := make(map[string]bool, len(news))
	sniCount := make(map[string]int, len(news))
	for _, l := range news {
		newLines[l.text]++
		newCerts[l.cert] = true
		sniCount[l.sni]++
	}
	reload := func(detail string) (crtListOps, bool) {
		d.add(Change{Mode: ModeReload, Kind: KindCrtList, Subject: render.CrtListFile, Detail: detail})
		return crtListOps{}, false
	}

	var ops crtListOps
	moved := map[string]crtLine{}
	for _, l := range olds {
		if newLines[l.text] > 0 {
			continue
		}
		if oldCerts[l.cert] > 1 {
			// `del ssl crt-list` would need the line's number.
			return reload(l.cert + " is on more than one line")
		}
		if newCerts[l.cert] {
			moved[l.cert] = l
		} else {
			ops.deleted = append(ops.deleted, l)
		}
	}
	for _, l := range news {
		if oldLines[l.text] > 0 {
			continue
		}
		if l.sni == "" || sniCount[l.sni] > 1 {
			return reload(fmt.Sprintf("%s: SNI %q is not unique in the list", l.cert, l.sni))
		}
		if was, ok := moved[l.cert]; ok {
			if oldCerts[l.cert] != 1 || newLinesOf(news, l.cert) != 1 {
				return reload(l.cert + " is on more than one line")
			}
			ops.replaced = append(ops.replaced, lineMove{was: was, now: l})
			continue
		}
		ops.added = append(ops.added, l)
	}
	if len(ops.replaced)+len(ops.added)+len(ops.deleted) == 0 {
		return reload("lines reordered")
	}
	return ops, true
}

// tlsOps turns the crt-list work into ops: certificates loaded, lines
// added and lines replaced before anything routes to them (tlsAdds, first
// of the plan); lines deleted and certificates unloaded after the map
// entries that routed to them are gone (tlsRemoves, last).
//
// No line may name a file whose content is not the line's: for a line
// whose host and certificate both change (a route moved to another host,
// with the certificate for it), the content is staged, the old line
// deleted, the content committed and the new line added (RehostCert).
// Replaced in place as other lines are, the new host was served the old
// host's certificate until the commit (20–60 ms in an audit), and a host
// moved between two routes the other route's. A name thus served by no
// line for a moment gets the default certificate, the answer before it
// was added: so lines that take a name over are added before the line
// that leaves it goes (added and rehosted lines in dependency order, see
// rehostOrder).
func (d *differ) tlsOps(ops crtListOps, loads, unloads []Op) {
	list := absPath(d.desired.Input.Dir, render.CrtListFile)
	d.tlsAdds = append(d.tlsAdds, loads...)
	for _, l := range ops.added {
		d.tlsAdds = append(d.tlsAdds, AddCrtListLine{List: list, Line: l.text})
	}
	var rehosted []rehost
	for _, m := range ops.replaced {
		if k := slices.IndexFunc(d.certs, func(op Op) bool { c, ok := op.(SetCert); return ok && c.Path == m.now.cert }); k >= 0 && m.was.sni != m.now.sni {
			rehosted = append(rehosted, rehost{lineMove: m, pem: d.certs[k].(SetCert).PEM})
			d.certs = slices.Delete(d.certs, k, k+1)
			continue
		}
		d.tlsAdds = append(d.tlsAdds, ReplaceCrtListLine{List: list, Cert: m.now.cert, Line: m.now.text})
	}
	for _, r := range rehostOrder(rehosted) {
		d.tlsAdds = append(d.tlsAdds, RehostCert{List: list, Cert: r.now.cert, PEM: r.pem, Line: r.now.text})
	}
	for _, l := range ops.deleted {
		d.tlsRemoves = append(d.tlsRemoves, DeleteCrtListLine{List: list, Cert: l.cert})
	}
	d.tlsRemoves = append(d.tlsRemoves, unloads...)
}

// rehost is a certificate file whose line moves to another host and whose
// content (pem) changes with it.
type rehost struct {
	lineMove
	pem []byte
}

// rehostOrder orders rs so that the one taking over a host another leaves
// goes first: that host then has a line whose file holds its certificate
// at every moment (two, for a moment). A cycle (two routes swapping
// hosts) is broken where it is found: one host has no line for the
// moment its file is replaced.
func rehostOrder(rs []rehost) []rehost {
	out := make([]rehost, 0, len(rs))
	for len(rs) > 0 {
		next := 0
		for i, r := range rs {
			taken := slices.ContainsFunc(rs, func(o rehost) bool { return o.now.sni == r.was.sni && o.now.cert != r.now.cert })
			if !taken {
				next = i
				break
			}
		}
		out = append(out, rs[next])
		rs = slices.Delete(slices.Clone(rs), next, next+1)
	}
	return out
}

// newLinesOf counts the lines of cert in lines.
func newLinesOf(lines []crtLine, cert string) int {
	n := 0
	for _, l := range lines {
		if l.cert == cert {
			n++
		}
	}
	return n
}
