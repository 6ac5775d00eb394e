// Package features computes the input features of Essentia's MusiCNN models
// in pure Go: the log-compressed mel bands of TensorflowInputMusiCNN for every
// frame that Essentia's FrameCutter cuts from a 16 kHz mono signal, and the
// patches TensorflowPredictMusiCNN feeds to the network (docs/design.md §9 item 2).
//
// The numbers match Essentia (as shipped in essentia.js 0.1.3, Essentia
// 2.1-beta6-dev) within 1e-4 per value; oracle_test.go checks that against
// essentia.js itself. The Essentia pipeline reproduced here, read from the
// Essentia sources:
//
//   - tensorflowpredictmusicnn.cpp (streaming TensorflowPredictMusiCNN):
//     FrameCutter configured with frameSize 512, hopSize 256 only, so
//     startFromZero=false, validFrameThresholdRatio=0,
//     lastFrameToEndOfFile=false (framecutter.h defaults). The first frame
//     starts at -(512+1)/2 = -256 (centred on sample 0, left half zero), frames
//     advance by 256 and the last frame is the first one whose centre is at or
//     past the end of the signal, zero-padded on the right: ceil(N/256)+1
//     frames for N > 0 samples. tensorflowpredictmusicnn.h: patchSize 187,
//     patchHopSize 93, lastPatchMode "discard" (vectorrealtotensor.cpp: a
//     patch every 93 frames from frame 0, a trailing incomplete patch is
//     dropped).
//   - tensorflowinputmusicnn.cpp: Windowing(normalized=false), otherwise
//     defaults: type "hann" (0.5-0.5cos(2πi/(N-1)), windowing.cpp), zeroPhase
//     true, zeroPadding 0; Spectrum(size 512) magnitude; MelBands(inputSize
//     257, numberBands 96, sampleRate 16000, lowFrequencyBound 0 (default),
//     highFrequencyBound 8000, warpingFormula "slaneyMel", weighting "linear",
//     normalize "unit_tri", type "power" (default), log false (default));
//     UnaryOperator(shift 1, scale 10000) then UnaryOperator(type "log10"):
//     bands = log10(1 + 10000·mel).
//   - melbands.cpp / triangularbands.cpp / essentiamath.h: band edges are
//     mel2hzSlaney of 98 points spaced linearly in Slaney mel from
//     hz2melSlaney(0) to hz2melSlaney(8000) (accumulated in float32, as
//     Essentia's Real is); band i covers FFT bins ceil(f[i]/31.25) ..
//     floor(f[i+2]/31.25) with triangular weights in linear Hz, divided by the
//     triangle's area (f[i+2]-f[i])/2; each band sums |X[j]|²·weight.
//
// zeroPhase rotates the windowed frame by half its length, which multiplies
// bin j of the DFT by (-1)^j and leaves the magnitudes unchanged, so it is not
// performed here. Essentia's streaming FrameCutter (silentFrames="noise")
// also adds -100 dB noise (amplitude 1e-5) to frames whose mean power is
// below 1e-10; by estimate (mel power ≈ 2e-10) that raises such frames' bands
// from 0 to about 1e-6, far inside the tolerance, and it is not reproduced: an
// all-zero frame gives all-zero bands here. (essentia.js's FrameGenerator
// instead drops silent frames; see test/oracle/musicnn.js.)
//
// The power spectrum comes from a real FFT of its own (fft.go), about four
// times as fast as gonum's FFTPACK port on these 512-sample frames.
//
// Computation is in float64 except for the filterbank's construction, which
// follows Essentia's float32 arithmetic operation by operation: the band edges
// are accumulated in float32 as Essentia does (computing them in float64 moves
// some filter weights by up to 1.6%). The resulting filterbank equals the one
// essentia.js computes to within 1 float32 ulp in 5 of the 98 band edges
// (edges 33, 35, 41, 85, 88; with those moved by 1 ulp it is bit-identical),
// most likely the rounding of the float32 expf in essentia.js's libm, which is
// not reproduced; it costs at most ~3e-5 in a band value.
package features

import "math"

// Feature geometry, fixed by the MusiCNN models' training setup.
const (
	SampleRate  = 16000 // input sample rate, Hz
	Bands       = 96    // mel bands per frame
	FrameSize   = 512   // samples per frame
	HopSize     = 256   // samples between frame starts
	PatchFrames = 187   // frames per patch
	PatchHop    = 93    // frames between patch starts
)

const (
	spectrumSize = FrameSize/2 + 1
	// firstFrameStart is FrameCutter's initial _startIndex with
	// startFromZero=false: -(frameSize+1)/2 in C++ integer arithmetic.
	firstFrameStart = -((FrameSize + 1) / 2)
	// patchLen is the number of float32 values in one patch.
	patchLen = PatchFrames * Bands
)

