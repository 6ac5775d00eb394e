package process

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/nomarr/nomarr/core/node"
)

// procRoot is where the kernel's process information is mounted.
const procRoot = "/proc"

// Self identifies this process in the hold on its node name: host name,
// pid space (boot and pid namespace), pid and start time. Where /proc
// cannot say, the space is empty and other main processes can only wait
// for the hold to lapse.
func Self() node.NameHolder {
	host, _ := os.Hostname()
	h := node.NameHolder{Host: host, PID: os.Getpid()}
	if started, _, ok := procStat(procRoot, "self"); ok {
		h.Space, h.Started = pidSpace(procRoot), started
	}
	return h
}

// Liveness tells whether the process that wrote h still runs: known only
// when it ran in this pid space; a pid now running another process (its
// start time differs) is gone.
func Liveness(h node.NameHolder) node.Liveness { return liveness(procRoot, h) }

// liveness is Liveness with the process information mounted at root.
func liveness(root string, h node.NameHolder) node.Liveness {
	self := pidSpace(root)
	if h.Space == "" || h.Space != self || h.PID <= 0 || h.Started == "" {
		return node.LivenessUnknown
	}
	if err := syscall.Kill(h.PID, 0); errors.Is(err, syscall.ESRCH) {
		return node.Gone
	}
	started, dead, ok := procStat(root, strconv.Itoa(h.PID))
	switch {
	case !ok: // hidden from this user (hidepid), or gone since
		return node.LivenessUnknown
	case started == h.Started && !dead:
		return node.Alive
	default: // another process under that pid, or a killed one not yet reaped
		return node.Gone
	}
}

// pidSpace names the pid space of this process: the boot id and the pid
// namespace; "" when either is unknown.
func pidSpace(root string) string {
	boot, err := os.ReadFile(root + "/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink(root + "/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// procStat reads a process's start time (field 22 of /proc/PID/stat, in
// clock ticks since boot) and whether it has ended (a zombie, not yet
// reaped by its parent).
func procStat(root, pid string) (started string, dead, ok bool) {
	b, err := os.ReadFile(root + "/" + pid + "/stat")
	if err != nil {
		return "", false, false
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", false, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 {
		return "", false, false
	}
	return f[19], f[0] == "Z" || f[0] == "X", true
}
