package gpu

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nomarr/nomarr/adapters/gpu/onnxgraph"
)

// rewriteModelsDir is the real models' directory for the graph tests (they
// need no ONNX Runtime): NOMARR_MODELS_DIR, else ../shared/models/musicnn
// beside the module root.
func rewriteModelsDir() string {
	if d := os.Getenv("NOMARR_MODELS_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "models", "musicnn")
}

func readBackbone(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rewriteModelsDir(), BackboneFile))
	if err != nil {
		t.Fatalf("read backbone (set NOMARR_MODELS_DIR): %v", err)
	}
	return b
}

func opCount(g *onnxgraph.Graph, op string) int {
	n := 0
	for _, x := range g.Nodes {
		if x.OpType == op {
			n++
		}
	}
	return n
}

func TestRewriteBackboneStructure(t *testing.T) {
	m, err := onnxgraph.Parse(readBackbone(t))
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
	if n := poolBeforeNorm(g); n != 5 {
		t.Fatalf("swapped %d BatchNormalization → MaxPool pairs, want 5", n)
	}
	for _, n := range g.Nodes {
		if n.OpType == "MaxPool" {
			if p := g.Producer(n.Inputs[0]); p == nil || p.OpType != "Conv" {
				t.Fatalf("MaxPool %s reads %v, want a Conv", n.Name, p)
			}
		}
	}
	sp, err := splitFrontEnd(m, PatchFrames)
	if err != nil || sp == nil {
		t.Fatalf("split: %v, %v", sp, err)
	}
	if sp.reach != 3 || !slices.Equal(sp.channels, []int64{204, 204}) || len(sp.outputs) != 2 {
		t.Fatalf("split: reach %d, channels %v, outputs %v", sp.reach, sp.channels, sp.outputs)
	}
	if opCount(sp.front.Graph, "Conv") != 2 || opCount(sp.rest.Graph, "Conv") != convs+1-2 {
		t.Fatalf("front has %d Conv, rest %d", opCount(sp.front.Graph, "Conv"), opCount(sp.rest.Graph, "Conv"))
	}
	// Both halves serialize and parse back.
	for _, half := range []*onnxgraph.Model{sp.front, sp.rest} {
		if _, err := onnxgraph.Parse(half.Marshal()); err != nil {
			t.Fatal(err)
		}
	}
}

// A graph without the patterns is left alone.
func TestRewriteHeadUnchanged(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(rewriteModelsDir(), HeadFile("mood_happy")))
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnxgraph.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if foldGatherConv(m.Graph) != 0 || poolBeforeNorm(m.Graph) != 0 {
		t.Fatal("a head was rewritten")
	}
	if sp, err := splitFrontEnd(m, PatchFrames); sp != nil || err != nil {
		t.Fatalf("a head was split: %v %v", sp, err)
	}
}

func TestFullWidthToConv1D(t *testing.T) {
	m, err := onnxgraph.Parse(readBackbone(t))
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
