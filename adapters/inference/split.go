//go:build cgo

package inference

import (
	"fmt"
	"path/filepath"
	"slices"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
	"github.com/nomarr/nomarr/adapters/onnx/rewrite"
)

// split runs the backbone as two sessions (rewrite.FrontEnd): the front end over
// the frames of each run of consecutive overlapping patches, once per frame,
// and the rest once per batch of patches.
//
// Invariant: for every patch, the cut tensors handed to the rest session are
// what the whole backbone computes for that patch alone. Frame t of patch p
// comes from the Run over its run's frames when every frame within reach of
// t belongs to p or the window reaches the run's own edge (zero-padded as
// the patch is), and from a Run over the patch's own first or last
// 2·reach frames (zero-padded like the patch) otherwise.
type split struct {
	sp    *rewrite.FrontEnd
	names *session // the backbone's input and outputs (s unset)
	front *ort.DynamicAdvancedSession
	rest  *ort.DynamicAdvancedSession
	// startEdge, endEdge: the front end padded on one side (rewrite.FrontEnd).
	startEdge, endEdge *ort.DynamicAdvancedSession

	// Per Predict call: patches and whether each continues the previous.
	patches []float32
	cont    []bool
	// The front end's output over frames [lo, hi) of the current run (frame
	// 0 = the first frame of patch runStart), channel-major per cut tensor:
	// held[i][c*stride + f-lo].
	runStart, runLen int
	lo, hi, stride   int
	held             [][]float32
	// Reused Go memory of the front-end Runs.
	win, starts, ends        []float32
	winOut, startOut, endOut [][]float32
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
		// A rewritten graph that ONNX Runtime refuses falls back to the
		// graph as exported (whose failure, on CUDA, is the provider's).
		steps := m.steps
		steps.Frames, steps.Bands = PatchFrames, MelBands
		whole, sp, err := rewrite.Backbone(data, steps)
		switch {
		case err != nil:
			m.cfg.Logger.Warn("inference: backbone rewrite failed; running it as exported", "err", err)
		case sp != nil && sp.Reach*2 <= PatchHop:
			if m.afterRewrite != nil {
				m.afterRewrite(sp)
			}
			s, err := openSplit(sp, names, opts)
			if err == nil {
				m.split = s
				return nil
			}
			m.cfg.Logger.Warn("inference: the split backbone does not open; running it as exported", "err", err)
		default:
			if names.s, err = ort.NewDynamicAdvancedSessionWithONNXData(whole.Marshal(), []string{names.input}, names.outputs, opts); err == nil {
				m.backbone = names
				return nil
			}
			m.cfg.Logger.Warn("inference: the rewritten backbone does not open; running it as exported", "err", err)
		}
	}
	names.s, err = ort.NewDynamicAdvancedSessionWithONNXData(data, []string{names.input}, names.outputs, opts)
	if err != nil {
		// Not ErrModelInvalid: on CUDA this is where a broken provider shows.
		return fmt.Errorf("inference: open session for %s: %w", filepath.Join(dir, name), err)
	}
	m.backbone = names
	return nil
}

func openSplit(sp *rewrite.FrontEnd, names *session, opts *ort.SessionOptions) (*split, error) {
	s := &split{sp: sp, names: names}
	var err error
	for _, f := range []struct {
		dst   **ort.DynamicAdvancedSession
		model *graph.Model
	}{{&s.front, sp.Front}, {&s.startEdge, sp.StartEdge}, {&s.endEdge, sp.EndEdge}} {
		if *f.dst, err = openFront(sp, f.model, opts); err != nil {
			s.destroy()
			return nil, fmt.Errorf("front end: %w", err)
		}
	}
	s.rest, err = ort.NewDynamicAdvancedSessionWithONNXData(sp.Rest.Marshal(),
		append([]string{sp.RestInput}, sp.Outputs...), names.outputs, opts)
	if err != nil {
		s.destroy()
		return nil, fmt.Errorf("rest of the backbone: %w", err)
	}
	s.winOut = make([][]float32, len(sp.Outputs))
	s.startOut = make([][]float32, len(sp.Outputs))
	s.endOut = make([][]float32, len(sp.Outputs))
	s.held = make([][]float32, len(sp.Outputs))
	return s, nil
}

