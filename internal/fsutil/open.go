package fsutil

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular: a path meant to hold file content names a FIFO, a socket,
// a device or a directory. Opening a FIFO for reading waits for a writer,
// and reading a device never ends, so such paths are refused, not read.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading without ever blocking and returns it
// with its FileInfo only if it is a regular file. The open is non-blocking
// (a FIFO opens at once instead of waiting for a writer) and the check is
// made on the opened descriptor, so a path swapped between an earlier
// check and the open cannot slip a FIFO or a device in. With noFollow a
// final symlink is refused (ELOOP): the caller has already vetted that
// component and a link swapped in since must not be followed.
//
// Non-blocking mode does not change how a regular file reads, so the
// returned file reads as usual.
func OpenRegular(path string, noFollow bool) (*os.File, fs.FileInfo, error) {
	f, err := openNonBlocking(path, noFollow)
	if err != nil {
		// A socket, or a device without a driver, cannot be opened at all
		// (ENXIO): name what it is rather than the errno.
		if m, ok := special(path, noFollow); ok {
			return nil, nil, NotRegular(m)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, NotRegular(fi.Mode())
	}
	return f, fi, nil
}

// special reports the type of path when it is a FIFO, a socket or a device.
func special(path string, noFollow bool) (fs.FileMode, bool) {
	stat := os.Stat
	if noFollow {
		stat = os.Lstat
	}
	fi, err := stat(path)
	if err != nil {
		return 0, false
	}
	m := fi.Mode()
	return m, m.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0
}

// NotRegular is the error for a path of mode m that is not a regular file,
// naming what it is: "not a regular file: named pipe (FIFO)".
func NotRegular(m fs.FileMode) error {
	return fmt.Errorf("%w: %s", ErrNotRegular, Kind(m))
}

// Kind names the type of file m describes, for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	default:
		return "special file"
	}
}

// ReadRegular reads the regular file at path, as os.ReadFile does, but
// refuses anything else (ErrNotRegular) without blocking. For haroute's
// own files in the state and run dirs: a FIFO left in place of one, by a
// fault or a stray hand, held os.ReadFile, and with it a start, until a
// writer came.
func ReadRegular(path string) ([]byte, error) {
	f, fi, err := OpenRegular(path, false)
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
