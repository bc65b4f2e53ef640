package haproxy

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkExecuteBatch1000 applies 1000 `set server … weight` commands
// over one connection, the shape of a large endpoint-weight update.
func BenchmarkExecuteBatch1000(b *testing.B) {
	r := newRig(b)
	r.start(b)
	cmds := make([]string, 1000)
	for i := range cmds {
		cmds[i] = fmt.Sprintf("set server be/s0 weight %d", 1+i%256)
	}
	ctx := ctxT(b, 10*time.Minute)
	b.ResetTimer()
	for b.Loop() {
		resps, err := r.rt.Execute(ctx, cmds)
		if err != nil {
			b.Fatal(err)
		}
		if err := FirstError(resps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cmds)), "ns/cmd")
}

// BenchmarkExecuteConnPerCommand1000 sends the same 1000 commands with a
// connection each, as client-native does, for comparison.
func BenchmarkExecuteConnPerCommand1000(b *testing.B) {
	r := newRig(b)
	r.start(b)
	ctx := ctxT(b, 10*time.Minute)
	b.ResetTimer()
	for b.Loop() {
		for i := range 1000 {
			resps, err := r.rt.Execute(ctx, []string{fmt.Sprintf("set server be/s0 weight %d", 1+i%256)})
			if err != nil {
				b.Fatal(err)
			}
			if err := FirstError(resps); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/cmd")
}
