//go:build cgo

package inference

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/nomarr/nomarr/adapters/onnx/rewrite"
	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
)

var (
	initMu   sync.Mutex
	initPath string // the library loaded into this process
)

// Init loads the ONNX Runtime shared library at libPath and creates the
// process-wide environment. Call it once per process; a second call with the
// same library is a no-op, one with another library fails (a process can
// hold only one). A failed Init may be retried (e.g. after fetching the
// library). Models.Load calls it with Config.LibraryPath.
func Init(libPath string) error {
	if libPath == "" {
		return libraryNotFound("", nil)
	}
	abs, err := filepath.Abs(libPath)
	if err != nil {
		return libraryNotFound(libPath, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return libraryNotFound(abs, err)
	}
	if st.IsDir() {
		return libraryNotFound(abs, errors.New("is a directory"))
	}
	initMu.Lock()
	defer initMu.Unlock()
	if ort.IsInitialized() {
		if initPath == abs {
			return nil
		}
		return &missingError{kind: ErrLibraryLoad,
			msg: fmt.Sprintf("inference: cannot load ONNX Runtime library %s: %s is already loaded in this process", abs, initPath)}
	}
	ort.SetSharedLibraryPath(abs)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return &missingError{kind: ErrLibraryLoad,
			msg: fmt.Sprintf("inference: ONNX Runtime library at %s cannot be loaded (%v); %s", abs, err, fetchHint)}
	}
	initPath = abs
	return nil
}

// RuntimeVersion is the version of the loaded ONNX Runtime ("" before Init).
func RuntimeVersion() string {
	initMu.Lock()
	defer initMu.Unlock()
	if !ort.IsInitialized() {
		return ""
	}
	return ort.GetVersion()
}

// Models is the model cache of one worker (worker.Models): Load creates the
// sessions, Unload destroys them (freeing their memory, VRAM included), and
// Predict runs patches through them, loading first when needed. Safe for
// concurrent use; calls are serialized.
type Models struct {
	cfg Config

	mu        sync.Mutex
	loaded    bool
	provider  string
	fallbacks int
	// fellBack: the sessions run on the CPU because a Run failed on CUDA;
	// until Unload (FellBack).
	fellBack bool
	stamp    string // filesStamp of ModelsDir when the loaded bytes were read
	version  string
	blobs    [][]byte   // model bytes in ModelFiles order, while loaded
	backbone *session   // the backbone whole (nil when split is used)
	split    *split     // the backbone as front end + rest (split.go)
	heads    []*session // tags.Heads order
	full     *batch     // reusable tensors of BatchSize patches

	// beforeRun, when set (tests), runs before each session Run and may
	// fail it, to simulate a provider failure.
	beforeRun func(provider string) error
	// afterRewrite, when set (tests), may change the split backbone before
	// its sessions open, to simulate a rewrite ONNX Runtime refuses.
	afterRewrite func(sp *rewrite.FrontEnd)
	// steps, when set (tests), leaves steps of the backbone's rewrite out
	// (its Frames and Bands are the patch's).
	steps rewrite.Options
}

var _ worker.Models = (*Models)(nil)

// session is one ONNX session with the names of its input and outputs, as
// found in the model.
type session struct {
	s       *ort.DynamicAdvancedSession
	input   string
	outputs []string
}

// batch holds the tensors of one Run of k patches. A view shares the Go
// memory of the full batch, with shapes for fewer patches.
type batch struct {
	k     int
	in    *ort.Tensor[float32]   // [k,187,96]
	cuts  []*ort.Tensor[float32] // [k,channels[i],187] when split
	msd   *ort.Tensor[float32]   // [k,50]
	emb   *ort.Tensor[float32]   // [k,200]
	heads []*ort.Tensor[float32]
}

// New returns unloaded Models for cfg (defaults filled in).
func New(cfg Config) *Models {
	return &Models{cfg: cfg.withDefaults()}
}

// Load loads the library (Init) and the models, unless already loaded. On
// Config.UseCUDA it tries the CUDA execution provider first and falls back to
// the CPU with a logged warning.
func (m *Models) Load(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loadLocked(ctx)
}

