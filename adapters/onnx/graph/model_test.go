package graph

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// modelsDir is where the real models are (NOMARR_MODELS_DIR, else
// ../shared/models/musicnn beside the module root).
func modelsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("NOMARR_MODELS_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "..", "shared", "models", "musicnn")
}

func readModel(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(modelsDir(t), name))
	if err != nil {
		t.Fatalf("read model (set NOMARR_MODELS_DIR): %v", err)
	}
	return b
}

func TestRoundTripIdentical(t *testing.T) {
	for _, name := range []string{"msd-musicnn-1.onnx", "mood_happy-msd-musicnn-1.onnx"} {
		b := readModel(t, name)
		m, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(m.Graph.Nodes) == 0 || len(m.Graph.Initializers) == 0 {
			t.Fatalf("%s: %d nodes, %d initializers", name, len(m.Graph.Nodes), len(m.Graph.Initializers))
		}
		if out := m.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("%s: marshal of an unedited model differs (%d vs %d bytes)", name, len(out), len(b))
		}
	}
}

func TestDump(t *testing.T) {
	if os.Getenv("DUMP") == "" {
		t.Skip("set DUMP=1 to print the backbone graph")
	}
	m, _ := Parse(readModel(t, "msd-musicnn-1.onnx"))
	for _, n := range m.Graph.Nodes {
		t.Logf("%s %s %v -> %v", n.OpType, n.Name, n.Inputs, n.Outputs)
		for _, a := range n.Attrs {
			i, _ := a.Int()
			t.Logf("    %s ints=%v i=%d", a.Name, a.Ints(), i)
		}
	}
	for _, in := range m.Graph.Inputs {
		t.Logf("input %s", in.Name)
	}
	for _, x := range m.Graph.Initializers {
		if x.Len() <= 16 {
			f, _ := x.Floats()
			i, _ := x.Int64s()
			t.Logf("init %s %v f=%v i=%v", x.Name, x.Dims, f, i)
		}
	}
}

// Corrupt or truncated bytes give ErrMalformed, never a panic or a model.
func TestParseCorrupt(t *testing.T) {
	b := readModel(t, "mood_happy-msd-musicnn-1.onnx")
	for _, cut := range []int{1, 7, 100, len(b) / 2, len(b) - 1} {
		if _, err := Parse(b[:cut]); err == nil {
			t.Errorf("truncated at %d of %d bytes: parsed", cut, len(b))
		}
	}
	for _, junk := range [][]byte{nil, []byte("not a model"), {0xff, 0xff, 0xff}} {
		if _, err := Parse(junk); err == nil {
			t.Errorf("%q: parsed", junk)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte{0x3a, 0x02, 0x0a, 0x00})
	f.Add([]byte("not a model"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		// Whatever parses marshals and parses again to the same bytes.
		out := m.Marshal()
		m2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if !bytes.Equal(m2.Marshal(), out) {
			t.Fatal("marshal is not stable")
		}
	})
}
