package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// meanings says what each key does, in one or two sentences for the
// configuration reference (Reference). Every key has one
// (TestEveryKeyHasAMeaning).
var meanings = map[string]string{
	"workers":                "Worker processes this main process runs (`worker:discovery:0` … `N-1`). Alias `tagger_worker_count`; when one source sets both, `workers` wins.",
	"frame_interval":         "How often a worker writes a health frame to its pipe, whatever its job is doing. Must be below `stale_after`.",
	"stale_after":            "A worker whose last frame is older than this shows `unhealthy`.",
	"hang_after":             "A worker that sends no frame for this long is killed as hung and counts as dead.",
	"startup_timeout":        "A worker spawned that sends no first frame within this long is killed.",
	"cold_start_max":         "A worker still `initializing` or `loading_models` after this long is killed.",
	"stall_after":            "A job whose progress counter stands still this long while frames go on is killed (an orphaned worker abandons it). Must exceed two frame intervals.",
	"stop_grace":             "On a graceful stop, how long workers may finish their job before they are killed.",
	"check_interval":         "How often the health monitor reads each worker's status, and the main loop's tick.",
	"history_interval":       "How often one snapshot of every status is written to the health history.",
	"history_retention":      "Health-history rows older than this are deleted (hourly, at most 10,000 a statement); 0 keeps them forever.",
	"backoff_base":           "First wait before restarting a dead worker; it doubles with each consecutive restart.",
	"backoff_max":            "Longest wait before a restart.",
	"window_limit":           "At most this many restarts within `window`; the death that would exceed it makes the worker `failed`.",
	"window":                 "The sliding window of `window_limit`, kept in wall-clock milliseconds so that it survives restarts of the app.",
	"lifetime_limit":         "At most this many restarts in a worker's lifetime; the next death makes it `failed`.",
	"healthy_reset":          "This long of continuous health resets the backoff exponent.",
	"lifetime_reset":         "This long of continuous health resets the lifetime restart count. Must be at least `window`.",
	"lease_ttl":              "A claim's lease; the owner renews its workers' leases every third of it. Leases that run out are taken back by the claim cleanup.",
	"cleanup_period":         "How often a main process deletes expired claims and claims whose file is no longer work.",
	"discover_batch":         "Candidate files a worker reads per discovery. At least 1.",
	"quarantine_after":       "Worker deaths while holding one file after which the file is quarantined (`failed`, \"crashed a worker\").",
	"idle_poll_min":          "An idle worker's first wait between discoveries; it grows ×1.5 per empty discovery.",
	"idle_poll_max":          "An idle worker's longest wait between discoveries (it reads the pause flag every second meanwhile).",
	"cache_idle_timeout":     "Loaded models are unloaded after this long idle; models that fell back to the CPU go back to the GPU after this long. 0: never.",
	"max_consecutive_errors": "Counted job errors in a row after which a worker exits non-zero (the restart policy applies).",
	"transient_retries":      "Attempts of a file failing with a transient error before it fails for good.",
	"transient_base":         "Wait after a file's first transient failure; it doubles with each attempt.",
	"transient_max":          "Longest wait before a transient failure is retried.",
	"breaker_threshold":      "Consecutive failures of a dependency (store, GPU, decoder, analyzer) that open its circuit breaker.",
	"breaker_cooldown":       "How long an open breaker refuses calls before it lets one trial through.",
	"gpu":                    "Run inference on the GPU: a probe writes the host's GPU health, and workers check it before each claim.",
	"gpu_probe_interval":     "How often the GPU probe runs (it times out after 5 s).",
	"gpu_stale_after":        "Workers refuse GPU jobs while the GPU health is older than this. With `gpu: true`, at least `gpu_probe_interval` + 5 s.",
}

// Reference renders the configuration reference of the worker-system keys
// as Markdown: one row per key (Keys order) with its type, its default
// (Defaults) and its meaning. docs/configuration.md holds it between the
// markers ReferenceBegin and ReferenceEnd.
func Reference() string {
	var b strings.Builder
	d := Defaults()
	values := d.Values()
	types := keyTypes()
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, k := range Keys() {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", k, types[k], shortValue(values[k]), meanings[k])
	}
	return b.String()
}

// AppReference renders the configuration reference of the application's
// keys (AppKeys) as Markdown: one row per key, in AppKeys order, with its
// default (Shown, else Default in backquotes) and its meaning.
// docs/configuration.md holds it between AppReferenceBegin and
// AppReferenceEnd.
func AppReference() string {
	var b strings.Builder
	b.WriteString("| key | default | meaning |\n|---|---|---|\n")
	for _, k := range appKeys {
		shown := k.Shown
		if shown == "" {
			shown = "`" + k.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Name, shown, k.Meaning)
	}
	return b.String()
}

// The markers around the generated texts in docs/configuration.md.
const (
	ReferenceBegin    = "<!-- BEGIN config.Reference: go test ./config -run TestConfigurationDoc -update -->"
	ReferenceEnd      = "<!-- END config.Reference -->"
	AppReferenceBegin = "<!-- BEGIN config.AppReference: go test ./config -run TestConfigurationDoc -update -->"
	AppReferenceEnd   = "<!-- END config.AppReference -->"
)

// keyTypes maps each key to the kind of value it takes.
func keyTypes() map[string]string {
	out := map[string]string{}
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		f := t.Field(i)
		switch f.Type {
		case reflect.TypeOf(time.Duration(0)):
			out[f.Tag.Get("key")] = "duration"
		case reflect.TypeOf(0):
			out[f.Tag.Get("key")] = "integer"
		case reflect.TypeOf(false):
			out[f.Tag.Get("key")] = "boolean"
		}
	}
	return out
}

// shortValue writes a duration's text without its zero tail (1m, not
// 1m0s; 168h, not 168h0m0s), as `nomarr help` does.
func shortValue(v string) string {
	if strings.HasSuffix(v, "m0s") {
		v = strings.TrimSuffix(v, "0s")
	}
	if strings.HasSuffix(v, "h0m") {
		v = strings.TrimSuffix(v, "0m")
	}
	return v
}
