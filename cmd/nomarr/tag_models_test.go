package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/inference"
)

// TestTagRefusesADamagedModel: a backbone cut short in the models
// directory is found at start, before any worker is spawned: `nomarr tag`
// exits 2 at once, naming the file, instead of sitting at 0 done while
// its workers fail to load it, back off and restart.
func TestTagRefusesADamagedModel(t *testing.T) {
	bin := nomarrBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, ".cache", "onnxruntime", "libonnxruntime.so.1")
	models := copyModels(t, filepath.Join(root, "..", "shared", "models", "musicnn"))
	backbone := filepath.Join(models, inference.BackboneFile)
	if err := os.Truncate(backbone, 100_000); err != nil {
		t.Fatal(err)
	}
	music, data := t.TempDir(), t.TempDir()
	audioFiles(t, music, "1.mp3", "2.mp3")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "tag", music, "--data-dir", data, "--workers", "2", "--analyzer", "musicnn",
		"--models-dir", models, "--onnxruntime-lib", lib)
	cmd.WaitDelay = 5 * time.Second // workers holding the output open must not hold the test
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), backbone) {
		t.Fatalf("tag with a backbone cut short: exit %d (%v), %q; want 2 naming %s", code, err, out, backbone)
	}
	if took > 20*time.Second || strings.Contains(string(out), "worker:") {
		t.Errorf("tag took %s and started workers before refusing:\n%s", took, out)
	}
	if _, err := os.Stat(filepath.Join(data, "nomarr.db")); !os.IsNotExist(err) {
		t.Errorf("the refused start created the store (%v)", err)
	}
}

// copyModels copies the model files of dir into a new directory.
func copyModels(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, f := range inference.ModelFiles() {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("models: %v", err)
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}
