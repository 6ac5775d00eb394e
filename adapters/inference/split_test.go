//go:build cgo

package inference

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/adapters/onnx/rewrite"
	"github.com/nomarr/nomarr/core/tags"
)

// trackPatches cuts a track of frames (deterministic, with the structure of
// testPatches but continuous in time) into n overlapping patches, the way
// the features extractor does: patch p is frames p·PatchHop … +PatchFrames.
func trackPatches(n int, seed uint64) []float32 {
	frames := PatchHop*(n-1) + PatchFrames
	track := testPatches((frames+PatchFrames-1)/PatchFrames, seed)
	out := make([]float32, 0, n*PatchSize)
	for p := range n {
		out = append(out, track[p*PatchHop*MelBands:(p*PatchHop+PatchFrames)*MelBands]...)
	}
	return out
}

func predDiff(t testing.TB, a, b tags.Predictions) float64 {
	t.Helper()
	d := 0.0
	cmp := func(x, y [][]float32) {
		if len(x) != len(y) {
			t.Fatalf("rows %d vs %d", len(x), len(y))
		}
		for i := range x {
			for j := range x[i] {
				d = math.Max(d, math.Abs(float64(x[i][j]-y[i][j])))
			}
		}
	}
	cmp(a.MSD, b.MSD)
	for _, h := range tags.Heads {
		cmp(a.Heads[h], b.Heads[h])
	}
	return d
}

// The split backbone (front end once per frame, rest per patch) scores
// every patch as the backbone as exported does: overlapping patches of one
// track (groups cut by batch and group boundaries), independent patches
// (no shared frames), a mixture, and a single patch.
func TestSplitMatchesPlain(t *testing.T) {
	track := trackPatches(21, 3)
	mixed := append(append(append([]float32(nil), track[:5*PatchSize]...), testPatches(2, 9)...), track[5*PatchSize:9*PatchSize]...)
	cases := map[string]struct {
		patches []float32
		n       int
	}{
		"track":       {track, 21},
		"independent": {testPatches(7, 4), 7},
		"mixed":       {mixed, 11},
		"single":      {track[:PatchSize], 1},
	}
	plainCfg := testConfig(t)
	plainCfg.PlainGraph = true
	plain := loaded(t, plainCfg)
	for _, batch := range []int{1, 8, 13, 64} {
		cfg := testConfig(t)
		cfg.BatchSize = batch
		m := loaded(t, cfg)
		if m.split == nil {
			t.Fatal("backbone not split")
		}
		for name, c := range cases {
			t.Run(fmt.Sprintf("%s/batch=%d", name, batch), func(t *testing.T) {
				want, err := plain.Predict(c.patches, c.n)
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.Predict(c.patches, c.n)
				if err != nil {
					t.Fatal(err)
				}
				if d := predDiff(t, got, want); d > 1e-5 {
					t.Fatalf("split vs plain: max abs difference %.3g > 1e-5", d)
				} else {
					t.Logf("max abs difference %.3g", d)
				}
			})
		}
	}
}

// A wrong frame in the assembly would show: two tracks that differ only in
// one frame near a patch edge get different scores for the patches holding
// that frame, and the same for the others.
func TestSplitEdgeFrameMatters(t *testing.T) {
	m := loaded(t, testConfig(t))
	a := trackPatches(4, 5)
	b := append([]float32(nil), a...)
	// Frame 2 of patch 2 (= frame 2+2·93 of the track, the 95th of patch 1).
	for _, at := range []int{2*PatchSize + 2*MelBands, 1*PatchSize + (PatchHop+2)*MelBands} {
		for k := range MelBands {
			b[at+k] += 1.5
		}
	}
	pa, err := m.Predict(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := m.Predict(b, 4)
	if err != nil {
		t.Fatal(err)
	}
	for p := range 4 {
		d := 0.0
		for j := range pa.MSD[p] {
			d = math.Max(d, math.Abs(float64(pa.MSD[p][j]-pb.MSD[p][j])))
		}
		if changed := p == 1 || p == 2; changed != (d > 0) {
			t.Errorf("patch %d: max change %.3g; want a change: %v", p, d, changed)
		}
	}
}

// A split backbone that ONNX Runtime refuses to open falls back, with a
// warning, to the backbone as exported; scores are unchanged.
func TestSplitRefusedFallsBack(t *testing.T) {
	var logs strings.Builder
	cfg := testConfig(t)
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m := New(cfg)
	m.afterRewrite = func(sp *rewrite.FrontEnd) { sp.Rest.Graph.Nodes = sp.Rest.Graph.Nodes[1:] } // a dangling value
	if err := m.Load(context.Background()); err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(m.Unload)
	if m.split != nil || m.backbone == nil || !strings.Contains(logs.String(), "running it as exported") {
		t.Fatalf("split %v, backbone %v; logs:\n%s", m.split != nil, m.backbone != nil, logs.String())
	}
	plainCfg := testConfig(t)
	plainCfg.PlainGraph = true
	plain := loaded(t, plainCfg)
	patches := trackPatches(3, 11)
	want, err := plain.Predict(patches, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Predict(patches, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d := predDiff(t, got, want); d != 0 {
		t.Fatalf("fallback differs from the plain backbone by %g", d)
	}
}
