package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// routes walks the applied and desired routes together, by key.
func (d *differ) routes() {
	olds := sortedRoutes(d.applied.Desired.Routes)
	news := sortedRoutes(d.desired.Desired.Routes)
	d.desiredRoutes = news

	// Routes shared from load to load are passed over (model.Desired
	// keeps them read-only): at 10k routes and one change, the key
	// comparisons this skips were most of the walk.
	for old, cur := range model.ChangedByKey(olds, news, model.RouteKeyOf) {
		switch {
		case cur == nil:
			if spare := d.spare(d.desired, &d.desiredSpares, old.BackendName()); spare != nil {
				// Its backend goes back to the pool: servers drained, map
				// entries removed, at runtime. A backend of its own stays
				// rendered, as a spare or emptied (daemon's pool).
				c := Change{Mode: ModeRuntime, Kind: KindRouteUnbound, Subject: old.Key.String(), Detail: string(old.Slot)}
				if old.Slot == "" {
					c.Kind, c.Detail = KindRouteDeleted, string(old.BackendName())+" stays, empty, until a reload drops it"
				}
				d.add(c)
				d.slotRoute(old, spare, old)
			} else {
				d.add(Change{Mode: ModeReload, Kind: KindRouteDeleted, Subject: old.Key.String()})
			}
		case old == nil:
			if spare := d.spare(d.applied, &d.appliedSpares, cur.Slot); spare != nil {
				// Bound to a spare the running HAProxy has: servers and
				// map entries added at runtime.
				d.add(Change{Mode: ModeRuntime, Kind: KindRouteBound, Subject: cur.Key.String(), Detail: string(cur.Slot)})
				d.slotRoute(spare, cur, cur)
			} else {
				d.add(Change{Mode: ModeReload, Kind: KindRouteAdded, Subject: cur.Key.String()})
				d.newBackends[cur.BackendName()] = true
			}
		default:
			if d.moved(old, cur) {
				continue
			}
			d.route(old, cur)
		}
	}
}

// moved plans route cur, whose last version old served from a backend of
// its own, bound to a spare instead (the daemon's pool does so when its
// own backend would have to change): unbound from its own backend, which
// the desired side keeps as a spare or retired, and bound to the spare the
// running HAProxy has free, both at runtime, as a delete and an add are.
func (d *differ) moved(old, cur *model.AdmittedRoute) bool {
	if old.Slot != "" || cur.Slot == "" || old.BackendName() == cur.BackendName() {
		return false
	}
	was := d.spare(d.desired, &d.desiredSpares, old.BackendName())
	spare := d.spare(d.applied, &d.appliedSpares, cur.Slot)
	if was == nil || spare == nil {
		return false
	}
	d.add(Change{Mode: ModeRuntime, Kind: KindRouteUnbound, Subject: old.Key.String(), Field: "backend",
		Detail: string(old.BackendName()) + ": its backend settings changed and a spare has the new ones"})
	d.slotRoute(old, was, old)
	d.add(Change{Mode: ModeRuntime, Kind: KindRouteBound, Subject: cur.Key.String(), Detail: string(cur.Slot)})
	d.slotRoute(spare, cur, cur)
	return true
}

// sortedRoutes returns routes ordered by key. Desired promises that order;
// a copy is sorted only when the promise was broken.
func sortedRoutes(rs []*model.AdmittedRoute) []*model.AdmittedRoute {
	if model.InKeyOrder(rs) {
		return rs
	}
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b *model.AdmittedRoute) int { return a.Key.Compare(b.Key) })
	return out
}

func (d *differ) route(old, cur *model.AdmittedRoute) { d.routeDiff(old, cur, false) }

// slotRoute is route for a route bound to a spare or unbound from one. A
// spare is bound only when route r's backend section reads like the
// spare's (render.SameBackend): settings that differ without changing it
// (the server arguments pod-concurrent-connections and the health check
// interval set, forwarded headers equal to the router's policy) need no
// reload, since every server of the route is added or removed anyway.
func (d *differ) slotRoute(old, cur, r *model.AdmittedRoute) {
	spare := old
	if r == old {
		spare = cur
	}
	d.routeDiff(old, cur, render.SameBackend(*r, *spare, d.desired.Input))
}

