//go:build cgo

package gpu

import (
	"fmt"
	"path/filepath"
	"slices"

	ort "github.com/yalue/onnxruntime_go"
)

// frontGroup is the most patches whose shared frames one front-end Run
// covers: 8 patches are 838 frames (≈ 40 MB of feature maps on the CPU).
const frontGroup = 8

// split runs the backbone as two sessions (rewrite.go): the front end once
// over the frames of consecutive patches, the rest once per batch.
//
// Invariant: for every patch, the cut tensors handed to the rest session are
// what the whole backbone computes for that patch alone — frame t of patch p
// is read from the Run over the shared frames when all frames within reach
// of t belong to p, and from a Run over the patch's own first or last
// 2·reach frames (zero-padded like the patch) otherwise.
type split struct {
	sp          *frontEnd
	names       *session // the backbone's input and outputs (s unset)
	front, rest *ort.DynamicAdvancedSession
	// Reused Go memory of the front-end Runs.
	win, edges      []float32
	winOut, edgeOut [][]float32
}

// openBackbone checks the backbone file and opens it: as front end + rest
// when the rewrite finds the front end (unless Config.PlainGraph), else
// whole (rewritten when possible).
func (m *Models) openBackbone(opts *ort.SessionOptions) error {
	name, dir := BackboneFile, m.cfg.ModelsDir
	data := m.blobs[0]
	names, err := inspect(data, name, dir, []int64{-1, PatchFrames, MelBands}, [][]int64{{-1, MSDClasses}, {-1, EmbeddingSize}})
	if err != nil {
		return err
	}
	if !m.cfg.PlainGraph {
		whole, sp, err := rewriteBackbone(data)
		switch {
		case err != nil:
			m.cfg.Logger.Warn("gpu: backbone rewrite failed; running it as exported", "err", err)
		case sp != nil && sp.reach*2 <= PatchHop:
			s, err := openSplit(sp, names, opts)
			if err != nil {
				return fmt.Errorf("gpu: open session for %s: %w", filepath.Join(dir, name), err)
			}
			m.split = s
			return nil
		default:
			data = whole
		}
	}
	names.s, err = ort.NewDynamicAdvancedSessionWithONNXData(data, []string{names.input}, names.outputs, opts)
	if err != nil {
		// Not ErrModelInvalid: on CUDA this is where a broken provider shows.
		return fmt.Errorf("gpu: open session for %s: %w", filepath.Join(dir, name), err)
	}
	m.backbone = names
	return nil
}

func openSplit(sp *frontEnd, names *session, opts *ort.SessionOptions) (*split, error) {
	s := &split{sp: sp, names: names}
	var err error
	s.front, err = newFront(sp, opts)
	if err != nil {
		return nil, fmt.Errorf("front end: %w", err)
	}
	s.rest, err = ort.NewDynamicAdvancedSessionWithONNXData(sp.rest.Marshal(),
		append([]string{sp.restInput}, sp.outputs...), names.outputs, opts)
	if err != nil {
		s.destroy()
		return nil, fmt.Errorf("rest of the backbone: %w", err)
	}
	s.winOut = make([][]float32, len(sp.outputs))
	s.edgeOut = make([][]float32, len(sp.outputs))
	return s, nil
}

func newFront(sp *frontEnd, opts *ort.SessionOptions) (*ort.DynamicAdvancedSession, error) {
	return ort.NewDynamicAdvancedSessionWithONNXData(sp.front.Marshal(), []string{sp.frontInput}, sp.outputs, opts)
}

func (s *split) destroy() {
	if s == nil {
		return
	}
	if s.front != nil {
		s.front.Destroy()
	}
	if s.rest != nil {
		s.rest.Destroy()
	}
}

// overlaps reports whether patch b continues patch a (b starts PatchHop
// frames after a, so they share PatchFrames−PatchHop frames).
func overlaps(a, b []float32) bool {
	return slices.Equal(a[PatchHop*MelBands:], b[:(PatchFrames-PatchHop)*MelBands])
}

