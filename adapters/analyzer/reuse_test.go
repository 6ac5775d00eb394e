package analyzer

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

// A file that already holds a whole analysis by the loaded model set is
// decoded but not run through the models again (the stand-in models here
// cannot run, so any inference shows as an "inference:" failure): its tags
// are the job's result and the write mode still applies to the file. A
// file holding less (write_mode minimal), another model set's tags, or
// tags edited by hand goes through the models as usual, and so does every
// file when the reuse is off. A tagged file cut short fails as it would
// without the reuse.
func TestFileTagsOfThisModelSetReused(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/deps.sh installs it)")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src.flac")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=20",
		"-metadata", "artist=Ann", "-metadata", "title=Tone", src).CombinedOutput(); err != nil {
		t.Fatalf("make src.flac: %v %s", err, out)
	}
	models := stubModels(t, "")
	full, err := tags.Derive(constPredictions(), models.Version(), tags.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// file returns a copy of src (its first keep bytes; all when 0)
	// holding t0 and the standard fields the analyzer writes with it.
	n := 0
	file := func(t0 map[string]string, keep int) string {
		t.Helper()
		n++
		p := filepath.Join(dir, "f"+string(rune('a'+n))+".flac")
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		std, err := tags.Standard(t0, tags.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if err := tagwrite.WriteAll(p, t0, std); err != nil {
			if err == tagwrite.ErrNoTagLib {
				t.Skip("built without TagLib (cgo off or notaglib tag)")
			}
			t.Fatal(err)
		}
		if keep > 0 {
			if err := os.Truncate(p, int64(keep)); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	analyze := func(p, mode string, reuse bool) (worker.Result, []int64) {
		t.Helper()
		m := &MusiCNN{Models: models, Tags: tags.DefaultOptions(), WriteMode: mode, ReuseFileTags: reuse}
		var steps []int64
		r := m.Analyze(context.Background(), worker.Job{FileKey: "k", Path: p, Fence: func() error { return nil }},
			func(s int64) { steps = append(steps, s) })
		return r, steps
	}
	inferred := func(what string, r worker.Result) {
		t.Helper()
		if !strings.HasPrefix(r.Reason, "inference: ") {
			t.Errorf("%s: %+v, want the models run (an inference failure)", what, r)
		}
	}

	p := file(full, 0)
	before, _ := os.ReadFile(p)
	r, steps := analyze(p, tags.ModeFull, true)
	if r.Class != worker.OK || r.Version != models.Version() || !maps.Equal(r.Tags, full) {
		t.Fatalf("reuse: %+v, want OK with the file's tags %v", r, full)
	}
	if r.Vector != nil {
		t.Errorf("reuse gave a track vector %v: no inference ran", r.Vector)
	}
	if want := (store.FileInfo{Artist: "Ann", Title: "Tone", DurationMs: 20_000}); r.Info == nil || *r.Info != want {
		t.Errorf("file info %+v, want %+v", r.Info, want)
	}
	if len(steps) < 2 || !rising(steps) {
		t.Errorf("progress %v, want a rising count (decoded, done)", steps)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, before) {
		t.Error("a file already holding its tags was rewritten")
	}

	// The write mode still applies: minimal leaves only its keys in the
	// file, while the store gets the whole analysis.
	p = file(full, 0)
	r, _ = analyze(p, tags.ModeMinimal, true)
	if r.Class != worker.OK || !maps.Equal(r.Tags, full) || r.Rewritten == nil {
		t.Fatalf("reuse, write_mode minimal: %+v", r)
	}
	want, _ := tags.WriteSet(full, tags.ModeMinimal)
	want[tags.WrittenKey(tags.FieldMood)] = full[tags.KeyMoodRegular] // MOOD, written with them
	if got, err := tagwrite.Read(p); err != nil || !maps.Equal(got, want) {
		t.Errorf("file after write_mode minimal: %v (%v), want %v", got, err, want)
	}

	inferred("reuse off", first(analyze(file(full, 0), tags.ModeFull, false)))
	minimal, _ := tags.WriteSet(full, tags.ModeMinimal)
	inferred("a minimal set", first(analyze(file(minimal, 0), tags.ModeFull, true)))
	other := maps.Clone(full)
	other[tags.KeyVersion] = "0123456789ab"
	inferred("another model set", first(analyze(file(other, 0), tags.ModeFull, true)))
	edited := maps.Clone(full)
	edited[tags.KeyMoodLoose] = "happy; sad"
	inferred("edited lists", first(analyze(file(edited, 0), tags.ModeFull, true)))
	inferred("no tags at all", first(analyze(src, tags.ModeFull, true)))

	// A read-only file fails before the models run, saying what to do; one
	// that already holds the whole set it would get is fine as it is.
	ro := file(map[string]string{}, 0)
	held := file(full, 0)
	for _, p := range []string{ro, held} {
		if err := os.Chmod(p, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := analyze(ro, tags.ModeFull, true); r.Class != worker.Permanent ||
		!strings.Contains(r.Reason, "read-only") || !strings.Contains(r.Reason, "write_mode: none") {
		t.Errorf("read-only file: %+v, want a permanent read-only failure before the models", r)
	}
	inferred("read-only, write_mode none", first(analyze(ro, tags.ModeNone, true)))

	// A format the tags cannot be written into (Matroska) fails before
	// the models run too, saying what to do; with write_mode none its tags
	// go to the store only, so it is analysed.
	mka := filepath.Join(dir, "tone.mka")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-i", src, "-c:a", "flac", mka).CombinedOutput(); err != nil {
		t.Fatalf("make tone.mka: %v %s", err, out)
	}
	if r, _ := analyze(mka, tags.ModeFull, true); r.Class != worker.Permanent ||
		!strings.Contains(r.Reason, "unsupported audio format") || !strings.Contains(r.Reason, "write_mode: none") {
		t.Errorf("Matroska file: %+v, want a permanent unsupported-format failure before the models", r)
	}
	inferred("Matroska, write_mode none", first(analyze(mka, tags.ModeNone, true)))
	// Holding this model set's tags, it goes on to the models even when
	// they cannot be reused (minimal, or reuse off): the write may find
	// nothing to change.
	inferred("read-only holding this model set's tags, reuse off", first(analyze(held, tags.ModeFull, false)))
	inferred("read-only holding this model set's tags, write_mode minimal", first(analyze(held, tags.ModeMinimal, false)))
	if r, _ := analyze(held, tags.ModeFull, true); r.Class != worker.OK || r.Rewritten == nil {
		t.Errorf("read-only file holding its tags: %+v, want OK", r)
	}

	// Cut short after it was tagged (an interrupted copy keeps the tags at
	// the front): the same permanent failure with the reuse on or off.
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	cut := file(full, int(fi.Size()/20))
	off, _ := analyze(cut, tags.ModeFull, false)
	on, _ := analyze(cut, tags.ModeFull, true)
	if off.Class != worker.Permanent || on.Class != off.Class || on.Reason != off.Reason {
		t.Errorf("a tagged file cut short: reuse on %+v, off %+v; want the same permanent failure", on, off)
	}
}

func first(r worker.Result, _ []int64) worker.Result { return r }

// constPredictions is one patch where every head votes 0.8 for its first
// class and the backbone scores rock 0.6.
func constPredictions() tags.Predictions {
	p := tags.Predictions{Heads: map[string][][]float32{}}
	msd := make([]float32, len(tags.MSDTop50))
	msd[0] = 0.6
	p.MSD = [][]float32{msd}
	for _, h := range tags.Heads {
		p.Heads[h] = [][]float32{{0.8, 0.2}}
	}
	return p
}

// rising reports whether every step is above the one before it.
func rising(steps []int64) bool {
	for i := 1; i < len(steps); i++ {
		if steps[i] <= steps[i-1] {
			return false
		}
	}
	return true
}
