package model

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Endpoint resolution: a route names services; Endpoints and EndpointSlices
// name the ready addresses behind them. Both kinds are read and united, so
// a directory written by `kubectl get endpoints` or by an EndpointSlice
// mirror works alike. Bad entries are skipped and reported on the object
// they came from; the rest of the object still serves.

// endpointGroup is one Endpoints subset or one EndpointSlice: ready
// addresses that all listen on the same ports.
type endpointGroup struct {
	ports []EndpointPort // TCP ports with a valid number, in written order
	addrs []netip.Addr
}

// endpointIndex maps a service to its groups.
type endpointIndex map[serviceKey][]endpointGroup

// endpoint is one resolved address:port.
type endpoint struct {
	addr netip.Addr
	port int
	h2c  bool // the port's appProtocol is h2c
}

// serviceKey names a service: a struct rather than "ns/name", so looking
// one up allocates nothing.
type serviceKey struct{ namespace, name string }

// buildEndpointIndex validates every Endpoints and EndpointSlice and
// indexes their ready addresses by service. With memos (parallel to objs),
// each object's groups are computed once and reused while it is unchanged.
// idx, when not nil, is an empty index whose storage is reused. With lg,
// an object whose current version has errors serves its last good
// version (see lastgood.go); the versions in force are returned.
func buildEndpointIndex(objs *Objects, m *memos, idx endpointIndex, lg *lastGood) (endpointIndex, Diagnostics, []staleEndpoints) {
	if idx == nil {
		idx = make(endpointIndex, len(objs.Endpoints)+len(objs.EndpointSlices))
	}
	var ds Diagnostics
	var stale []staleEndpoints
	index := func(g *groupsMemo) {
		if !g.ok {
			return
		}
		if cur, ok := idx[g.key]; ok {
			idx[g.key] = append(cur, g.groups...)
		} else {
			// Capacity-limited: a later append for the same service
			// copies rather than write into the memo.
			idx[g.key] = g.groups
		}
	}
	add := func(key endpointsKey, pos Position, g *groupsMemo) {
		ds = append(ds, g.diags...)
		use := g
		if good, ok := lg.lastGoodEndpoints(key, g); ok {
			use = good
			ds = append(ds, Diagnostic{Pos: pos, Severity: SeverityWarning,
				Message: fmt.Sprintf("%s/%s: this version has errors; its last good version keeps serving until it is fixed or removed", key.namespace, key.name)})
			stale = append(stale, staleEndpoints{key: key, memo: good, path: pos.Path})
		}
		index(use)
	}
	// A second object of one kind, namespace and name (a leftover copy
	// in another file) is served with the first, and said: the API server
	// would hold only one.
	seen := make(map[endpointsKey]Position, len(objs.Endpoints)+len(objs.EndpointSlices))
	twice := func(key endpointsKey, src Source) {
		if first, dup := seen[key]; dup {
			kind := "Endpoints"
			if key.slice {
				kind = "EndpointSlice"
			}
			ds = append(ds, Diagnostic{Pos: src.At("metadata.name"), Severity: SeverityWarning, Field: "metadata.name",
				Message: fmt.Sprintf("%s %s/%s is also defined at %s; the addresses of both are served", kind, key.namespace, key.name, first)})
			return
		}
		seen[key] = src.At("metadata.name")
	}
	shadowed := currentEndpoints(objs, lg)
	shadow := func(key endpointsKey, src Source) bool {
		at, ok := shadowed[key]
		if ok && lg.isStale(src.Pos.Path) {
			ds = append(ds, Diagnostic{Pos: src.At("metadata.name"), Severity: SeverityNote, Field: "metadata.name",
				Message: fmt.Sprintf("%s/%s is defined at %s too: that definition serves, not this file's last good one", key.namespace, key.name, at)})
			return true
		}
		return false
	}
	for i := range objs.Endpoints {
		ep := objs.Endpoints[i]
		key := endpointsKey{namespace: namespaceOrDefault(ep.Meta.Namespace), name: ep.Meta.Name}
		if shadow(key, ep.Source) {
			continue
		}
		twice(key, ep.Source)
		if m == nil {
			g := endpointsGroups(ep)
			add(key, ep.Source.Pos, &g)
			continue
		}
		g := m.endpoints[i]
		if !g.done {
			*g = endpointsGroups(ep)
		}
		add(key, ep.Source.Pos, g)
	}
	for i := range objs.EndpointSlices {
		sl := &objs.EndpointSlices[i]
		key := endpointsKey{slice: true, namespace: namespaceOrDefault(sl.Meta.Namespace), name: sl.Meta.Name}
		if shadow(key, sl.Source) {
			continue
		}
		twice(key, sl.Source)
		if m == nil {
			g := sliceGroups(sl)
			add(key, sl.Source.Pos, &g)
			continue
		}
		g := m.slices[i]
		if !g.done {
			*g = sliceGroups(sl)
		}
		add(key, sl.Source.Pos, g)
	}
	return idx, ds, stale
}

