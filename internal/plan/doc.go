// Package plan decides how to move HAProxy from the applied state to the
// desired one: a list of typed runtime API operations when the change is
// one the Dynamic Configuration Manager can make (endpoints, weights, map
// entries, certificates), or a reload with the reasons that force it
// (DESIGN §5).
//
// It is pure — no clock, no I/O, no globals — so every decision is a value
// that is logged, shown by `haroute plan`, counted in metrics, and tested
// with tables. The daemon applies the plan, reads the result back and
// checks it with Verify; any error or mismatch becomes a reload.
//
// Entry points:
//   - Compute (plan.go): applied State + desired State → Plan.
//   - Op types (ops.go): the exact runtime commands each operation sends.
//   - Expect and Verify (verify.go): what a read-back must show.
//   - Plan.Format (format.go): the human summary.
package plan