// openFront opens a session over one of the front-end graphs of sp.
func openFront(sp *rewrite.FrontEnd, model *graph.Model, opts *ort.SessionOptions) (*ort.DynamicAdvancedSession, error) {
	return ort.NewDynamicAdvancedSessionWithONNXData(model.Marshal(), []string{sp.FrontInput}, sp.Outputs, opts)
}

func (s *split) destroy() {
	if s == nil {
		return
	}
	for _, x := range []*ort.DynamicAdvancedSession{s.front, s.startEdge, s.endEdge, s.rest} {
		if x != nil {
			x.Destroy()
		}
	}
}

// overlaps reports whether patch b continues patch a (b starts PatchHop
// frames after a, so they share PatchFrames−PatchHop frames).
func overlaps(a, b []float32) bool {
	return slices.Equal(a[PatchHop*MelBands:], b[:(PatchFrames-PatchHop)*MelBands])
}

// begin prepares a Predict call over n patches: which patch continues the
// previous one, and no run held.
func (s *split) begin(patches []float32, n int) {
	s.patches = patches
	s.cont = slices.Grow(s.cont[:0], n)[:n]
	for p := range n {
		s.cont[p] = p > 0 && overlaps(s.patch(p-1), s.patch(p))
	}
	s.runStart, s.runLen, s.lo, s.hi = -1, 0, 0, 0
}

// end lets go of the call's patches.
func (s *split) end() { s.patches = nil }

func (s *split) patch(p int) []float32 { return s.patches[p*PatchSize : (p+1)*PatchSize] }

// runFrames is the number of frames of a run of m patches.
func runFrames(m int) int { return PatchHop*(m-1) + PatchFrames }

// frame returns frame f of the current run.
func (s *split) frame(f int) []float32 {
	q := min(f/PatchHop, s.runLen-1)
	row := f - q*PatchHop
	return s.patch(s.runStart + q)[row*MelBands : (row+1)*MelBands]
}

// runSplit runs patches start…start+b.k−1 (already in b.in) through the
// front end and the rest.
func (m *Models) runSplit(b *batch, start int) error {
	s := m.split
	// The first patch of each run in the batch starts the run; frames of the
	// run are computed as far as the batch's last patch of that run needs.
	for j := 0; j < b.k; {
		p := start + j
		if !s.cont[p] || s.runStart < 0 {
			s.startRun(p)
		}
		last := j
		for last+1 < b.k && s.cont[start+last+1] {
			last++
		}
		if err := m.advance(runFrames(start + last - s.runStart + 1)); err != nil {
			return fmt.Errorf("front end: %w", err)
		}
		if err := m.cut(b, start, j, last); err != nil {
			return fmt.Errorf("front end: %w", err)
		}
		// Frames before the next patch's are not needed again.
		if next := start + last + 1; next < len(s.cont) && s.cont[next] {
			s.drop(PatchHop * (next - s.runStart))
		}
		j = last + 1
	}
	return m.runValues(s.rest, append([]*ort.Tensor[float32]{b.in}, b.cuts...), []*ort.Tensor[float32]{b.msd, b.emb})
}

// startRun makes patch p the first of the current run.
func (s *split) startRun(p int) {
	m := 1
	for p+m < len(s.cont) && s.cont[p+m] {
		m++
	}
	s.runStart, s.runLen, s.lo, s.hi = p, m, 0, 0
}

// drop forgets the held frames before lo.
func (s *split) drop(lo int) {
	if lo <= s.lo {
		return
	}
	keep := s.hi - lo
	for i, c := range s.sp.Channels {
		for ch := range int(c) {
			row := s.held[i][ch*s.stride:]
			copy(row[:keep], row[lo-s.lo:s.hi-s.lo])
		}
	}
	s.lo = lo
}

