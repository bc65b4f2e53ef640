// Package bench measures haroute where operators feel it: cold load and
// render at 10k routes, and — against the real daemon, a real HAProxy and
// real backends on 127.0.0.1 — the latency of the reload and runtime
// paths, the reloads endpoint churn causes, and the workers long-lived
// connections keep alive.
//
// The load harness (tests named TestBench*) runs only with HAROUTE_BENCH=1,
// so `go test ./...` stays quick; `make bench` (test/bench/run.sh) runs it
// with the Go micro-benchmarks and writes BENCHMARKS.md.
//
// For looking into one figure: HAROUTE_BENCH_OUT=DIR keeps CPU profiles
// and daemon logs there, HAROUTE_BENCH_DEBUG=1 logs the daemon's
// per-stage timings, HAROUTE_BENCH_TRACE=1 logs each sampled endpoint
// change's OnApply and first answer, and HAROUTE_BENCH_LEAN_CHANGES=N
// shortens figure 3's 1000 changes.
package bench