func (d *differ) routeDiff(old, cur *model.AdmittedRoute, sameSection bool) {
	if old == cur || old.SameOutput(cur) {
		return
	}
	key := cur.Key.String()
	if oldBe, newBe := old.BackendName(), cur.BackendName(); oldBe != newBe {
		// A new backend replaces the old one: a reload, whatever else
		// changed in the route.
		c := Change{Mode: ModeReload, Kind: KindTermination, Subject: key,
			Detail: fmt.Sprintf("%s -> %s", terminationName(old.Termination), terminationName(cur.Termination))}
		if old.Termination == cur.Termination {
			// Its settings left the spare it was bound to (a balance
			// algorithm no free spare has, say).
			c.Kind, c.Detail = KindBackendSettings, fmt.Sprintf("%s -> %s", oldBe, newBe)
		}
		d.add(c)
		d.newBackends[newBe] = true
		return
	}
	// What a spare reads from maps and its ACL changes the backend no more
	// than a host does: the map and ACL diffs make the ops.
	fields, detail := d.backendDiff(render.RuntimeSettingsOf(cur, old.Backend), cur.Backend)
	if !cur.Backend.DisableCookies && !old.Backend.DisableCookies && render.SecureCookie(old) != render.SecureCookie(cur) {
		// The cookie line follows the redirect policy (Allow: not
		// Secure), and a cookie line changes only with a reload.
		fields = append(fields, "cookie")
		detail = append(detail, fmt.Sprintf("cookie Secure %t -> %t (insecureEdgeTerminationPolicy %s -> %s)",
			render.SecureCookie(old), render.SecureCookie(cur), show(string(old.InsecurePolicy)), show(string(cur.InsecurePolicy))))
	}
	if sameSection {
		fields, detail = nil, nil
	}
	if len(fields) > 0 {
		d.add(Change{Mode: ModeReload, Kind: KindBackendSettings, Subject: key,
			Field: strings.Join(fields, ", "), Detail: strings.Join(detail, "; ")})
	}
	// Hosts, paths and redirect policies live in map files; the map diff
	// makes the ops, these changes say why.
	if old.Host != cur.Host || old.Path != cur.Path || old.Wildcard != cur.Wildcard {
		d.add(Change{Mode: ModeRuntime, Kind: KindHostPath, Subject: key,
			Detail: fmt.Sprintf("%s -> %s", hostPath(old), hostPath(cur))})
	}
	if old.InsecurePolicy != cur.InsecurePolicy {
		d.add(Change{Mode: ModeRuntime, Kind: KindRedirectPolicy, Subject: key,
			Detail: fmt.Sprintf("%s -> %s", show(string(old.InsecurePolicy)), show(string(cur.InsecurePolicy)))})
	}
	// TLS material is compared as files (certificates, CA files, crt-list)
	// in the bundle diff.
	// A settings change already explains (and reloads for) server lines
	// that change with it.
	d.servers(old, cur, len(fields) > 0 || d.routerReload)
}

func terminationName(t model.Termination) string {
	if t == model.TerminationNone {
		return "http"
	}
	return string(t)
}

func hostPath(r *model.AdmittedRoute) string {
	host := r.Host
	if i := strings.IndexByte(host, '.'); r.Wildcard && i >= 0 {
		host = "*" + host[i:]
	}
	return host + r.Path
}