// currentEndpoints maps the endpoint objects defined anew in files that
// decode (the last good pass had none of that name from that file) to
// where, when some file is broken and serves its last good content
// (lg.stale): that content's copies of them yield (see lastGood.stale).
// Nil otherwise.
func currentEndpoints(objs *Objects, lg *lastGood) map[endpointsKey]Position {
	if lg == nil || lg.stale == nil {
		return nil
	}
	before := lg.endpointsDefinedIn()
	cur := map[endpointsKey]Position{}
	note := func(k endpointsKey, src Source) {
		if !lg.isStale(src.Pos.Path) && !before[k][src.Pos.Path] {
			cur[k] = src.At("metadata.name")
		}
	}
	for _, ep := range objs.Endpoints {
		note(endpointsKey{namespace: namespaceOrDefault(ep.Meta.Namespace), name: ep.Meta.Name}, ep.Source)
	}
	for i := range objs.EndpointSlices {
		sl := &objs.EndpointSlices[i]
		note(endpointsKey{slice: true, namespace: namespaceOrDefault(sl.Meta.Namespace), name: sl.Meta.Name}, sl.Source)
	}
	return cur
}

// endpointsNameProblem reports, as an error in ds, a namespace or service
// name no Service could have: the API server refuses such an Endpoints
// (or slice label), and a route that names the service would silently
// find no endpoints. svc is at field.
func endpointsNameProblem(meta ObjectMeta, svc string, src Source, field string, ds *Diagnostics) bool {
	if msg := namespaceProblem(namespaceOrDefault(meta.Namespace)); msg != "" {
		*ds = append(*ds, Diagnostic{Pos: src.At("metadata.namespace"), Severity: SeverityError, Field: "metadata.namespace", Message: msg})
		return true
	}
	if msg := serviceNameProblem(svc); msg != "" {
		*ds = append(*ds, Diagnostic{Pos: src.At(field), Severity: SeverityError, Field: field, Message: msg})
		return true
	}
	return false
}

// endpointsGroups validates one Endpoints: one group per subset.
func endpointsGroups(ep *Endpoints) groupsMemo {
	out := groupsMemo{done: true, ok: true, key: ownKey(namespaceOrDefault(ep.Meta.Namespace), ep.Meta.Name)}
	ds := &out.diags
	if endpointsNameProblem(ep.Meta, ep.Meta.Name, ep.Source, "metadata.name", ds) {
		out.ok = false
		return out
	}
	for si, sub := range ep.Subsets {
		prefix := "subsets[" + strconv.Itoa(si) + "]"
		g := endpointGroup{ports: validPorts(sub.Ports, ep.Source, prefix+".ports", ds)}
		g.addrs = make([]netip.Addr, 0, len(sub.Addresses))
		for ai, a := range sub.Addresses {
			field := prefix + ".addresses[" + strconv.Itoa(ai) + "].ip"
			if addr, ok := endpointIP(a.IP, ep.Source, field, ds); ok {
				g.addrs = append(g.addrs, addr)
			}
		}
		out.groups = append(out.groups, g)
	}
	if len(ep.Subsets) == 0 {
		// Present but empty: the service exists and has no endpoints,
		// which is different from no object at all.
		out.groups = append(out.groups, endpointGroup{})
	}
	out.groups = slices.Clip(out.groups)
	return out
}

