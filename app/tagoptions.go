package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// MetaCalibration is the meta key holding the library's calibration
// (tags.Calibration, as Marshal writes it): `nomarr calibrate` stores it,
// a main process with calibration: library reads it at start and hands it
// to its workers.
const MetaCalibration = "tags:calibration"

// TagOptions are the tag-derivation options the settings give
// (standard_tags, mood_tier, mood_thresholds, top_tags_threshold,
// top_tags_max), without a calibration: that is the store's
// (LoadCalibration). Each bad value is an error naming its key.
func (s *Settings) TagOptions() (tags.Options, error) {
	opt := tags.DefaultOptions()
	std, err := parseStandardTags(s.Get("standard_tags"))
	if err != nil {
		return opt, err
	}
	opt.StandardTags, opt.MoodTier = std, s.Get("mood_tier")
	parts := strings.Split(s.Get("mood_thresholds"), ",")
	if len(parts) != 3 {
		return opt, fmt.Errorf("mood_thresholds: want three numbers strict,regular,loose such as 0.7,0.6,0.5, got %q", s.Get("mood_thresholds"))
	}
	th := make([]float64, 3)
	for i, p := range parts {
		if th[i], err = unitNumber(p); err != nil {
			return opt, fmt.Errorf("mood_thresholds: %v", err)
		}
	}
	if !(th[0] >= th[1] && th[1] >= th[2]) {
		return opt, fmt.Errorf("mood_thresholds: want strict ≥ regular ≥ loose, got %q", s.Get("mood_thresholds"))
	}
	opt.MoodStrict, opt.MoodRegular, opt.MoodLoose = th[0], th[1], th[2]
	if opt.TopThreshold, err = unitNumber(s.Get("top_tags_threshold")); err != nil {
		return opt, fmt.Errorf("top_tags_threshold: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(s.Get("top_tags_max")))
	if err != nil || n < 0 || n > len(tags.MSDTop50) {
		return opt, fmt.Errorf("top_tags_max: want a whole number from 0 to %d, got %q", len(tags.MSDTop50), s.Get("top_tags_max"))
	}
	opt.TopMax = n
	if err := opt.Validate(); err != nil {
		return opt, err
	}
	return opt, nil
}

// parseStandardTags reads standard_tags: fields separated by commas, or
// "none".
func parseStandardTags(v string) ([]string, error) {
	if strings.TrimSpace(v) == "none" {
		return []string{}, nil
	}
	var out []string
	for _, f := range strings.Split(v, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch {
		case f == "" || f == "none":
			return nil, fmt.Errorf("standard_tags: want mood, genre, mood,genre or none, got %q", v)
		case !slices.Contains(tags.StandardFields, f):
			return nil, fmt.Errorf("standard_tags: unknown field %q: want mood, genre, or both (mood,genre), or none", f)
		case slices.Contains(out, f):
			return nil, fmt.Errorf("standard_tags: %q listed twice", f)
		}
		out = append(out, f)
	}
	return out, nil
}

// unitNumber parses a number in [0, 1].
func unitNumber(v string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(x >= 0 && x <= 1) {
		return 0, fmt.Errorf("want a number from 0 to 1, got %q", strings.TrimSpace(v))
	}
	return x, nil
}

// checkTagSettings validates the tag keys (finish).
func (s *Settings) checkTagSettings() error {
	switch s.Get("calibration") {
	case tags.CalibrationNone, tags.CalibrationLibrary:
	default:
		return fmt.Errorf("calibration: want none or library, got %q", s.Get("calibration"))
	}
	if s.Get("mood_tier") != tags.KeyMoodStrict && s.Get("mood_tier") != tags.KeyMoodRegular && s.Get("mood_tier") != tags.KeyMoodLoose {
		return fmt.Errorf("mood_tier: want mood-strict, mood-regular or mood-loose, got %q", s.Get("mood_tier"))
	}
	_, err := s.TagOptions()
	return err
}

// ReadCalibration is the calibration stored in st (MetaCalibration); nil
// without an error when none is stored.
func ReadCalibration(ctx context.Context, st store.Meta) (*tags.Calibration, error) {
	v, ok, err := st.GetMeta(ctx, MetaCalibration)
	if err != nil {
		return nil, fmt.Errorf("reading the stored calibration: %w", err)
	}
	if !ok {
		return nil, nil
	}
	c, err := tags.ParseCalibration(v)
	if err != nil {
		return nil, fmt.Errorf("the stored calibration: %w", err)
	}
	return c, nil
}

// ErrNoCalibration: calibration is library, and the store holds no
// calibration of the model set in use.
var ErrNoCalibration = errors.New("no calibration of this model set is stored: run `nomarr calibrate` once the library is tagged")

// WorkerTagOptions are the options a main process hands its workers:
// TagOptions, and with calibration: library the store's calibration of
// the model set version (ModelSetVersion when ""). Without one (none stored yet, or one of another
// model set) the tiers apply uncalibrated, the files' derived tag saying
// so, and a warning says why; a store that cannot be read is an error.
func (s *Settings) WorkerTagOptions(ctx context.Context, st store.Meta, version string, log *slog.Logger) (tags.Options, error) {
	opt, err := s.TagOptions()
	if err != nil || s.Get("calibration") != tags.CalibrationLibrary {
		return opt, err
	}
	if version == "" {
		version = ModelSetVersion(s)
	}
	c, err := ReadCalibration(ctx, st)
	switch {
	case err != nil:
		return opt, fmt.Errorf("calibration: library: %w", err)
	case c == nil || version == "" || c.Version != version:
		log.Warn("calibration: library, but the tiers apply uncalibrated", "reason", ErrNoCalibration.Error())
		return opt, nil
	}
	opt.Calibration = c
	return opt, nil
}
