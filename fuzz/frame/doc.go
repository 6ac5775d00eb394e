// Package fuzzframe holds the fuzz tests of core/frame, the health frame
// codec (docs/design.md §3): Parse never panics, agrees with an encoding/json
// reference decoder, and round-trips through Append; the Splitter gives the
// same lines however its input is chunked, within bounded memory.
//
// Run one target with, for example:
//
//	go test -run x -fuzz FuzzParse -fuzztime 20s ./fuzz/frame
package fuzzframe
