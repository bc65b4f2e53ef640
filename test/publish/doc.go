// Package publish writes config generations into a directory exactly the way
// the real publishers do, so tests drive the watcher, the snapshot reader and
// the daemon with the same renames they meet in production:
//
//   - AtomicWriter: kubelet's ConfigMap/Secret volumes (..data swap).
//   - GitSync: git-sync v4 with --link (worktree + symlink swap).
//   - Plain: files rewritten in place, with no commit point at all.
//
// Publishers are not safe for concurrent use; each owns its directory.
package publish
