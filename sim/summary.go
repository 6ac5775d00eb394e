package sim

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteSummary prints a readable summary of a run.
func (r *Result) WriteSummary(out io.Writer) {
	s := r.Summary
	fmt.Fprintf(out, "scenario %s (seed %d): %s simulated, %d events\n", r.Scenario, r.Seed, r.Simulated, r.Events)
	fmt.Fprintf(out, "  files: %d tagged of %d, %d failed, %d quarantined, %d missing, %d claims left\n",
		s.Tagged, s.Files, len(s.FailedFiles), len(s.Quarantined), len(s.MissingFiles), s.ClaimsLeft)
	fmt.Fprintf(out, "  workers: %d restarts, %d claim conflicts, failed: %s\n", s.Restarts, s.Conflicts, list(s.FailedWorkers))
	comps := make([]string, 0, len(s.Status))
	for c := range s.Status {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, c := range comps {
		fmt.Fprintf(out, "    %s: %s\n", c, s.Status[c])
	}
	fmt.Fprintf(out, "  store: %d operations, %d failed by injection", s.StoreOps, s.StoreFaults)
	if s.LostReplies > 0 {
		fmt.Fprintf(out, ", %d made but their answer lost", s.LostReplies)
	}
	fmt.Fprintln(out)
	kinds := make([]string, 0, len(r.Counts))
	for k := range r.Counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, r.Counts[k]))
	}
	fmt.Fprintf(out, "  events: %s\n", strings.Join(parts, " "))
	if len(r.Violations) > 0 {
		fmt.Fprintf(out, "  SAFETY VIOLATIONS (%d):\n", len(r.Violations))
		for _, v := range r.Violations {
			fmt.Fprintf(out, "    %s\n", v)
		}
	}
	if len(r.Failures) == 0 {
		fmt.Fprintf(out, "  expect: ok\n")
		return
	}
	fmt.Fprintf(out, "  expect: %d FAILED\n", len(r.Failures))
	for _, f := range r.Failures {
		fmt.Fprintf(out, "    %s\n", f)
	}
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
