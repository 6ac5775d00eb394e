package frame_test

import (
	"math"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/nomarr/nomarr/core/frame"
	"github.com/nomarr/nomarr/core/health"
)

func genFrame() *rapid.Generator[frame.Frame] {
	str := rapid.OneOf(
		rapid.String(),
		rapid.StringOf(rapid.RuneFrom([]rune{'"', '\\', '/', '\n', '\r', '\t', 0, 0x1f, 0x7f, 'é', '\u2028', '\u2029', 0xFFFD, 0x10FFFF, '🎵'})),
	)
	nonEmpty := str.Filter(func(s string) bool { return s != "" })
	phase := rapid.OneOf(
		rapid.Map(str, func(s string) health.Phase { return health.Phase(s) }),
		rapid.SampledFrom([]health.Phase{health.Initializing, health.LoadingModels, health.Idle,
			health.Processing, health.BackingOff, health.Paused, health.Stopping}),
	)
	ms := rapid.OneOf(rapid.Float64(), rapid.Float64Range(-1e6, 1e6),
		rapid.Map(rapid.Uint64(), math.Float64frombits))
	return rapid.Custom(func(t *rapid.T) frame.Frame {
		f := frame.Frame{
			ComponentID:       nonEmpty.Draw(t, "component_id"),
			Status:            nonEmpty.Draw(t, "status"),
			Phase:             phase.Draw(t, "phase"),
			CurrentJob:        str.Draw(t, "current_job"),
			Progress:          rapid.Int64().Draw(t, "progress"),
			Seq:               rapid.Uint64().Draw(t, "seq"),
			PID:               rapid.Int().Draw(t, "pid"),
			FilesProcessed:    rapid.Int64().Draw(t, "files_processed"),
			Errors:            rapid.Int64().Draw(t, "errors"),
			ConsecutiveErrors: rapid.Int64().Draw(t, "consecutive_errors"),
			DiscoveryAttempts: rapid.Int64().Draw(t, "discovery_attempts"),
			ClaimConflicts:    rapid.Int64().Draw(t, "claim_conflicts"),
			AvgProcessingMs:   ms.Draw(t, "avg_processing_ms"),
			CacheLoaded:       rapid.Bool().Draw(t, "cache_loaded"),
		}
		return f
	})
}

// TestPropertyRoundTrip: Parse(Append(f)) == f for every frame with valid
// UTF-8 strings, non-empty required fields and a finite AvgProcessingMs
// (NaN and ±Inf are written as 0).
func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame().Draw(t, "frame")
		want := f
		if math.IsNaN(want.AvgProcessingMs) || math.IsInf(want.AvgProcessingMs, 0) {
			want.AvgProcessingMs = 0
		}
		line := frame.Append(nil, &f)
		if !utf8.Valid(line) {
			t.Fatalf("Append wrote invalid UTF-8: %q", line)
		}
		got, err := frame.Parse(line[:len(line)-1])
		if err != nil {
			t.Fatalf("Parse(%q): %v", line, err)
		}
		if got != want {
			t.Fatalf("round trip of %q\n got %+v\nwant %+v", line, got, want)
		}
		if math.Signbit(got.AvgProcessingMs) != math.Signbit(want.AvgProcessingMs) && want.AvgProcessingMs != 0 {
			t.Fatalf("sign lost")
		}
	})
}

// TestPropertyAppendDeterministic: equal frames give equal bytes, and
// re-encoding a parsed frame gives the original line.
func TestPropertyAppendDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFrame().Draw(t, "frame")
		a := frame.Append(nil, &f)
		g, err := frame.Parse(a[:len(a)-1])
		if err != nil {
			t.Fatal(err)
		}
		if b := frame.Append(nil, &g); string(a) != string(b) {
			t.Fatalf("re-encoding differs:\n%q\n%q", a, b)
		}
	})
}