// runSplit runs the batch b (patches already in b.in) through the front end,
// group by group of consecutive patches, then through the rest.
func (m *Models) runSplit(b *batch) error {
	in := b.in.GetData()
	patch := func(p int) []float32 { return in[p*PatchSize : (p+1)*PatchSize] }
	for p := 0; p < b.k; {
		g := 1
		for g < frontGroup && p+g < b.k && overlaps(patch(p+g-1), patch(p+g)) {
			g++
		}
		if err := m.frontGroup(b, p, g); err != nil {
			return fmt.Errorf("front end: %w", err)
		}
		p += g
	}
	return m.runValues(m.split.rest, append([]*ort.Tensor[float32]{b.in}, b.cuts...), []*ort.Tensor[float32]{b.msd, b.emb})
}

// frontGroup computes the cut tensors of the g consecutive patches p…p+g−1
// of b.
func (m *Models) frontGroup(b *batch, p, g int) error {
	s := m.split
	sp := s.sp
	r := sp.reach
	in := b.in.GetData()

	// The group's frames: patch p, then the last PatchHop frames of each
	// following patch.
	w := PatchHop*(g-1) + PatchFrames
	s.win = slices.Grow(s.win[:0], w*MelBands)[:w*MelBands]
	copy(s.win, in[p*PatchSize:(p+1)*PatchSize])
	for j := 1; j < g; j++ {
		src := in[(p+j)*PatchSize:]
		copy(s.win[(PatchFrames+PatchHop*(j-1))*MelBands:(PatchFrames+PatchHop*j)*MelBands],
			src[(PatchFrames-PatchHop)*MelBands:PatchSize])
	}
	if err := s.runFront(m, s.win, 1, w, s.winOut); err != nil {
		return err
	}

	// The patches' inner edges: the first 2r frames of patches p+1… and the
	// last 2r frames of patches …p+g−2, each window zero-padded as its patch.
	e := 2 * (g - 1)
	if e > 0 {
		span := 2 * r
		s.edges = slices.Grow(s.edges[:0], e*span*MelBands)[:e*span*MelBands]
		for j := 0; j < g-1; j++ {
			end := in[(p+j)*PatchSize:]
			start := in[(p+j+1)*PatchSize:]
			copy(s.edges[(2*j)*span*MelBands:], end[(PatchFrames-span)*MelBands:PatchSize])
			copy(s.edges[(2*j+1)*span*MelBands:], start[:span*MelBands])
		}
		if err := s.runFront(m, s.edges, e, span, s.edgeOut); err != nil {
			return err
		}
	}

	// Assemble [patch][channel][frame] for the rest.
	for i, c := range sp.channels {
		cut := b.cuts[i].GetData()
		span := 2 * r
		for j := range g {
			for ch := range int(c) {
				dst := cut[((p+j)*int(c)+ch)*PatchFrames:][:PatchFrames]
				copy(dst, s.winOut[i][ch*w+PatchHop*j:][:PatchFrames])
				if j > 0 { // first r frames from patch j's start window
					win := 2*(j-1) + 1
					copy(dst[:r], s.edgeOut[i][(win*int(c)+ch)*span:][:r])
				}
				if j < g-1 { // last r frames from patch j's end window
					win := 2 * j
					copy(dst[PatchFrames-r:], s.edgeOut[i][(win*int(c)+ch)*span+r:][:r])
				}
			}
		}
	}
	return nil
}

// runFront runs the front end over n windows of t frames held in frames,
// into outs[i] ([n][channels[i]][t], grown as needed).
func (s *split) runFront(m *Models, frames []float32, n, t int, outs [][]float32) error {
	in, err := ort.NewTensor(ort.NewShape(int64(n), int64(t), MelBands), frames[:n*t*MelBands])
	if err != nil {
		return err
	}
	defer in.Destroy()
	tensors := make([]*ort.Tensor[float32], len(outs))
	defer func() {
		for _, x := range tensors {
			if x != nil {
				x.Destroy()
			}
		}
	}()
	for i, c := range s.sp.channels {
		size := n * int(c) * t
		outs[i] = slices.Grow(outs[i][:0], size)[:size]
		if tensors[i], err = ort.NewTensor(ort.NewShape(int64(n), c, int64(t)), outs[i]); err != nil {
			return err
		}
	}
	return m.runValues(s.front, []*ort.Tensor[float32]{in}, tensors)
}
