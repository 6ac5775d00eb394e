package sim

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Expect holds a scenario's assertions, checked after the run. Unset fields
// are not checked.
type Expect struct {
	AllTagged      *bool             `yaml:"all_tagged"`       // every file tagged
	Tagged         *int              `yaml:"tagged"`           // exactly this many files tagged
	FailedWorkers  []string          `yaml:"failed_workers"`   // exactly these components end failed ([] = none)
	FailedFiles    []string          `yaml:"failed_files"`     // exactly these files end failed
	Quarantined    []string          `yaml:"quarantined"`      // exactly these files were quarantined
	MissingFiles   []string          `yaml:"missing_files"`    // exactly these files end missing (not valid)
	NoOrphanClaims *bool             `yaml:"no_orphan_claims"` // no claim left in the store at the end
	Status         map[string]string `yaml:"status"`           // final owner status per component (first instance)
	Events         []Match           `yaml:"events"`           // must appear in this order (a subsequence of the trace)
	Absent         []Match           `yaml:"absent"`           // must not appear at all
	Counts         map[string]string `yaml:"counts"`           // event kind → "3", ">0", ">=2", "<=5", "<1"
	Violations     *int              `yaml:"violations"`       // safety violations found (default: must be 0)
}

// Match selects trace events. Keys: event, instance, component, file, worker,
// from, to, backoff_ms, restart_count, code, count (exact), reason (substring),
// at (exact time), after / before (time bounds, inclusive).
type Match map[string]any

var matchKeys = []string{"event", "instance", "component", "file", "worker", "from", "to", "backoff_ms", "restart_count",
	"code", "count", "reason", "at", "after", "before"}

func (e *Expect) validate(workers int) error {
	for _, c := range e.FailedWorkers {
		if !validComponent(c, workers) {
			return fmt.Errorf("failed_workers: unknown component %q", c)
		}
	}
	for _, c := range sortedKeys(e.Status) {
		s := e.Status[c]
		if !validComponent(c, workers) {
			return fmt.Errorf("status: unknown component %q", c)
		}
		switch s {
		case "pending", "healthy", "unhealthy", "failed":
		default:
			return fmt.Errorf("status.%s: want pending, healthy, unhealthy or failed, got %q", c, s)
		}
	}
	for i, m := range append(slices.Clone(e.Events), e.Absent...) {
		if err := m.validate(); err != nil {
			return fmt.Errorf("match %d: %w", i, err)
		}
	}
	for _, k := range sortedKeys(e.Counts) {
		if _, _, err := parseCount(e.Counts[k]); err != nil {
			return fmt.Errorf("counts.%s: %w", k, err)
		}
	}
	return nil
}

func (m Match) validate() error {
	if _, ok := m["event"]; !ok {
		return fmt.Errorf("needs an event key")
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		if !slices.Contains(matchKeys, k) {
			return fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(matchKeys, ", "))
		}
		if k == "at" || k == "after" || k == "before" {
			if _, err := time.ParseDuration(fmt.Sprint(v)); err != nil {
				return fmt.Errorf("%s: invalid duration %v", k, v)
			}
		}
	}
	return nil
}

func (m Match) matches(r *Rec) bool {
	for _, k := range sortedKeys(m) {
		want := fmt.Sprint(m[k])
		switch k {
		case "at", "after", "before":
			d, _ := time.ParseDuration(want)
			ms := d.Milliseconds()
			if (k == "at" && r.TMs != ms) || (k == "after" && r.TMs < ms) || (k == "before" && r.TMs > ms) {
				return false
			}
		case "reason":
			if !strings.Contains(r.Reason, want) {
				return false
			}
		default:
			if got, _ := r.field(k); got != want {
				return false
			}
		}
	}
	return true
}

func (r *Rec) field(k string) (string, bool) {
	e := &r.Event
	switch k {
	case "event":
		return e.Event, true
	case "instance":
		return e.Instance, true
	case "component":
		return e.Component, true
	case "file":
		return e.File, true
	case "worker":
		return e.Worker, true
	case "from":
		return e.From, true
	case "to":
		return e.To, true
	case "backoff_ms":
		return strconv.FormatInt(e.BackoffMs, 10), true
	case "restart_count":
		return strconv.Itoa(e.RestartCount), true
	case "count":
		return strconv.Itoa(e.Count), true
	case "code":
		if e.Code == nil {
			return "", false
		}
		return strconv.Itoa(*e.Code), true
	}
	return "", false
}

