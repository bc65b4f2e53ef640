// Package model holds haroute's resources and turns a snapshot's files into
// the Desired state: strict decoding with positions, defaults, validation
// and admission. It does no I/O, so every rule here is tested with bytes.
//
// Entry points:
//   - Loader.Load (load.go): files → Objects → Desired, incremental by
//     content hash, keeping a failed file's last good objects in force.
//   - admit (admit.go): Objects → Desired + diagnostics, the step of Load
//     that validates and decides admission.
package model
