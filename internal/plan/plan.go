package plan

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/haroute/haroute/internal/model"
	"github.com/haroute/haroute/internal/render"
)

// State is one side of a plan: a desired state with its rendered bundle
// and the input it was rendered from.
type State struct {
	Desired *model.Desired
	Bundle  *render.Bundle
	Input   render.Input
	// PendingDeletes lists, on the applied side, servers that were drained
	// (RemoveServer) but not deleted yet: they still exist in HAProxy, so
	// an endpoint that comes back is re-enabled rather than added. A reload
	// drops them, so the daemon clears this after every reload.
	PendingDeletes map[model.BackendName]map[model.ServerName]string
}

// Plan is what it takes to move HAProxy from the applied state to the
// desired one. Exactly one of Reload and Ops carries the work: a plan with
// Reload true has no Ops, and one with Ops does not reload.
type Plan struct {
	Reload bool
	// Reasons is non-empty iff Reload: each names what forced the reload.
	Reasons []Reason
	// Ops are the runtime operations, in the order to apply them: new
	// capacity first (adds, re-enables, weights), then traffic
	// moves (maps), certificates, and draining last.
	Ops []Op
	// Changes is every change found, each marked with how it is applied,
	// for `haroute plan` and the logs.
	Changes []Change
}

// Mode says how a change reaches HAProxy.
type Mode int

const (
	// ModeRuntime changes are applied through the runtime API.
	ModeRuntime Mode = iota
	// ModeReload changes need a reload.
	ModeReload
	// ModeDaemon changes only affect haroute itself (reload throttling,
	// which routes are selected); HAProxy is not touched for them.
	ModeDaemon
)

func (m Mode) String() string {
	switch m {
	case ModeRuntime:
		return "runtime"
	case ModeReload:
		return "reload"
	default:
		return "daemon"
	}
}

// Kind is what sort of change was found. The set is small and fixed, so it
// can label metrics.
type Kind string

const (
	KindInitial          Kind = "initial configuration"
	KindDCMDisabled      Kind = "dynamic config manager disabled"
	KindRouterSettings   Kind = "router settings changed"
	KindRouteAdded       Kind = "route added"
	KindRouteDeleted     Kind = "route deleted"
	KindRouteBound       Kind = "route bound to a spare backend"
	KindRouteUnbound     Kind = "route unbound from its spare backend"
	KindTermination      Kind = "termination changed"
	KindBackendSettings  Kind = "backend settings changed"
	KindHostPath         Kind = "host/path changed"
	KindRedirectPolicy   Kind = "redirect policy changed"
	KindEndpointAdded    Kind = "endpoint added"
	KindEndpointRemoved  Kind = "endpoint removed"
	KindEndpointRestored Kind = "endpoint re-enabled"
	KindEndpointAddress  Kind = "endpoint address changed"
	KindServerOptions    Kind = "server options changed"
	KindWeight           Kind = "weight changed"
	KindMap              Kind = "map changed"
	KindMapFile          Kind = "map file changed"
	KindCertificate      Kind = "certificate changed"
	KindCertificateFile  Kind = "certificate file changed"
	KindCrtList          Kind = "crt-list changed"
	KindAllowlist        Kind = "allowlist changed"
	KindCAFile           Kind = "CA file changed"
	KindFile             Kind = "file changed"
	KindConfig           Kind = "haproxy.cfg changed"
	// Reasons the daemon adds to the planner's.
	KindRuntimeFallback Kind = "runtime-fallback"
	KindHeal            Kind = "heal"
	KindPoolRefill      Kind = "pool of spare backends topped up"
	KindCoalesced       Kind = "coalesced with a pending reload"
	KindStarted         Kind = "haproxy started"
)

// Label is the kind as a metrics label value: lowercase words joined by
// dashes ("route-added", "haproxy-cfg-changed"). Kinds are a fixed set, so
// the labels are too; no reason text ever becomes a label.
func (k Kind) Label() string {
	b := make([]byte, 0, len(k))
	dash := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		default:
			dash = len(b) > 0
			continue
		}
		if dash {
			b = append(b, '-')
			dash = false
		}
		b = append(b, c)
	}
	if len(b) == 0 {
		return "other"
	}
	return string(b)
}