func (m *Models) loadLocked(ctx context.Context) error {
	if m.loaded {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := Init(m.cfg.LibraryPath); err != nil {
		return err
	}
	files := ModelFiles()
	stamp := filesStamp(m.cfg.ModelsDir) // before the reads: a change meanwhile shows as one
	blobs := make([][]byte, len(files))
	for i, name := range files {
		b, err := readModel(m.cfg.ModelsDir, name)
		if err != nil {
			return err
		}
		blobs[i] = b
	}
	m.blobs = blobs
	m.version = versionOf(blobs)
	provider := ProviderCPU
	if m.cfg.UseCUDA {
		provider = ProviderCUDA
	}
	err := m.createSessions(ctx, provider)
	if err != nil && provider == ProviderCUDA && !errors.Is(err, ErrModelInvalid) && ctx.Err() == nil {
		m.cfg.Logger.Warn("inference: CUDA execution provider unavailable; running the models on the CPU", "err", err)
		err = m.createSessions(ctx, ProviderCPU)
	}
	if err != nil {
		m.blobs = nil
		return err
	}
	m.loaded, m.fellBack, m.stamp = true, false, stamp
	return nil
}

// createSessions replaces the sessions and tensors by new ones on provider.
func (m *Models) createSessions(ctx context.Context, provider string) (err error) {
	m.destroySessions()
	defer func() {
		if err != nil {
			m.destroySessions()
		}
	}()
	opts, err := m.sessionOptions(provider)
	if err != nil {
		return err
	}
	defer opts.Destroy()
	files := ModelFiles()
	if err := m.openBackbone(opts); err != nil {
		return err
	}
	m.heads = make([]*session, len(tags.Heads))
	for i := range tags.Heads {
		if err := ctx.Err(); err != nil {
			return err
		}
		m.heads[i], err = newSession(m.blobs[i+1], files[i+1], m.cfg.ModelsDir, opts,
			[]int64{-1, EmbeddingSize}, [][]int64{{-1, HeadClasses}})
		if err != nil {
			return err
		}
	}
	var channels []int64
	if m.split != nil {
		channels = m.split.sp.Channels
	}
	m.full, err = newBatch(m.cfg.BatchSize, channels)
	if err != nil {
		return err
	}
	m.provider = provider
	return nil
}

func (m *Models) sessionOptions(provider string) (*ort.SessionOptions, error) {
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("inference: session options: %w", err)
	}
	err = opts.SetIntraOpNumThreads(m.cfg.Threads)
	if err == nil {
		err = opts.SetInterOpNumThreads(1)
	}
	if err == nil {
		// Without the CPU arena the intermediates go back to the allocator
		// after each Run (see Config.CPUArena).
		err = opts.SetCpuMemArena(m.cfg.CPUArena)
	}
	if err == nil && m.cfg.ProfilePrefix != "" {
		err = opts.EnableProfiling(m.cfg.ProfilePrefix)
	}
	if err == nil && provider == ProviderCUDA {
		err = appendCUDA(opts)
	}
	if err != nil {
		opts.Destroy()
		return nil, fmt.Errorf("inference: session options (%s): %w", provider, err)
	}
	return opts, nil
}

func appendCUDA(opts *ort.SessionOptions) error {
	cuda, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer cuda.Destroy()
	if err := cuda.Update(map[string]string{"device_id": "0"}); err != nil {
		return err
	}
	return opts.AppendExecutionProviderCUDA(cuda)
}

// newSession checks that the model has one input of shape in and outputs of
// the shapes outs (-1: any batch size), in that order of shapes, and opens a
// session with the names the model declares.
func newSession(data []byte, name, dir string, opts *ort.SessionOptions, in []int64, outs [][]int64) (*session, error) {
	s, err := inspect(data, name, dir, in, outs)
	if err != nil {
		return nil, err
	}
	s.s, err = ort.NewDynamicAdvancedSessionWithONNXData(data, []string{s.input}, s.outputs, opts)
	if err != nil {
		// Not ErrModelInvalid: on CUDA this is where a broken provider shows.
		return nil, fmt.Errorf("inference: open session for %s: %w", filepath.Join(dir, name), err)
	}
	return s, nil
}

