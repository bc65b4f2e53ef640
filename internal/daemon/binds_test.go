package daemon

import (
	"slices"
	"testing"
)

// The LISTEN sockets of one port are read from /proc/net/tcp's format;
// other states and ports are not.
func TestParseListening(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 20 4 30 10 -1
`
	if got := parseListening(table, 8080); !slices.Equal(got, []uint64{1111, 2222}) {
		t.Errorf("parseListening(8080) = %v, want [1111 2222]", got)
	}
	if got := parseListening(table, 9090); len(got) != 0 {
		t.Errorf("parseListening(9090) = %v, want none", got)
	}
}
