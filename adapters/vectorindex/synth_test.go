package vectorindex

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/nomarr/nomarr/core/similar"
)

const set = "0123456789ab"

// library draws synthetic track vectors shaped like MusiCNN track
// vectors (the unit mean of the patch embeddings), as measured on real
// ones (docs/decisions/similarity.md, "Synthetic vectors"):
//
//   - signed: the embeddings are not ReLU outputs, so about half the
//     components are negative and most dimensions take both signs;
//   - a strong common direction: every track shares a mean, so a random
//     pair has a cosine of about 0.6 and the unit vectors' mean has a
//     length of about 0.8;
//   - correlated dimensions: the variation around the mean has a
//     power-law spectrum (variance ∝ (1+i)^-1.5 along principal axis i)
//     on axes that are a random rotation of the coordinate axes, so no
//     coordinate is independent of the others;
//   - clustered, unevenly: tracks belong to artists, artists to genres,
//     and genres are Zipf-sized, so some neighbourhoods are crowded.
type library struct {
	r       *rand.Rand
	dims    int
	sd      []float64   // per principal axis, √variance (sums of squares to 1)
	mean    []float64   // the common direction, in rotated coordinates
	rot     [][]float64 // unit Householder vectors: the rotation is their product
	genres  [][]float64 // genre offsets, principal coordinates
	gWeight []float64   // cumulative genre weights (Zipf)
	artists [][]float64 // artist centres: mean-free, principal coordinates
}

// The variance of a track around the common mean (whose squared length
// is 1), split over the three levels: genre, artist, track. With a
// total of 0.81 two tracks of different genres have cosine 1/1.81 ≈
// 0.55, two tracks of one artist ≈ 0.92.
const (
	genreVar  = 0.45
	artistVar = 0.22
	trackVar  = 0.14
	genres    = 40
	spectrum  = 1.5 // variance ∝ (1+i)^-spectrum
	household = 6   // reflections in the random rotation
)

// newLibrary returns a library of the given number of artists.
func newLibrary(seed uint64, dims, artists int) *library {
	r := rand.New(rand.NewPCG(seed, 7))
	l := &library{r: r, dims: dims, sd: make([]float64, dims), mean: make([]float64, dims)}
	var tot float64
	for i := range dims {
		l.sd[i] = math.Pow(1+float64(i), -spectrum/2)
		tot += l.sd[i] * l.sd[i]
	}
	for i := range l.sd {
		l.sd[i] /= math.Sqrt(tot)
	}
	for j := range l.mean {
		l.mean[j] = r.NormFloat64() / math.Sqrt(float64(dims))
	}
	for range household {
		u := make([]float64, dims)
		var n float64
		for j := range u {
			u[j] = r.NormFloat64()
			n += u[j] * u[j]
		}
		for j := range u {
			u[j] /= math.Sqrt(n)
		}
		l.rot = append(l.rot, u)
	}
	var cum float64
	for g := range genres {
		l.genres = append(l.genres, l.draw(genreVar))
		cum += 1 / float64(g+1)
		l.gWeight = append(l.gWeight, cum)
	}
	for range max(artists, 1) {
		g := l.genre()
		a := l.draw(artistVar)
		for j := range a {
			a[j] += l.genres[g][j]
		}
		l.artists = append(l.artists, a)
	}
	return l
}

// draw returns a Gaussian offset of total variance v along the spectrum.
func (l *library) draw(v float64) []float64 {
	out := make([]float64, l.dims)
	s := math.Sqrt(v)
	for i := range out {
		out[i] = s * l.sd[i] * l.r.NormFloat64()
	}
	return out
}

// genre picks a genre with Zipf weights.
func (l *library) genre() int {
	x := l.r.Float64() * l.gWeight[len(l.gWeight)-1]
	for g, w := range l.gWeight {
		if x < w {
			return g
		}
	}
	return len(l.gWeight) - 1
}

// vector draws one track vector of a random artist.
func (l *library) vector() similar.Vector {
	a := l.artists[l.r.IntN(len(l.artists))]
	t := l.draw(trackVar)
	for i := range t {
		t[i] += a[i]
	}
	for _, u := range l.rot { // t ← (I − 2uuᵀ)t
		var d float64
		for j, x := range t {
			d += u[j] * x
		}
		for j := range t {
			t[j] -= 2 * d * u[j]
		}
	}
	v := make([]float32, l.dims)
	for j := range v {
		v[j] = float32(l.mean[j] + t[j])
	}
	u, err := similar.NewVector(set, v)
	if err != nil { // a zero draw has probability 0
		panic(err)
	}
	return u
}

// items draws n keyed vectors.
func (l *library) items(n int) []similar.Item {
	out := make([]similar.Item, n)
	for i := range out {
		out[i] = similar.Item{Key: fmt.Sprintf("t%07d", i), Vec: l.vector()}
	}
	return out
}

// recall is the share of the exact top k found in got.
func recall(got, exact []similar.Hit) float64 {
	if len(exact) == 0 {
		return 1
	}
	in := map[string]bool{}
	for _, h := range got {
		in[h.Key] = true
	}
	n := 0
	for _, h := range exact {
		if in[h.Key] {
			n++
		}
	}
	return float64(n) / float64(len(exact))
}
