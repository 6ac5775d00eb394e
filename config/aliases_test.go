package config

import "testing"

// TestKeyBeatsItsAlias guards the rule that when one source sets both a key
// and its alias, the key wins, whatever the map order or the names' order.
func TestKeyBeatsItsAlias(t *testing.T) {
	c := Defaults()
	if err := c.Apply(map[string]any{"workers": 4, "tagger_worker_count": 9}); err != nil {
		t.Fatal(err)
	}
	if c.Workers != 4 {
		t.Errorf("workers 4 and tagger_worker_count 9: workers = %d, want 4", c.Workers)
	}
	names := []string{"workers", "a_key", "tagger_worker_count"}
	SortKeys(names)
	if names[0] != "tagger_worker_count" {
		t.Errorf("SortKeys: %v, want the alias first", names)
	}
	if Canonical("tagger_worker_count") != "workers" || Canonical("workers") != "workers" {
		t.Error("Canonical")
	}
	if Aliases()["tagger_worker_count"] != "workers" {
		t.Error("Aliases lacks tagger_worker_count")
	}
}