// inspect is newSession's check: the names of the model's input and of its
// outputs of the shapes outs, or an ErrModelInvalid error. The session is
// not opened.
func inspect(data []byte, name, dir string, in []int64, outs [][]int64) (*session, error) {
	invalid := func(format string, a ...any) error {
		return &missingError{kind: ErrModelInvalid,
			msg: fmt.Sprintf("inference: model file %s (models_dir = %q): %s", filepath.Join(dir, name), dir, fmt.Sprintf(format, a...))}
	}
	ins, outInfo, err := ort.GetInputOutputInfoWithONNXData(data)
	if err != nil {
		return nil, invalid("cannot read inputs and outputs: %v", err)
	}
	if len(ins) != 1 || !shapeMatches(ins[0], in) {
		return nil, invalid("want one float input of shape %v, have %v", in, infoStrings(ins))
	}
	s := &session{input: ins[0].Name}
	for _, want := range outs {
		found := ""
		for _, o := range outInfo {
			if shapeMatches(o, want) {
				found = o.Name
				break
			}
		}
		if found == "" {
			return nil, invalid("want a float output of shape %v, have %v", want, infoStrings(outInfo))
		}
		s.outputs = append(s.outputs, found)
	}
	return s, nil
}

func shapeMatches(info ort.InputOutputInfo, want []int64) bool {
	if info.OrtValueType != ort.ONNXTypeTensor || info.DataType != ort.TensorElementDataTypeFloat ||
		len(info.Dimensions) != len(want) {
		return false
	}
	for i, d := range info.Dimensions {
		if want[i] >= 0 && d != want[i] {
			return false
		}
	}
	return true
}

func infoStrings(infos []ort.InputOutputInfo) []string {
	s := make([]string, len(infos))
	for i := range infos {
		s[i] = infos[i].String()
	}
	return s
}

func newBatch(k int, channels []int64) (*batch, error) {
	b := &batch{k: k}
	var err error
	mk := func(n int64, dims ...int64) *ort.Tensor[float32] {
		if err != nil {
			return nil
		}
		var t *ort.Tensor[float32]
		t, err = ort.NewEmptyTensor[float32](ort.NewShape(append([]int64{n}, dims...)...))
		return t
	}
	b.in = mk(int64(k), PatchFrames, MelBands)
	for _, c := range channels {
		b.cuts = append(b.cuts, mk(int64(k), c, PatchFrames))
	}
	b.msd = mk(int64(k), MSDClasses)
	b.emb = mk(int64(k), EmbeddingSize)
	for range tags.Heads {
		b.heads = append(b.heads, mk(int64(k), HeadClasses))
	}
	if err != nil {
		b.destroy()
		return nil, fmt.Errorf("inference: allocate tensors for %d patches: %w", k, err)
	}
	return b, nil
}

// view is a batch of k ≤ b.k patches over b's memory.
func (b *batch) view(k int) (*batch, error) {
	v := &batch{k: k}
	var err error
	mk := func(t *ort.Tensor[float32], width int64) *ort.Tensor[float32] {
		if err != nil {
			return nil
		}
		shape := t.GetShape().Clone()
		shape[0] = int64(k)
		var u *ort.Tensor[float32]
		u, err = ort.NewTensor(shape, t.GetData()[:int64(k)*width])
		return u
	}
	v.in = mk(b.in, PatchSize)
	for _, c := range b.cuts {
		v.cuts = append(v.cuts, mk(c, c.GetShape()[1]*PatchFrames))
	}
	v.msd = mk(b.msd, MSDClasses)
	v.emb = mk(b.emb, EmbeddingSize)
	for _, h := range b.heads {
		v.heads = append(v.heads, mk(h, HeadClasses))
	}
	if err != nil {
		v.destroy()
		return nil, fmt.Errorf("inference: tensors for %d patches: %w", k, err)
	}
	return v, nil
}

func (b *batch) destroy() {
	if b == nil {
		return
	}
	for _, t := range slices.Concat([]*ort.Tensor[float32]{b.in, b.msd, b.emb}, b.cuts, b.heads) {
		if t != nil {
			t.Destroy()
		}
	}
}