// sliceGroups validates one EndpointSlice: one group, or none when it
// names no service.
func sliceGroups(sl *EndpointSlice) groupsMemo {
	out := groupsMemo{done: true}
	svc := sl.Meta.Labels[ServiceNameLabel]
	if svc == "" {
		out.diags = Diagnostics{{Pos: sl.Source.At("metadata.labels"), Severity: SeverityWarning, Field: "metadata.labels",
			Message: fmt.Sprintf("EndpointSlice has no %s label, so it belongs to no service; ignored", ServiceNameLabel)}}
		return out
	}
	ds := &out.diags
	if endpointsNameProblem(sl.Meta, svc, sl.Source, "metadata.labels", ds) {
		return out
	}
	out.ok, out.key = true, ownKey(namespaceOrDefault(sl.Meta.Namespace), svc)
	g := endpointGroup{ports: validPorts(sl.Ports, sl.Source, "ports", ds)}
	// The API server refuses a slice of another address type, or with an
	// address not of its type; FQDN slices name hosts, which HAProxy
	// servers added at runtime cannot resolve (see endpointIP).
	switch sl.AddressType {
	case "", addressIPv4, addressIPv6:
	case addressFQDN:
		*ds = append(*ds, Diagnostic{Pos: sl.Source.At("addressType"), Severity: SeverityWarning, Field: "addressType",
			Message: "FQDN endpoint slices name hosts, and haroute's servers are IP addresses; ignored"})
		out.groups = []endpointGroup{g}
		return out
	default:
		*ds = append(*ds, Diagnostic{Pos: sl.Source.At("addressType"), Severity: SeverityError, Field: "addressType",
			Message: fmt.Sprintf("addressType %q is not IPv4, IPv6 or FQDN", sl.AddressType)})
		out.groups = []endpointGroup{g}
		return out
	}
	for ei, e := range sl.Endpoints {
		if e.Ready != nil && !*e.Ready {
			continue
		}
		for ai, a := range e.Addresses {
			field := "endpoints[" + strconv.Itoa(ei) + "].addresses[" + strconv.Itoa(ai) + "]"
			addr, ok := endpointIP(a, sl.Source, field, ds)
			if !ok {
				continue
			}
			if t := sl.AddressType; (t == addressIPv4 && !addr.Unmap().Is4()) || (t == addressIPv6 && addr.Is4()) {
				*ds = append(*ds, Diagnostic{Pos: positionOf(sl.Source, field, "endpoints["+strconv.Itoa(ei)+"]"), Severity: SeverityError, Field: field,
					Message: fmt.Sprintf("address %s is not of the slice's addressType %s", a, t)})
				continue
			}
			g.addrs = append(g.addrs, addr)
		}
	}
	out.groups = []endpointGroup{g}
	return out
}

// An EndpointSlice's addressType values (discovery.k8s.io/v1).
const (
	addressIPv4 = "IPv4"
	addressIPv6 = "IPv6"
	addressFQDN = "FQDN"
)

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return defaultNamespace
	}
	return ns
}

// validPorts returns the TCP ports of a subset or slice with valid numbers.
// UDP and SCTP ports are skipped silently: services commonly list them
// (DNS), and a TCP router simply has nothing to do with them.
func validPorts(ports []EndpointPort, src Source, prefix string, ds *Diagnostics) []EndpointPort {
	out := make([]EndpointPort, 0, len(ports))
	var named map[string]int // the index of each name's first port
	for i, p := range ports {
		if p.Protocol != "" && p.Protocol != "TCP" {
			continue
		}
		if p.Port < 1 || p.Port > 65535 {
			field := prefix + "[" + strconv.Itoa(i) + "].port"
			*ds = append(*ds, Diagnostic{Pos: positionOf(src, field, prefix+"["+strconv.Itoa(i)+"]"), Severity: SeverityError, Field: field,
				Message: fmt.Sprintf("port %d is out of range 1-65535", p.Port)})
			continue
		}
		if p.Name != "" {
			// The API server refuses such a list; which port a route's
			// targetPort names would otherwise be chosen silently.
			if first, dup := named[p.Name]; dup {
				field := prefix + "[" + strconv.Itoa(i) + "].name"
				*ds = append(*ds, Diagnostic{Pos: positionOf(src, field, prefix+"["+strconv.Itoa(i)+"]"), Severity: SeverityWarning, Field: field,
					Message: fmt.Sprintf("port name %q is already used by %s[%d]; this port is left out (the API server refuses port names that repeat)", p.Name, prefix, first)})
				continue
			}
			if named == nil {
				named = map[string]int{}
			}
			named[p.Name] = i
		}
		// Copied: the memo outlives this version of the file (see
		// ownKey).
		p.Name, p.Protocol = strings.Clone(p.Name), strings.Clone(p.Protocol)
		out = append(out, p)
	}
	return out
}

