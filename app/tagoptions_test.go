package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/tags"
)

// The tag keys reach tags.Options; the defaults are tags.DefaultOptions.
func TestTagOptionsFromKeys(t *testing.T) {
	s, err := resolve(t)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := s.TagOptions()
	if err != nil {
		t.Fatal(err)
	}
	if tags.Derivation(opt) != tags.Derivation(tags.DefaultOptions()) || !slices.Equal(opt.StandardTags, []string{"mood"}) ||
		opt.MoodTier != tags.KeyMoodRegular || s.Get("calibration") != "none" {
		t.Errorf("defaults: %+v, calibration %q", opt, s.Get("calibration"))
	}
	s, err = resolve(t, "--standard-tags", "genre, MOOD", "--mood-tier", "mood-loose", "--mood-thresholds", "0.9,0.8,0.4",
		"--top-tags-threshold", "0.25", "--top-tags-max", "3", "--calibration", "library")
	if err != nil {
		t.Fatal(err)
	}
	opt, err = s.TagOptions()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(opt.StandardTags, []string{"genre", "mood"}) || opt.MoodTier != tags.KeyMoodLoose ||
		opt.MoodStrict != 0.9 || opt.MoodRegular != 0.8 || opt.MoodLoose != 0.4 || opt.TopThreshold != 0.25 || opt.TopMax != 3 {
		t.Errorf("set: %+v", opt)
	}
	s, err = resolve(t, "--standard-tags", "none")
	if err != nil {
		t.Fatal(err)
	}
	if opt, _ = s.TagOptions(); opt.StandardTags == nil || len(opt.StandardTags) != 0 {
		t.Errorf("none: %#v", opt.StandardTags)
	}
}

// Each bad value is refused, the message naming its key.
func TestTagKeysRefuseBadValues(t *testing.T) {
	for _, c := range [][2]string{
		{"standard_tags", "mood,mood"}, {"standard_tags", "style"}, {"standard_tags", "mood,"}, {"standard_tags", "none,mood"},
		{"mood_tier", "mood-medium"}, {"mood_tier", "strict"},
		{"mood_thresholds", "0.7,0.6"}, {"mood_thresholds", "0.5,0.6,0.7"}, {"mood_thresholds", "1.2,0.6,0.5"},
		{"mood_thresholds", "a,b,c"}, {"mood_thresholds", "NaN,0.6,0.5"},
		{"top_tags_threshold", "-0.1"}, {"top_tags_threshold", "x"},
		{"top_tags_max", "-1"}, {"top_tags_max", "51"}, {"top_tags_max", "2.5"},
		{"calibration", "percentile"},
	} {
		_, err := resolve(t, "--"+c[0], c[1])
		if err == nil || !strings.Contains(err.Error(), c[0]) {
			t.Errorf("%s=%q: %v", c[0], c[1], err)
		}
	}
}

// With calibration: library the workers get the stored calibration of
// the model set in use; without one, or with another model set's, the
// tiers apply uncalibrated.
func TestWorkerTagOptionsCalibration(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := resolve(t, "--calibration", "library")
	if err != nil {
		t.Fatal(err)
	}
	opt, err := s.WorkerTagOptions(ctx, st, "v1", log)
	if err != nil || opt.Calibration != nil {
		t.Fatalf("none stored: %+v, %v", opt.Calibration, err)
	}
	c, err := tags.NewCalibration("v1", 2, map[string][]float64{"happy_musicnn_mood_happy": {0.2, 0.4}})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := c.Marshal()
	if err := st.SetMeta(ctx, MetaCalibration, js); err != nil {
		t.Fatal(err)
	}
	opt, err = s.WorkerTagOptions(ctx, st, "v1", log)
	if err != nil || opt.Calibration.ID() != c.ID() {
		t.Fatalf("stored: %+v, %v", opt.Calibration, err)
	}
	if opt, _ = s.WorkerTagOptions(ctx, st, "v2", log); opt.Calibration != nil {
		t.Error("another model set's calibration used")
	}
	none, _ := resolve(t)
	if opt, _ = none.WorkerTagOptions(ctx, st, "v1", log); opt.Calibration != nil {
		t.Error("calibration: none used the stored calibration")
	}
	if err := st.SetMeta(ctx, MetaCalibration, "{"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WorkerTagOptions(ctx, st, "v1", log); err == nil {
		t.Error("a damaged stored calibration accepted")
	}
}

// The options travel to the workers in their spec unchanged.
func TestTagOptionsTravelInWorkerSpec(t *testing.T) {
	opt := tags.DefaultOptions()
	opt.StandardTags, opt.MoodStrict = []string{}, 0.8
	opt.Calibration = &tags.Calibration{Version: "v1", Ranges: map[string]tags.Range{"sad_musicnn_mood_sad": {Low: 0.1, High: 0.3}}}
	env := WorkerEnvironment(WorkerSpec{Analyzer: "musicnn", Tags: &opt})
	var spec WorkerSpec
	if err := json.Unmarshal([]byte(strings.TrimPrefix(env[len(env)-1], WorkerEnv+"=")), &spec); err != nil {
		t.Fatal(err)
	}
	if spec.Tags == nil || tags.Derivation(*spec.Tags) != tags.Derivation(opt) || spec.Tags.StandardTags == nil ||
		len(spec.Tags.StandardTags) != 0 {
		t.Errorf("spec tags %+v, want %+v", spec.Tags, opt)
	}
}
