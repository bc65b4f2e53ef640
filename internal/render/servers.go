package render

import (
	"sort"
	"strconv"
	"time"

	"github.com/haroute/haroute/internal/model"
)

// SystemCAFile is what reencrypt servers verify against when neither the
// route nor the RouterConfig names a destination CA. HAProxy 2.6 accepts
// "@system-ca" (OpenSSL's default trust store) in server lines.
const SystemCAFile = "@system-ca"

// ServerArgs returns the options of one server line, everything after the
// address: the rendered config and the runtime `add server` both use it,
// so a server added at runtime is identical to the one a reload creates.
//
// Every server carries `check inter …`: health checks must be configured
// everywhere, because HAProxy refuses `enable health` on a server without
// `check`. Routes with fewer than two active endpoints have their checks
// disabled at runtime instead (see UncheckedServers). Cookies need nothing
// here: backends use dynamic cookies, derived from the server address and
// the backend's dynamic-cookie-key.
func ServerArgs(r model.AdmittedRoute, s model.Server, in Input) string {
	return string(appendServerArgs(nil, &r, &s, in, duration(healthCheckInterval(&r, in))))
}

// appendServerArgs appends ServerArgs to b; inter is the route's rendered
// health check interval, computed once per route by the config writer.
func appendServerArgs(b []byte, r *model.AdmittedRoute, s *model.Server, in Input, inter string) []byte {
	b = append(b, "weight "...)
	b = strconv.AppendInt(b, int64(s.Weight), 10)
	b = append(b, " check inter "...)
	b = append(b, inter...)
	if n := r.Backend.PodConcurrentConnections; n > 0 {
		b = append(b, " maxconn "...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	if r.Termination == model.TerminationReencrypt {
		// Checks stay plain TCP connects (DESIGN §3): an ssl server checks
		// with a TLS handshake unless a check port is set, and
		// `no-check-ssl` is refused by `add server` on 2.6 — so name the
		// server's own port (verified on 2.6.12: L4OK vs L6 checks).
		b = append(b, " ssl verify required ca-file "...)
		b = append(b, destinationCAPath(r, in)...)
		b = append(b, " sni req.hdr(host),field(1,:),lower port "...)
		b = strconv.AppendInt(b, int64(s.Port), 10)
	}
	return b
}

// ServerAddress renders a server's address as it appears on the server line
// and in `add server` (IPv6 bracketed).
func ServerAddress(s model.Server) string { return hostPort(s.Address, s.Port) }

func healthCheckInterval(r *model.AdmittedRoute, in Input) time.Duration {
	if d := r.Backend.HealthCheckInterval; d > 0 {
		return d
	}
	if in.Desired != nil && in.Desired.Router.HealthCheckInterval > 0 {
		return in.Desired.Router.HealthCheckInterval
	}
	return model.DefaultHealthCheckInterval
}

// destinationCAPath is the CA file a reencrypt route's servers verify
// against: the route's own, else the router's default, else the system store.
func destinationCAPath(r *model.AdmittedRoute, in Input) string {
	switch {
	case r.TLS.DestinationCACertificate != "":
		return in.Dir + "/" + routeCAName(r)
	case len(in.DefaultDestinationCA) > 0:
		return in.Dir + "/" + DefaultDestinationCAFile
	default:
		return SystemCAFile
	}
}

// RouteServers returns the servers rendered for a route: every server of
// every service, in order, keeping the first of any duplicate name (the
// same endpoint behind two services of one route would otherwise be a
// duplicate server, which HAProxy refuses).
func RouteServers(r model.AdmittedRoute) []model.Server {
	n := 0
	for _, svc := range r.Services {
		n += len(svc.Servers)
	}
	if n == 0 {
		return nil
	}
	out := make([]model.Server, 0, n)
	eachRouteServer(&r, func(s *model.Server) { out = append(out, *s) })
	return out
}

// smallRoute is the number of servers up to which duplicate names are
// found by scanning rather than with a map.
const smallRoute = 16

// eachRouteServer calls fn for the servers RouteServers returns, in order.
func eachRouteServer(r *model.AdmittedRoute, fn func(*model.Server)) {
	n := 0
	for _, svc := range r.Services {
		n += len(svc.Servers)
	}
	var seen map[model.ServerName]bool
	if n > smallRoute {
		seen = make(map[model.ServerName]bool, n)
	}
	// dup reports whether the server j of service i has the name of an
	// earlier one.
	dup := func(i, j int) bool {
		name := r.Services[i].Servers[j].Name
		if seen != nil {
			if seen[name] {
				return true
			}
			seen[name] = true
			return false
		}
		for si := 0; si <= i; si++ {
			servers := r.Services[si].Servers
			if si == i {
				servers = servers[:j]
			}
			for k := range servers {
				if servers[k].Name == name {
					return true
				}
			}
		}
		return false
	}
	for i := range r.Services {
		for j := range r.Services[i].Servers {
			if !dup(i, j) {
				fn(&r.Services[i].Servers[j])
			}
		}
	}
}

// UncheckedServers lists, per backend, the servers whose health checks the
// daemon must disable (`disable health`) after every start or reload and
// after adding them at runtime: those of routes with fewer than two active
// endpoints, which send no check traffic (DESIGN §3). Names are sorted.
// Backends without servers are left out.
func UncheckedServers(d *model.Desired) map[model.BackendName][]model.ServerName {
	out := make(map[model.BackendName][]model.ServerName)
	if d == nil {
		return out
	}
	for _, r := range d.Routes {
		if r.HealthChecked() {
			continue
		}
		servers := RouteServers(r)
		if len(servers) == 0 {
			continue
		}
		names := make([]model.ServerName, 0, len(servers))
		for _, s := range servers {
			names = append(names, s.Name)
		}
		sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
		out[r.BackendName()] = names
	}
	return out
}