// FrameCount returns how many frames Essentia's FrameCutter cuts from a signal
// of n samples: ceil(n/HopSize)+1 for n > 0, and 0 for an empty signal.
func FrameCount(n int) int {
	if n <= 0 {
		return 0
	}
	return (n+HopSize-1)/HopSize + 1
}

// PatchCount returns how many complete patches of PatchFrames frames, one
// every PatchHop frames, fit in frames frames; an incomplete last patch is
// discarded.
func PatchCount(frames int) int {
	if frames < PatchFrames {
		return 0
	}
	return (frames-PatchFrames)/PatchHop + 1
}

// FrameStart returns the index of the first sample of frame k; it is negative
// for the first frame, whose left half is zero padding.
func FrameStart(k int) int { return firstFrameStart + k*HopSize }

// melFilter is one triangular band: weights for spectrum bins begin,
// begin+1, …, begin+len(weights)-1.
type melFilter[T float] struct {
	begin   int
	weights []T
}

// Extractor computes MusiCNN features. It holds the window, the mel
// filterbank, the FFT plan and scratch buffers, so a reused Extractor does
// not allocate per frame. An Extractor is not safe for concurrent use; give
// each goroutine its own.
type Extractor struct {
	bands   *bandMaker[float64]
	scratch []float32 // frames for AppendPatches
}

// bandMaker computes one frame's bands in precision T: the window, the
// power spectrum and the mel sums in T, the log in float64. The Extractor
// computes in float64 (see BenchmarkFramePrecision for float32).
type bandMaker[T float] struct {
	window  [FrameSize]T
	filters [Bands]melFilter[T]
	spec    *powerSpectrum[T]
	buf     [FrameSize]T
	power   [spectrumSize]T
}

// NewExtractor returns an Extractor ready for use.
func NewExtractor() *Extractor {
	return &Extractor{bands: newBandMaker[float64]()}
}

func newBandMaker[T float]() *bandMaker[T] {
	b := &bandMaker[T]{spec: newPowerSpectrum[T](FrameSize)}
	// Windowing::hann computes in double and stores Real (float32).
	for i := range b.window {
		b.window[i] = T(float32(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/(FrameSize-1.0))))
	}
	for i, f := range melFilterbank() {
		w := make([]T, len(f.weights))
		for j, x := range f.weights {
			w[j] = T(x)
		}
		b.filters[i] = melFilter[T]{begin: f.begin, weights: w}
	}
	return b
}

// Frames returns the log-compressed mel bands of every frame of samples
// (16 kHz mono): FrameCount(len(samples)) rows of Bands values, sharing one
// backing array.
func (e *Extractor) Frames(samples []float32) [][]float32 {
	n := FrameCount(len(samples))
	flat := make([]float32, n*Bands)
	e.computeFrames(flat, samples, n)
	out := make([][]float32, n)
	for k := range out {
		out[k] = flat[k*Bands : (k+1)*Bands : (k+1)*Bands]
	}
	return out
}

// AppendPatches computes the patches of samples (16 kHz mono) and appends
// them to dst as n×PatchFrames×Bands float32 values, row-major (patch, frame,
// band): the [n,187,96] input of the MusiCNN ONNX model. n is 0 when the
// signal is shorter than one patch (about 2.97 s).
func (e *Extractor) AppendPatches(dst []float32, samples []float32) (out []float32, n int) {
	frames := FrameCount(len(samples))
	n = PatchCount(frames)
	if n == 0 {
		return dst, 0
	}
	// Frames after the last complete patch are discarded: skip them.
	used := (n-1)*PatchHop + PatchFrames
	if cap(e.scratch) < used*Bands {
		e.scratch = make([]float32, used*Bands)
	}
	flat := e.scratch[:used*Bands]
	e.computeFrames(flat, samples, used)
	return appendPatches(dst, flat, n), n
}

// Patches assembles frames (as returned by Frames) into patches: n
// complete patches, flat n×PatchFrames×Bands row-major. It panics if a frame
// does not have Bands values.
func Patches(frames [][]float32) (flat []float32, n int) {
	n = PatchCount(len(frames))
	flat = make([]float32, 0, n*patchLen)
	for p := 0; p < n; p++ {
		for _, f := range frames[p*PatchHop : p*PatchHop+PatchFrames] {
			if len(f) != Bands {
				panic("features: frame does not have 96 bands")
			}
			flat = append(flat, f...)
		}
	}
	return flat, n
}

