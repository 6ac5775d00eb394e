package analyzer

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// retagFixture is an MP3 tagged as a completion under the default options
// left it, its stored tags and the stat the store recorded.
func retagFixture(t *testing.T) (path string, stored map[string]string, stat store.Stat) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	path = filepath.Join(t.TempDir(), "a.mp3")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", path).CombinedOutput(); err != nil {
		t.Fatalf("make a.mp3: %v %s", err, out)
	}
	stored, err := tags.Derive(constPredictions(), "v1", tags.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	std, err := tags.Standard(stored, tags.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := tagwrite.WriteAll(path, stored, std); err != nil {
		t.Fatal(err)
	}
	st, err := tagwrite.StampOf(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, stored, store.Stat{Size: st.Size, MtimeMs: time.Unix(0, st.MtimeNs).UnixMilli()}
}

// A retag writes the re-derivation of the stored tags under the
// analyzer's options, reads no audio and answers the file's new stat.
func TestRetagWritesRederivedTags(t *testing.T) {
	path, stored, stat := retagFixture(t)
	opt := tags.DefaultOptions()
	opt.MoodStrict, opt.MoodRegular, opt.MoodLoose = 0.9, 0.85, 0.8 // happy and aggressive (0.8) fall to loose
	m := &MusiCNN{Tags: opt, WriteMode: tags.ModeFull, Models: stubModels(t, ""),
		StoredTags: func(_ context.Context, key string) (map[string]string, error) { return stored, nil }}
	fenced := 0
	job := worker.Job{FileKey: "a", Path: path, Kind: store.JobRetag, Stored: stat, Version: "v1",
		Fence: func() error { fenced++; return nil }}
	r := m.Analyze(context.Background(), job, func(int64) {})
	if r.Class != worker.OK || r.Rewritten == nil || r.Version != "v1" || fenced != 1 {
		t.Fatalf("retag = %+v (fence called %d times)", r, fenced)
	}
	want, err := tags.Rederive(stored, opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tagwrite.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{tags.KeyMoodStrict, tags.KeyMoodRegular, tags.KeyMoodLoose, tags.KeyDerived} {
		if got[k] != want[k] || r.Tags[k] != want[k] {
			t.Errorf("%s: file %q, result %q, want %q", k, got[k], r.Tags[k], want[k])
		}
	}
	if want[tags.KeyMoodStrict] != "" || want[tags.KeyMoodLoose] == "" {
		t.Fatalf("the fixture moves no tier: %v", want)
	}
	std, err := tagwrite.ReadStandard(path)
	if err != nil || len(std[tags.FieldMood]) != 0 { // mood-regular is empty under 0.85
		t.Fatalf("MOOD after the retag = %q, %v; want none", std[tags.FieldMood], err)
	}
}

// A file that is not the content its stored tags describe, or whose
// stored tags are another model set's or cannot be re-derived, is sent
// back to full analysis, untouched; a store that does not answer is an
// outage of the store; a claim lost before the write writes nothing.
func TestRetagRefusals(t *testing.T) {
	path, stored, stat := retagFixture(t)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run := func(job worker.Job, read StoredTags) worker.Result {
		t.Helper()
		m := &MusiCNN{Tags: tags.DefaultOptions(), WriteMode: tags.ModeFull, StoredTags: read, Models: stubModels(t, "")}
		job.Path, job.Kind, job.FileKey = path, store.JobRetag, "a"
		r := m.Analyze(context.Background(), job, func(int64) {})
		if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, orig) {
			t.Fatalf("%+v: the file changed", r)
		}
		return r
	}
	ok := func(context.Context, string) (map[string]string, error) { return stored, nil }
	if r := run(worker.Job{Stored: store.Stat{Size: stat.Size + 1, MtimeMs: stat.MtimeMs}, Version: "v1"}, ok); !r.Reanalyze {
		t.Errorf("another size: %+v, want Reanalyze", r)
	}
	if r := run(worker.Job{Stored: store.Stat{Size: stat.Size, MtimeMs: stat.MtimeMs - 1000}, Version: "v1"}, ok); !r.Reanalyze {
		t.Errorf("another mtime: %+v, want Reanalyze", r)
	}
	if r := run(worker.Job{Stored: stat, Version: "v2"}, ok); !r.Reanalyze {
		t.Errorf("stored tags of another model set: %+v, want Reanalyze", r)
	}
	cut := func(context.Context, string) (map[string]string, error) {
		return map[string]string{tags.KeyVersion: "v1", tags.KeyMoodStrict: "happy"}, nil
	}
	if r := run(worker.Job{Stored: stat, Version: "v1"}, cut); !r.Reanalyze {
		t.Errorf("stored tags without numbers: %+v, want Reanalyze", r)
	}
	down := func(context.Context, string) (map[string]string, error) { return nil, errors.New("database is locked") }
	if r := run(worker.Job{Stored: stat, Version: "v1"}, down); r.Class != worker.ServiceDown || r.Dependency != worker.DepStore {
		t.Errorf("store down: %+v, want service_down (store)", r)
	}
	lost := worker.Job{Stored: stat, Version: "v1", Fence: func() error { return store.ErrClaimLost }}
	opt := tags.DefaultOptions()
	opt.MoodStrict = 0.9
	m := &MusiCNN{Tags: opt, WriteMode: tags.ModeFull, StoredTags: ok, Models: stubModels(t, "")}
	lost.Path, lost.Kind, lost.FileKey = path, store.JobRetag, "a"
	if r := m.Analyze(context.Background(), lost, func(int64) {}); r.Class != worker.Lost {
		t.Errorf("claim lost: %+v", r)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("claim lost: the file changed")
	}
}
