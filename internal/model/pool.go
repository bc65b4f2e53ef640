package model

// PoolSlotPrefix starts the name of every spare backend the pool makes. A
// route's own backend, kept as a spare when the route is deleted, keeps
// its own name (and the text it was rendered with).
const PoolSlotPrefix = "be_pool:"

// SpareRoute is the empty route a spare backend of the pool renders from:
// what a route of termination t without annotations, certificates or
// endpoints admits to under settings s, named slot. Its key has no
// namespace, so it can never be a route's.
//
// With allow, an edge or reencrypt spare also serves plain HTTP
// (insecureEdgeTerminationPolicy Allow), whose sticky cookie is not Secure,
// as OpenShift renders it: such routes bind to such spares.
func SpareRoute(t Termination, allow bool, slot BackendName, s *Settings) AdmittedRoute {
	r := Route{
		Meta: ObjectMeta{Namespace: "haroute-pool", Name: "spare"},
		Spec: RouteSpec{Host: "spare.invalid", To: RouteTargetReference{Kind: "Service", Name: "spare"}},
	}
	if t != TerminationNone {
		r.Spec.TLS = &TLSConfig{Termination: t}
		if allow && t != TerminationPassthrough {
			r.Spec.TLS.InsecureEdgeTerminationPolicy = InsecurePolicyAllow
		}
	}
	ar, _ := validateRoute(&r, s)
	ar.Key = RouteKey{Name: string(slot)}
	ar.Host, ar.Path, ar.Wildcard = "", "", false
	ar.Slot = slot
	ar.Services = nil
	return ar
}
