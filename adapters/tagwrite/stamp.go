package tagwrite

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Stamp identifies a file's content as seen through its path (a symbolic
// link followed, as Write follows it): the file (device and inode), its
// size, its modification time and its change time, the same things Write
// compares before it renames its copy over the original. It is plain data,
// so a caller can keep it (JSON) between reading a file and writing into it.
//
// Two stamps are the same content (Same) only for the same file unchanged
// as far as the kernel's timestamps tell: a replacement (a new inode), an edit that moves
// the size or the modification time, and an in-place edit that sets the
// modification time back (the change time moves; user space cannot set it)
// all give another stamp. An edit within the same clock tick as the
// stamped state can go unseen, as for Write's own check. Outside Linux,
// Dev, Ino and CtimeNs are 0 and a stamp tells contents apart by size and
// modification time only.
//
// Same leaves the device out: it names the mount, not the file. Each NFS
// client numbers its mounts on its own, and a drive remounted may get
// another number, while the inode (the server's file id on NFS) and the
// times stay; a checkpoint taken on one host must resume on another.
type Stamp struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"` // modification time, Unix nanoseconds
	CtimeNs int64  `json:"ctime_ns"` // status change time, Unix nanoseconds
}

// StampOf returns the stamp of the file at path (through a symbolic link,
// of its target). Anything but a regular file is ErrUnsupported.
func StampOf(path string) (Stamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Stamp{}, fmt.Errorf("tagwrite: stamp %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Stamp{}, fmt.Errorf("tagwrite: stamp %s: %w", path, notRegular(st))
	}
	return stampOf(st), nil
}

// stampOf is the stamp of the file whose status is st.
func stampOf(st fs.FileInfo) Stamp {
	dev, ino := fileID(st)
	s := Stamp{Dev: dev, Ino: ino, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}
	if ct := changeTime(st); !ct.IsZero() {
		s.CtimeNs = ct.UnixNano()
	}
	return s
}

// Same reports whether s and o are the same content (everything but the
// device equal).
func (s Stamp) Same(o Stamp) bool { return s.differences(o) == "" }

// differences names what differs between s and o but the device ("" when
// nothing does).
func (s Stamp) differences(o Stamp) string {
	var d []string
	if s.Ino != o.Ino {
		d = append(d, "another file (inode)")
	}
	if s.Size != o.Size {
		d = append(d, fmt.Sprintf("size %d, stamped %d", s.Size, o.Size))
	}
	if s.MtimeNs != o.MtimeNs {
		d = append(d, "modification time")
	}
	if s.CtimeNs != o.CtimeNs {
		d = append(d, "change time")
	}
	return strings.Join(d, ", ")
}

// WriteIfSame is WriteAll for a caller that read the file earlier and must put
// tags only into the content it read (tags computed from one content must
// not land in another): it fails with an error wrapping ErrModified, and
// touches nothing, when the file it opens at path does not have the stamp
// want (StampOf, taken before the file was read). Everything else is as
// for WriteAll, including its own check that the file does not change
// while the copy is prepared.
func WriteIfSame(path string, t map[string]string, std Standard, want Stamp) error {
	return write(path, t, std, &want)
}
