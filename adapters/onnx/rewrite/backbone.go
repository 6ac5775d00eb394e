// Package rewrite rewrites the MusiCNN backbone, at load time, into graphs
// that compute the same function with less work on ONNX Runtime's CPU
// kernels (the model file itself, and so nom_version, is untouched).
// Backbone applies, in order:
//
//   - foldGatherConv turns the exporter's im2col form of one temporal
//     convolution (Pad → Reshape → Gather → Reshape → Transpose → MatMul →
//     Add → Transpose, whose last Transpose alone costs ≈ 9 ms a patch) back
//     into the Conv it is;
//   - poolBeforeNorm moves each BatchNormalization (and Relu) that feeds a
//     MaxPool after it, exactly (see there), so they work on the pooled
//     values instead of the whole feature map, and pads the Conv to ONNX
//     Runtime's NCHWc channel block so pooling reads its blocked layout;
//   - fullWidthToConv1D turns the mid-end's convolutions, written as 2-D
//     convolutions of a one-channel image with a kernel as wide as the
//     image, into the 1-D convolutions over channels they are;
//   - pruneDeadFilters leaves the filters whose weights training drove to
//     zero out of the convolutions, their channels put back as their bias;
//   - foldConstantInputs takes those constant channels out of the mid-end's
//     first convolution, as a constant of the patch added to its output;
//   - temporalAsMatMul turns the temporal branch with the longest kernel
//     into a product with a banded matrix;
//   - splitFrontEnd cuts the "timbral" branches (Conv with a short kernel
//     over time → per-frame ops → Squeeze: each output frame depends only on
//     the input frames within the kernel's reach) into a front graph whose
//     time axis is free (plus two variants padded on one side only, for
//     patch edges), so that the runner computes them once per frame of the
//     track instead of once per patch (patches overlap by half; see
//     adapters/inference).
//
// Each step checks the exact pattern it needs and leaves the graph unchanged
// when it is not there; splitFrontEnd reports whether it found the branches.
// The package only edits graphs (adapters/onnx/graph); running them is
// adapters/inference's.
package rewrite

import (
	"fmt"

	"github.com/nomarr/nomarr/adapters/onnx/graph"
)

// Options are the backbone's patch geometry and the steps of Backbone to
// leave out; the zero value of each Keep field applies its step.
type Options struct {
	// Frames and Bands are the shape of one input patch, [n, Frames,
	// Bands]: the time axis the rewrites may rely on.
	Frames, Bands int64
	// KeepDeadFilters takes every filter for live: nothing is pruned and
	// no channel is known to be constant.
	KeepDeadFilters bool
	// KeepConstantInputs leaves out foldConstantInputs.
	KeepConstantInputs bool
	// KeepTemporalConvs leaves out temporalAsMatMul.
	KeepTemporalConvs bool
}

// FrontEnd describes the split of the backbone.
type FrontEnd struct {
	Front, Rest *graph.Model
	// StartEdge and EndEdge are the front graph with its convolutions
	// padded only before, or only after, the frames: over the first (last)
	// 2·Reach frames of a patch they give exactly the patch's first (last)
	// Reach output frames, and nothing else.
	StartEdge, EndEdge *graph.Model
	// FrontInput is the front graph's input: frames [n, T, Bands].
	FrontInput string
	// Outputs are the cut tensors [n, Channels[i], T], the front graph's
	// outputs and the rest graph's inputs besides the patches.
	Outputs  []string
	Channels []int64
	// Reach is the number of frames an output frame looks at on either side
	// (the kernels' half-width in time, the same for every branch).
	Reach int
	// RestInput is the patches' input name in the rest graph; RestOutputs
	// are its outputs, in the backbone's order.
	RestInput   string
	RestOutputs []string
}

// Backbone parses the backbone (data, an ONNX model), applies the exact
// rewrites opts selects and splits it. front is nil when the front-end
// branches were not found; whole is the rewritten graph before the split
// (serialized only when it is used).
func Backbone(data []byte, opts Options) (whole *graph.Model, front *FrontEnd, err error) {
	m, err := graph.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("rewrite: %w", err)
	}
	dead := deadWeight
	if opts.KeepDeadFilters {
		dead = 0
	}
	g := m.Graph
	foldGatherConv(g)
	poolBeforeNorm(g, dead)
	fullWidthToConv1D(g)
	pruneDeadFilters(g, dead)
	if !opts.KeepConstantInputs {
		foldConstantInputs(g, opts.Frames, dead)
	}
	if !opts.KeepTemporalConvs {
		temporalAsMatMul(g, opts.Frames, opts.Bands)
	}
	g.DropValueInfo()
	front, err = splitFrontEnd(m, opts.Frames, opts.Bands)
	if err != nil {
		return nil, nil, fmt.Errorf("rewrite: split the front end: %w", err)
	}
	return m, front, nil
}
