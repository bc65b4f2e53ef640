// Package render turns a model.Desired into a complete HAProxy bundle:
// haproxy.cfg, the routing maps, the crt-list and the PEM files they name.
//
// Render is pure and deterministic (no clock, no I/O, no map iteration
// order leaking), so the same input always yields byte-identical files and
// the plan stage can diff two bundles to decide between runtime updates
// and a reload.
//
// Routing is done through maps so that moving a host/path between
// existing backends, or changing a route's insecure policy, is a map
// update rather than a reload:
//
//   - the lookup key is the lowercased Host (port stripped) + the request
//     path + "?" (a byte no path holds), matched with map_beg (HAProxy
//     indexes it in a prefix tree, so the longest prefix wins whatever the
//     file order). As in OpenShift, a route for path "/foo" matches "/foo",
//     "/foo/" and "/foo/bar" but not "/foobar": it is keyed "host/foo?" and
//     "host/foo/". A route for "/foo/" matches "/foo/" and below but not
//     "/foo": it is keyed "host/foo/" alone, and wins that key over a
//     "/foo" route of the same host. "" and "/" are keyed "host/".
//   - wildcard routes (wildcardPolicy Subdomain) live in separate maps keyed
//     on the parent domain, consulted only when the exact lookup fails.
//   - on the HTTP frontend the value is the backend name, RedirectValue
//     for routes whose insecure policy is Redirect, or HTTPSOnlyValue (a
//     503) for path routes whose policy is None under a redirect.
//
// Reencrypt destination CA files are also preloaded by a backend no map
// names (CAPreloadBackend): HAProxy 2.6 only accepts a ca-file in `add
// server` once it loaded it at startup.
//
// Server lines are the only part of haproxy.cfg the runtime API changes;
// Bundle.Skeleton leaves them out, and ServerArgs is shared with the code
// that adds servers at runtime so both paths produce identical servers.
package render
