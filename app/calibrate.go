package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/tags"
)

// TagReader reads the tags a file's last completion stored (the SQLite
// and ArangoDB stores offer it; the port does not).
type TagReader interface {
	Tags(ctx context.Context, key string) (map[string]string, error)
}

// MinCalibrationFiles is the least number of tagged files a calibration
// is computed from: fewer say too little of a library's spread.
const MinCalibrationFiles = 20

// LibraryScores are the stored class scores of the files tagged by one
// model set: per tags.ClassKey, one score per file.
type LibraryScores struct {
	Version string
	Files   int
	// Skipped are the files tagged by this model set whose stored tags
	// lack a class score (none stored, or not a number in [0, 1]).
	Skipped int
	Scores  map[string][]float64
}

// ReadLibraryScores reads the class scores stored for every valid file
// tagged by the model set version, through st's TagReader.
func ReadLibraryScores(ctx context.Context, st store.Inventory, version string) (LibraryScores, error) {
	ls := LibraryScores{Version: version, Scores: map[string][]float64{}}
	tr, ok := st.(TagReader)
	if !ok {
		return ls, errors.New("this store cannot read back stored tags")
	}
	keys := classKeys()
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, ListBatch)
		if err != nil {
			return ls, fmt.Errorf("store: %w", err)
		}
		for _, f := range page {
			if !f.Tagged || !f.IsValid || f.TaggedVersion != version {
				continue
			}
			t, err := tr.Tags(ctx, f.Key)
			if err != nil {
				return ls, fmt.Errorf("store: %w", err)
			}
			vals, ok := classScores(t, keys)
			if !ok {
				ls.Skipped++
				continue
			}
			for i, k := range keys {
				ls.Scores[k] = append(ls.Scores[k], vals[i])
			}
			ls.Files++
		}
		if len(page) < ListBatch {
			return ls, nil
		}
		after = page[len(page)-1].Key
	}
}

// classKeys are the class keys of tags.Heads, in head order.
func classKeys() []string {
	var keys []string
	for _, h := range tags.Heads {
		c := tags.Classes[h]
		keys = append(keys, tags.ClassKey(h, c[0]), tags.ClassKey(h, c[1]))
	}
	return keys
}

// classScores are t's scores of keys, ok only when each is a number in
// [0, 1].
func classScores(t map[string]string, keys []string) ([]float64, bool) {
	out := make([]float64, len(keys))
	for i, k := range keys {
		v, err := strconv.ParseFloat(t[k], 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// Calibrate computes the calibration of the library's stored scores of
// the model set version, stores it (MetaCalibration) and prints each
// class's distribution on out. Fewer than MinCalibrationFiles files is an
// error, and nothing is stored.
func Calibrate(ctx context.Context, st store.Store, version string, out io.Writer) (*tags.Calibration, error) {
	if version == "" {
		return nil, errors.New("the model set's version is unknown (are models_dir's files readable?)")
	}
	ls, err := ReadLibraryScores(ctx, st, version)
	if err != nil {
		return nil, err
	}
	if ls.Files < MinCalibrationFiles {
		return nil, fmt.Errorf("%d files tagged by model set %s have their scores stored, want at least %d: tag the library first",
			ls.Files, version, MinCalibrationFiles)
	}
	c, err := tags.NewCalibration(version, ls.Files, ls.Scores)
	if err != nil {
		return nil, err
	}
	js, err := c.Marshal()
	if err != nil {
		return nil, err
	}
	if err := st.SetMeta(ctx, MetaCalibration, js); err != nil {
		return nil, fmt.Errorf("storing the calibration: %w", err)
	}
	WriteDistribution(out, ls, c)
	return c, nil
}

// histBins is the number of bins of a distribution's histogram, over [0, 1].
const histBins = 20

// sparks draw a bin's share of the largest bin, lowest to highest.
var sparks = []rune(" ▁▂▃▄▅▆▇█")

// WriteDistribution prints, per class, the percentiles of ls's scores and
// a one-line histogram over [0, 1] (histBins bins, each drawn by its count
// relative to the fullest), with the calibration's range.
func WriteDistribution(out io.Writer, ls LibraryScores, c *tags.Calibration) {
	fmt.Fprintf(out, "calibration %s of model set %s from %d files", c.ID(), ls.Version, ls.Files)
	if ls.Skipped > 0 {
		fmt.Fprintf(out, " (%d without stored scores left out)", ls.Skipped)
	}
	width := 0
	for _, k := range classKeys() {
		width = max(width, len(k))
	}
	fmt.Fprintf(out, "\n\n%-*s %6s %6s %6s %6s %6s  %s\n", width, "class", "p5", "p25", "p50", "p75", "p95", "0 … 1")
	for _, k := range classKeys() {
		s := slices.Clone(ls.Scores[k])
		if len(s) == 0 {
			continue
		}
		sort.Float64s(s)
		fmt.Fprintf(out, "%-*s", width, k)
		for _, p := range []float64{5, 25, 50, 75, 95} {
			fmt.Fprintf(out, " %6.3f", tags.Percentile(s, p))
		}
		fmt.Fprintf(out, "  |%s|", histogram(s))
		if r, ok := c.Ranges[k]; ok && r.High-r.Low < tags.MinCalRange {
			fmt.Fprint(out, " kept") // too narrow to scale
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "\nWith calibration: library, a score at p5 counts as 0 and one at p95 as 1 before\n"+
		"the mood thresholds apply (a class marked kept spans under %.2f and keeps its\n"+
		"scores), from the next start of tag or serve. Files keep the\n"+
		"lists they were derived under (nom:derived) until `nomarr retag` re-derives\n"+
		"them from the stored scores (no model run).\n", tags.MinCalRange)
}

// histogram draws the scores (in [0, 1]) in histBins bins.
func histogram(scores []float64) string {
	bins := make([]int, histBins)
	most := 0
	for _, v := range scores {
		i := min(int(v*histBins), histBins-1)
		bins[i]++
		most = max(most, bins[i])
	}
	var b strings.Builder
	for _, n := range bins {
		i := 0
		if n > 0 {
			i = 1 + n*(len(sparks)-2)/most
		}
		b.WriteRune(sparks[i])
	}
	return b.String()
}
