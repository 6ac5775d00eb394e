package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// modelFlags are the flags of the musicnn analyzer with the real models
// (../shared/models/musicnn) and the ONNX Runtime of .cache.
func modelFlags(t *testing.T) (flags []string, modelsDir string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, ".cache", "onnxruntime", "libonnxruntime.so.1")
	models := filepath.Join(root, "..", "shared", "models", "musicnn")
	if _, err := os.Stat(filepath.Join(models, "msd-musicnn-1.onnx")); err != nil {
		t.Fatalf("models: %v", err)
	}
	return []string{"--analyzer", "musicnn", "--models-dir", models, "--onnxruntime-lib", lib}, models
}

// shortClips writes n clips of secs seconds (clipSource's families) into
// dir, as MP3 and FLAC in turn, and returns their paths.
func shortClips(t *testing.T, dir string, n, secs int) []string {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "espeak-ng"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to make the clips: %v", tool, err)
		}
	}
	src := t.TempDir()
	var files []string
	for i := range n {
		wav := filepath.Join(src, fmt.Sprintf("%02d.wav", i))
		clipSource(t, i, secs, wav)
		out := filepath.Join(dir, fmt.Sprintf("clip%02d.mp3", i))
		if i%2 == 1 {
			out = filepath.Join(dir, fmt.Sprintf("clip%02d.flac", i))
		}
		runSh(t, fmt.Sprintf(`ffmpeg -v error -y -i %q %q`, wav, out))
		files = append(files, out)
	}
	return files
}

