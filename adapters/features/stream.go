package features

// Patcher cuts the patches of a signal that arrives in pieces: Feed the
// samples in order, End after the last, and take the complete patches with
// AppendReady as they form. The patches are exactly AppendPatches's over
// the whole signal (each frame is computed by the same code from the same
// samples), in the same order.
//
// Invariant: the Patcher holds only the samples of frames not yet computed
// (at most FrameSize−HopSize plus the last Feed's) and the frames of
// patches not yet taken (at most PatchFrames−PatchHop plus those Feed made
// ready): its memory does not depend on the signal's length when the
// caller takes the ready patches after each Feed.
type Patcher struct {
	ext *Extractor
	// samples holds the signal from absolute index offset on.
	samples []float32
	offset  int
	total   int // samples fed
	// next is the index of the next frame to compute.
	next int
	// frames holds the computed frames from frame base on, Bands values each.
	frames []float32
	base   int
	// taken is the number of patches handed out.
	taken int
	ended bool
}

// NewPatcher returns a Patcher computing with ext (nil: a new Extractor).
func NewPatcher(ext *Extractor) *Patcher {
	if ext == nil {
		ext = NewExtractor()
	}
	return &Patcher{ext: ext}
}

// Reset makes p ready for a new signal, keeping its buffers.
func (p *Patcher) Reset() {
	p.samples, p.frames = p.samples[:0], p.frames[:0]
	p.offset, p.total, p.next, p.base, p.taken, p.ended = 0, 0, 0, 0, 0, false
}

// Samples is the number of samples fed since the last Reset.
func (p *Patcher) Samples() int { return p.total }

// Feed adds the next samples of the signal and computes every frame that
// lies wholly within what has been fed. It panics after End.
func (p *Patcher) Feed(samples []float32) {
	if p.ended {
		panic("features: Feed after End")
	}
	p.samples = append(p.samples, samples...)
	p.total += len(samples)
	// Frame k needs samples up to FrameStart(k)+FrameSize.
	for FrameStart(p.next)+FrameSize <= p.total {
		p.compute()
	}
	p.trimSamples()
}

// End marks the end of the signal and computes the frames that reach past
// it (zero-padded, as FrameCutter pads the last ones), as far as the last
// complete patch needs them.
func (p *Patcher) End() {
	if p.ended {
		return
	}
	p.ended = true
	n := PatchCount(FrameCount(p.total))
	used := 0
	if n > 0 {
		used = (n-1)*PatchHop + PatchFrames
	}
	for p.next < used {
		p.compute()
	}
	p.samples = p.samples[:0]
}

// Ready is the number of complete patches not yet taken.
func (p *Patcher) Ready() int {
	done := p.next // frames computed
	if done < PatchFrames {
		return 0
	}
	return (done-PatchFrames)/PatchHop + 1 - p.taken
}

// Total is the number of patches of the whole signal; known only after End.
func (p *Patcher) Total() int { return PatchCount(FrameCount(p.total)) }

// AppendReady appends up to max ready patches (max < 0: all) to dst as
// AppendPatches lays them out, and forgets the frames no later patch
// needs. It returns the extended dst and the number of patches appended.
func (p *Patcher) AppendReady(dst []float32, max int) ([]float32, int) {
	n := p.Ready()
	if max >= 0 && n > max {
		n = max
	}
	for range n {
		start := (p.taken*PatchHop - p.base) * Bands
		dst = append(dst, p.frames[start:start+patchLen]...)
		p.taken++
	}
	// Frames before the next patch's first are not needed again.
	if drop := p.taken*PatchHop - p.base; drop > 0 {
		drop = min(drop, (p.next - p.base))
		p.frames = p.frames[:copy(p.frames, p.frames[drop*Bands:])]
		p.base += drop
	}
	return dst, n
}

// compute computes frame p.next from the held samples.
func (p *Patcher) compute() {
	k := len(p.frames)
	p.frames = append(p.frames, make([]float32, Bands)...)
	p.ext.frameBands(p.frames[k:k+Bands], p.samples, FrameStart(p.next)-p.offset)
	p.next++
}

// trimSamples forgets the samples before the next frame's first.
func (p *Patcher) trimSamples() {
	first := FrameStart(p.next)
	if drop := first - p.offset; drop > 0 {
		drop = min(drop, len(p.samples))
		p.samples = p.samples[:copy(p.samples, p.samples[drop:])]
		p.offset += drop
	}
}
