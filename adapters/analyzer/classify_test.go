package analyzer

import (
	"errors"
	"testing"

	"github.com/nomarr/nomarr/adapters/audio"
	"github.com/nomarr/nomarr/core/worker"
)

// classify carries a decode error's class, reason and missing flag into the
// worker's result, names the dependency of a service_down, and makes any
// other error transient.
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want worker.Result
	}{
		{"missing", &audio.Error{Class: worker.Permanent, Reason: "missing", Missing: true},
			worker.Result{Class: worker.Permanent, Reason: "missing", Missing: true}},
		{"not audio", &audio.Error{Class: worker.Permanent, Reason: "not audio: x"},
			worker.Result{Class: worker.Permanent, Reason: "not audio: x"}},
		{"no ffmpeg", &audio.Error{Class: worker.ServiceDown, Reason: "ffmpeg not found"},
			worker.Result{Class: worker.ServiceDown, Dependency: worker.DepDecoder, Reason: "ffmpeg not found"}},
		{"other", errors.New("boom"), worker.Result{Class: worker.Transient, Reason: "boom"}},
	} {
		got := classify(c.err, worker.DepDecoder)
		if got.Class != c.want.Class || got.Reason != c.want.Reason || got.Missing != c.want.Missing || got.Dependency != c.want.Dependency {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
