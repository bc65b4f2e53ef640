// Package haproxy is the only part of haroute that talks to HAProxy: it runs
// `haproxy -c`, supervises one master-worker process, speaks the master CLI
// (show proc, reload) and the runtime API on the admin socket.
//
// Entry points:
//   - Check (check.go): validate a configuration file with the real binary.
//   - Supervisor / Process (supervisor.go): start, readiness, exit detection,
//     stop. The restart policy belongs to the caller (the daemon), which
//     watches Process.Done and calls Supervisor.Start again with backoff.
//   - Ownership (owner.go): the run dir lock (one haroute per run dir) and
//     the takeover of an HAProxy an earlier haroute left running.
//   - Lost sockets (sockets.go): Process.Sockets finds deleted or dead
//     sockets; NextSocketName, SetSockets and LinkAdminSocket let the
//     daemon heal them with a reload onto new names.
//   - Master (master.go): `show proc` and a confirmed `reload`.
//   - Runtime (runtime.go, readback.go): batches of runtime commands over one
//     connection, with failure replies recognized per command, and typed
//     read-backs (servers state, map entries, server sessions).
//   - Inspector / NativeInspector (native.go): HAProxy's own view of itself
//     for status and checks — `show info` (version, pid, uptime, maxconn,
//     fd limit, connections) and `show ssl cert` (serial, dates, subject,
//     fingerprint of a loaded certificate) — through client-native.
//
// The split: client-native (github.com/haproxytech/client-native/v5, only
// ever imported here) is used where its readers are right on HAProxy 2.6.12,
// which native_test.go checks against the real binary: GetInfo,
// ShowCertificate and ShowCerts. NativeInspector adds what it lacks there
// (a context, detection of replies cut short, errors that tell "not found"
// from a dead socket). Everything else speaks the socket directly, for the
// reasons below.
//
// Why not client-native for the rest of the runtime API: client-native
// v5.1.27 opens one connection per command with a fixed 30 s deadline and no
// context, which is slow for large batches and cannot be cancelled (fine
// for a status read, not for a plan of a thousand commands); and on HAProxy
// 2.6.12 its readers fall short of what haroute verifies after a runtime plan:
// GetServersState drops the weight and health-check columns, and
// ParseMapEntries truncates values containing spaces and indexes past the
// end of a line whose value is empty (`show map` prints "<id> <key> \n" for
// a map line holding only a key — seen on 2.6.12), which panics. So this
// package speaks the (simple, line-based) protocol itself; every reply
// string it relies on is checked against a real HAProxy in the tests.
package haproxy
