package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A scenario with several invalid entries in one map is rejected with the
// same message on every parse, naming the first entry in key order:
// validation walks maps in sorted order.
func TestParseErrorIsDeterministic(t *testing.T) {
	cases := []struct{ expect, want string }{
		{`status: {"worker:discovery:7": healthy, "worker:discovery:5": healthy}`, `"worker:discovery:5"`},
		{`absent: [{event: kill, bogus_d: 4, bogus_b: 2, bogus_a: 1, bogus_c: 3}]`, `"bogus_a"`},
		{`counts: {spawn: "x", kill: "y", restart: "z"}`, "counts.kill"},
	}
	for _, tc := range cases {
		y := "name: x\nduration: 1m\nconfig: {workers: 1}\nexpect:\n  " + tc.expect + "\n"
		var first string
		for i := 0; i < 100; i++ {
			_, err := Parse([]byte(y))
			if err == nil {
				t.Fatalf("%s: expected an error", tc.expect)
			}
			if i == 0 {
				first = err.Error()
			} else if err.Error() != first {
				t.Fatalf("%s: same bytes, different errors:\n%s\n%s", tc.expect, first, err)
			}
		}
		if !strings.Contains(first, tc.want) {
			t.Errorf("%s: want the error to name %s, got %s", tc.expect, tc.want, first)
		}
	}
}

// A component's first status event has no `from` in the trace (the monitor
// had no status before; empty fields are omitted) and is matched with
// `from: ""`.
func TestFirstStatusMatchesEmptyFrom(t *testing.T) {
	sc, err := Parse([]byte(`name: first-status
seed: 1
duration: 10s
config: {workers: 1}
library: {files: 0}
expect:
  events:
    - {event: status, component: "worker:discovery:0", from: "", to: pending}
    - {event: status, component: "worker:discovery:0", from: pending, to: healthy}
`))
	if err != nil {
		t.Fatal(err)
	}
	var trace strings.Builder
	res, err := Run(sc, Options{Check: true, Trace: &trace})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failures) != 0 {
		t.Fatalf("failures: %v", res.Failures)
	}
	for _, line := range strings.Split(trace.String(), "\n") {
		if strings.Contains(line, `"event":"status"`) {
			if strings.Contains(line, `"from"`) || !strings.Contains(line, `"to":"pending"`) {
				t.Errorf("first status line %s: want no from, to pending", line)
			}
			break
		}
	}
}

// Scenario expectations pin the mechanism their comments describe: each
// scenario fails once that mechanism is configured away (retry backoff,
// circuit breaker, breaker cool-down).
func TestScenarioExpectationsDependOnTheirMechanism(t *testing.T) {
	cases := []struct{ file, cfg string }{
		// "retried with backoff (60 s, 120 s, …)".
		{"transient-error.yaml", "{workers: 1, transient_base: 1ms, transient_max: 1ms}"},
		// Preflight failures open the GPU breaker; workers poll only after each cool-down.
		{"gpu-long-outage.yaml", "{workers: 2, gpu: true, breaker_threshold: 100000}"},
		// The worker backs off behind its breaker.
		{"service-down.yaml", "{workers: 1, breaker_cooldown: 1ms}"},
		// Workers back off behind their circuit breakers.
		{"store-flaky.yaml", "{workers: 3, breaker_threshold: 100000}"},
	}
	configLine := regexp.MustCompile(`(?m)^config: \{.*\}$`)
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("..", "scenarios", c.file))
		if err != nil {
			t.Fatal(err)
		}
		y := configLine.ReplaceAllString(string(data), "config: "+c.cfg)
		if y == string(data) {
			t.Fatalf("%s: no one-line config to replace", c.file)
		}
		sc, err := Parse([]byte(y))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		res, err := Run(sc, Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Failures) == 0 {
			t.Errorf("%s still passes with config %s", c.file, c.cfg)
		}
	}
}
