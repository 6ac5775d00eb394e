//go:build !cgo

package app

// builtWithCgo: this binary was built without cgo (CGO_ENABLED=0, which Go
// picks when it finds no C compiler): its MusiCNN analyzer fails every
// model load with inference.ErrNoCgo, and its tag writing with tagwrite.ErrNoTagLib.
const builtWithCgo = false
