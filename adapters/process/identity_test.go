package process

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

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
	// Killed but not reaped (no Wait yet): a zombie, which is gone.
	deadline := time.Now().Add(5 * time.Second)
	for Liveness(h) != node.Gone {
		if time.Now().After(deadline) {
			t.Fatal("a killed, unreaped child still counts as alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
