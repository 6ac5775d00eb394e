package features

import (
	"math"
	"slices"
	"testing"
)

func TestFrameCount(t *testing.T) {
	// Counts measured with essentia.js's FrameGenerator (Essentia's
	// FrameCutter, frameSize 512, hopSize 256, defaults otherwise).
	for _, c := range []struct{ n, frames int }{
		{0, 0}, {1, 2}, {100, 2}, {255, 2}, {256, 2}, {257, 3}, {511, 3}, {512, 3},
		{513, 4}, {767, 4}, {768, 4}, {769, 5}, {1000, 5}, {1024, 5},
		{16000, 64}, {48000, 189},
	} {
		if got := FrameCount(c.n); got != c.frames {
			t.Errorf("FrameCount(%d) = %d, want %d", c.n, got, c.frames)
		}
		if got := len(NewExtractor().Frames(make([]float32, c.n))); got != c.frames {
			t.Errorf("len(Frames(%d samples)) = %d, want %d", c.n, got, c.frames)
		}
	}
}

func TestFrameStart(t *testing.T) {
	if FrameStart(0) != -256 || FrameStart(1) != 0 || FrameStart(2) != 256 {
		t.Fatalf("FrameStart 0,1,2 = %d,%d,%d; want -256,0,256", FrameStart(0), FrameStart(1), FrameStart(2))
	}
	// The last frame is the first whose centre reaches the end of the signal.
	for _, n := range []int{1, 255, 256, 257, 1000, 48000} {
		last := FrameCount(n) - 1
		centre := FrameStart(last) + FrameSize/2
		if centre < n || FrameStart(last-1)+FrameSize/2 >= n {
			t.Errorf("n=%d: last frame %d centred at %d", n, last, centre)
		}
	}
}

func TestPatchCount(t *testing.T) {
	for _, c := range []struct{ frames, patches int }{
		{0, 0}, {1, 0}, {186, 0}, {187, 1}, {279, 1}, {280, 2}, {373, 3}, {372, 2},
	} {
		if got := PatchCount(c.frames); got != c.patches {
			t.Errorf("PatchCount(%d) = %d, want %d", c.frames, got, c.patches)
		}
	}
	// 3 s at 16 kHz: 189 frames, one patch; 2.9 s: 183 frames, none.
	for _, c := range []struct{ samples, patches int }{
		{3 * SampleRate, 1}, {29 * SampleRate / 10, 0}, {30 * SampleRate, 19},
	} {
		_, n := NewExtractor().AppendPatches(nil, make([]float32, c.samples))
		if n != c.patches {
			t.Errorf("%d samples: %d patches, want %d", c.samples, n, c.patches)
		}
	}
}

func TestPatchesLayoutAndDiscard(t *testing.T) {
	// 280 frames: patches start at frames 0 and 93; frames 280-186-93 … are dropped.
	n := 279 * HopSize // FrameCount = 280
	if FrameCount(n) != 280 {
		t.Fatalf("FrameCount(%d) = %d", n, FrameCount(n))
	}
	sig := whiteNoise(n, 0.3, 5)
	e := NewExtractor()
	frames := e.Frames(sig)
	flat, np := Patches(frames)
	if np != 2 || len(flat) != 2*PatchFrames*Bands {
		t.Fatalf("Patches: n=%d len=%d", np, len(flat))
	}
	for p := 0; p < np; p++ {
		for f := 0; f < PatchFrames; f++ {
			row := flat[(p*PatchFrames+f)*Bands : (p*PatchFrames+f+1)*Bands]
			if !slices.Equal(row, frames[p*PatchHop+f]) {
				t.Fatalf("patch %d frame %d is not frame %d", p, f, p*PatchHop+f)
			}
		}
	}
	prefix := []float32{1, 2, 3}
	out, n2 := e.AppendPatches(slices.Clone(prefix), sig)
	if n2 != np || !slices.Equal(out[:3], prefix) || !slices.Equal(out[3:], flat) {
		t.Fatalf("AppendPatches differs from Patches(Frames) (n=%d)", n2)
	}
}

func TestSilenceIsZero(t *testing.T) {
	for _, k := range NewExtractor().Frames(make([]float32, 5000)) {
		for b, v := range k {
			if v != 0 {
				t.Fatalf("band %d of silence = %v, want log10(1+0) = 0", b, v)
			}
		}
	}
}

func TestReuseIsIdentical(t *testing.T) {
	a := speechLike(3*SampleRate+500, 11)
	b := tone(4*SampleRate, 0.5, 440, 660)
	e := NewExtractor()
	fa := e.Frames(a)
	pb, nb := e.AppendPatches(nil, b)
	pa, na := e.AppendPatches(nil, a)
	fresh := NewExtractor()
	fa2 := fresh.Frames(a)
	pb2, nb2 := fresh.AppendPatches(nil, b)
	flat, n := Patches(fa)
	if n != na || !slices.Equal(flat, pa) {
		t.Fatal("AppendPatches after other work differs from Patches(Frames)")
	}
	if nb != nb2 || !slices.Equal(pb, pb2) {
		t.Fatal("reused Extractor gives different patches")
	}
	for k := range fa {
		if !slices.Equal(fa[k], fa2[k]) {
			t.Fatalf("frame %d differs between Extractors", k)
		}
	}
}

func TestToneLandsInItsBand(t *testing.T) {
	// A 1 kHz tone: the strongest band is the one whose triangle peaks
	// nearest 1 kHz, and values are finite and non-negative everywhere.
	fr := NewExtractor().Frames(tone(SampleRate, 0.5, 1000))
	k := len(fr) / 2
	best := 0
	for b, v := range fr[k] {
		if math.IsNaN(float64(v)) || v < 0 {
			t.Fatalf("band %d = %v", b, v)
		}
		if v > fr[k][best] {
			best = b
		}
	}
	fb := melFilterbank()
	peak := func(b int) float64 { // centre frequency of band b
		f := fb[b]
		j := f.begin + slices.Index(f.weights, slices.Max(f.weights))
		return float64(j) * SampleRate / FrameSize
	}
	if math.Abs(peak(best)-1000) > 70 {
		t.Fatalf("1 kHz tone peaks in band %d (centre ≈ %.0f Hz)", best, peak(best))
	}
}

func TestNoAllocsPerFrame(t *testing.T) {
	e := NewExtractor()
	sig := whiteNoise(10*SampleRate, 0.5, 1)
	dst, _ := e.AppendPatches(nil, sig)
	allocs := testing.AllocsPerRun(5, func() {
		dst, _ = e.AppendPatches(dst[:0], sig)
	})
	if allocs != 0 {
		t.Fatalf("AppendPatches into a large enough dst allocates %v times", allocs)
	}
}

func BenchmarkFeatures(b *testing.B) {
	const seconds = 30
	sig := speechLike(seconds*SampleRate, 1)
	e := NewExtractor()
	var dst []float32
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		dst, _ = e.AppendPatches(dst[:0], sig)
	}
	b.ReportMetric(seconds*float64(b.N)/b.Elapsed().Seconds(), "x-realtime")
}
