package tagwrite

import (
	"io/fs"
	"syscall"
)

// fileID is the device and inode number of st; 0, 0 when st has no
// stat_t.
func fileID(st fs.FileInfo) (dev, ino uint64) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(s.Dev), uint64(s.Ino) // not uint64 on every architecture
}