// Change is one difference between the applied and the desired state.
type Change struct {
	Mode Mode
	Kind Kind
	// Subject is what changed: a route ("ns/name"), a router setting
	// ("ports"), or a file of the bundle ("maps/http.map").
	Subject string
	// Field names the settings that changed, for settings changes
	// ("balance", "balance, timeout").
	Field string
	// Detail is for people: "ep_10.0.0.1_8080 100 -> 50".
	Detail string
}

// Reason is why a plan reloads.
type Reason struct {
	Kind    Kind
	Subject string
	Field   string
}

// String reads "route added: default/new" or
// "backend settings changed: default/app (balance)".
func (r Reason) String() string {
	s := string(r.Kind)
	if r.Subject != "" {
		s += ": " + r.Subject
	}
	if r.Field != "" {
		s += " (" + r.Field + ")"
	}
	return s
}

// Reason returns the reason a reload-mode change gives.
func (c Change) Reason() Reason {
	return Reason{Kind: c.Kind, Subject: c.Subject, Field: c.Field}
}

// Touched returns the backends the plan's ops change, in op order, and the
// paths of the maps it replaces: the parts of HAProxy a read-back must
// check in full. Maps edited in place are probed instead (see Expect).
func (p Plan) Touched() (backends []model.BackendName, maps []string) {
	seen := make(map[model.BackendName]bool)
	for _, op := range p.Ops {
		var be model.BackendName
		switch o := op.(type) {
		case AddServer:
			be = o.Backend
		case ReenableServer:
			be = o.Backend
		case RemoveServer:
			be = o.Backend
		case SetWeight:
			be = o.Backend
		case MapReplace:
			maps = append(maps, o.Path)
		}
		if be != "" && !seen[be] {
			seen[be] = true
			backends = append(backends, be)
		}
	}
	return backends, maps
}

// Compute diffs the applied state against the desired one. An applied
// state without a Desired or Bundle means nothing was applied yet: the
// plan is a reload for "initial configuration". desired must carry both.
//
// Reload decisions come from two sides: the models say why (a route was
// added, a setting changed), and the bundles catch what the models cannot
// name (a changed crt-list, CA file, or a part of haproxy.cfg that no model
// change explains), so the decision never rests on a guess about render.
func Compute(applied, desired State) Plan {
	if desired.Desired == nil || desired.Bundle == nil {
		panic("plan.Compute: desired state needs Desired and Bundle")
	}
	if applied.Desired == nil || applied.Bundle == nil {
		c := Change{Mode: ModeReload, Kind: KindInitial}
		return Plan{Reload: true, Reasons: []Reason{c.Reason()}, Changes: []Change{c}}
	}
	d := newDiffer(applied, desired)
	d.router()
	d.routes()
	d.bundles()
	return d.finish()
}

// differ accumulates the changes and ops of one Compute.
type differ struct {
	applied, desired State

	changes []Change
	// Op buckets, concatenated in this order by finish. settingsAdds and
	// settingsDels are the edits of the maps keyed by backend (timeouts,
	// HSTS, forwarded headers): a spare's settings are in place before
	// a routing entry leads to it, and leave only after the last one is
	// gone, so no request is served with the defaults in between.
	tlsAdds, adds, weights, settingsAdds, maps, settingsDels, certs, removes, tlsRemoves []Op

	// newBackends are the backends only the desired state has (added
	// routes, changed terminations): map entries pointing at them are
	// part of that reload, not runtime map updates.
	newBackends map[model.BackendName]bool
	// desiredRoutes are the desired routes in key order (routes sets it);
	// boundSlots the spares that desired routes are bound to, built on
	// first use (only a changed map needs it).
	desiredRoutes []*model.AdmittedRoute
	boundSlots    map[model.BackendName]bool
	// appliedSpares and desiredSpares are the free spare backends of the
	// pool on each side, by name, built on first use.
	appliedSpares, desiredSpares map[model.BackendName]*model.AdmittedRoute
	// routerReload is set when a router setting forces a reload: it
	// explains every server line that changes with it.
	routerReload    bool
	skeletonChanged bool
}

