//go:build !linux

package snapshot

import "os"

// below is Linux's openat2 fast path (below_linux.go); elsewhere every
// file is read the careful way.
type below struct{}

func newBelow(*os.File) *below { return nil }

func (*below) close() {}

func (*below) read(string, func(int64) ([]byte, bool), int64, bool, func()) ([]byte, bool) {
	return nil, false
}