// ownKey is a serviceKey whose strings are copies. Decoded strings share
// their file's text, and an endpoints memo is carried over to the next
// versions of its file (fileMemo.carryOver): a memo holding a piece of
// the text would keep every version it came from alive.
func ownKey(namespace, name string) serviceKey {
	return serviceKey{strings.Clone(namespace), strings.Clone(name)}
}

// endpointIP parses an endpoint address. HAProxy servers here are IP
// literals: a hostname would need DNS resolution at runtime, which the
// runtime API cannot add servers with. Hostnames are skipped with a
// warning; anything else is an error.
func endpointIP(s string, src Source, field string, ds *Diagnostics) (netip.Addr, bool) {
	addr, err := netip.ParseAddr(s)
	if err == nil && addr.Zone() == "" && serverAddress(addr.Unmap()) {
		return addr.Unmap(), true
	}
	// A missing ip is reported at its address (its other fields).
	item, _ := strings.CutSuffix(field, ".ip")
	d := Diagnostic{Pos: positionOf(src, field, item+".hostname", item+".nodeName", item+".targetRef.name", item), Field: field}
	switch {
	case s == "":
		d.Severity = SeverityError
		d.Message = "ip is required: an address without one cannot be a server"
	case err == nil && addr.Zone() != "":
		d.Severity = SeverityError
		d.Message = fmt.Sprintf("address %q has a zone; only plain IP addresses are supported", s)
	case err == nil:
		// Kubernetes refuses these in Endpoints too. HAProxy reads a
		// server at 0.0.0.0 or :: as "connect to where the client
		// connected": the router itself.
		d.Severity = SeverityError
		d.Message = fmt.Sprintf("address %q is unspecified, multicast, broadcast or IPv6 link-local: not an address a server can be reached at", s)
	case looksLikeHostname(s):
		d.Severity = SeverityWarning
		d.Message = fmt.Sprintf("address %q is a hostname; only IP addresses are supported, skipped", s)
	default:
		d.Severity = SeverityError
		d.Message = fmt.Sprintf("address %q is not an IP address", s)
	}
	*ds = append(*ds, d)
	return netip.Addr{}, false
}

// serverAddress reports whether a server can be at addr: not unspecified,
// multicast, the IPv4 broadcast address, or IPv6 link-local, which
// cannot be reached without the zone (the interface) that addresses here
// cannot carry. IPv4 link-local (169.254/16) can: the host routes it.
func serverAddress(addr netip.Addr) bool {
	return !addr.IsUnspecified() && !addr.IsMulticast() && addr != netip.AddrFrom4([4]byte{255, 255, 255, 255}) &&
		!(addr.Is6() && addr.IsLinkLocalUnicast())
}

