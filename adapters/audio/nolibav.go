//go:build !cgo || nolibav

package audio

import (
	"context"

	"github.com/nomarr/nomarr/core/worker"
)

// HasLibav reports whether this build decodes through libav (DecoderLibav).
const HasLibav = false

func runLibav(ctx context.Context, opt Options, abs string, maxSamples int, fn func([]float32) error) (int, error) {
	return 0, &Error{Class: worker.ServiceDown,
		Reason: "decoder libav: this build has none (built without cgo or with the nolibav tag); use decoder ffmpeg"}
}
