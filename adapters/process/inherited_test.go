package process

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInheritedFDsKeptFromChildren: a descriptor this process holds
// without close-on-exec (as one inherited from a wrapper holding a lock)
// reaches a child until KeepInheritedFromChildren marks it; it stays open
// here; stdin, stdout and stderr keep passing.
func TestInheritedFDsKeptFromChildren(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "lock")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// dup(2)'s copy is not close-on-exec: as a descriptor inherited.
	open := func() string {
		t.Helper()
		// The child lists the descriptors it was started with.
		out, err := exec.Command("/bin/sh", "-c", "ls /proc/self/fd 2>/dev/null || ls /dev/fd").Output()
		if err != nil {
			t.Fatal(err)
		}
		return " " + strings.Join(strings.Fields(string(out)), " ") + " "
	}
	name := " " + strconv.Itoa(fd) + " "
	if !strings.Contains(open(), name) {
		t.Skipf("fd %d does not reach a child even unmarked (%s): nothing to test here", fd, open())
	}
	cloexec := func(fd int) bool {
		t.Helper()
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil {
			t.Fatalf("fd %d: %v", fd, err)
		}
		return flags&unix.FD_CLOEXEC != 0
	}
	var stdBefore [3]bool
	for fd := range stdBefore {
		stdBefore[fd] = cloexec(fd)
	}
	if err := KeepInheritedFromChildren(); err != nil {
		t.Fatal(err)
	}
	// exec.Cmd hands a child its own 0, 1 and 2 whatever their flag here;
	// a process that execs itself does not.
	for fd, was := range stdBefore {
		if !was && cloexec(fd) {
			t.Errorf("fd %d marked close-on-exec", fd)
		}
	}
	got := open()
	if strings.Contains(got, name) {
		t.Errorf("fd %d still reaches a child after KeepInheritedFromChildren: %s", fd, got)
	}
	for _, std := range []string{" 0 ", " 1 ", " 2 "} {
		if !strings.Contains(got, std) {
			t.Errorf("fd%s no longer reaches a child: %s", std, got)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		t.Errorf("fd %d closed here: %v", fd, err)
	}
}
