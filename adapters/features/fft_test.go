package features

import (
	"math"
	"math/rand/v2"
	"testing"
)

// dftPower is |X[j]|², j = 0…n/2, of x by the definition, in float64 with
// the angles reduced exactly (k·j mod n).
func dftPower(x []float64) []float64 {
	n := len(x)
	out := make([]float64, n/2+1)
	for j := range out {
		var re, im float64
		for k, v := range x {
			s, c := math.Sincos(-2 * math.Pi * float64(k*j%n) / float64(n))
			re += v * c
			im += v * s
		}
		out[j] = re*re + im*im
	}
	return out
}

func TestPowerSpectrumMatchesDFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{8, 16, 64, FrameSize} {
		p64, p32 := newPowerSpectrum[float64](n), newPowerSpectrum[float32](n)
		for trial := range 20 {
			x := make([]float64, n)
			x32 := make([]float32, n)
			for i := range x {
				if trial == 0 {
					x[i] = math.Cos(2 * math.Pi * 3 * float64(i) / float64(n)) // one bin
				} else {
					x[i] = rng.Float64()*2 - 1
				}
				x32[i] = float32(x[i])
			}
			want := dftPower(x)
			got := make([]float64, n/2+1)
			p64.compute(got, x)
			got32 := make([]float32, n/2+1)
			p32.compute(got32, x32)
			peak := 0.0
			for _, v := range want {
				peak = max(peak, v)
			}
			for j := range want {
				if d := math.Abs(got[j] - want[j]); d > 1e-12*peak {
					t.Fatalf("n=%d trial %d bin %d: float64 %v, DFT %v", n, trial, j, got[j], want[j])
				}
				if d := math.Abs(float64(got32[j]) - want[j]); d > 1e-5*peak {
					t.Fatalf("n=%d trial %d bin %d: float32 %v, DFT %v", n, trial, j, got32[j], want[j])
				}
			}
		}
	}
}

// BenchmarkFramePrecision computes the bands of one frame in float64 (as
// the Extractor does) and in float32: the speed float32 would buy.
func BenchmarkFramePrecision(b *testing.B) {
	sig := speechLike(SampleRate, 1)
	out := make([]float32, Bands)
	b.Run("float64", func(b *testing.B) {
		m := newBandMaker[float64]()
		for i := 0; b.Loop(); i++ {
			m.frame(out, sig, (i%60)*HopSize)
		}
	})
	b.Run("float32", func(b *testing.B) {
		m := newBandMaker[float32]()
		for i := 0; b.Loop(); i++ {
			m.frame(out, sig, (i%60)*HopSize)
		}
	})
}