// appendPatches appends n patches of the contiguous frames in flat to dst.
func appendPatches(dst, flat []float32, n int) []float32 {
	need := len(dst) + n*patchLen
	if cap(dst) < need {
		grown := make([]float32, len(dst), need)
		copy(grown, dst)
		dst = grown
	}
	for p := 0; p < n; p++ {
		start := p * PatchHop * Bands
		dst = append(dst, flat[start:start+patchLen]...)
	}
	return dst
}

// computeFrames writes the bands of frames 0..count-1 of samples into flat.
func (e *Extractor) computeFrames(flat []float32, samples []float32, count int) {
	for k := 0; k < count; k++ {
		e.frameBands(flat[k*Bands:(k+1)*Bands], samples, FrameStart(k))
	}
}

// frameBands computes one frame, the FrameSize samples from start (zero
// outside samples), into out.
func (e *Extractor) frameBands(out []float32, samples []float32, start int) {
	e.bands.frame(out, samples, start)
}

// frame computes the bands of the FrameSize samples from start (zero
// outside samples) into out.
func (m *bandMaker[T]) frame(out []float32, samples []float32, start int) {
	buf := &m.buf
	w := &m.window
	if start >= 0 && start+FrameSize <= len(samples) {
		s := samples[start : start+FrameSize]
		for i := range buf {
			buf[i] = w[i] * T(s[i])
		}
	} else {
		for i := range buf {
			j := start + i
			if j >= 0 && j < len(samples) {
				buf[i] = w[i] * T(samples[j])
			} else {
				buf[i] = 0
			}
		}
	}
	p := &m.power
	m.spec.compute(p[:], buf[:])
	for b := range m.filters {
		f := &m.filters[b]
		bins := p[f.begin : f.begin+len(f.weights)]
		var sum T
		for j, wt := range f.weights {
			sum += bins[j] * wt
		}
		out[b] = float32(math.Log10(1 + 10000*float64(sum)))
	}
}

// Slaney mel scale, essentiamath.h hz2melSlaney / mel2hzSlaney, in Essentia's
// float32 Real arithmetic.
var (
	minLogHz  float32 = 1000
	linSlope          = float32(3 / 200.)
	minLogMel         = minLogHz * linSlope
	logStep           = float32(math.Log(6.4) / 27.0)
)

func hz2melSlaney(hz float32) float32 {
	if hz < minLogHz {
		return hz * linSlope
	}
	return minLogMel + float32(math.Log(float64(hz/minLogHz)))/logStep
}

func mel2hzSlaney(mel float32) float32 {
	if mel < minLogMel {
		return mel / linSlope
	}
	return minLogHz * float32(math.Exp(float64(float32((mel-minLogMel)*logStep))))
}

// melFilterbank builds the filters of MelBands(numberBands 96, sampleRate
// 16000, lowFrequencyBound 0, highFrequencyBound 8000, slaneyMel, linear
// weighting, unit_tri) for a 257-bin spectrum, following
// MelBands::calculateFilterFrequencies and TriangularBands::createFilters
// operation by operation in float32.
func melFilterbank() [Bands]melFilter[float64] {
	var freqs [Bands + 2]float32
	low := hz2melSlaney(0)
	high := hz2melSlaney(SampleRate / 2)
	inc := (high - low) / float32(Bands+1)
	mel := low
	for i := range freqs {
		freqs[i] = mel2hzSlaney(mel)
		mel += inc
	}

	// frequencyScale = (sampleRate / 2.0) / (spectrumSize - 1), stored as Real.
	scale := float32(float64(SampleRate) / 2.0 / float64(spectrumSize-1))
	var filters [Bands]melFilter[float64]
	for i := range filters {
		fstep1 := freqs[i+1] - freqs[i]
		fstep2 := freqs[i+2] - freqs[i+1]
		jbegin := int(math.Ceil(float64(freqs[i] / scale)))
		jend := int(math.Floor(float64(freqs[i+2] / scale)))
		if jend >= spectrumSize {
			jend = spectrumSize - 1 // cannot happen for 8000 Hz; Essentia throws
		}
		w32 := make([]float32, jend-jbegin+1)
		for j := jbegin; j <= jend; j++ {
			binfreq := float32(j) * scale
			var c float32
			if binfreq < freqs[i+1] {
				c = (binfreq - freqs[i]) / fstep1
			} else {
				c = (freqs[i+2] - binfreq) / fstep2
			}
			w32[j-jbegin] = c
		}
		// unit_tri: divide by the triangle's theoretical area.
		weight := float32(float64(fstep1+fstep2) / 2.)
		ws := make([]float64, len(w32))
		for j, c := range w32 {
			ws[j] = float64(c / weight)
		}
		filters[i] = melFilter[float64]{begin: jbegin, weights: ws}
	}
	return filters
}
