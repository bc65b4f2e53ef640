package render

import (
	"hash/fnv"
	"maps"
	"slices"
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
// Only the servers of routes with two or more active endpoints carry
// `check inter …`, as in OpenShift's template: a check of a route's only
// server could only take the route down. HAProxy reserves one file
// descriptor per checked server of the config (its maxsock) and runs a
// timer for each, so unchecked servers cost neither (model.FDBudget).
// A route crossing between one and two active endpoints is reloaded: 2.6
// cannot give an existing server `check` at runtime (plan). Cookies need
// nothing here: backends use dynamic cookies, derived from the server
// address and the backend's dynamic-cookie-key.
func ServerArgs(r *model.AdmittedRoute, s model.Server, in Input) string {
	return ServerArgsOf(r, in)(s)
}

// ServerArgsOf returns ServerArgs for the servers of r, with what is the
// route's (its check interval, its servers' ids) worked out once: the
// planner asks for every server of a route it diffs, and serverIDs alone
// is a pass over all of them.
func ServerArgsOf(r *model.AdmittedRoute, in Input) func(model.Server) string {
	inter := duration(healthCheckInterval(r, in))
	var ids map[model.ServerName]uint32
	if hashedBalance(r) {
		ids = serverIDs(r)
	}
	return func(s model.Server) string { return string(appendServerArgs(nil, r, &s, in, inter, ids)) }
}

// appendServerArgs appends ServerArgs to b; inter is the route's rendered
// health check interval and ids its servers' ids (serverIDs, for a
// hashedBalance route), computed once per route by the config writer.
func appendServerArgs(b []byte, r *model.AdmittedRoute, s *model.Server, in Input, inter string, ids map[model.ServerName]uint32) []byte {
	b = append(b, "weight "...)
	b = strconv.AppendInt(b, int64(s.Weight), 10)
	if r.HealthChecked() {
		b = append(b, " check inter "...)
		b = append(b, inter...)
	}
	if n := r.Backend.PodConcurrentConnections; n > 0 {
		b = append(b, " maxconn "...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	if r.Termination == model.TerminationReencrypt {
		// Checks stay plain TCP connects (DESIGN §3): an ssl server checks
		// with a TLS handshake unless a check port is set, and
		// `no-check-ssl` is refused by `add server` on 2.6 — so name the
		// server's own port (verified on 2.6.12: L4OK vs L6 checks).
		//
		// What is verified follows OpenShift's template: no SNI is sent; a
		// route's own destinationCACertificate checks the chain alone; the
		// router's default destination CA (OpenShift's service CA) also
		// checks that the certificate names the service,
		// <service>.<namespace>.svc. The system store, haroute's fallback
		// where OpenShift would verify nothing, checks the chain alone.
		b = append(b, " ssl"...)
		if in.Desired != nil && in.Desired.Router.HTTP2 {
			// As OpenShift's template: with HTTP/2 on, reencrypt backends
			// are offered h2 too, whatever the client spoke.
			b = append(b, " alpn h2,http/1.1"...)
		}
		if r.TLS.DestinationCACertificate == "" && len(in.DefaultDestinationCA) > 0 {
			b = append(b, " verifyhost "...)
			b = appendServiceHostname(b, r, s)
		}
		b = append(b, " verify required ca-file "...)
		b = append(b, destinationCAPath(r, in)...)
		// No SNI, on every version: from 3.3 HAProxy sends the request's
		// Host as SNI to an ssl server of an HTTP backend that names none
		// (from 3.4 to servers added at runtime too), and verifies the
		// certificate against it instead of verifyhost: a service-CA
		// certificate, which names <service>.<namespace>.svc, fails. An
		// SNI expression of its own turns that off; this one yields no
		// value (a variable nothing sets), so none is sent and verifyhost
		// holds, as on 2.6 and in OpenShift. (`no-sni-auto` says the same
		// to 3.3 and is refused before.)
		b = append(b, " sni var(txn.haroute_no_sni)"...)
		b = append(b, " port "...)
		b = strconv.AppendInt(b, int64(s.Port), 10)
	}
	if s.H2C && (r.Termination == model.TerminationNone || r.Termination == model.TerminationEdge) {
		// appProtocol h2c: HTTP/2 in clear text to the endpoint, on the
		// routes OpenShift's template gives it (HAProxy terminates HTTP).
		b = append(b, " proto h2"...)
	}
	if ids != nil {
		id, ok := ids[s.Name]
		if !ok { // a server not among r's (hand-made input)
			id = ServerID(s.Name)
		}
		b = append(b, " id "...)
		b = strconv.AppendUint(b, uint64(id), 10)
	}
	return b
}

// hashedBalance reports whether r's backend places its servers on a
// consistent-hash tree: `balance source` (rendered with `hash-type
// consistent`) and `balance random`. HAProxy 2.6 places a server there by
// its id, and `add server` computes the places before it gives the server
// an id (src/server.c, srv_alloc_lb before get_next_id): every server
// added at runtime without one took id 0's places, and of four servers
// added to an empty backend only the first and the last got traffic
// (51/0/0/49 of 100 client addresses; 28/25/21/26 after a reload). An
// explicit id, the same in the file and in `add server`, places each
// server where a reload does, and keeps a client on its server across
// reloads as servers come and go.
func hashedBalance(r *model.AdmittedRoute) bool {
	b := balanceOf(r)
	return b == model.BalanceSource || b == model.BalanceRandom
}

// balanceOf is r's balance algorithm: its own, or, for hand-made input
// (admission always sets one), its termination's default.
func balanceOf(r *model.AdmittedRoute) model.BalanceAlgorithm {
	if b := r.Backend.Balance; b != "" {
		return b
	}
	if r.Termination == model.TerminationPassthrough {
		return model.DefaultPassthroughBalance
	}
	return model.DefaultBalance
}

// ServerID is the id a server named name takes in a backend on a
// consistent-hash tree (hashedBalance), unless another server of the
// backend has it (serverIDs): derived from the name (which derives from
// the endpoint's address), so the file and `add server` agree, within
// 1..2^30.
func ServerID(name model.ServerName) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1 + h.Sum32()%maxServerID
}

const maxServerID = 1 << 30

// serverIDs gives each server of r its id: its ServerID, unless two of
// r's names share one (about n²/2^31 for n servers, and HAProxy refuses
// a backend whose ids repeat); then, in name order, a server whose id is
// taken takes the next free one. The ids then depend on the set of
// servers, which runtime cannot follow for a server already added: an
// `add server` whose id a running server holds is refused, and the
// change goes in by a reload of the files, which hold unique ids.
func serverIDs(r *model.AdmittedRoute) map[model.ServerName]uint32 {
	servers := r.Servers()
	ids := make(map[model.ServerName]uint32, len(servers))
	taken := make(map[uint32]bool, len(servers))
	collide := false
	for _, s := range servers {
		id := ServerID(s.Name)
		collide = collide || taken[id]
		taken[id], ids[s.Name] = true, id
	}
	if !collide {
		return ids
	}
	names := slices.Sorted(maps.Keys(ids))
	clear(taken)
	for _, n := range names {
		id := ServerID(n)
		for taken[id] {
			id = id%maxServerID + 1
		}
		taken[id], ids[n] = true, id
	}
	return ids
}

// appendServiceHostname appends the cluster DNS name of the service s
// belongs to, <service>.<namespace>.svc: what a service-serving
// certificate is issued for. A server not found among the route's
// services (hand-made input) is taken as the primary service's, as
// OpenShift's runtime-added servers are.
func appendServiceHostname(b []byte, r *model.AdmittedRoute, s *model.Server) []byte {
	svc := ""
	for i := range r.Services {
		if i == 0 {
			svc = r.Services[0].Name
		}
		if slices.ContainsFunc(r.Services[i].Servers, func(o model.Server) bool { return o.Name == s.Name }) {
			svc = r.Services[i].Name
			break
		}
	}
	b = append(b, svc...)
	b = append(b, '.')
	b = append(b, r.Key.Namespace...)
	return append(b, ".svc"...)
}

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
