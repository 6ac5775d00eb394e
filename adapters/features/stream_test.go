package features

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// streamPatches feeds x to a Patcher in pieces of the given sizes (cycled),
// taking at most take patches after each Feed (take < 0: all), and returns
// every patch and the most frames and samples it held at once.
func streamPatches(x []float32, sizes []int, take int) (out []float32, n, heldFrames, heldSamples int) {
	p := NewPatcher(nil)
	for i, pos := 0, 0; pos < len(x); i++ {
		end := min(len(x), pos+sizes[i%len(sizes)])
		p.Feed(x[pos:end])
		pos = end
		var k int
		out, k = p.AppendReady(out, take)
		n += k
		heldFrames = max(heldFrames, len(p.frames)/Bands)
		heldSamples = max(heldSamples, len(p.samples))
	}
	p.End()
	for p.Ready() > 0 {
		var k int
		out, k = p.AppendReady(out, take)
		n += k
	}
	if n != p.Total() {
		panic("patch count differs from Total")
	}
	return out, n, heldFrames, heldSamples
}

// Patches streamed in any piece sizes are bit-identical to AppendPatches's
// over the whole signal, for lengths around every patch boundary.
func TestPatcherEqualsAppendPatches(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	oneLen := (PatchFrames-2)*HopSize + 1 // shortest signal with one patch
	lengths := []int{0, 1, 255, 256, 257, oneLen - 1, oneLen, oneLen + 1, oneLen + PatchHop*HopSize,
		oneLen + PatchHop*HopSize - 1, 5*SampleRate + 17, 31 * SampleRate}
	for _, length := range lengths {
		x := make([]float32, length)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.01)*0.5 + (r.Float64()-0.5)*0.1)
		}
		want, wn := NewExtractor().AppendPatches(nil, x)
		for _, sizes := range [][]int{{1 << 20}, {1}, {255, 257, 1000}, {4096}, {HopSize}, {48128}} {
			if length > 100000 && sizes[0] == 1 {
				continue
			}
			for _, take := range []int{-1, 1} {
				got, n, _, _ := streamPatches(x, sizes, take)
				if n != wn || !slices.Equal(got, want) {
					t.Fatalf("length %d, pieces %v, take %d: %d patches (equal %v), want %d",
						length, sizes, take, n, slices.Equal(got, want), wn)
				}
			}
		}
	}
}

// A Patcher whose ready patches are taken after each Feed holds a bounded
// number of frames and samples, whatever the signal's length.
func TestPatcherMemoryBounded(t *testing.T) {
	const piece = 8192
	x := make([]float32, 600*SampleRate)
	for i := range x {
		x[i] = float32(math.Sin(float64(i) * 0.003))
	}
	_, n, frames, samples := streamPatches(x, []int{piece}, -1)
	if n != PatchCount(FrameCount(len(x))) {
		t.Fatalf("%d patches", n)
	}
	if maxFrames := PatchFrames + piece/HopSize + 1; frames > maxFrames {
		t.Errorf("held %d frames, want at most %d", frames, maxFrames)
	}
	if samples > piece+FrameSize {
		t.Errorf("held %d samples, want at most %d", samples, piece+FrameSize)
	}
}
