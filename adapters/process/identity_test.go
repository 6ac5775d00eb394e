package process

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nomarr/nomarr/core/node"
)

func TestSelfIsAlive(t *testing.T) {
	self := Self()
	if self.Space == "" || self.Started == "" || self.PID != os.Getpid() {
		t.Fatalf("Self() = %+v: no pid space or start time from /proc", self)
	}
	if got := Liveness(self); got != node.Alive {
		t.Fatalf("Liveness(self) = %v, want Alive", got)
	}
}

func TestLivenessOfEndedAndReusedPids(t *testing.T) {
	self := Self()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	ended := self
	ended.PID = cmd.Process.Pid // reaped: no such process (or another one now)
	if got := Liveness(ended); got != node.Gone {
		t.Fatalf("Liveness(ended child) = %v, want Gone", got)
	}
	reused := self
	reused.Started = "1" // this pid, but not the process that wrote the hold
	if got := Liveness(reused); got != node.Gone {
		t.Fatalf("Liveness(pid reused) = %v, want Gone", got)
	}
	elsewhere := self
	elsewhere.Space = "another-boot/pid:[1]"
	if got := Liveness(elsewhere); got != node.LivenessUnknown {
		t.Fatalf("Liveness(other host) = %v, want unknown", got)
	}
	elsewhere.Space = ""
	if got := Liveness(elsewhere); got != node.LivenessUnknown {
		t.Fatalf("Liveness(no space) = %v, want unknown", got)
	}
}

func TestStartTimeWithOddCommandName(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/42", 0o755); err != nil {
		t.Fatal(err)
	}
	stat := "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10\n"
	if err := os.WriteFile(dir+"/42/stat", []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, dead, ok := procStat(dir, "42"); !ok || got != "987654" || dead {
		t.Fatalf("procStat = %q %v %v, want 987654, running", got, dead, ok)
	}
}

func TestZombieIsGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	h := Self()
	h.PID = cmd.Process.Pid
	started, _, ok := procStat(procRoot, strconv.Itoa(h.PID))
	if !ok {
		t.Fatal("no /proc entry for a running child")
	}
	h.Started = started
	if got := Liveness(h); got != node.Alive {
		t.Fatalf("Liveness(running child) = %v, want Alive", got)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed but not reaped (no Wait yet): a zombie, which is gone. The
	// exit is waited for with WNOWAIT, which leaves the child unreaped.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, h.PID, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatalf("waitid: %v", err)
	}
	if got := Liveness(h); got != node.Gone {
		t.Fatalf("Liveness(killed, unreaped child) = %v, want Gone", got)
	}
}

// A holder in this pid space whose start time is unknown (a hold written
// where /proc could not say) is not judged by its pid alone: that pid may
// run the holder still, or another process.
func TestLivenessWithoutStartTimeIsUnknown(t *testing.T) {
	h := Self()
	h.Started = ""
	if got := Liveness(h); got != node.LivenessUnknown {
		t.Fatalf("Liveness(running pid, no start time) = %v, want unknown", got)
	}
}

// A stat line cut short (fewer fields than the start time's) says nothing.
func TestStartTimeOfAShortStat(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/42", 0o755); err != nil {
		t.Fatal(err)
	}
	// The state and 18 more fields: the start time (field 22) is missing.
	stat := "42 (a) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0\n"
	if err := os.WriteFile(dir+"/42/stat", []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, ok := procStat(dir, "42"); ok {
		t.Fatalf("procStat of a short line = %q, ok; want not ok", got)
	}
}

// fakeProc is a process information tree at a temporary root: the pid
// space's boot id and namespace, unless space is false, and a stat line
// for pid, unless stat is "".
func fakeProc(t *testing.T, space bool, pid int, stat string) string {
	t.Helper()
	root := t.TempDir()
	if space {
		for _, d := range []string{"/sys/kernel/random", "/self/ns"} {
			if err := os.MkdirAll(root+d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(root+"/sys/kernel/random/boot_id", []byte("boot\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("pid:[1]", root+"/self/ns/pid"); err != nil {
			t.Fatal(err)
		}
	}
	if stat != "" {
		dir := root + "/" + strconv.Itoa(pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/stat", []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// What the process information says of a holder whose pid runs (this
// process's): alive only with its start time and not ended (state Z or
// X); unknown when its stat cannot be read (hidden from this user) or
// when this process's own pid space is unknown, whatever the holder says.
func TestLivenessFromTheProcessInformation(t *testing.T) {
	pid := os.Getpid()
	stat := func(state string) string {
		return strconv.Itoa(pid) + " (nomarr) " + state + " 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 4242 0 0\n"
	}
	h := node.NameHolder{Space: "boot/pid:[1]", PID: pid, Started: "4242"}
	for _, tc := range []struct {
		name  string
		space bool
		stat  string
		h     node.NameHolder
		want  node.Liveness
	}{
		{"running", true, stat("S"), h, node.Alive},
		{"zombie", true, stat("Z"), h, node.Gone},
		{"dead", true, stat("X"), h, node.Gone},
		{"another start", true, stat("S"), node.NameHolder{Space: h.Space, PID: pid, Started: "1"}, node.Gone},
		{"stat hidden", true, "", h, node.LivenessUnknown},
		{"own space unknown", false, stat("S"), node.NameHolder{PID: pid, Started: "4242"}, node.LivenessUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := liveness(fakeProc(t, tc.space, pid, tc.stat), tc.h); got != tc.want {
				t.Fatalf("liveness = %v, want %v", got, tc.want)
			}
		})
	}
}
