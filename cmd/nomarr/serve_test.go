package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"github.com/nomarr/nomarr/internal/eventually"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
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
	addr := freeAddr(t)
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", t.TempDir(), "--http-addr", addr,
		"--db", "arangodb://u:p@"+blackhole.Addr().String()+"/nomarr")
	defer func() { _ = cmd.Process.Kill() }()
	logOnFailure(t, &logs)
	eventually.True(t, 10*time.Second, "serve binding "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
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

// TestServeRefusesAForeignDatabase: `nomarr serve --db` naming another
// program's SQLite database is a configuration error: serve says so and
// exits 1 at start, as tag, status and workers refuse it, instead of
// logging "store unavailable; retrying" for ever and exiting 0 on SIGINT.
func TestServeRefusesAForeignDatabase(t *testing.T) {
	bin := nomarrBinary(t)
	foreign := foreignDatabase(t)
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0", "--db", "sqlite:"+foreign)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("serve with another program's database still running after 20 s; log:\n%s", logs.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(logs.String(), "nomarr serve: sqlite: open "+foreign+": not a nomarr database") {
		t.Errorf("serve with another program's database: exit %d, want 1 saying so; log:\n%s", code, logs.String())
	}
	if strings.Contains(logs.String(), "retrying") || strings.Contains(logs.String(), "worker:discovery:0") {
		t.Errorf("serve retried the foreign database or started a worker; log:\n%s", logs.String())
	}
}

// foreignDatabase creates a SQLite database with another program's table.
func foreignDatabase(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "foreign.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE songs (id INTEGER PRIMARY KEY, title TEXT)`); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeAddr is a loopback address no one listens on (a port the kernel
// just gave out and took back).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Workers are started through /proc/self/exe (an upgrade replacing the
// binary cannot give serve workers of another version), which the kernel
// names `exe`; each worker names itself after its binary, so `ps -C
// nomarr` and `pgrep -x nomarr` find the workers with their main process.
func TestWorkersNamedAfterTheBinary(t *testing.T) {
	bin := nomarrBinary(t)
	addr := freeAddr(t)
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", t.TempDir(), "--http-addr", addr)
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	client := http.Client{Timeout: 2 * time.Second}
	logOnFailure(t, &logs)
	pid := 0
	// The name is set before the first frame: a healthy worker has it.
	eventually.True(t, 20*time.Second, "a healthy worker", func() bool {
		resp, err := client.Get("http://" + addr + "/api/v1/info")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var info httpapi.Info
		if json.NewDecoder(resp.Body).Decode(&info) != nil || len(info.Workers) == 0 || info.Workers[0].Status != "healthy" {
			return false
		}
		pid = info.Workers[0].PID
		return pid != 0
	})
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		t.Fatalf("worker %d: %v", pid, err)
	}
	if got := strings.TrimSpace(string(comm)); got != filepath.Base(bin) {
		t.Fatalf("worker %d's comm = %q, want %q (its binary's name)", pid, got, filepath.Base(bin))
	}
}
