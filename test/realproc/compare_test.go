package realproc

import (
	"strings"
	"testing"

	"github.com/nomarr/nomarr/sim"
)

// statuses builds a trace of status changes of worker 0 from "ms:status"
// pairs.
func statuses(changes ...string) []sim.Rec {
	var out []sim.Rec
	for _, c := range changes {
		ms, to, _ := strings.Cut(c, ":")
		var r sim.Rec
		for _, ch := range ms {
			r.TMs = r.TMs*10 + int64(ch-'0')
		}
		r.Event.Event, r.Event.Component, r.Event.To = "status", "worker:discovery:0", to
		out = append(out, r)
	}
	return out
}

// TestSequenceMismatches: short statuses other than pending must be in both
// worlds; pending may be in one only; the changes must be in the same order
// and within tolerance; a change near the end may be in one trace only.
func TestSequenceMismatches(t *testing.T) {
	simTrace := statuses("0:pending", "500:healthy", "1600:unhealthy", "2500:pending", "3000:healthy")
	for _, c := range []struct {
		name   string
		real   []sim.Rec
		limit  int64
		agrees bool
	}{
		{"same", statuses("0:pending", "502:healthy", "1506:unhealthy", "2590:pending", "3093:healthy"), 8000, true},
		{"pending skipped", statuses("0:pending", "502:healthy", "1506:unhealthy", "2590:healthy"), 8000, true},
		{"short unhealthy blip", statuses("0:pending", "502:healthy", "900:unhealthy", "1000:healthy", "1506:unhealthy", "2590:healthy"), 8000, false},
		{"restart never healthy", statuses("0:pending", "502:healthy", "1506:unhealthy", "2590:pending"), 8000, false},
		{"failed instead", statuses("0:pending", "502:healthy", "1506:unhealthy", "2590:failed"), 8000, false},
		{"too late", statuses("0:pending", "502:healthy", "2506:unhealthy", "3093:healthy"), 8000, false},
		{"last change near the end", statuses("0:pending", "502:healthy", "1506:unhealthy"), 3500, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, _, problems := sequenceMismatches(simTrace, c.real, c.limit)
			if (len(problems) == 0) != c.agrees {
				t.Errorf("agrees = %v (%d changes matched), want %v: %v", len(problems) == 0, n, c.agrees, problems)
			}
		})
	}
}
