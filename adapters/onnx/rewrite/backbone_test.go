package rewrite

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// The backbone's patch geometry and model files (adapters/inference has
// the same; this package does not depend on it).
const (
	patchFrames  = 187
	melBands     = 96
	backboneFile = "msd-musicnn-1.onnx"
	headFile     = "mood_happy-msd-musicnn-1.onnx"
)

// patch is Backbone's geometry for the real backbone.
var patch = Options{Frames: patchFrames, Bands: melBands}

// pool and prune are poolBeforeNorm and pruneDeadFilters as Backbone runs
// them, for backboneThrough.
func pool(g *graph.Graph) int  { return poolBeforeNorm(g, deadWeight) }
func prune(g *graph.Graph) int { return pruneDeadFilters(g, deadWeight) }

// moduleRoot is the directory of go.mod above the package directory.
func moduleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal(errors.New("no go.mod above the package directory"))
		}
		dir = parent
	}
}

// readModel reads a real model file for the graph tests (they need no
// ONNX Runtime) from NOMARR_MODELS_DIR, else ../shared/models/musicnn
// beside the module root.
func readModel(tb testing.TB, name string) []byte {
	tb.Helper()
	dir := os.Getenv("NOMARR_MODELS_DIR")
	if dir == "" {
		dir = filepath.Join(moduleRoot(tb), "..", "shared", "models", "musicnn")
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatalf("read model (set NOMARR_MODELS_DIR): %v", err)
	}
	return b
}

func readBackbone(t *testing.T) []byte { return readModel(t, backboneFile) }

func opCount(g *graph.Graph, op string) int {
	n := 0
	for _, x := range g.Nodes {
		if x.OpType == op {
			n++
		}
	}
	return n
}

func TestRewriteBackboneStructure(t *testing.T) {
	m, err := graph.Parse(readBackbone(t))
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	convs, gathers := opCount(g, "Conv"), opCount(g, "Gather")
	if n := foldGatherConv(g); n != 1 {
		t.Fatalf("folded %d im2col chains, want 1", n)
	}
	if opCount(g, "Conv") != convs+1 || opCount(g, "Gather") != gathers-1 || opCount(g, "Pad") != 0 {
		t.Fatalf("after folding: %d Conv, %d Gather, %d Pad", opCount(g, "Conv"), opCount(g, "Gather"), opCount(g, "Pad"))
	}
	if n := pool(g); n != 5 {
		t.Fatalf("swapped %d BatchNormalization → MaxPool pairs, want 5", n)
	}
	for _, n := range g.Nodes {
		if n.OpType == "MaxPool" {
			if p := g.Producer(n.Inputs[0]); p == nil || p.OpType != "Conv" {
				t.Fatalf("MaxPool %s reads %v, want a Conv", n.Name, p)
			}
		}
	}
	sp, err := splitFrontEnd(m, patchFrames, melBands)
	if err != nil || sp == nil {
		t.Fatalf("split: %v, %v", sp, err)
	}
	if sp.Reach != 3 || !slices.Equal(sp.Channels, []int64{204, 204}) || len(sp.Outputs) != 2 {
		t.Fatalf("split: reach %d, channels %v, outputs %v", sp.Reach, sp.Channels, sp.Outputs)
	}
	if opCount(sp.Front.Graph, "Conv") != 2 || opCount(sp.Rest.Graph, "Conv") != convs+1-2 {
		t.Fatalf("front has %d Conv, rest %d", opCount(sp.Front.Graph, "Conv"), opCount(sp.Rest.Graph, "Conv"))
	}
	// Both halves serialize and parse back.
	for _, half := range []*graph.Model{sp.Front, sp.Rest} {
		if _, err := graph.Parse(half.Marshal()); err != nil {
			t.Fatal(err)
		}
	}
}

// A graph without the patterns is left alone.
func TestRewriteHeadUnchanged(t *testing.T) {
	m, err := graph.Parse(readModel(t, headFile))
	if err != nil {
		t.Fatal(err)
	}
	if foldGatherConv(m.Graph) != 0 || pool(m.Graph) != 0 {
		t.Fatal("a head was rewritten")
	}
	if sp, err := splitFrontEnd(m, patchFrames, melBands); sp != nil || err != nil {
		t.Fatalf("a head was split: %v %v", sp, err)
	}
}

func TestFullWidthToConv1D(t *testing.T) {
	m, err := graph.Parse(readBackbone(t))
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	if n := fullWidthToConv1D(g); n != 3 {
		t.Fatalf("rewrote %d full-width convolutions, want 3 (the mid-end)", n)
	}
	transposes := 0
	for _, n := range g.Nodes {
		if n.OpType == "Conv" && len(n.Attr("kernel_shape").Ints()) == 1 {
			if p := g.Producer(n.Inputs[0]); p != nil && p.OpType == "Transpose" {
				transposes++
			}
		}
	}
	// The first reads the concatenated front end directly; the other two
	// need a transpose of their [n,T,64] input.
	if transposes != 2 {
		t.Fatalf("%d Conv1D read an added transpose, want 2", transposes)
	}
}
