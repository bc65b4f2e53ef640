package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Version is an HAProxy release's major and minor number, read once from
// `show info` (Info.Version, "3.0.11-1+deb13u4"). Every reply haroute
// reads is recognized in both the 2.6 and the 3.0 spelling (see reply.go
// and Master.Reload); the one branch is how a master loads its
// configuration (loadsInWorker, from `show proc`'s version: 3.1 moved it
// to the worker). The tests use it to say which spelling the running
// binary must give.
type Version struct {
	Major, Minor int
}

// ParseVersion reads the leading "major.minor" of an HAProxy version
// string such as "2.6.12-1+deb12u4" or "3.0.11-1+deb13u4".
func ParseVersion(s string) (Version, error) {
	fields := strings.SplitN(s, ".", 3)
	if len(fields) < 2 {
		return Version{}, fmt.Errorf("haproxy version %q: want major.minor", s)
	}
	major, err := strconv.Atoi(fields[0])
	if err != nil {
		return Version{}, fmt.Errorf("haproxy version %q: major: %w", s, err)
	}
	minorDigits := fields[1]
	if i := strings.IndexFunc(minorDigits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorDigits = minorDigits[:i]
	}
	minor, err := strconv.Atoi(minorDigits)
	if err != nil {
		return Version{}, fmt.Errorf("haproxy version %q: minor: %w", s, err)
	}
	return Version{Major: major, Minor: minor}, nil
}

// AtLeast reports whether v is major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// BinaryVersion runs `haproxy -v`, for callers that only run `haproxy -c`
// and have no running HAProxy to ask.
func BinaryVersion(ctx context.Context, binary string) (Version, error) {
	bin, err := resolveBinary(binary)
	if err != nil {
		return Version{}, err
	}
	out, err := exec.CommandContext(ctx, bin, "-v").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(bytes.TrimSpace(ee.Stderr)) > 0 {
			said, _, _ := strings.Cut(strings.TrimSpace(string(ee.Stderr)), "\n")
			return Version{}, fmt.Errorf("%s -v: %w: %s", bin, err, said)
		}
		return Version{}, fmt.Errorf("%s -v: %w", bin, err)
	}
	// "HAProxy version 3.0.11-1+deb13u4 2026/10/15 - https://haproxy.org/"
	first, _, _ := strings.Cut(string(out), "\n")
	f := strings.Fields(first)
	if len(f) < 3 || f[1] != "version" {
		return Version{}, fmt.Errorf("%s -v: unexpected first line %q", bin, first)
	}
	return ParseVersion(f[2])
}