func newDiffer(applied, desired State) *differ {
	return &differ{
		applied:     applied,
		desired:     desired,
		newBackends: make(map[model.BackendName]bool),
	}
}

// isRouteBackend reports whether be is the backend of a desired route. A
// route's own backend is named after its key (prefix:namespace:name), so
// one search of the sorted routes finds it; naming all 10k backends to
// look one up cost a route change 2 ms. A spare is looked up among the
// few routes bound to one.
func (d *differ) isRouteBackend(be model.BackendName) bool {
	if d.boundSlots == nil {
		d.boundSlots = make(map[model.BackendName]bool)
		for _, r := range d.desiredRoutes {
			if r.Slot != "" {
				d.boundSlots[r.Slot] = true
			}
		}
	}
	if d.boundSlots[be] {
		return true
	}
	key, ok := be.RouteKey()
	if !ok {
		return false
	}
	i, found := model.FindRoute(d.desiredRoutes, key)
	return found && d.desiredRoutes[i].BackendName() == be
}

func (d *differ) add(c Change) { d.changes = append(d.changes, c) }

func (d *differ) finish() Plan {
	hasWork := false
	reload := false
	for _, c := range d.changes {
		switch c.Mode {
		case ModeReload:
			hasWork, reload = true, true
		case ModeRuntime:
			hasWork = true
		}
	}
	// A skeleton that changed with no model change to explain it still
	// needs a reload; name the sections so the reason is useful.
	if d.skeletonChanged && !reload {
		cs := configChanges(d.applied.Bundle.Skeleton, d.desired.Bundle.Skeleton)
		for _, c := range cs {
			d.add(c)
		}
		if len(cs) > 0 {
			hasWork, reload = true, true
		}
	}
	if hasWork && !d.desired.Desired.Router.DynamicConfigManager {
		for i := range d.changes {
			if d.changes[i].Mode == ModeRuntime {
				d.changes[i].Mode = ModeReload
			}
		}
		d.changes = append([]Change{{Mode: ModeReload, Kind: KindDCMDisabled}}, d.changes...)
		reload = true
	}

	p := Plan{Reload: reload, Changes: d.changes}
	if reload {
		seen := make(map[Reason]bool)
		for _, c := range d.changes {
			if c.Mode != ModeReload {
				continue
			}
			if r := c.Reason(); !seen[r] {
				seen[r] = true
				p.Reasons = append(p.Reasons, r)
			}
		}
		return p
	}
	for _, bucket := range [][]Op{d.tlsAdds, d.adds, d.weights, d.settingsAdds, d.maps, d.settingsDels, d.certs, d.removes, d.tlsRemoves} {
		p.Ops = append(p.Ops, bucket...)
	}
	return p
}

