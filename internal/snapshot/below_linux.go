package snapshot

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// below opens paths under the root of a walk with openat2(2), the kernel
// refusing any symlink on the way and any way out of the root
// (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). A file opened so is inside the
// root, reached through real directories, at the moment it is opened:
// what stillAt otherwise checks after the read by lstat-ing the root and
// every component of the path. Those path walks were half the cost of
// reading a 200-file tree, which every swap makes all new inodes.
type below struct{ fd int }

var (
	openat2Once sync.Once
	openat2OK   bool
)

// newBelow returns a below rooted at the directory dir, or nil when the
// kernel has no openat2 (before 5.6, or a seccomp filter refusing it):
// the walk then checks every file the careful way.
func newBelow(dir *os.File) *below {
	openat2Once.Do(func() {
		fd, err := unix.Openat2(int(dir.Fd()), ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: belowResolve})
		if err == nil {
			unix.Close(fd)
			openat2OK = true
		}
	})
	if !openat2OK {
		return nil
	}
	fd, err := unix.FcntlInt(dir.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return &below{fd: fd}
}

const belowResolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func (b *below) close() { unix.Close(b.fd) }

// read reads the regular file at rel (root-relative) into buf, at most
// limit bytes, and reports whether it did so and the file is still the one
// rel names afterwards. Non-blocking, so a FIFO swapped in opens at once;
// anything out of the ordinary (a symlink on the way, not a regular file,
// too large, replaced or gone) is a plain false, for the caller's careful
// path to read again and name. size says how large the file is, so the
// buffer can be sized before the read.
func (b *below) read(rel string, buf func(size int64) ([]byte, bool), limit int64, afterRead func()) ([]byte, bool) {
	fd, err := unix.Openat2(b.fd, rel, &unix.OpenHow{
		Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: belowResolve})
	if err != nil {
		afterRead()
		return nil, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		afterRead()
		return nil, false
	}
	data, ok := buf(st.Size)
	if !ok {
		afterRead()
		return nil, false
	}
	for int64(len(data)) < limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		room := data[len(data):min(int64(cap(data)), limit)]
		n, err := unix.Read(fd, room)
		if err != nil {
			afterRead()
			return nil, false
		}
		data = data[:len(data)+n]
		// A regular file reads short only at its end: no second call
		// to see the end of file.
		if n < len(room) {
			break
		}
	}
	afterRead()
	var now unix.Stat_t
	if int64(len(data)) >= limit || unix.Fstatat(b.fd, rel, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		now.Dev != st.Dev || now.Ino != st.Ino {
		return nil, false
	}
	return data, true
}
