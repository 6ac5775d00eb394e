package analyzer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nomarr/nomarr/adapters/gpu"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// stubModels is a model set whose files are stand-ins: enough for its
// version (the hash of the files), which is all a job resumed after
// inference asks of it.
func stubModels(t *testing.T, content string) *gpu.Models {
	t.Helper()
	dir := t.TempDir()
	for _, f := range gpu.ModelFiles() {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return gpu.New(gpu.Config{ModelsDir: dir})
}

// tagsCheckpoint is the checkpoint a job leaves after inference, for tags
// derived by the model set of the given version.
func tagsCheckpoint(t *testing.T, version string) string {
	t.Helper()
	b, err := json.Marshal(checkpoint{Step: "tags", Tags: map[string]string{
		tags.KeyVersion: version, tags.KeyMoodStrict: "happy"}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A retry resumes from its checkpoint's tags only when the model set that
// derived them is the one loaded: after the models were replaced, the job
// decodes and infers again (here the file is gone, which shows it tried),
// so that a file's nom_version and its stored tagged_version never differ.
func TestCheckpointOfOtherModelsNotReused(t *testing.T) {
	m := &MusiCNN{Models: stubModels(t, "new "), Tags: tags.DefaultOptions(), WriteMode: tags.ModeNone}
	path := filepath.Join(t.TempDir(), "gone.flac")

	r := m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: tagsCheckpoint(t, m.Models.Version())}, func(int64) {})
	if r.Class != worker.OK || r.Version != m.Models.Version() || r.Tags[tags.KeyVersion] != r.Version {
		t.Fatalf("resumed with the same models: %+v, want OK with version %q", r, m.Models.Version())
	}
	r = m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: tagsCheckpoint(t, "oldoldoldold")}, func(int64) {})
	if r.Class == worker.OK || !r.Missing {
		t.Fatalf("resumed from another model set's tags: %+v, want a fresh decode (missing file)", r)
	}
}