func parseCount(s string) (op string, n int, err error) {
	s = strings.TrimSpace(s)
	for _, p := range []string{">=", "<=", "==", ">", "<"} {
		if strings.HasPrefix(s, p) {
			op, s = p, strings.TrimSpace(s[len(p):])
			break
		}
	}
	if op == "" {
		op = "=="
	}
	n, err = strconv.Atoi(s)
	if err != nil {
		return "", 0, fmt.Errorf("want a count such as 3, >0, >=2, <=5, got %q", s)
	}
	return op, n, nil
}

func countOK(op string, want, got int) bool {
	switch op {
	case ">=":
		return got >= want
	case "<=":
		return got <= want
	case ">":
		return got > want
	case "<":
		return got < want
	}
	return got == want
}

// check evaluates the assertions against a finished run.
func (e *Expect) check(res *Result) []string {
	var fails []string
	failf := func(format string, a ...any) { fails = append(fails, fmt.Sprintf(format, a...)) }
	if e.AllTagged != nil && *e.AllTagged != (res.Summary.Tagged == res.Summary.Files) {
		failf("all_tagged: want %v, %d of %d files tagged", *e.AllTagged, res.Summary.Tagged, res.Summary.Files)
	}
	if e.Tagged != nil && *e.Tagged != res.Summary.Tagged {
		failf("tagged: want %d, got %d", *e.Tagged, res.Summary.Tagged)
	}
	if e.FailedWorkers != nil && !sameSet(e.FailedWorkers, res.Summary.FailedWorkers) {
		failf("failed_workers: want %v, got %v", e.FailedWorkers, res.Summary.FailedWorkers)
	}
	if e.FailedFiles != nil && !sameSet(e.FailedFiles, res.Summary.FailedFiles) {
		failf("failed_files: want %v, got %v", e.FailedFiles, res.Summary.FailedFiles)
	}
	if e.Quarantined != nil && !sameSet(e.Quarantined, res.Summary.Quarantined) {
		failf("quarantined: want %v, got %v", e.Quarantined, res.Summary.Quarantined)
	}
	if e.MissingFiles != nil && !sameSet(e.MissingFiles, res.Summary.MissingFiles) {
		failf("missing_files: want %v, got %v", e.MissingFiles, res.Summary.MissingFiles)
	}
	if e.NoOrphanClaims != nil && *e.NoOrphanClaims && res.Summary.ClaimsLeft != 0 {
		failf("no_orphan_claims: %d claims left in the store", res.Summary.ClaimsLeft)
	}
	for _, c := range sortedKeys(e.Status) {
		if got := res.Summary.Status[c]; got != e.Status[c] {
			failf("status.%s: want %s, got %q", c, e.Status[c], got)
		}
	}
	i := 0
	for _, m := range e.Events {
		found := false
		for ; i < len(res.Trace); i++ {
			if m.matches(&res.Trace[i]) {
				found = true
				i++
				break
			}
		}
		if !found {
			failf("events: no %v in the trace after the previous match", map[string]any(m))
			break
		}
	}
	for _, m := range e.Absent {
		for j := range res.Trace {
			if m.matches(&res.Trace[j]) {
				failf("absent: %v found at t_ms=%d", map[string]any(m), res.Trace[j].TMs)
				break
			}
		}
	}
	for _, k := range sortedKeys(e.Counts) {
		op, n, _ := parseCount(e.Counts[k])
		if got := res.Counts[k]; !countOK(op, n, got) {
			failf("counts.%s: want %s, got %d", k, e.Counts[k], got)
		}
	}
	wantViol := 0
	if e.Violations != nil {
		wantViol = *e.Violations
	}
	if len(res.Violations) != wantViol {
		failf("violations: want %d, got %d: %v", wantViol, len(res.Violations), first(res.Violations, 5))
	}
	return fails
}

// sortedKeys returns m's keys in order, so that whatever is reported while
// walking a map (the first invalid key, failed expectations) is the same on
// every run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	sort.Strings(x)
	sort.Strings(y)
	return slices.Equal(x, y)
}
