package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeExitsWhenAddressIsTaken guards that `nomarr serve` whose
// http_addr cannot be bound exits non-zero with the bind error before any
// worker starts, instead of running its workers without an API (with the
// error shown only at stop) while `nomarr status` talks to whatever holds
// the port.
func TestServeExitsWhenAddressIsTaken(t *testing.T) {
	bin := nomarrBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var logs bytes.Buffer
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "serve", "--analyzer", "noop", "--workers", "1", "--data-dir", data,
		"--http-addr", ln.Addr().String())
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("serve with its address in use: exit %d, want 1; log:\n%s", code, logs.String())
		}
		if !strings.Contains(logs.String(), ln.Addr().String()) {
			t.Errorf("the error does not name the address %s:\n%s", ln.Addr(), logs.String())
		}
		if strings.Contains(logs.String(), "worker:discovery:0") {
			t.Errorf("a worker was started:\n%s", logs.String())
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("the refused serve created its data dir %s (%v)", data, err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		t.Errorf("serve with http_addr %s already in use was still running after 20 s; log:\n%s", ln.Addr(), logs.String())
	}
}
