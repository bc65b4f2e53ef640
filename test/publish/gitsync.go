package publish

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// GitSync publishes generations the way git-sync v4 does with --link
// (publishSymlink): each generation is a worktree root/.worktrees/<hash>,
// and the link is replaced by renaming a temporary symlink over it (the
// equivalent of `ln -snf <rel> tmp-link && mv -T tmp-link <link>`); the
// previous worktree is removed afterwards.
type GitSync struct {
	root string
	link string
	seq  int
}

// NewGitSync returns a publisher for root; link is the symlink's path,
// absolute or relative to root, as git-sync's --link.
func NewGitSync(root, link string) *GitSync {
	if !filepath.IsAbs(link) {
		link = filepath.Join(root, link)
	}
	return &GitSync{root: root, link: link}
}

// Link returns the absolute path of the published symlink: the directory to
// point haroute at.
func (g *GitSync) Link() string { return g.link }

// Publish makes files the new generation, replacing the previous one.
func (g *GitSync) Publish(files map[string][]byte) error {
	names, err := sortedNames(files)
	if err != nil {
		return err
	}
	worktrees := filepath.Join(g.root, ".worktrees")
	if err := os.MkdirAll(worktrees, 0o755); err != nil {
		return fmt.Errorf("publish: create %s: %w", worktrees, err)
	}

	// A commit-like name: unique per generation, 40 hex digits like git.
	g.seq++
	h := sha1.New()
	fmt.Fprintf(h, "generation %d\n", g.seq)
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	worktree := filepath.Join(worktrees, hex.EncodeToString(h.Sum(nil)))
	if err := os.Mkdir(worktree, 0o755); err != nil {
		return fmt.Errorf("publish: create worktree: %w", err)
	}
	if err := writeTree(worktree, files, names); err != nil {
		return err
	}

	linkDir, linkFile := filepath.Split(g.link)
	if err := os.MkdirAll(linkDir, 0o755); err != nil {
		return fmt.Errorf("publish: create %s: %w", linkDir, err)
	}
	old, err := os.Readlink(g.link)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: read %s: %w", g.link, err)
	}
	if old != "" && !filepath.IsAbs(old) {
		old = filepath.Join(linkDir, old)
	}

	// Relative, so the tree can be volume-mounted at another path.
	target, err := filepath.Rel(linkDir, worktree)
	if err != nil {
		return fmt.Errorf("publish: relative worktree path: %w", err)
	}
	tmp := filepath.Join(linkDir, "tmp-link")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("publish: remove stale %s: %w", tmp, err)
	}
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("publish: link %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(linkDir, linkFile)); err != nil {
		return fmt.Errorf("publish: swap %s: %w", g.link, err)
	}

	// Reclaim the previous worktree, but only one of ours.
	if old != "" && old != worktree && strings.HasPrefix(old, worktrees+string(filepath.Separator)) {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("publish: remove old worktree: %w", err)
		}
	}
	return nil
}
