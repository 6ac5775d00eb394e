//go:build cgo

package inference

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/core/worker"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestModelIO documents the models' inputs and outputs as ONNX Runtime reads
// them (the names Models uses come from the same calls).
func TestModelIO(t *testing.T) {
	needLibrary(t)
	if err := Init(testLib); err != nil {
		t.Fatal(err)
	}
	type io struct{ in, out []string }
	describe := func(file string) io {
		ins, outs, err := ort.GetInputOutputInfo(filepath.Join(testModels, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var r io
		for _, i := range ins {
			r.in = append(r.in, i.String())
		}
		for _, o := range outs {
			r.out = append(r.out, o.String())
		}
		return r
	}
	const float = "ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT"
	want := io{
		in: []string{`Tensor "melspectrogram": [-1 187 96], ` + float},
		out: []string{`Tensor "activations": [-1 50], ` + float,
			`Tensor "embeddings": [-1 200], ` + float},
	}
	if got := describe(BackboneFile); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backbone I/O = %q, want %q", got, want)
	}
	wantHead := io{
		in:  []string{`Tensor "embeddings": [-1 200], ` + float},
		out: []string{`Tensor "activations": [-1 2], ` + float},
	}
	for _, h := range tags.Heads {
		if got := describe(HeadFile(h)); fmt.Sprint(got) != fmt.Sprint(wantHead) {
			t.Errorf("head %s I/O = %q, want %q", h, got, wantHead)
		}
	}
	m := loaded(t, testConfig(t))
	if m.split == nil || m.backbone != nil {
		t.Fatalf("backbone not split by the load-time rewrite")
	}
	if m.split.names.input != "melspectrogram" || strings.Join(m.split.names.outputs, ",") != "activations,embeddings" {
		t.Errorf("backbone session names = %q → %q", m.split.names.input, m.split.names.outputs)
	}
	plainCfg := testConfig(t)
	plainCfg.PlainGraph = true
	plain := loaded(t, plainCfg)
	if plain.split != nil || plain.backbone.input != "melspectrogram" || strings.Join(plain.backbone.outputs, ",") != "activations,embeddings" {
		t.Errorf("plain backbone session names = %q → %q", plain.backbone.input, plain.backbone.outputs)
	}
	for i, h := range m.heads {
		if h.input != "embeddings" || strings.Join(h.outputs, ",") != "activations" {
			t.Errorf("head %s session names = %q → %q", tags.Heads[i], h.input, h.outputs)
		}
	}
	t.Logf("ONNX Runtime %s", RuntimeVersion())
}

func checkShapes(t *testing.T, p tags.Predictions, n int) {
	t.Helper()
	if len(p.MSD) != n {
		t.Fatalf("MSD rows = %d, want %d", len(p.MSD), n)
	}
	for i, r := range p.MSD {
		if len(r) != MSDClasses {
			t.Fatalf("MSD row %d has %d scores, want %d", i, len(r), MSDClasses)
		}
	}
	if len(p.Heads) != len(tags.Heads) {
		t.Fatalf("heads = %d, want %d", len(p.Heads), len(tags.Heads))
	}
	for _, h := range tags.Heads {
		rows, ok := p.Heads[h]
		if !ok || len(rows) != n {
			t.Fatalf("head %s: %d rows (present %v), want %d", h, len(rows), ok, n)
		}
		for i, r := range rows {
			if len(r) != HeadClasses {
				t.Fatalf("head %s row %d has %d scores, want %d", h, i, len(r), HeadClasses)
			}
		}
	}
}

// ref130 is the reference run of the tests: 130 patches in batches of 64
// (64+64+2), computed once.
var ref130 = sync.OnceValues(func() (tags.Predictions, error) {
	if testLibErr != nil || testModelsErr != nil {
		return tags.Predictions{}, errors.Join(testLibErr, testModelsErr)
	}
	m := New(Config{LibraryPath: testLib, ModelsDir: testModels, Threads: 1, BatchSize: 64})
	defer m.Unload()
	return m.Predict(testPatches(130, 1), 130)
})

func reference(t *testing.T) tags.Predictions {
	t.Helper()
	needLibrary(t)
	p, err := ref130()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPredictScores: shapes, every score in [0,1], heads are softmax (the two
// classes sum to 1), the backbone is sigmoid (independent scores: rows do
// not sum to 1), and patches get different scores.
func TestPredictScores(t *testing.T) {
	const n = 130
	p := reference(t)
	checkShapes(t, p, n)
	inRange := func(what string, v float32) {
		if !(v >= 0 && v <= 1) || math.IsNaN(float64(v)) {
			t.Fatalf("%s = %v, not in [0,1]", what, v)
		}
	}
	maxDev := 0.0
	for i, r := range p.MSD {
		sum := 0.0
		for j, v := range r {
			inRange(fmt.Sprintf("MSD[%d][%s]", i, tags.MSDTop50[j]), v)
			sum += float64(v)
		}
		maxDev = max(maxDev, math.Abs(sum-1))
	}
	if maxDev < 0.05 {
		t.Errorf("MSD rows all sum to ~1 (max deviation %g): softmax, not the documented sigmoid", maxDev)
	}
	for _, h := range tags.Heads {
		for i, r := range p.Heads[h] {
			inRange(fmt.Sprintf("%s[%d][0]", h, i), r[0])
			inRange(fmt.Sprintf("%s[%d][1]", h, i), r[1])
			if s := r[0] + r[1]; math.Abs(float64(s)-1) > 1e-5 {
				t.Fatalf("%s[%d] = %v sums to %v, want 1 (softmax)", h, i, r, s)
			}
		}
	}
	if p.MSD[0][0] == p.MSD[1][0] && p.MSD[0][1] == p.MSD[1][1] {
		t.Errorf("patches 0 and 1 got the same MSD scores %v", p.MSD[0][:2])
	}
}

func maxDiff(t *testing.T, a, b tags.Predictions) float64 {
	t.Helper()
	d := 0.0
	cmp := func(x, y [][]float32) {
		if len(x) != len(y) {
			t.Errorf("row counts %d ≠ %d", len(x), len(y))
			d = math.Inf(1)
			return
		}
		for i := range x {
			for j := range x[i] {
				d = max(d, math.Abs(float64(x[i][j]-y[i][j])))
			}
		}
	}
	cmp(a.MSD, b.MSD)
	for _, h := range tags.Heads {
		cmp(a.Heads[h], b.Heads[h])
	}
	return d
}

// sub is rows lo…hi-1 of p.
func sub(p tags.Predictions, lo, hi int) tags.Predictions {
	s := tags.Predictions{MSD: p.MSD[lo:hi], Heads: map[string][][]float32{}}
	for h, r := range p.Heads {
		s.Heads[h] = r[lo:hi]
	}
	return s
}

func TestPredictDeterministic(t *testing.T) {
	cfg := testConfig(t)
	cfg.BatchSize = 4
	const n = 10
	patches := testPatches(n, 2)
	m := loaded(t, cfg)
	a, err := m.Predict(patches, n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Predict(patches, n)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, a, b); d != 0 {
		t.Errorf("two runs differ by %g", d)
	}
	c, err := loaded(t, cfg).Predict(patches, n)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, a, c); d != 0 {
		t.Errorf("two Models differ by %g", d)
	}
}

// TestBatchingInvariance: the rows of 130 patches run in batches of 64
// (64+64+2) are those of single-patch runs (at each batch edge and in the
// partial batch) and of other batch sizes, within 1e-5.
func TestBatchingInvariance(t *testing.T) {
	const n = 130
	patches := testPatches(n, 1)
	batched := reference(t)
	cfg := testConfig(t)
	cfg.BatchSize = 1
	single := loaded(t, cfg)
	for _, i := range []int{0, 1, 62, 63, 64, 65, 127, 128, 129} {
		p, err := single.Predict(patches[i*PatchSize:(i+1)*PatchSize], 1)
		if err != nil {
			t.Fatal(err)
		}
		checkShapes(t, p, 1)
		if d := maxDiff(t, sub(batched, i, i+1), p); d > 1e-5 {
			t.Errorf("patch %d: batched vs single differ by %g", i, d)
		}
	}
	cfg.BatchSize = 7
	p, err := loaded(t, cfg).Predict(patches[:20*PatchSize], 20) // 7+7+6
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, sub(batched, 0, 20), p); d > 1e-5 {
		t.Errorf("batches of 7 vs 64 differ by %g", d)
	}
}

func TestUnloadLoad(t *testing.T) {
	m := loaded(t, testConfig(t))
	patches := testPatches(3, 4)
	a, err := m.Predict(patches, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Loaded() || m.Provider() != ProviderCPU {
		t.Fatalf("Loaded=%v Provider=%q, want true, cpu", m.Loaded(), m.Provider())
	}
	v := m.Version()
	m.Unload()
	m.Unload() // twice is fine
	if m.Loaded() || m.Provider() != "" || m.backbone != nil || m.heads != nil || m.full != nil || m.blobs != nil {
		t.Fatalf("after Unload: Loaded=%v Provider=%q, sessions or tensors kept", m.Loaded(), m.Provider())
	}
	if err := m.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Load(context.Background()); err != nil { // loaded: no-op
		t.Fatal(err)
	}
	b, err := m.Predict(patches, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, a, b); d != 0 {
		t.Errorf("after reload results differ by %g", d)
	}
	m.Unload()
	c, err := m.Predict(patches, 3) // loads by itself
	if err != nil {
		t.Fatal(err)
	}
	if !m.Loaded() || maxDiff(t, a, c) != 0 {
		t.Errorf("Predict after Unload: loaded %v, differs by %g", m.Loaded(), maxDiff(t, a, c))
	}
	if m.Version() != v {
		t.Errorf("version changed across reload: %s → %s", v, m.Version())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.Unload()
	if err := m.Load(ctx); !errors.Is(err, context.Canceled) || m.Loaded() {
		t.Errorf("Load(canceled) = %v, loaded %v; want context.Canceled, not loaded", err, m.Loaded())
	}
}

func TestVersion(t *testing.T) {
	cfg := testConfig(t)
	h := sha256.New()
	for _, name := range ModelFiles() {
		b, err := os.ReadFile(filepath.Join(testModels, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	want := hex.EncodeToString(h.Sum(nil))[:12]
	got, err := Version(testModels)
	if err != nil || got != want {
		t.Fatalf("Version = %q, %v; want %q", got, err, want)
	}
	unloaded := New(cfg)
	if v := unloaded.Version(); v != want {
		t.Errorf("unloaded Models.Version = %q, want %q", v, want)
	}
	m := loaded(t, cfg)
	if v1, v2 := m.Version(), m.Version(); v1 != want || v2 != want {
		t.Errorf("Models.Version = %q, %q; want %q", v1, v2, want)
	}
	if files := ModelFiles(); len(files) != 10 || files[0] != BackboneFile || files[9] != "voice_instrumental-msd-musicnn-1.onnx" {
		t.Errorf("ModelFiles = %v", files)
	}

	// One changed byte changes the version.
	dir := copyModels(t, "")
	path := filepath.Join(dir, HeadFile("mood_sad"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	changed, err := Version(dir)
	if err != nil || changed == want || len(changed) != 12 {
		t.Errorf("Version of changed models = %q, %v; want another 12-digit version", changed, err)
	}
	t.Logf("nom_version %s", want)

	// Models replaced while a worker's are evicted: the version after the
	// eviction is the new files', so old tags are not taken for current.
	dir = copyModels(t, "")
	c := cfg
	c.ModelsDir = dir
	evicted := New(c)
	if v := evicted.Version(); v != want {
		t.Fatalf("Version before the swap = %q, want %q", v, want)
	}
	if err := os.WriteFile(filepath.Join(dir, HeadFile("mood_sad")), b, 0o644); err != nil {
		t.Fatal(err)
	}
	evicted.Unload()
	if v := evicted.Version(); v != changed {
		t.Errorf("Version after models were swapped and evicted = %q, want the new files' %q", v, changed)
	}
}

// TestChangedAfterModelsReplaced: Changed is true once a model file was
// replaced by a rename (new inode) or rewritten in place after the load,
// false before, and false again once the new files are loaded.
func TestChangedAfterModelsReplaced(t *testing.T) {
	cfg := testConfig(t)
	for _, how := range []string{"renamed over", "rewritten in place"} {
		t.Run(how, func(t *testing.T) {
			c := cfg
			c.ModelsDir = copyModels(t, "")
			m := New(c)
			if m.Changed() {
				t.Fatal("Changed before any load")
			}
			if err := m.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer m.Unload()
			if m.Changed() {
				t.Fatal("Changed right after the load")
			}
			path := filepath.Join(c.ModelsDir, HeadFile("gender"))
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if how == "renamed over" {
				tmp := path + ".new"
				if err := os.WriteFile(tmp, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, path); err != nil {
					t.Fatal(err)
				}
			} else {
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt(b[:1], 0); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			if !m.Changed() {
				t.Fatal("not Changed after the model file was " + how)
			}
			m.Unload()
			if m.Changed() {
				t.Error("Changed with nothing loaded")
			}
			if err := m.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			if m.Changed() {
				t.Error("Changed after loading the new files")
			}
		})
	}
}

// copyModels copies the models into a temp dir, without the file named skip.
func copyModels(t *testing.T, skip string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range ModelFiles() {
		if name == skip {
			continue
		}
		b, err := os.ReadFile(filepath.Join(testModels, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func wantServiceDown(t *testing.T, err error, kind error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q is not %v", err, kind)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
	if c, dep := Classify(err); c != worker.ServiceDown || dep != worker.DepGPU {
		t.Errorf("Classify(%q) = %q, %q; want service_down, gpu", err, c, dep)
	}
}

func TestMissingLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	hints := []string{"make deps", "scripts/fetch-ort.sh", "NOMARR_ONNXRUNTIME_LIB", "onnxruntime_lib"}
	wantServiceDown(t, Init(missing), ErrLibraryNotFound, append([]string{"not found at " + missing}, hints...)...)
	wantServiceDown(t, Init(""), ErrLibraryNotFound, hints...)
	wantServiceDown(t, Init(t.TempDir()), ErrLibraryNotFound, "is a directory")

	cfg := testConfig(t)
	cfg.LibraryPath = missing
	m := New(cfg)
	wantServiceDown(t, m.Load(context.Background()), ErrLibraryNotFound, missing)
	_, err := m.Predict(testPatches(1, 0), 1)
	wantServiceDown(t, err, ErrLibraryNotFound, missing)
	if m.Loaded() {
		t.Error("loaded without a library")
	}

	// Another library than the loaded one cannot be loaded.
	if err := Init(testLib); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(other, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantServiceDown(t, Init(other), ErrLibraryLoad, other, "already loaded")
	if err := Init(testLib); err != nil {
		t.Errorf("Init again with the same library: %v", err)
	}
}

// TestBadLibrary loads a file that is not a library, in a fresh process
// (this one has the real library loaded).
func TestBadLibrary(t *testing.T) {
	if bad := os.Getenv("NOMARR_GPU_TEST_BAD_LIB"); bad != "" {
		err := Init(bad)
		fmt.Printf("INIT-ERROR: %v\n", err)
		if err != nil && errors.Is(err, ErrLibraryLoad) {
			if c, _ := Classify(err); c == worker.ServiceDown {
				fmt.Println("KIND-OK")
			}
		}
		needLibrary(t)
		if err := Init(testLib); err == nil { // a failed Init can be retried
			fmt.Println("RETRY-OK")
		}
		return
	}
	bad := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(bad, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBadLibrary$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NOMARR_GPU_TEST_BAD_LIB="+bad)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"INIT-ERROR: inference: ONNX Runtime library at " + bad + " cannot be loaded", "make deps", "KIND-OK", "RETRY-OK"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

func TestMissingModel(t *testing.T) {
	cfg := testConfig(t)
	missing := HeadFile("mood_sad")
	cfg.ModelsDir = copyModels(t, missing)
	m := New(cfg)
	wantServiceDown(t, m.Load(context.Background()), ErrModelNotFound,
		filepath.Join(cfg.ModelsDir, missing), "models_dir")
	if m.Loaded() {
		t.Error("loaded without a model")
	}
	_, err := Version(cfg.ModelsDir)
	wantServiceDown(t, err, ErrModelNotFound, missing, "models_dir")
	if v := m.Version(); v != "" {
		t.Errorf("Version without a model = %q, want \"\"", v)
	}

	cfg.ModelsDir = ""
	wantServiceDown(t, New(cfg).Load(context.Background()), ErrModelNotFound, "models_dir is not set")

	// A head file that is not a head (the backbone) is invalid.
	cfg.ModelsDir = copyModels(t, "")
	b, err := os.ReadFile(filepath.Join(testModels, BackboneFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.ModelsDir, HeadFile("gender")), b, 0o644); err != nil {
		t.Fatal(err)
	}
	wantServiceDown(t, New(cfg).Load(context.Background()), ErrModelInvalid, HeadFile("gender"), "[-1 200]")
	// Garbage is invalid too.
	if err := os.WriteFile(filepath.Join(cfg.ModelsDir, BackboneFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantServiceDown(t, New(cfg).Load(context.Background()), ErrModelInvalid, BackboneFile)
}

// TestCUDAUnavailable: with UseCUDA and no working CUDA provider (this
// library has none), Load falls back to the CPU with a warning.
func TestCUDAUnavailable(t *testing.T) {
	cfg := testConfig(t)
	var logs syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg.UseCUDA = true
	m := loaded(t, cfg)
	switch m.Provider() {
	case ProviderCPU:
		if !strings.Contains(logs.String(), "CUDA execution provider unavailable") {
			t.Errorf("no warning logged for the CPU fallback; logs:\n%s", logs.String())
		}
		t.Logf("warning: %s", strings.TrimSpace(logs.String()))
	case ProviderCUDA:
		t.Logf("CUDA provider available")
	default:
		t.Fatalf("Provider = %q", m.Provider())
	}
	p, err := m.Predict(testPatches(2, 5), 2)
	if err != nil {
		t.Fatal(err)
	}
	checkShapes(t, p, 2)
}

// TestCUDARunFailureRetriesOnCPU: a Run that fails on CUDA is run again on
// sessions recreated on the CPU, with a warning; the results are the CPU's.
func TestCUDARunFailureRetriesOnCPU(t *testing.T) {
	cfg := testConfig(t)
	cfg.BatchSize = 4
	const n = 6
	patches := testPatches(n, 6)
	want, err := loaded(t, cfg).Predict(patches, n)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m := loaded(t, cfg)
	m.provider = ProviderCUDA // pretend the sessions run on CUDA
	calls := 0
	m.beforeRun = func(provider string) error {
		calls++
		if provider == ProviderCUDA && calls == 5 { // in the first batch's heads
			return errors.New("CUDA failure 2: out of memory")
		}
		return nil
	}
	got, err := m.Predict(patches, n)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(t, want, got); d != 0 {
		t.Errorf("results after the CPU retry differ by %g", d)
	}
	if m.Provider() != ProviderCPU || m.Fallbacks() != 1 || !m.FellBack() {
		t.Errorf("Provider=%q Fallbacks=%d FellBack=%v, want cpu, 1, true", m.Provider(), m.Fallbacks(), m.FellBack())
	}
	if !strings.Contains(logs.String(), "retrying on the CPU") || !strings.Contains(logs.String(), "out of memory") {
		t.Errorf("no warning logged; logs:\n%s", logs.String())
	}

	// A failure on the CPU is an error, classified transient.
	m.beforeRun = func(string) error { return errors.New("boom") }
	_, err = m.Predict(patches, n)
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "backbone (cpu") {
		t.Fatalf("Predict with failing runs = %v", err)
	}
	if c, dep := Classify(err); c != worker.Transient || dep != "" {
		t.Errorf("Classify(%q) = %q, %q; want transient", err, c, dep)
	}
	if m.Fallbacks() != 1 {
		t.Errorf("a CPU failure counted as a fallback")
	}

	// Failing on CUDA and again on the CPU: one error naming both.
	m.beforeRun = func(string) error { return errors.New("boom") }
	m.provider = ProviderCUDA
	_, err = m.Predict(patches, n)
	if err == nil || !strings.Contains(err.Error(), "on CUDA and again on the CPU") {
		t.Fatalf("Predict failing on CUDA and CPU = %v", err)
	}
	if c, _ := Classify(err); c != worker.Transient {
		t.Errorf("Classify = %q, want transient", c)
	}

	// Unload forgets the fallback: the next load tries CUDA again.
	m.beforeRun = nil
	if _, err := m.Predict(patches, n); err != nil {
		t.Fatal(err)
	}
	if !m.FellBack() {
		t.Error("FellBack false while the sessions stay on the CPU")
	}
	m.Unload()
	if m.FellBack() {
		t.Error("FellBack still true after Unload")
	}
}

func TestPredictInput(t *testing.T) {
	m := New(testConfig(t))
	defer m.Unload()
	for _, c := range []struct{ values, n int }{{PatchSize - 1, 1}, {PatchSize, 2}, {0, -1}} {
		if _, err := m.Predict(make([]float32, c.values), c.n); err == nil {
			t.Errorf("Predict(%d values, n=%d) succeeded", c.values, c.n)
		} else if cl, _ := Classify(err); cl != worker.Transient {
			t.Errorf("Classify(%v) = %q", err, cl)
		}
	}
	p, err := m.Predict(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkShapes(t, p, 0)
	if m.Loaded() {
		t.Error("Predict of 0 patches loaded the models")
	}
	if c, d := Classify(nil); c != worker.OK || d != "" {
		t.Errorf("Classify(nil) = %q, %q", c, d)
	}
}

// TestConcurrent runs Predict, Unload and Load from several goroutines (for
// the race detector); every result is the reference.
func TestConcurrent(t *testing.T) {
	cfg := testConfig(t)
	cfg.BatchSize = 1
	patches := testPatches(2, 7)
	m := loaded(t, cfg)
	want, err := m.Predict(patches, 2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 4 {
		wg.Go(func() {
			for i := range 4 {
				if g == 0 && i%2 == 1 {
					m.Unload()
					continue
				}
				p, err := m.Predict(patches, 2)
				if err != nil {
					errs <- err
					return
				}
				if d := maxDiff(t, want, p); d != 0 {
					errs <- fmt.Errorf("concurrent result differs by %g", d)
				}
				_ = m.Version()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// rssMiB is this process's resident memory (VmRSS) and its peak (VmHWM).
func rssMiB(tb testing.TB) (rss, peak float64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		for key, v := range map[string]*float64{"VmRSS:": &rss, "VmHWM:": &peak} {
			if rest, ok := strings.CutPrefix(line, key); ok {
				kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
				if err != nil {
					tb.Fatal(err)
				}
				*v = float64(kb) / 1024
			}
		}
	}
	if rss == 0 || peak == 0 {
		tb.Fatal("no VmRSS or VmHWM")
	}
	return rss, peak
}

// BenchmarkPredict: patches/s for batches of 64 patches (one Predict of 64
// patches per op); the resident memory added by Load ("MiB") and present
// after the first Run ("MiB-run"), and the process's peak resident memory
// above the level before Load ("MiB-peak"). The memory figures are those of
// a fresh process in the first sub-benchmark only: later ones reuse memory
// the allocator kept.
// BenchmarkPredict: patches/s of the backbone and heads, as exported
// (graph=plain) and rewritten at load time (graph=rewritten, and with ONNX
// Runtime's CPU memory arena: graph=rewritten+arena), on the
// overlapping patches of one track (input=track, what the analyzer sends)
// and on unrelated patches (input=independent, no frames to share), with
// one thread and with every core; plus the process's memory growth.
func BenchmarkPredict(b *testing.B) {
	threads := []int{1}
	if runtime.NumCPU() > 1 {
		threads = append(threads, runtime.NumCPU())
	}
	const n = 64
	inputs := []struct {
		name    string
		patches []float32
	}{{"track", trackPatches(n, 8)}, {"independent", testPatches(n, 8)}}
	for _, th := range threads {
		for _, in := range inputs {
			for _, v := range []struct {
				graph        string
				plain, arena bool
			}{{"plain", true, false}, {"rewritten", false, false}, {"rewritten+arena", false, true}} {
				graph, plain, arena := v.graph, v.plain, v.arena
				b.Run(fmt.Sprintf("threads=%d/input=%s/graph=%s", th, in.name, graph), func(b *testing.B) {
					cfg := testConfig(b)
					cfg.Threads = th
					cfg.BatchSize = benchBatch
					cfg.PlainGraph = plain
					cfg.CPUArena = arena
					if err := Init(cfg.LibraryPath); err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					before, _ := rssMiB(b)
					m := loaded(b, cfg)
					afterLoad, _ := rssMiB(b)
					if _, err := m.Predict(in.patches, n); err != nil {
						b.Fatal(err)
					}
					afterRun, peak := rssMiB(b)
					for b.Loop() {
						if _, err := m.Predict(in.patches, n); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "patches/s")
					b.ReportMetric(afterLoad-before, "MiB")
					b.ReportMetric(afterRun-before, "MiB-run")
					b.ReportMetric(peak-before, "MiB-peak")
				})
			}
		}
	}
}

var benchBatch = func() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_BATCH")); err == nil {
		return v
	}
	return 8
}()
