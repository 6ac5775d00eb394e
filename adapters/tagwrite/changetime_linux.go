package tagwrite

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime is the status change time (st_ctime) of st, the zero time when
// st has no stat_t.
func changeTime(st fs.FileInfo) time.Time {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return time.Unix(s.Ctim.Unix())
}
