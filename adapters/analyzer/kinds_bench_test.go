package analyzer

import (
	"context"
	"fmt"
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

// BenchmarkRetag measures one worker's retags (the analyzer's part of a
// `nomarr retag`): each re-derives a file's stored scores under other mood
// thresholds than the last and writes the changed tags into the file (a
// crash-safe copy, fsync and rename of a 30 s MP3 at 128 kbit/s), over
// files of its own directory in turn. No decoding, no model. files/s is
// retags per second.
//
//	go test -run '^$' -bench Retag -benchtime 200x -cpu 1 ./adapters/analyzer
func BenchmarkRetag(b *testing.B) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		b.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "src.mp3")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=30",
		"-b:a", "128k", src).CombinedOutput(); err != nil {
		b.Fatalf("make src.mp3: %v %s", err, out)
	}
	raw, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	const files = 32
	preds := constPredictions()
	loose, strict := tags.DefaultOptions(), tags.DefaultOptions()
	loose.MoodStrict, loose.MoodRegular, loose.MoodLoose = 0.5, 0.4, 0.3
	type file struct {
		path   string
		stored map[string]string
		stat   store.Stat
	}
	fs := make([]*file, files)
	for i := range fs {
		p := filepath.Join(dir, fmt.Sprintf("%02d.mp3", i))
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			b.Fatal(err)
		}
		stored, err := tags.Derive(preds, "v1", strict)
		if err != nil {
			b.Fatal(err)
		}
		st, err := tagwrite.StampOf(p)
		if err != nil {
			b.Fatal(err)
		}
		fs[i] = &file{path: p, stored: stored, stat: store.Stat{Size: st.Size, MtimeMs: time.Unix(0, st.MtimeNs).UnixMilli()}}
	}
	an := func(opt tags.Options, f *file) *MusiCNN {
		return &MusiCNN{Tags: opt, WriteMode: tags.ModeFull,
			StoredTags: func(context.Context, string) (map[string]string, error) { return f.stored, nil }}
	}
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		f := fs[i%files]
		opt := loose
		if (i/files)%2 == 1 {
			opt = strict
		}
		job := worker.Job{FileKey: "k", Path: f.path, Kind: store.JobRetag, Stored: f.stat, Version: "v1"}
		r := an(opt, f).retag(context.Background(), job, func(int64) {})
		if r.Class != worker.OK || r.Rewritten == nil {
			b.Fatalf("retag %d: %+v", i, r)
		}
		f.stored, f.stat = r.Tags, *r.Rewritten
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "files/s")
}