// advance computes the front end's output for the run's frames up to hi
// (exclusive), one Run over the new frames and the reach of context on
// either side that exists in the run.
func (m *Models) advance(hi int) error {
	s := m.split
	if hi <= s.hi {
		return nil
	}
	r, total := s.sp.Reach, runFrames(s.runLen)
	from, to := max(0, s.hi-r), min(total, hi+r)
	w := to - from
	s.win = slices.Grow(s.win[:0], w*MelBands)[:0]
	for f := from; f < to; f++ {
		s.win = append(s.win, s.frame(f)...)
	}
	if err := s.runFront(m, s.front, s.win, 1, w, w, s.winOut); err != nil {
		return err
	}
	// Grow the held rows to hold [lo, hi).
	if need := hi - s.lo; need > s.stride {
		stride := max(need, 2*s.stride)
		for i, c := range s.sp.Channels {
			grown := make([]float32, int(c)*stride)
			for ch := range int(c) {
				copy(grown[ch*stride:], s.held[i][ch*s.stride:ch*s.stride+s.hi-s.lo])
			}
			s.held[i] = grown
		}
		s.stride = stride
	}
	for i, c := range s.sp.Channels {
		for ch := range int(c) {
			copy(s.held[i][ch*s.stride+s.hi-s.lo:ch*s.stride+hi-s.lo], s.winOut[i][ch*w+s.hi-from:ch*w+hi-from])
		}
	}
	s.hi = hi
	return nil
}

// cut fills b's cut tensors for batch positions j…last (patches start+j…,
// all of the current run, whose frames are held): the held frames, and for
// a patch that is not the first of its run its first reach frames, for one
// that is not the last its last reach frames, from the one-side-padded
// front end over the patch's own first or last 2·reach frames.
func (m *Models) cut(b *batch, start, j, last int) error {
	s := m.split
	r := s.sp.Reach
	span := 2 * r
	var starts, ends []int // batch positions
	s.starts, s.ends = s.starts[:0], s.ends[:0]
	for pos := j; pos <= last; pos++ {
		q := start + pos - s.runStart
		patch := s.patch(start + pos)
		if q > 0 {
			starts = append(starts, pos)
			s.starts = append(s.starts, patch[:span*MelBands]...)
		}
		if q < s.runLen-1 {
			ends = append(ends, pos)
			s.ends = append(s.ends, patch[(PatchFrames-span)*MelBands:]...)
		}
	}
	if len(starts) > 0 {
		if err := s.runFront(m, s.startEdge, s.starts, len(starts), span, r, s.startOut); err != nil {
			return err
		}
	}
	if len(ends) > 0 {
		if err := s.runFront(m, s.endEdge, s.ends, len(ends), span, r, s.endOut); err != nil {
			return err
		}
	}
	for i, c := range s.sp.Channels {
		cut := b.cuts[i].GetData()
		for pos := j; pos <= last; pos++ {
			first := PatchHop*(start+pos-s.runStart) - s.lo
			for ch := range int(c) {
				dst := cut[(pos*int(c)+ch)*PatchFrames:][:PatchFrames]
				copy(dst, s.held[i][ch*s.stride+first:][:PatchFrames])
			}
		}
		for e, pos := range starts {
			for ch := range int(c) {
				copy(cut[(pos*int(c)+ch)*PatchFrames:][:r], s.startOut[i][(e*int(c)+ch)*r:][:r])
			}
		}
		for e, pos := range ends {
			for ch := range int(c) {
				copy(cut[(pos*int(c)+ch)*PatchFrames+PatchFrames-r:][:r], s.endOut[i][(e*int(c)+ch)*r:][:r])
			}
		}
	}
	return nil
}

// runFront runs a front-end session over n windows of t frames held in
// frames, giving u output frames per window, into outs[i]
// ([n][channels[i]][u], grown as needed).
func (s *split) runFront(m *Models, session *ort.DynamicAdvancedSession, frames []float32, n, t, u int, outs [][]float32) error {
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
	for i, c := range s.sp.Channels {
		size := n * int(c) * u
		outs[i] = slices.Grow(outs[i][:0], size)[:size]
		if tensors[i], err = ort.NewTensor(ort.NewShape(int64(n), c, int64(u)), outs[i]); err != nil {
			return err
		}
	}
	return m.runValues(session, []*ort.Tensor[float32]{in}, tensors)
}
