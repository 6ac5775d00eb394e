package vectorindex

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/nomarr/nomarr/core/similar"
)

// shape is what TestSyntheticLooksLikeEmbeddings measures of a set of
// unit vectors: the share of negative components, the length of their
// mean, the median cosine of a pair, the share of dimensions that take
// both signs among the first 54 vectors, and the share of the variance on the first 10 and 48
// principal axes.
type shape struct {
	negative, meanLen, medianCos, mixedDims, pc10, pc48 float64
}

func measureShape(vs []similar.Vector) shape {
	n, d := len(vs), len(vs[0].V)
	var s shape
	mean := make([]float64, d)
	for _, v := range vs {
		for j, x := range v.V {
			mean[j] += float64(x) / float64(n)
			if x < 0 {
				s.negative++
			}
		}
	}
	s.negative /= float64(n * d)
	for _, x := range mean {
		s.meanLen += x * x
	}
	for j := range d { // over the first 54, the size of the real sample
		k := 0
		for _, v := range vs[:min(n, 54)] {
			if v.V[j] < 0 {
				k++
			}
		}
		if k > 0 && k < min(n, 54) {
			s.mixedDims++
		}
	}
	s.meanLen = math.Sqrt(s.meanLen)
	s.mixedDims /= float64(d)
	var cos []float64
	for i := 0; i+1 < n; i += 2 {
		cos = append(cos, float64(similar.Dot(vs[i].V, vs[i+1].V)))
	}
	slices.Sort(cos)
	s.medianCos = cos[len(cos)/2]
	data := mat.NewDense(n, d, nil)
	for i, v := range vs {
		for j, x := range v.V {
			data.Set(i, j, float64(x))
		}
	}
	var pc stat.PC
	if pc.PrincipalComponents(data, nil) {
		vars := pc.VarsTo(nil)
		var tot, cum float64
		for _, x := range vars {
			tot += x
		}
		for i, x := range vars {
			cum += x
			switch i {
			case 9:
				s.pc10 = cum / tot
			case 47:
				s.pc48 = cum / tot
			}
		}
	}
	return s
}

// TestSyntheticLooksLikeEmbeddings holds the benchmark's synthetic
// vectors to the shape of real MusiCNN track vectors (54 generated
// clips tagged with the real models: 52% negative components, mean
// length 0.78, median pair cosine 0.60, 91% of dimensions of both
// signs), and checks their variance is spread wider than the real
// sample's (10 axes hold 96% there), so an index tuned on them is not
// tuned on an easy case. The real sample's 54 clips are of nine very
// different families, more spread than 54 tracks of a Zipf-sized
// library, so fewer dimensions change sign here.
func TestSyntheticLooksLikeEmbeddings(t *testing.T) {
	l := newLibrary(9, similar.Dims, 200)
	vs := make([]similar.Vector, 4000)
	for i := range vs {
		vs[i] = l.vector()
	}
	s := measureShape(vs)
	t.Logf("negative %.2f, mean length %.2f, median cosine %.2f, mixed dims %.2f, PC10 %.2f, PC48 %.2f",
		s.negative, s.meanLen, s.medianCos, s.mixedDims, s.pc10, s.pc48)
	for _, c := range []struct {
		name      string
		got, a, b float64
	}{
		{"share of negative components", s.negative, 0.4, 0.6},
		{"length of the mean", s.meanLen, 0.7, 0.86},
		{"median cosine of a pair", s.medianCos, 0.5, 0.7},
		{"share of dimensions of both signs", s.mixedDims, 0.6, 1},
		{"variance on 10 axes", s.pc10, 0.5, 0.9},
	} {
		if c.got < c.a || c.got > c.b {
			t.Errorf("%s = %.3f, want in [%.2f, %.2f]", c.name, c.got, c.a, c.b)
		}
	}
}
