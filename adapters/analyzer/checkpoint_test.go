package analyzer

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// stubModels is a model set whose files are stand-ins: enough for its
// version (the hash of the files), which is all a job resumed after
// inference asks of it.
func stubModels(t *testing.T, content string) *inference.Models {
	t.Helper()
	dir := t.TempDir()
	for _, f := range inference.ModelFiles() {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return inference.New(inference.Config{ModelsDir: dir})
}

// tagsCheckpoint is the checkpoint a job leaves after inference, for tags
// derived by the model set of the given version from the file at path as
// it is now.
func tagsCheckpoint(t *testing.T, version, path string) string {
	t.Helper()
	st, err := tagwrite.StampOf(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(checkpoint{Step: "tags", Tags: map[string]string{
		tags.KeyVersion: version, tags.KeyMoodStrict: "happy"}, Stamp: &st})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// notAudio writes a file that fails decoding: a job that decodes it again
// instead of resuming from its checkpoint fails.
func notAudio(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "song.flac")
	if err := os.WriteFile(path, []byte("not audio at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A retry resumes from its checkpoint's tags only when the model set that
// derived them is the one loaded: after the models were replaced, the job
// decodes and infers again (here the file is not audio, which shows it
// tried), so that a file's nom_version and its stored tagged_version never
// differ.
func TestCheckpointOfOtherModelsNotReused(t *testing.T) {
	m := &MusiCNN{Models: stubModels(t, "new "), Tags: tags.DefaultOptions(), WriteMode: tags.ModeNone}
	path := notAudio(t)

	r := m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: tagsCheckpoint(t, m.Models.Version(), path)}, func(int64) {})
	if r.Class != worker.OK || r.Version != m.Models.Version() || r.Tags[tags.KeyVersion] != r.Version {
		t.Fatalf("resumed with the same models: %+v, want OK with version %q", r, m.Models.Version())
	}
	r = m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: tagsCheckpoint(t, "oldoldoldold", path)}, func(int64) {})
	if r.Class != worker.Permanent {
		t.Fatalf("resumed from another model set's tags: %+v, want a fresh decode (not audio)", r)
	}
}

// A retry resumes from its checkpoint's tags only while the file is the
// content they were derived from: a file replaced since, or rewritten in
// place, is decoded again, so that one content's tags never go into
// another. A checkpoint without a stamp (an older one) is not reused.
func TestCheckpointOfOtherContentNotReused(t *testing.T) {
	m := &MusiCNN{Models: stubModels(t, "m "), Tags: tags.DefaultOptions(), WriteMode: tags.ModeNone}
	for name, change := range map[string]func(t *testing.T, path string){
		"replaced": func(t *testing.T, path string) {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, []byte("another rip, not audio either"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		},
		"rewritten in place": func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // a later change time
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := notAudio(t)
			cp := tagsCheckpoint(t, m.Models.Version(), path)
			change(t, path)
			r := m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: cp}, func(int64) {})
			if r.Class != worker.Permanent {
				t.Fatalf("resumed from the tags of the content before: %+v, want a fresh decode (not audio)", r)
			}
		})
	}
	t.Run("no stamp", func(t *testing.T) {
		path := notAudio(t)
		b, _ := json.Marshal(checkpoint{Step: "tags", Tags: map[string]string{tags.KeyVersion: m.Models.Version()}})
		if r := m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: string(b)}, func(int64) {}); r.Class != worker.Permanent {
			t.Fatalf("resumed from a checkpoint without a stamp: %+v, want a fresh decode", r)
		}
	})
}

// A retry that resumes from its checkpoint answers the track vector the
// inference before it made, so a failed tag write does not leave the file
// without one.
func TestCheckpointKeepsTrackVector(t *testing.T) {
	m := &MusiCNN{Models: stubModels(t, "v "), Tags: tags.DefaultOptions(), WriteMode: tags.ModeNone}
	path := notAudio(t)
	var cp checkpoint
	if err := json.Unmarshal([]byte(tagsCheckpoint(t, m.Models.Version(), path)), &cp); err != nil {
		t.Fatal(err)
	}
	cp.Vector = []float32{0.6, 0.8}
	b, _ := json.Marshal(cp)
	r := m.Analyze(context.Background(), worker.Job{Path: path, Checkpoint: string(b)}, func(int64) {})
	if r.Class != worker.OK || len(r.Vector) != 2 || r.Vector[0] != 0.6 || r.Vector[1] != 0.8 {
		t.Fatalf("resumed: %+v, want OK with the checkpoint's vector", r)
	}
}
