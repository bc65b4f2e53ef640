// Package snapshot reads one consistent generation of the config directory:
// the link (..data or a git-sync style symlink) is resolved once, every file
// is read from the resolved target, and the link is resolved again; a
// changed target or a vanished file starts the read over. A snapshot is
// never a mix of two generations.
package snapshot
