//go:build cgo

package app

// builtWithCgo: this binary was built with cgo (CGO_ENABLED=1), which the
// MusiCNN analyzer needs (ONNX Runtime, TagLib).
const builtWithCgo = true