// router compares the router settings. Fields that render reads force a
// reload; the rest only change how haroute behaves. The default
// certificate and destination CA are compared as bundle files instead,
// since the input (not the settings) carries their content.
func (d *differ) router() {
	a, b := d.applied.Desired.Router, d.desired.Desired.Router

	var ports []string
	if a.HTTPPort != b.HTTPPort {
		ports = append(ports, fmt.Sprintf("http %d -> %d", a.HTTPPort, b.HTTPPort))
	}
	if a.HTTPSPort != b.HTTPSPort {
		ports = append(ports, fmt.Sprintf("https %d -> %d", a.HTTPSPort, b.HTTPSPort))
	}
	if a.StatsPort != b.StatsPort {
		ports = append(ports, fmt.Sprintf("stats %d -> %d", a.StatsPort, b.StatsPort))
	}
	if len(ports) > 0 {
		d.add(Change{Mode: ModeReload, Kind: KindRouterSettings, Subject: "ports", Detail: strings.Join(ports, ", ")})
	}

	reload := func(field string, changed bool, from, to any) {
		if changed {
			d.add(Change{Mode: ModeReload, Kind: KindRouterSettings, Subject: field, Detail: fmt.Sprintf("%v -> %v", show(from), show(to))})
		}
	}
	reload("bindAddress", !slices.Equal(a.ListenAddresses(), b.ListenAddresses()), a.ListenAddresses(), b.ListenAddresses())
	reload("healthCheckInterval", a.HealthCheckInterval != b.HealthCheckInterval, a.HealthCheckInterval, b.HealthCheckInterval)
	reload("maxConnections", a.MaxConnections != b.MaxConnections, a.MaxConnections, b.MaxConnections)
	reload("threadCount", a.ThreadCount != b.ThreadCount, a.ThreadCount, b.ThreadCount)
	reload("clientTimeout", a.ClientTimeout != b.ClientTimeout, a.ClientTimeout, b.ClientTimeout)
	reload("serverTimeout", a.ServerTimeout != b.ServerTimeout, a.ServerTimeout, b.ServerTimeout)
	reload("connectTimeout", a.ConnectTimeout != b.ConnectTimeout, a.ConnectTimeout, b.ConnectTimeout)
	reload("tunnelTimeout", a.TunnelTimeout != b.TunnelTimeout, a.TunnelTimeout, b.TunnelTimeout)
	reload("clientFinTimeout", a.ClientFinTimeout != b.ClientFinTimeout, a.ClientFinTimeout, b.ClientFinTimeout)
	reload("serverFinTimeout", a.ServerFinTimeout != b.ServerFinTimeout, a.ServerFinTimeout, b.ServerFinTimeout)
	reload("tlsInspectDelay", a.TLSInspectDelay != b.TLSInspectDelay, a.TLSInspectDelay, b.TLSInspectDelay)
	reload("hardStopAfter", a.HardStopAfter != b.HardStopAfter, a.HardStopAfter, b.HardStopAfter)
	reload("headerBufferBytes", a.HeaderBufferBytes != b.HeaderBufferBytes, a.HeaderBufferBytes, b.HeaderBufferBytes)
	reload("headerBufferMaxRewriteBytes", a.HeaderBufferMaxRewriteBytes != b.HeaderBufferMaxRewriteBytes, a.HeaderBufferMaxRewriteBytes, b.HeaderBufferMaxRewriteBytes)
	reload("httpKeepAliveTimeout", a.HTTPKeepAliveTimeout != b.HTTPKeepAliveTimeout, a.HTTPKeepAliveTimeout, b.HTTPKeepAliveTimeout)
	reload("httpRequestTimeout", a.HTTPRequestTimeout != b.HTTPRequestTimeout, a.HTTPRequestTimeout, b.HTTPRequestTimeout)
	reload("hostNetwork.protocol", a.ProxyProtocol != b.ProxyProtocol, a.ProxyProtocol, b.ProxyProtocol)
	reload("tlsSecurityProfile", a.TLS != b.TLS, a.TLS.Profile, b.TLS.Profile)
	reload("logging.access", !reflect.DeepEqual(a.AccessLog, b.AccessLog), a.AccessLog.String(), b.AccessLog.String())
	reload("httpHeaders.uniqueId", !reflect.DeepEqual(a.UniqueID, b.UniqueID), a.UniqueID.String(), b.UniqueID.String())
	reload("httpHeaders.forwardedHeaderPolicy", a.ForwardedHeaderPolicy != b.ForwardedHeaderPolicy, a.ForwardedHeaderPolicy, b.ForwardedHeaderPolicy)
	reload("httpHeaders.actions.request", !reflect.DeepEqual(a.RequestHeaderActions, b.RequestHeaderActions),
		model.HeaderActionsSummary(a.RequestHeaderActions), model.HeaderActionsSummary(b.RequestHeaderActions))
	reload("httpHeaders.actions.response", !reflect.DeepEqual(a.ResponseHeaderActions, b.ResponseHeaderActions),
		model.HeaderActionsSummary(a.ResponseHeaderActions), model.HeaderActionsSummary(b.ResponseHeaderActions))
	reload("httpCompression.mimeTypes", !slices.Equal(a.CompressionMIMETypes, b.CompressionMIMETypes), a.CompressionMIMETypes, b.CompressionMIMETypes)
	reload("httpErrorCodePages", a.ErrorPagesDir != b.ErrorPagesDir, a.ErrorPagesDir, b.ErrorPagesDir)
	reload("http2", a.HTTP2 != b.HTTP2, a.HTTP2, b.HTTP2)
	reload("clientTLS", !reflect.DeepEqual(a.ClientTLS, b.ClientTLS), a.ClientTLS.String(), b.ClientTLS.String())
	reload("httpEmptyRequestsPolicy", a.IgnoreEmptyRequests != b.IgnoreEmptyRequests, emptyRequestsPolicy(a), emptyRequestsPolicy(b))
	reload("idleConnectionTerminationPolicy", a.DeferIdleClose != b.DeferIdleClose, idleClosePolicy(a), idleClosePolicy(b))

	for _, c := range d.changes {
		d.routerReload = d.routerReload || c.Mode == ModeReload
	}

	daemon := func(field string, changed bool, from, to any) {
		if changed {
			d.add(Change{Mode: ModeDaemon, Kind: KindRouterSettings, Subject: field, Detail: fmt.Sprintf("%v -> %v", show(from), show(to))})
		}
	}
	daemon("reloadInterval", a.ReloadInterval != b.ReloadInterval, a.ReloadInterval, b.ReloadInterval)
	daemon("dynamicConfigManager", a.DynamicConfigManager != b.DynamicConfigManager, a.DynamicConfigManager, b.DynamicConfigManager)
	// Selection settings decide which routes are served; their effect shows
	// up as routes added or deleted.
	if !selectorEqual(a.RouteSelector, b.RouteSelector) {
		d.add(Change{Mode: ModeDaemon, Kind: KindRouterSettings, Subject: "routeSelector", Detail: "changed"})
	}
	daemon("namespaces", !slices.Equal(a.Namespaces, b.Namespaces), a.Namespaces, b.Namespaces)
	daemon("allowWildcardRoutes", a.AllowWildcardRoutes != b.AllowWildcardRoutes, a.AllowWildcardRoutes, b.AllowWildcardRoutes)
	daemon("routeAdmission.namespaceOwnership", a.InterNamespaceAllowed != b.InterNamespaceAllowed,
		namespaceOwnership(a), namespaceOwnership(b))
	// Generated hosts move with the domain: map updates.
	daemon("domain", a.Domain != b.Domain, a.Domain, b.Domain)
}

func idleClosePolicy(s model.Settings) string {
	if s.DeferIdleClose {
		return "Deferred"
	}
	return "Immediate"
}

func emptyRequestsPolicy(s model.Settings) string {
	if s.IgnoreEmptyRequests {
		return "Ignore"
	}
	return "Respond"
}

func namespaceOwnership(s model.Settings) string {
	if s.InterNamespaceAllowed {
		return model.NamespaceOwnershipInterAllowed
	}
	return model.NamespaceOwnershipStrict
}

// show formats a setting value so that "unset" reads as such.
func show(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return `""`
		}
		return x
	case []string:
		return "[" + strings.Join(x, ",") + "]"
	}
	return fmt.Sprint(v)
}

func selectorEqual(a, b *model.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.MatchLabels) != len(b.MatchLabels) || len(a.MatchExpressions) != len(b.MatchExpressions) {
		return false
	}
	for k, v := range a.MatchLabels {
		if bv, ok := b.MatchLabels[k]; !ok || bv != v {
			return false
		}
	}
	for i, x := range a.MatchExpressions {
		y := b.MatchExpressions[i]
		if x.Key != y.Key || x.Operator != y.Operator || !slices.Equal(x.Values, y.Values) {
			return false
		}
	}
	return true
}