func (m *Models) destroySessions() {
	m.full.destroy()
	m.full = nil
	if m.backbone != nil {
		m.backbone.s.Destroy()
		m.backbone = nil
	}
	m.split.destroy()
	m.split = nil
	for _, h := range m.heads {
		if h != nil {
			h.s.Destroy()
		}
	}
	m.heads = nil
}

// Unload destroys the sessions and their tensors. Load (or Predict) loads
// again; a load after Unload tries CUDA again when configured.
func (m *Models) Unload() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.destroySessions()
	m.blobs = nil
	m.loaded = false
	m.fellBack = false
	m.version = "" // model files replaced meanwhile give the next one's version
}

// Loaded reports whether the sessions are loaded.
func (m *Models) Loaded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loaded
}

// Provider is the execution provider of the loaded sessions (ProviderCPU or
// ProviderCUDA), "" when not loaded.
func (m *Models) Provider() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.loaded {
		return ""
	}
	return m.provider
}

// Fallbacks counts the Predict calls that failed on CUDA and were run again
// on the CPU.
func (m *Models) Fallbacks() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fallbacks
}

// FellBack reports whether the loaded sessions run on the CPU because a
// Run failed on CUDA (Predict): they stay there until Unload, and the
// worker unloads them once the GPU is healthy again
// (worker.Result.FellBack). A load that found CUDA unusable is not a
// fallback in this sense: loading again would find the same.
func (m *Models) FellBack() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loaded && m.fellBack
}

// Changed reports whether the model files in ModelsDir changed since the
// loaded sessions were read from them (replaced, or rewritten: their
// inode, size or times differ), from a stat of each; false when nothing is
// loaded. The worker then unloads the models between jobs
// (worker.Result.ModelsChanged), so that the next job loads the new ones
// and records their version: a busy worker would otherwise go on tagging
// with the old set, whose files the next scan sends back to work.
func (m *Models) Changed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.loaded && filesStamp(m.cfg.ModelsDir) != m.stamp
}

// Version is the model-set version (nom_version, see the package function
// Version): of the loaded bytes while loaded, else of the files in
// ModelsDir as first read after the last Unload; "" when they cannot be
// read.
func (m *Models) Version() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == "" {
		m.version, _ = Version(m.cfg.ModelsDir)
	}
	return m.version
}

