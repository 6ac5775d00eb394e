package app

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// tagLibrary stores n files completed by version, file i's happy score
// 0.2 + 0.002·i and every other class 0.5, and one file of another model
// set with a happy score of 1.
func tagLibrary(t *testing.T, st store.Store, n int, version string) {
	t.Helper()
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	complete := func(key, v string, happy float64) {
		if _, err := st.UpsertFiles(ctx, []store.File{{Key: key, Path: "/m/" + key + ".mp3", Size: 1, MtimeMs: 1, NeedsTagging: true, IsValid: true}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, store.Claim{FileKey: key, WorkerID: "w", ClaimedAt: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		tg := map[string]string{tags.KeyVersion: v}
		for _, k := range classKeys() {
			tg[k] = "0.5000"
		}
		tg[tags.ClassKey("mood_happy", "happy")] = tags.Num(happy)
		if err := st.Complete(ctx, store.Ref{FileKey: key, WorkerID: "w"}, store.Completion{Tags: tg, Version: v, At: now}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		complete(fmt.Sprintf("f%03d", i), version, 0.2+0.002*float64(i))
	}
	complete("other", "v0", 1)
}

// calibrate reads the stored scores of its model set only, stores the
// calibration where a main process finds it, and prints every class's
// distribution.
func TestCalibrateFromStoredScores(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "n.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Calibrate(ctx, st, "v1", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("empty library: %v", err)
	}
	tagLibrary(t, st, 101, "v1")
	var out bytes.Buffer
	c, err := Calibrate(ctx, st, "v1", &out)
	if err != nil {
		t.Fatal(err)
	}
	happy := tags.ClassKey("mood_happy", "happy")
	if r := c.Ranges[happy]; c.Files != 101 || r.Low != 0.21 || r.High != 0.39 {
		t.Errorf("files %d, happy range %+v; want 101, [0.21, 0.39]", c.Files, r)
	}
	stored, err := ReadCalibration(ctx, st)
	if err != nil || stored.ID() != c.ID() {
		t.Fatalf("stored %v, %v", stored, err)
	}
	text := out.String()
	for _, want := range []string{"calibration " + c.ID() + " of model set v1 from 101 files", happy, "p95"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "|\n") + strings.Count(text, "| kept\n"); n != 2*len(tags.Heads) {
		t.Errorf("%d histograms, want %d:\n%s", n, 2*len(tags.Heads), text)
	}
	// Every class but happy scores 0.5 in every file: too narrow to scale.
	if n := strings.Count(text, "| kept\n"); n != 2*len(tags.Heads)-1 {
		t.Errorf("%d classes marked kept, want %d:\n%s", n, 2*len(tags.Heads)-1, text)
	}
}

func TestHistogram(t *testing.T) {
	if got := histogram([]float64{0, 0, 1}); got != "█"+strings.Repeat(" ", histBins-2)+"▄" {
		t.Errorf("histogram = %q", got)
	}
}
