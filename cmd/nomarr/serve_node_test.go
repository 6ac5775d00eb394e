package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/process"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestServeRefusesANodeInUseBeforeServing: a serve whose node name is held
// by another running main process (here this test's own process) is
// refused before it logs `serving` or spawns a worker, with the reason,
// and exits 1.
func TestServeRefusesANodeInUseBeforeServing(t *testing.T) {
	bin := nomarrBinary(t)
	data := t.TempDir()
	s, err := loadWithFile(t, "", "--data-dir", data, "--node", "n1")
	if err != nil {
		t.Fatal(err)
	}
	h := process.Self()
	h.Instance = fmt.Sprintf("n1:%d:1", os.Getpid())
	h.UntilMs = time.Now().Add(time.Hour).UnixMilli()
	b, _ := json.Marshal(h)
	withStore(t, s, func(st app.Store) {
		if err := st.SetMeta(context.Background(), node.NameKeyPrefix+"n1", string(b)); err != nil {
			t.Fatal(err)
		}
	})
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", data, "--http-addr", "127.0.0.1:0", "--node", "n1")
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("serve under a node name in use still running after 20 s; log:\n%s", logs.String())
	}
	got := logs.String()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(got, `nomarr serve: node "n1" is in use by main process n1:`) {
		t.Errorf("serve under a node name in use: exit %d, want 1 saying so; log:\n%s", code, got)
	}
	if strings.Contains(got, "msg=serving") || strings.Contains(got, "worker:discovery:0") {
		t.Errorf("serve said it was serving, or started a worker, before it was refused; log:\n%s", got)
	}
}
