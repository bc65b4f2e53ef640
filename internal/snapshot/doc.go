// Package snapshot reads one consistent generation of the config directory:
// the link (..data or a git-sync style symlink) is resolved once, every file
// is read from the resolved target, and the link is resolved again; a
// changed target or a vanished file starts the read over. A snapshot is
// never a mix of two generations.
//
// No file can stall a read or bring outside data in: FIFOs, sockets and
// devices are refused without blocking (open with O_NONBLOCK, then check
// the descriptor), ..data must lead to a directory directly inside the
// config dir, symlinks must resolve inside the root, and after each read
// the file read must still be the one its path names below the root.
package snapshot
