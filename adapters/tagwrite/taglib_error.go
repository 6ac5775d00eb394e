package tagwrite

import "syscall"

// taglibError is a failure reported by the TagLib shim. It unwraps to
//
//   - ErrUnsupported when TagLib cannot handle the file's content (invalid:
//     it could not open or parse the file as its format, or could not save
//     it with no I/O error): the same file fails the same way every time, so
//     the failure is permanent;
//   - the errno of a failed system call otherwise, when there was one
//     (syscall.ENOSPC for a full disk, EIO, …), which a caller may retry.
type taglibError struct {
	msg     string
	errno   syscall.Errno
	invalid bool
}

func (e *taglibError) Error() string { return "taglib: " + e.msg }

func (e *taglibError) Unwrap() error {
	switch {
	case e.invalid:
		return ErrUnsupported
	case e.errno != 0:
		return e.errno
	}
	return nil
}
