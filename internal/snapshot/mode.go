package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Mode names how a config directory publishes its generations (DESIGN §2).
type Mode string

const (
	// ModeAuto detects the layout from the directory itself (see Detect).
	ModeAuto Mode = "auto"
	// ModeAtomic is kubelet's AtomicWriter layout: dir/..data is a symlink to
	// a timestamped directory that is replaced by one rename(2).
	ModeAtomic Mode = "atomic"
	// ModeLink is git-sync's --link layout (or "current → release-N"): the
	// configured path is itself a symlink, replaced by one rename(2).
	ModeLink Mode = "link"
	// ModePlain is a directory whose files are edited in place; it has no
	// commit point, so readers and watchers can only debounce.
	ModePlain Mode = "plain"
)

// DataLink is the name of the AtomicWriter's commit symlink.
const DataLink = "..data"

// ParseMode turns a --watch-mode value into a Mode; the empty string means
// ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeAtomic, ModeLink, ModePlain:
		return m, nil
	default:
		return "", fmt.Errorf("unknown watch mode %q (want auto, atomic, link or plain)", s)
	}
}

// Detect reports the layout of dir: a `..data` symlink inside it means
// ModeAtomic, dir being a symlink itself means ModeLink, anything else
// ModePlain. A missing dir (or one behind a dangling link) is an error
// wrapping ErrNotFound; an unreadable one wraps ErrPermission.
func Detect(dir string) (Mode, error) {
	// ..data is checked first: a ConfigMap mount reached through a symlink
	// still publishes through ..data, and that is the commit point to trust.
	if fi, err := os.Lstat(filepath.Join(dir, DataLink)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return ModeAtomic, nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", rootError("detect layout of", dir, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A link must lead to a directory to be a layout at all; a dangling
		// one is "not found", as the daemon must keep serving.
		before, _ := os.Readlink(dir)
		if _, err := os.Stat(dir); err != nil && !(vanished(err) && linkChanged(dir, before)) {
			return "", rootError("detect layout of", dir, err)
		}
		return ModeLink, nil
	}
	if !fi.IsDir() {
		return "", rootError("detect layout of", dir, errNotDir)
	}
	return ModePlain, nil
}

// rootError classifies a failure to reach the config dir so the daemon can
// branch on the sentinels and keep the last good state.
func rootError(what, dir string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotDir), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s %s: %w: %w", what, dir, ErrNotFound, err)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s %s: %w: %w", what, dir, ErrPermission, err)
	default:
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
}
