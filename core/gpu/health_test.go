package gpu_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/gpu"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestAvailable(t *testing.T) {
	now := t0.Add(time.Hour)
	enc := func(ok bool, age time.Duration, reason string) string {
		return gpu.Health{OK: ok, AtMs: now.Add(-age).UnixMilli(), Reason: reason}.Encode()
	}
	cases := []struct {
		name    string
		value   string
		present bool
		want    bool
		reason  string // substring of the reason when unavailable
	}{
		{"missing", "", false, false, "no gpu health probe yet"},
		{"missing but value set", enc(true, 0, ""), false, false, "no gpu health probe yet"},
		{"fresh ok", enc(true, 10*time.Second, ""), true, true, ""},
		{"ok exactly at stale_after", enc(true, 60*time.Second, ""), true, true, ""},
		{"stale ok", enc(true, 60*time.Second+time.Millisecond, ""), true, false, "stale"},
		{"very stale", enc(true, 24*time.Hour, ""), true, false, "stale"},
		{"down with reason", enc(false, time.Second, "nvidia-smi: no devices"), true, false, "gpu unavailable: nvidia-smi: no devices"},
		{"down without reason", enc(false, time.Second, ""), true, false, "gpu unavailable"},
		{"stale and down", enc(false, 2*time.Minute, "x"), true, false, "stale"},
		{"bad json", "{not json", true, false, "decode"},
		{"empty", "", true, false, "decode"},
		{"wrong type", `{"ok":"yes","at_ms":1}`, true, false, "decode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := gpu.Available(tc.value, tc.present, now, gpu.StaleAfter)
			if got != tc.want {
				t.Fatalf("Available = %v (%q), want %v", got, why, tc.want)
			}
			if tc.want && why != "" {
				t.Fatalf("available with reason %q", why)
			}
			if !tc.want && !strings.Contains(why, tc.reason) {
				t.Fatalf("reason %q does not contain %q", why, tc.reason)
			}
		})
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	h := gpu.Health{OK: false, AtMs: t0.UnixMilli(), Reason: `quote " and \ backslash`}
	got, err := gpu.Decode(h.Encode())
	if err != nil || got != h {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", h, got, err)
	}
	if _, err := gpu.Decode("[]"); err == nil {
		t.Fatal("Decode accepted an array")
	}
	if gpu.StaleAfter != 60*time.Second || gpu.ProbeInterval != 15*time.Second || gpu.ProbeTimeout != 5*time.Second {
		t.Fatal("defaults differ from docs/design.md §13")
	}
}
