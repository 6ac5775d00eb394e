package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/syncbuf"
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
	cmd, done := startServe(t, bin, &logs, "--data-dir", data, "--http-addr", ln.Addr().String())
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

// A store that accepts connections and never answers, at start: serve's
// API answers at once all the same (it used to bind, then wait out the
// store's first look before serving, so clients waited out their own
// timeout on a port that answered nothing), and a SIGINT stops it at once.
func TestServeAnswersWhileTheStoreHangs(t *testing.T) {
	bin := nomarrBinary(t)
	blackhole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer blackhole.Close()
	var held []net.Conn
	go func() {
		for {
			c, err := blackhole.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // never answered
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", t.TempDir(), "--http-addr", addr,
		"--db", "arangodb://u:p@"+blackhole.Addr().String()+"/nomarr")
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never bound %s; log:\n%s", addr, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("the dashboard did not answer while the store hangs: %v; log:\n%s", err, logs.String())
	}
	resp.Body.Close()
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatalf("serve still running 8 s after SIGINT while the store hangs; log:\n%s", logs.String())
	}
}

// startServe starts `nomarr serve` with the noop analyzer, one worker and
// args, its output to logs; done receives its exit.
func startServe(t *testing.T, bin string, logs io.Writer, args ...string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--analyzer", "noop", "--workers", "1"}, args...)...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, done
}
