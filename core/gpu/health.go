// Package gpu holds the decisions about GPU availability (docs/design.md §8): the
// cached `gpu:health` meta value written by the supervisor's probe and read by
// workers before each job. Probing itself (nvidia-smi) is an adapter.
package gpu

import (
	"encoding/json"
	"fmt"
	"time"
)

// Defaults of the probe (docs/design.md §13).
const (
	ProbeInterval = 15 * time.Second
	ProbeTimeout  = 5 * time.Second
	StaleAfter    = 60 * time.Second
)

// Health is the value of the `gpu:health` meta key.
type Health struct {
	OK     bool   `json:"ok"`
	AtMs   int64  `json:"at_ms"` // wall time of the probe
	Reason string `json:"reason,omitempty"`
}

// Encode renders h for the meta collection.
func (h Health) Encode() string {
	b, _ := json.Marshal(h) // cannot fail for this type
	return string(b)
}

// Decode parses a `gpu:health` value.
func Decode(s string) (Health, error) {
	var h Health
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return Health{}, fmt.Errorf("gpu: decode health %q: %w", s, err)
	}
	return h, nil
}

// Available decides from a cached value whether a job may use the GPU now: the
// probe said OK and it is not older than staleAfter. A missing or unreadable
// value means unavailable, with a reason.
func Available(value string, present bool, now time.Time, staleAfter time.Duration) (bool, string) {
	if !present {
		return false, "no gpu health probe yet"
	}
	h, err := Decode(value)
	if err != nil {
		return false, err.Error()
	}
	if age := now.Sub(time.UnixMilli(h.AtMs)); age > staleAfter {
		return false, fmt.Sprintf("gpu health stale (%s old)", age.Truncate(time.Second))
	}
	if !h.OK {
		if h.Reason == "" {
			return false, "gpu unavailable"
		}
		return false, "gpu unavailable: " + h.Reason
	}
	return true, ""
}
