package tags

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Calibration modes (config calibration).
const (
	// CalibrationNone applies the tiers to the models' scores as they are.
	CalibrationNone = "none"
	// CalibrationLibrary applies them to the scores scaled by the
	// library's percentiles (Calibration).
	CalibrationLibrary = "library"
)

// Calibration percentiles: a class score at the library's CalLow-th
// percentile scales to 0, one at its CalHigh-th to 1 (the original
// Nomarr's min–max rule, robust to a few outliers at either end).
const (
	CalLow  = 5.0
	CalHigh = 95.0
)

// MinCalRange is the narrowest range a class is scaled by. Under it the
// library's scores of the class barely differ (a library of chamber music
// scores aggressive 0.000–0.003), and stretching them to [0, 1] would
// turn the models' noise into tiers: a score of 0.0002 against a range of
// 0.0001–0.0002 would count as a certain 1. Such a class keeps its
// scores.
const MinCalRange = 0.05

// Range is where one class's pooled scores lie over a library: its
// CalLow-th and CalHigh-th percentiles, 0 ≤ Low ≤ High ≤ 1, rounded to
// the 4 decimals scores are written with.
type Range struct {
	Low  float64 `json:"p5"`
	High float64 `json:"p95"`
}

// Calibration scales each class score by the library's distribution of
// it before the mood tiers apply. Its ranges are keyed by ClassKey; the
// numbers written into files and the store stay the models' own, so a
// calibration can be changed, and the tiers derived again, from them.
type Calibration struct {
	// Version is the model set whose scores it was computed from (a
	// calibration of other models' scores says nothing of these).
	Version string `json:"version"`
	// Files is how many files' scores it was computed from.
	Files int `json:"files"`
	// Ranges holds, per ClassKey, the range of that class's scores.
	Ranges map[string]Range `json:"ranges"`
}

// Percentile is the p-th percentile (0 ≤ p ≤ 100) of sorted (ascending,
// not empty), interpolated linearly between the two closest ranks: rank
// p/100·(n−1), as NumPy's default. It is monotone in p, sorted[0] at 0
// and sorted[n−1] at 100.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 1 {
		return sorted[0]
	}
	r := p / 100 * float64(n-1)
	i := int(math.Floor(r))
	if i >= n-1 {
		return sorted[n-1]
	}
	f := r - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// NewCalibration computes the calibration of the scores per ClassKey
// (each a number in [0, 1], at least one per key) of files files analysed
// by the model set version. Keys that are not class keys are an error, so
// is a score outside [0, 1] or NaN.
func NewCalibration(version string, files int, scores map[string][]float64) (*Calibration, error) {
	if version == "" {
		return nil, errors.New("tags: calibration: empty model-set version")
	}
	c := &Calibration{Version: version, Files: files, Ranges: make(map[string]Range, len(scores))}
	for k, vs := range scores {
		if !isClassKey(k) {
			return nil, fmt.Errorf("tags: calibration: %q is not a class key", k)
		}
		if len(vs) == 0 {
			return nil, fmt.Errorf("tags: calibration: no scores for %s", k)
		}
		s := slices.Clone(vs)
		for _, v := range s {
			if !(v >= 0 && v <= 1) {
				return nil, fmt.Errorf("tags: calibration: %s score %v is not in [0, 1]", k, v)
			}
		}
		sort.Float64s(s)
		c.Ranges[k] = Range{Low: round4(Percentile(s, CalLow)), High: round4(Percentile(s, CalHigh))}
	}
	return c, nil
}

// isClassKey reports whether k is the ClassKey of a class of Heads.
func isClassKey(k string) bool {
	for _, h := range Heads {
		c := Classes[h]
		if k == ClassKey(h, c[0]) || k == ClassKey(h, c[1]) {
			return true
		}
	}
	return false
}

// Scale is score v of the class key scaled by its range: (v − Low) /
// (High − Low), clamped to [0, 1], so the library's CalLow-th percentile
// becomes 0 and its CalHigh-th 1, and the order of scores is kept. A key
// without a range, or one narrower than MinCalRange (the scores say
// little apart), keeps v. A nil calibration keeps every score.
func (c *Calibration) Scale(key string, v float64) float64 {
	if c == nil {
		return v
	}
	r, ok := c.Ranges[key]
	if !ok || r.High-r.Low < MinCalRange {
		return v
	}
	return clamp01((v - r.Low) / (r.High - r.Low))
}

// Validate reports whether c is usable: a version, and every range of a
// class key within [0, 1] with Low ≤ High.
func (c *Calibration) Validate() error {
	if c == nil {
		return nil
	}
	if c.Version == "" {
		return errors.New("tags: calibration without a model-set version")
	}
	for k, r := range c.Ranges {
		if !isClassKey(k) {
			return fmt.Errorf("tags: calibration: %q is not a class key", k)
		}
		if !(r.Low >= 0 && r.High <= 1 && r.Low <= r.High) {
			return fmt.Errorf("tags: calibration: %s range [%v, %v] is not within [0, 1]", k, r.Low, r.High)
		}
	}
	return nil
}

// ID is a short hash naming the calibration: its model set and ranges,
// 8 hex digits. Two calibrations with the same ID scale alike.
func (c *Calibration) ID() string {
	if c == nil {
		return CalibrationNone
	}
	keys := make([]string, 0, len(c.Ranges))
	for k := range c.Ranges {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", c.Version)
	for _, k := range keys {
		r := c.Ranges[k]
		fmt.Fprintf(h, "%s %s %s\n", k, Num(r.Low), Num(r.High))
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// Marshal is c as the store keeps it (JSON).
func (c *Calibration) Marshal() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("tags: calibration: %w", err)
	}
	return string(b), nil
}

// ParseCalibration reads a calibration Marshal wrote, and validates it.
func ParseCalibration(s string) (*Calibration, error) {
	var c Calibration
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return nil, fmt.Errorf("tags: calibration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}
