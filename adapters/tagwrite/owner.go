package tagwrite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// ErrOwner: this process may write the file, but the copy that would
// replace it cannot be given the file's owner or group, so the rename
// would hand the file over to this process's user or group. That happens
// when the process is not root and the file belongs to another user, or to
// a group that is neither the process's (effective or supplementary) group
// nor the one a set-group-ID folder gives new files.
//
// ErrOwner wraps ErrReadOnly, and errors.Is(err, ErrReadOnly) holds for it:
// for this process the file is read-only, and that lasts as long as the
// file's owner and the process's user do. Callers that treat a read-only
// file as a permanent failure (write_mode: none keeps the tags in the store
// only) treat this one so too, without knowing ErrOwner.
var ErrOwner = fmt.Errorf("%w for this process: the file's owner or group cannot be kept", ErrReadOnly)

// checkOwner fails with ErrOwner when a copy made by this process in the
// folder whose status is dir could not be given the owner and group of the
// file whose status is st (see ErrOwner). It passes what it cannot tell
// (no stat_t, the process's groups unknown): copyInto's chown then decides.
func checkOwner(st, dir fs.FileInfo) error {
	s, ok := st.Sys().(*syscall.Stat_t)
	euid := os.Geteuid()
	if !ok || euid == 0 {
		return nil
	}
	if int(s.Uid) != euid {
		return fmt.Errorf("%w: the file belongs to uid %d, this process runs as uid %d", ErrOwner, s.Uid, euid)
	}
	if int(s.Gid) == os.Getegid() {
		return nil
	}
	if d, ok := dir.Sys().(*syscall.Stat_t); ok && dir.Mode()&fs.ModeSetgid != 0 && d.Gid == s.Gid {
		return nil // a new file in the folder gets its group
	}
	groups, err := os.Getgroups()
	if err != nil || slices.Contains(groups, int(s.Gid)) {
		return nil
	}
	return fmt.Errorf("%w: the file's group is gid %d, which this process (uid %d) is not in", ErrOwner, s.Gid, euid)
}

// chownError is the error of a failed chown of the copy to uid:gid: one
// wrapping ErrOwner when the process may not give it that owner (EPERM)
// or the owner is not valid here (EINVAL: not mapped in this user
// namespace), since that fails the same way every time.
func chownError(uid, gid uint32, err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("%w: cannot give the copy the original's owner %d:%d: %w", ErrOwner, uid, gid, err)
	}
	return fmt.Errorf("cannot give the copy the original's owner %d:%d: %w", uid, gid, err)
}