// servers diffs the endpoints of a route whose backend stays.
func (d *differ) servers(old, cur *model.AdmittedRoute, settingsChanged bool) {
	be := cur.BackendName()
	key := cur.Key.String()
	oldServers := old.Servers()
	newServers := cur.Servers()
	oldIndex := make(map[model.ServerName]model.Server, len(oldServers))
	for _, s := range oldServers {
		oldIndex[s.Name] = s
	}
	newNames := make(map[model.ServerName]bool, len(newServers))
	// Checked servers are named apart (model.CheckedServerName): a route
	// crossing one/two endpoints adds and drains servers, never changes
	// one's check.
	newChecked := cur.HealthChecked()
	pending := d.applied.PendingDeletes[be]
	curArgs := render.ServerArgsOf(cur, d.desired.Input)
	var oldArgs func(model.Server) string // only when options are compared

	added := false
	var optionsChanged []string
	for _, s := range newServers {
		newNames[s.Name] = true
		o, ok := oldIndex[s.Name]
		if !ok {
			if opts, drained := pending[s.Name]; drained {
				if opts != serverOptions(curArgs, s) {
					// The server still there has the options it was
					// added with (an endpoint's appProtocol, the service
					// a reencrypt server verifies): re-enabled, it would
					// serve unlike the file. Nor can a second one of its
					// name be added while it drains.
					d.add(Change{Mode: ModeReload, Kind: KindServerOptions, Subject: key,
						Detail: string(s.Name) + " (back while it drains, with other options)"})
					continue
				}
				d.adds = append(d.adds, ReenableServer{Backend: be, Server: s.Name, Weight: s.Weight, Checked: newChecked})
				d.add(Change{Mode: ModeRuntime, Kind: KindEndpointRestored, Subject: key, Detail: string(s.Name)})
				continue
			}
			args := curArgs(s)
			if idHeldByDrained(args, pending) {
				// A server still draining holds the id (render.ServerID
				// of another name that hashes alike): `add server` would
				// be refused, and fall back to a reload anyway.
				d.add(Change{Mode: ModeReload, Kind: KindEndpointAdded, Subject: key,
					Detail: string(s.Name) + " (its id is a draining server's)"})
				continue
			}
			d.adds = append(d.adds, AddServer{Backend: be, Server: s.Name, Addr: s.Address, Port: s.Port,
				Args: args, Checked: newChecked})
			d.add(Change{Mode: ModeRuntime, Kind: KindEndpointAdded, Subject: key, Detail: string(s.Name)})
			added = true
			continue
		}
		if o.Address != s.Address || o.Port != s.Port {
			// Names derive from ip:port, so this only happens if that
			// rule changes; the runtime cannot rename, so reload.
			d.add(Change{Mode: ModeReload, Kind: KindEndpointAddress, Subject: key,
				Detail: fmt.Sprintf("%s %s -> %s", s.Name, render.HostPort(o.Address, o.Port), render.HostPort(s.Address, s.Port))})
			continue
		}
		// Anything besides the weight that differs on the server line
		// (maxconn, ssl, ca-file, check interval) cannot be changed at
		// runtime. Settings changes already name the cause.
		if !settingsChanged {
			was := o
			was.Weight = s.Weight
			if oldArgs == nil {
				oldArgs = render.ServerArgsOf(old, d.applied.Input)
			}
			if oldArgs(was) != curArgs(s) {
				optionsChanged = append(optionsChanged, string(s.Name))
			}
		}
		if o.Weight != s.Weight {
			d.weights = append(d.weights, SetWeight{Backend: be, Server: s.Name, Weight: s.Weight})
			d.add(Change{Mode: ModeRuntime, Kind: KindWeight, Subject: key,
				Detail: fmt.Sprintf("%s %d -> %d", s.Name, o.Weight, s.Weight)})
		}
	}
	for _, o := range oldServers {
		if !newNames[o.Name] {
			if oldArgs == nil {
				oldArgs = render.ServerArgsOf(old, d.applied.Input)
			}
			d.removes = append(d.removes, RemoveServer{Backend: be, Server: o.Name, Options: serverOptions(oldArgs, o)})
			d.add(Change{Mode: ModeRuntime, Kind: KindEndpointRemoved, Subject: key, Detail: string(o.Name)})
		}
	}
	if len(optionsChanged) > 0 {
		d.add(Change{Mode: ModeReload, Kind: KindServerOptions, Subject: key, Detail: strings.Join(optionsChanged, ", ")})
	}
	// Render gives every HTTP backend without disable_cookies dynamic
	// cookies; servers added at runtime need the key sent again.
	if added && cur.Termination != model.TerminationPassthrough && !cur.Backend.DisableCookies {
		d.adds = append(d.adds, SetDynamicCookieKey{Backend: be, Key: render.DynamicCookieKey(be)})
	}
}

// idHeldByDrained reports whether the id args give a server (render puts
// it last) is one a drained server of the backend still holds.
func idHeldByDrained(args string, drained map[model.ServerName]string) bool {
	i := strings.LastIndex(args, " id ")
	if i < 0 {
		return false
	}
	for _, opts := range drained {
		if strings.HasSuffix(opts, args[i:]) {
			return true
		}
	}
	return false
}

// serverOptions is what args (render.ServerArgsOf a route) gives server s
// besides its weight, which the runtime sets.
func serverOptions(args func(model.Server) string, s model.Server) string {
	s.Weight = 0
	return args(s)
}

// backendDiff names the backend settings that differ, as the annotation
// table names them.
func (d *differ) backendDiff(a, b model.BackendSettings) (fields, detail []string) {
	for _, c := range model.BackendChanges(&a, &b, &d.applied.Desired.Router, &d.desired.Desired.Router) {
		fields = append(fields, c.Field)
		detail = append(detail, c.Field+" "+c.From+" -> "+c.To)
	}
	return fields, detail
}

// spare returns the spare backend named slot on side s when no route of
// that side is bound to it.
func (d *differ) spare(s State, index *map[model.BackendName]*model.AdmittedRoute, slot model.BackendName) *model.AdmittedRoute {
	if slot == "" {
		return nil
	}
	if *index == nil {
		*index = make(map[model.BackendName]*model.AdmittedRoute, len(s.Input.Spares))
		for i := range s.Input.Spares {
			(*index)[s.Input.Spares[i].Slot] = &s.Input.Spares[i]
		}
		for _, r := range s.Desired.Routes {
			if r.Slot != "" {
				delete(*index, r.Slot)
			}
		}
	}
	return (*index)[slot]
}
