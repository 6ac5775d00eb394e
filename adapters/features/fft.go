package features

import "math"

// float is the precision a powerSpectrum computes in.
type float interface{ ~float32 | ~float64 }

// powerSpectrum computes |X[j]|², j = 0…n/2, of the DFT of n real values
// (n a power of two, at least 8), with no allocation per call: an n/2-point
// complex FFT of the values taken in pairs (even indices as the real
// parts, odd as the imaginary), iterative radix-2 over precomputed
// twiddles, then the split that separates the two interleaved halves'
// spectra. It equals the textbook DFT to within T's rounding (a few ulp of
// the largest coefficient; TestPowerSpectrumMatchesDFT).
type powerSpectrum[T float] struct {
	n int
	// rev[k] is the bit reversal of k over log2(n/2) bits.
	rev []int32
	// twiddles of the n/2-point FFT's stages, each stage's contiguous: the
	// stage of size s uses stage[s/2+j] = e^{-2πij/s}, j < s/2.
	stageRe, stageIm []T
	// twiddles of the split: e^{-2πik/n}, k ≤ n/2.
	sRe, sIm []T
	re, im   []T // the n/2 complex values being transformed
}

func newPowerSpectrum[T float](n int) *powerSpectrum[T] {
	if n < 8 || n&(n-1) != 0 {
		panic("features: power spectrum size must be a power of two ≥ 8")
	}
	m := n / 2
	p := &powerSpectrum[T]{n: n, rev: make([]int32, m), re: make([]T, m), im: make([]T, m),
		stageRe: make([]T, m), stageIm: make([]T, m), sRe: make([]T, m+1), sIm: make([]T, m+1)}
	bits := 0
	for 1<<bits < m {
		bits++
	}
	for k := range p.rev {
		r := 0
		for b := range bits {
			if k&(1<<b) != 0 {
				r |= 1 << (bits - 1 - b)
			}
		}
		p.rev[k] = int32(r)
	}
	for size := 2; size <= m; size <<= 1 {
		for j := range size / 2 {
			s, c := math.Sincos(-2 * math.Pi * float64(j) / float64(size))
			p.stageRe[size/2+j], p.stageIm[size/2+j] = T(c), T(s)
		}
	}
	for k := range p.sRe {
		s, c := math.Sincos(-2 * math.Pi * float64(k) / float64(n))
		p.sRe[k], p.sIm[k] = T(c), T(s)
	}
	return p
}

// compute writes |X[j]|² for j = 0…n/2 of the DFT of x (n values) into
// power (n/2+1 values).
func (p *powerSpectrum[T]) compute(power, x []T) {
	m := p.n / 2
	re, im := p.re[:m], p.im[:m]
	x = x[:2*m]
	for k, r := range p.rev[:m] {
		re[r], im[r] = x[2*k], x[2*k+1]
	}
	// Radix-2 butterflies, decimation in time. The first two stages
	// (twiddles 1 and −i) need no multiplication: one radix-4 pass.
	for s := 0; s+4 <= m; s += 4 {
		r, i := re[s:s+4:s+4], im[s:s+4:s+4]
		ar, ai := r[0]+r[1], i[0]+i[1]
		br, bi := r[0]-r[1], i[0]-i[1]
		cr, ci := r[2]+r[3], i[2]+i[3]
		dr, di := r[2]-r[3], i[2]-i[3]
		r[0], i[0] = ar+cr, ai+ci
		r[2], i[2] = ar-cr, ai-ci
		// (dr + i·di)·(−i) = di − i·dr
		r[1], i[1] = br+di, bi-dr
		r[3], i[3] = br-di, bi+dr
	}
	for size := 8; size <= m; size <<= 1 {
		half := size / 2
		tr, ti := p.stageRe[half:size:size], p.stageIm[half:size:size]
		for start := 0; start < m; start += size {
			a, b := re[start:start+half:start+half], re[start+half:start+size:start+size]
			ai, bi := im[start:start+half:start+half], im[start+half:start+size:start+size]
			b, ai, bi = b[:len(a)], ai[:len(a)], bi[:len(a)]
			tr, ti := tr[:len(a)], ti[:len(a)]
			for j := range a {
				xr := b[j]*tr[j] - bi[j]*ti[j]
				xi := b[j]*ti[j] + bi[j]*tr[j]
				b[j], bi[j] = a[j]-xr, ai[j]-xi
				a[j], ai[j] = a[j]+xr, ai[j]+xi
			}
		}
	}
	// Split: with Z the FFT of z[k] = x[2k] + i·x[2k+1],
	// X[k] = (Z[k] + conj Z[m−k])/2 − i·e^{-2πik/n}·(Z[k] − conj Z[m−k])/2.
	power = power[:m+1]
	power[0] = (re[0] + im[0]) * (re[0] + im[0])
	power[m] = (re[0] - im[0]) * (re[0] - im[0])
	for k := 1; k < m; k++ {
		zr, zi := re[k], im[k]
		cr, ci := re[m-k], -im[m-k]
		er, ei := (zr+cr)/2, (zi+ci)/2
		dr, di := (zr-cr)/2, (zi-ci)/2
		// o = −i·d
		or, oi := di, -dr
		wr, wi := p.sRe[k], p.sIm[k]
		xr := er + wr*or - wi*oi
		xi := ei + wr*oi + wi*or
		power[k] = xr*xr + xi*xi
	}
}
