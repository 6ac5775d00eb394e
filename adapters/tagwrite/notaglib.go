//go:build !cgo || notaglib

package tagwrite

import "os"

// Without cgo (or with the notaglib build tag, for a machine without
// libtag1-dev) the package compiles, but Read and Write fail with ErrNoTagLib.

// haveTagLib: Read and Write work in this build.
const haveTagLib = false

func taglibWrite(*os.File, Format, string, [][2]string, [][2]string) error { return ErrNoTagLib }

func taglibRead(*os.File, Format, string, []string) ([][2]string, error) { return nil, ErrNoTagLib }