// Predict runs n patches (patches holds n·PatchSize values, patch-major,
// each patch [187 frames][96 mel bands]) through the backbone and every head
// in batches of Config.BatchSize, loading the models first when needed. It
// returns one row of scores per patch and the sum of the patches'
// embeddings (EmbeddingSum, EmbeddingSize wide), not the rows: a track
// vector needs only their mean. A Run that fails on CUDA (out of memory, a
// provider failure) is retried once with the sessions recreated on the CPU,
// with a logged warning (Fallbacks counts it); the sessions then stay on the
// CPU until the next Unload (FellBack). Classify maps the error.
func (m *Models) Predict(patches []float32, n int) (tags.Predictions, error) {
	if n < 0 || len(patches) != n*PatchSize {
		return tags.Predictions{}, fmt.Errorf("inference: predict: %d values for %d patches, want %d", len(patches), n, n*PatchSize)
	}
	if n == 0 {
		p := predictions(nil, make([][]float32, len(tags.Heads)), 0)
		p.EmbeddingSum = make([]float64, EmbeddingSize)
		return p, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.loadLocked(context.Background()); err != nil {
		return tags.Predictions{}, err
	}
	p, err := m.predictLocked(patches, n)
	if err == nil || m.provider != ProviderCUDA {
		return p, err
	}
	m.cfg.Logger.Warn("inference: run failed on CUDA; retrying on the CPU", "err", err, "patches", n)
	m.fallbacks++
	m.fellBack = true
	if cerr := m.createSessions(context.Background(), ProviderCPU); cerr != nil {
		m.destroySessions()
		m.blobs = nil
		m.loaded = false
		return tags.Predictions{}, fmt.Errorf("inference: run failed on CUDA (%v); recreating the sessions on the CPU failed: %w", err, cerr)
	}
	p, err = m.predictLocked(patches, n)
	if err != nil {
		return tags.Predictions{}, fmt.Errorf("inference: run failed on CUDA and again on the CPU: %w", err)
	}
	return p, nil
}

func (m *Models) predictLocked(patches []float32, n int) (tags.Predictions, error) {
	msd := make([]float32, n*MSDClasses)
	heads := make([][]float32, len(tags.Heads))
	for i := range heads {
		heads[i] = make([]float32, n*HeadClasses)
	}
	emb := make([]float64, EmbeddingSize)
	if m.split != nil {
		m.split.begin(patches, n)
		defer m.split.end()
	}
	for start := 0; start < n; start += m.cfg.BatchSize {
		k := min(m.cfg.BatchSize, n-start)
		if err := m.runBatch(patches, start, k, msd, heads, emb); err != nil {
			return tags.Predictions{}, err
		}
	}
	p := predictions(msd, heads, n)
	p.EmbeddingSum = emb
	return p, nil
}

// runBatch runs patches start…start+k-1, copies the scores into msd and
// heads (flat, tags.Heads order) and adds the patches' embeddings into
// emb (EmbeddingSize wide).
func (m *Models) runBatch(patches []float32, start, k int, msd []float32, heads [][]float32, emb []float64) error {
	b := m.full
	if k < b.k {
		v, err := b.view(k)
		if err != nil {
			return err
		}
		defer v.destroy()
		b = v
	}
	copy(b.in.GetData(), patches[start*PatchSize:(start+k)*PatchSize])
	var err error
	if m.split != nil {
		err = m.runSplit(b, start)
	} else {
		err = m.run(m.backbone, b.in, b.msd, b.emb)
	}
	if err != nil {
		return fmt.Errorf("inference: backbone (%s, patches %d–%d): %w", m.provider, start, start+k-1, err)
	}
	copy(msd[start*MSDClasses:], b.msd.GetData())
	addRows(emb, b.emb.GetData())
	for i, h := range m.heads {
		if err := m.run(h, b.emb, b.heads[i]); err != nil {
			return fmt.Errorf("inference: head %s (%s, patches %d–%d): %w", tags.Heads[i], m.provider, start, start+k-1, err)
		}
		copy(heads[i][start*HeadClasses:], b.heads[i].GetData())
	}
	return nil
}

// predictions cuts the flat scores of n patches into rows.
func predictions(msd []float32, heads [][]float32, n int) tags.Predictions {
	p := tags.Predictions{MSD: rows(msd, n, MSDClasses), Heads: make(map[string][][]float32, len(tags.Heads))}
	for i, h := range tags.Heads {
		p.Heads[h] = rows(heads[i], n, HeadClasses)
	}
	return p
}

func (m *Models) run(s *session, in *ort.Tensor[float32], outs ...*ort.Tensor[float32]) error {
	return m.runValues(s.s, []*ort.Tensor[float32]{in}, outs)
}

// runValues runs one session (through beforeRun).
func (m *Models) runValues(s *ort.DynamicAdvancedSession, ins, outs []*ort.Tensor[float32]) error {
	if m.beforeRun != nil {
		if err := m.beforeRun(m.provider); err != nil {
			return err
		}
	}
	values := func(ts []*ort.Tensor[float32]) []ort.Value {
		v := make([]ort.Value, len(ts))
		for i, t := range ts {
			v[i] = t
		}
		return v
	}
	return s.Run(values(ins), values(outs))
}

// addRows adds each row of flat (rows of len(sum) values) into sum.
func addRows(sum []float64, flat []float32) {
	d := len(sum)
	for i := 0; i+d <= len(flat); i += d {
		row := flat[i : i+d : i+d]
		for j, x := range row {
			sum[j] += float64(x)
		}
	}
}

// rows cuts flat into n rows of width, each with its own capacity.
func rows(flat []float32, n, width int) [][]float32 {
	r := make([][]float32, n)
	for i := range r {
		r[i] = flat[i*width : (i+1)*width : (i+1)*width]
	}
	return r
}