// audioDigest is the MD5 of the file's audio packets as ffmpeg copies
// them out: the audio bytes, whatever the tags around them.
func audioDigest(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", path, "-map", "0:a", "-c", "copy", "-f", "md5", "-").Output()
	if err != nil {
		t.Fatalf("audio digest of %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}

// fileDigest is the SHA-256 of the whole file.
func fileDigest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestRetagRewritesTiersWithoutModels is `nomarr retag` end to end: a
// library of 20 generated clips is tagged by the built binary with the
// real models; `nomarr calibrate` stores the library's calibration; with
// lower mood thresholds and calibration: library, `nomarr retag` rewrites
// every file's mood lists, derived and MOOD from the stored scores as
// tags.Rederive gives them, while no worker loads a model (its debug log
// shows no models_loaded, a retagged event per file) and the audio bytes
// stay. A file whose modification time moved since it was tagged is not
// written and goes back to a full analysis. A second retag finds nothing
// to do.
func TestRetagRewritesTiersWithoutModels(t *testing.T) {
	bin := nomarrBinary(t)
	musicnn, models := modelFlags(t)
	version, err := inference.Version(models)
	if err != nil {
		t.Fatal(err)
	}
	music, data := t.TempDir(), t.TempDir()
	files := shortClips(t, music, 20, 4)
	nomarr := cli(t, bin, data)
	nomarr(0, append([]string{"tag", music, "--workers", "2"}, musicnn...)...)
	nomarr(0, append([]string{"calibrate"}, musicnn...)...)

	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	keyOf := map[string]string{}
	storedBefore := map[string]map[string]string{}
	all, err := st.ListFiles(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if !f.Tagged || f.TaggedVersion != version {
			t.Fatalf("after tag: %+v", f)
		}
		keyOf[f.Path] = f.Key
		if storedBefore[f.Path], err = st.FileTags(ctx, f.Key); err != nil {
			t.Fatal(err)
		}
	}
	raw, ok, err := st.GetMeta(ctx, app.MetaCalibration)
	if err != nil || !ok {
		t.Fatalf("no stored calibration: %v", err)
	}
	cal, err := tags.ParseCalibration(raw)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	opt := tags.DefaultOptions()
	opt.MoodStrict, opt.MoodRegular, opt.MoodLoose, opt.Calibration = 0.35, 0.25, 0.15, cal

	changed := files[1] // a FLAC whose modification time moves
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(changed, later, later); err != nil {
		t.Fatal(err)
	}
	audio, whole := map[string]string{}, map[string][32]byte{}
	for _, f := range files {
		audio[f], whole[f] = audioDigest(t, f), fileDigest(t, f)
	}

	retag := append([]string{"retag", "--workers", "2", "--mood-thresholds", "0.35,0.25,0.15", "--calibration", "library",
		"--log-level", "debug"}, musicnn...)
	out, errOut := nomarr(1, retag...) // 1: the changed file is left, sent back to full analysis
	if want := fmt.Sprintf("retagged %d, sent back to full analysis 1, left 0 of 20 marked files", len(files)-1); !strings.Contains(out, want) {
		t.Fatalf("retag stdout: %s\nwant %q", out, want)
	}
	if strings.Contains(errOut, "msg=models_loaded") || strings.Contains(errOut, "msg=loading_models") {
		t.Fatalf("a worker loaded the models during the retag:\n%s", errOut)
	}
	if n := strings.Count(errOut, "msg=retagged"); n != len(files)-1 {
		t.Fatalf("%d retagged events, want %d\n%s", n, len(files)-1, errOut)
	}
	if n := strings.Count(errOut, "no model run"); n != len(files)-1 {
		t.Fatalf("%d files re-derived without a model run, want %d", n, len(files)-1)
	}

	st, err = sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	moved := 0
	for _, f := range files {
		if fa := audioDigest(t, f); fa != audio[f] {
			t.Errorf("%s: audio %s after the retag, %s before", f, fa, audio[f])
		}
		sf, err := st.File(ctx, keyOf[f])
		if err != nil {
			t.Fatal(err)
		}
		if f == changed {
			if fileDigest(t, f) != whole[f] {
				t.Errorf("%s, changed since tagged, was written", f)
			}
			if sf.Tagged || !sf.NeedsTagging {
				t.Errorf("%s, changed since tagged: %+v, want pending again", f, sf)
			}
			continue
		}
		want, err := tags.Rederive(storedBefore[f], opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tagwrite.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{tags.KeyMoodStrict, tags.KeyMoodRegular, tags.KeyMoodLoose, tags.KeyDerived, tags.KeyTopTags, tags.KeyVersion} {
			if got[k] != want[k] {
				t.Errorf("%s: %s = %q in the file, a re-derivation gives %q", f, k, got[k], want[k])
			}
		}
		stored, _ := st.FileTags(ctx, keyOf[f])
		if !maps.Equal(stored, want) {
			t.Errorf("%s: stored tags after the retag differ from the re-derivation:\n%v\n%v", f, stored, want)
		}
		std, err := tagwrite.ReadStandard(f)
		if err != nil {
			t.Fatal(err)
		}
		// A value MOOD held already keeps its place (tags.EditField): the
		// labels are compared, not their order.
		gotMood, wantMood := slices.Sorted(slices.Values(std[tags.FieldMood])), splitList(want[tags.KeyMoodRegular])
		slices.Sort(wantMood)
		if !slices.Equal(gotMood, wantMood) {
			t.Errorf("%s: MOOD = %q, want the labels %q", f, std[tags.FieldMood], wantMood)
		}
		if got[tags.KeyMoodLoose] != storedBefore[f][tags.KeyMoodLoose] || got[tags.KeyMoodStrict] != storedBefore[f][tags.KeyMoodStrict] {
			moved++
		}
		if !sf.Tagged || sf.NeedsTagging {
			t.Errorf("%s after its retag: %+v", f, sf)
		}
	}
	if moved == 0 {
		t.Fatal("no file's mood tiers changed: the test shows nothing")
	}
	t.Logf("%d of %d files changed tiers", moved, len(files)-1)
	if c, err := st.CountJobs(ctx, version); err != nil || c.Retag != 0 {
		t.Fatalf("retags left = %+v, %v", c, err)
	}
	st.Close()

	out, _ = nomarr(0, retag...)
	if !strings.Contains(out, "nothing to retag") {
		t.Fatalf("a second retag: %s", out)
	}
}

// splitList splits a list tag as Derive joins it.
func splitList(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, tags.ListSep)
}

// TestTagMakesMissingVectors is the vector backfill end to end: a library
// tagged with the real models whose track vectors are then deleted from
// the store (as for files tagged before vectors were kept) gets, from the
// next `nomarr tag`, a vector for every file, through vector jobs (one
// vectored event a file), without a byte of any file changing, and the
// files' tagging time unchanged. A further run has nothing to do.
func TestTagMakesMissingVectors(t *testing.T) {
	bin := nomarrBinary(t)
	musicnn, models := modelFlags(t)
	version, err := inference.Version(models)
	if err != nil {
		t.Fatal(err)
	}
	music, data := t.TempDir(), t.TempDir()
	files := shortClips(t, music, 6, 4)
	nomarr := cli(t, bin, data)
	nomarr(0, append([]string{"tag", music, "--workers", "2"}, musicnn...)...)
	db := filepath.Join(data, "nomarr.db")
	execSQL(t, db, `DELETE FROM track_vectors`)
	st, err := sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before, err := st.ListFiles(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := st.CountJobs(ctx, version); err != nil || c.Vector != len(files) {
		t.Fatalf("vectors missing = %+v, %v; want %d", c, err, len(files))
	}
	st.Close()
	wantMissing := func(n int) {
		t.Helper()
		out, _ := nomarr(0, append([]string{"status", "--json", "--http-addr", freeAddr(t)}, musicnn...)...)
		var info struct {
			Jobs *struct {
				ModelSet       string `json:"model_set"`
				VectorsMissing int    `json:"vectors_missing"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(out), &info); err != nil || info.Jobs == nil ||
			info.Jobs.ModelSet != version || info.Jobs.VectorsMissing != n {
			t.Fatalf("status --json: jobs %+v (%v), want %d vectors missing of %s:\n%s", info.Jobs, err, n, version, out)
		}
	}
	wantMissing(len(files))
	whole := map[string][32]byte{}
	for _, f := range files {
		whole[f] = fileDigest(t, f)
	}

	out, errOut := nomarr(0, append([]string{"tag", music, "--workers", "2", "--log-level", "debug"}, musicnn...)...)
	if !strings.Contains(out, fmt.Sprintf("track vectors made %d, still missing 0", len(files))) {
		t.Fatalf("tag stdout:\n%s", out)
	}
	if n := strings.Count(errOut, "msg=vectored"); n != len(files) {
		t.Fatalf("%d vectored events, want %d", n, len(files))
	}
	for _, f := range files {
		if fileDigest(t, f) != whole[f] {
			t.Errorf("%s changed during the backfill", f)
		}
	}
	st, err = sqlite.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	vs, err := st.TrackVectors(ctx, version, "", 0)
	if err != nil || len(vs) != len(files) {
		t.Fatalf("%d vectors after the backfill (%v), want %d", len(vs), err, len(files))
	}
	after, err := st.ListFiles(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range after {
		if after[i].LastTaggedAt != before[i].LastTaggedAt || !after[i].Tagged || after[i].Size != before[i].Size {
			t.Errorf("%s: %+v after the backfill, %+v before", after[i].Path, after[i], before[i])
		}
	}
	if c, err := st.CountJobs(ctx, version); err != nil || c != (store.JobCounts{}) {
		t.Fatalf("jobs left = %+v, %v", c, err)
	}
	st.Close()
	wantMissing(0)
	if out, _ := nomarr(0, append([]string{"tag", music}, musicnn...)...); !strings.Contains(out, "nothing to tag") {
		t.Fatalf("a further tag run:\n%s", out)
	}
}

// execSQL runs statements on the SQLite database at path, as another
// process would.
func execSQL(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
