package tagwrite

import (
	"errors"
	"syscall"
	"testing"
)

// TestTagLibErrorClasses guards how a shim failure reads to callers: a file
// TagLib cannot handle (parse or save, no I/O error) wraps ErrUnsupported
// (permanent); a failed system call wraps its errno and not ErrUnsupported
// (a full disk or an I/O error may pass).
func TestTagLibErrorClasses(t *testing.T) {
	for _, c := range []struct {
		err         *taglibError
		unsupported bool
		errno       syscall.Errno
	}{
		{&taglibError{msg: "could not open or parse the file as Ogg Vorbis", invalid: true}, true, 0},
		{&taglibError{msg: "could not save the file (not an I/O error)", invalid: true}, true, 0},
		{&taglibError{msg: "write: no space left on device", errno: syscall.ENOSPC}, false, syscall.ENOSPC},
		{&taglibError{msg: "read: input/output error", errno: syscall.EIO}, false, syscall.EIO},
		{&taglibError{msg: "write: read-only file system", errno: syscall.EROFS}, false, syscall.EROFS},
		{&taglibError{msg: "TagLib: std::bad_alloc"}, false, 0},
	} {
		if got := errors.Is(c.err, ErrUnsupported); got != c.unsupported {
			t.Errorf("%v: errors.Is(ErrUnsupported) = %v", c.err, got)
		}
		var errno syscall.Errno
		errors.As(c.err, &errno)
		if errno != c.errno {
			t.Errorf("%v: errno %v, want %v", c.err, errno, c.errno)
		}
	}
}