// looksLikeHostname: a DNS name whose last label is not all digits (no
// top-level domain is), so "10.0.0.300" is a broken IP, not a host.
func looksLikeHostname(s string) bool {
	if !isDNS1123Subdomain(s) {
		return false
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	_, numeric := allDigits(last)
	return !numeric
}

// resolution is the outcome of resolving one service.
type resolution struct {
	endpoints []endpoint
	found     bool // an Endpoints or EndpointSlice exists for the service
	portMiss  bool // addresses exist, but none on the wanted port
}

// resolve returns the ready endpoints of ns/svc on the route's target port,
// sorted by IP then port, without duplicates.
func (ix endpointIndex) resolve(ns, svc string, port *RoutePort) resolution {
	groups, ok := ix[serviceKey{ns, svc}]
	if !ok {
		return resolution{}
	}
	res := resolution{found: true}
	n := 0
	for _, g := range groups {
		n += len(g.addrs)
	}
	res.endpoints = make([]endpoint, 0, n)
	for _, g := range groups {
		if len(g.addrs) == 0 {
			continue
		}
		if port == nil {
			// No targetPort: every port, as the OpenShift router serves
			// such a route (endpointsForAlias without a preferred port).
			for _, p := range g.ports {
				for _, a := range g.addrs {
					res.endpoints = append(res.endpoints, endpoint{addr: a, port: int(p.Port), h2c: p.H2C()})
				}
			}
			continue
		}
		p, ok := pickPort(g.ports, port)
		if !ok {
			res.portMiss = true
			continue
		}
		for _, a := range g.addrs {
			res.endpoints = append(res.endpoints, endpoint{addr: a, port: int(p.Port), h2c: p.H2C()})
		}
	}
	if len(res.endpoints) > 0 {
		res.portMiss = false
	}
	slices.SortStableFunc(res.endpoints, func(a, b endpoint) int {
		if c := a.addr.Compare(b.addr); c != 0 {
			return c
		}
		return cmp.Compare(a.port, b.port)
	})
	out := res.endpoints[:0]
	for i, e := range res.endpoints {
		// The same address and port twice (Endpoints and a slice): the
		// first mention's appProtocol wins.
		if i > 0 && e.addr == res.endpoints[i-1].addr && e.port == res.endpoints[i-1].port {
			continue
		}
		out = append(out, e)
	}
	res.endpoints = out
	return res
}

// pickPort chooses the port of a group for a route's targetPort, by name or
// number.
func pickPort(ports []EndpointPort, tp *RoutePort) (EndpointPort, bool) {
	t := tp.TargetPort
	for _, p := range ports {
		if t.IsString {
			// As the OpenShift router does, a string of digits also
			// matches the port number.
			if p.Name == t.Str || (t.Str != "" && strconv.Itoa(int(p.Port)) == t.Str) {
				return p, true
			}
		} else if p.Port == t.Int {
			return p, true
		}
	}
	return EndpointPort{}, false
}

// spreadWeights sets the weight of every server of a route, as the
// OpenShift router does (calculateServiceWeights), so that a migrated
// route balances exactly as it did:
//   - with one active service (weight above 0 and servers), its servers
//     weigh 1 each: the ratio between them is all that counts, and HAProxy
//     then keeps no large weight tables;
//   - otherwise each service's weight is divided among its servers, the
//     largest share is scaled to 256 and the others alike, truncated (in
//     float32, as the router computes), never below 1 for a share above 0.
//
// A service of weight 0 keeps weight 0 on its servers.
func spreadWeights(services []ServiceBackend) {
	active := 0
	var maxShare float32
	for _, s := range services {
		if len(s.Servers) == 0 {
			continue
		}
		if s.Weight > 0 {
			active++
		}
		maxShare = max(maxShare, float32(s.Weight)/float32(len(s.Servers)))
	}
	var scale float32
	if maxShare > 0 {
		scale = maxServiceWeight / maxShare
	}
	for i := range services {
		s := &services[i]
		w := 0
		switch {
		case len(s.Servers) == 0 || s.Weight <= 0:
		case active == 1:
			w = 1
		default:
			share := float32(s.Weight) / float32(len(s.Servers))
			w = max(1, int(int32(share*scale)))
		}
		for j := range s.Servers {
			s.Servers[j].Weight = w
		}
	}
}

// describeTargetPort renders targetPort for messages.
func describeTargetPort(p *RoutePort) string {
	if p.TargetPort.IsString {
		return strconv.Quote(p.TargetPort.Str)
	}
	return strconv.Itoa(int(p.TargetPort.Int))
}
