package snapshot

import (
	"errors"
	"os"
	"sync/atomic"

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

// openat2Known is 1 once openat2 worked, -1 once the kernel said it has
// none; 0 until then.
var openat2Known atomic.Int32

// newBelow returns a below rooted at the directory dir, or nil when the
// kernel has no openat2 (before 5.6, or a seccomp filter refusing it):
// the walk then checks every file the careful way. Any other failure of
// the probe (out of descriptors, say) costs this read the fast path only.
func newBelow(dir *os.File) *below {
	if openat2Known.Load() == 0 {
		fd, err := unix.Openat2(int(dir.Fd()), ".", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: belowResolve})
		switch {
		case err == nil:
			unix.Close(fd)
			openat2Known.Store(1)
		case errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG):
			openat2Known.Store(-1)
		}
	}
	if openat2Known.Load() != 1 {
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

// read reads the regular file at rel (root-relative), at most limit
// bytes, into the buffer buf returns for the file's size (or refuses),
// and reports whether it did so and, with recheck, whether the file is
// still the one rel names afterwards; afterRead runs once the read is
// over, whatever happened. The open does not block, so a FIFO swapped in
// opens at once. Anything out of the ordinary (a symlink on the way, not
// a regular file, too large, replaced or gone) is a plain false, for the
// caller's careful path to read again and name.
//
// The recheck (a path walk, a sixth of a 200-file read's CPU) matters
// only where files change in place, in a plain directory. A generation
// behind ..data or a git-sync link is never written once published: a
// file opened in it was the generation's, and whether the generation was
// still the current one when the read ended is what the walk's own check
// of the link (walker.moved) answers.
func (b *below) read(rel string, buf func(size int64) ([]byte, bool), limit int64, recheck bool, afterRead func()) ([]byte, bool) {
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
		// A regular file reads short at its end: once the size it had
		// is read, no second call to see the end of file. Short before
		// it (some FUSE file systems answer so), read on until the
		// read that returns nothing (T48).
		if n == 0 || n < len(room) && int64(len(data)) >= st.Size {
			break
		}
	}
	afterRead()
	if int64(len(data)) >= limit {
		return nil, false
	}
	if !recheck {
		return data, true
	}
	var now unix.Stat_t
	if unix.Fstatat(b.fd, rel, &now, unix.AT_SYMLINK_NOFOLLOW) != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return nil, false
	}
	return data, true
}
