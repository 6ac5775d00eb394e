package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's generated part")

const referencePath = "../docs/configuration.md"

func TestEveryKeyHasAMeaning(t *testing.T) {
	for _, k := range Keys() {
		if meanings[k] == "" {
			t.Errorf("key %s has no meaning in config/reference.go", k)
		}
	}
	for k := range meanings {
		if !Known(k) {
			t.Errorf("meanings names %s, which is no key", k)
		}
	}
	if types := keyTypes(); len(types) != len(Keys()) {
		t.Errorf("keyTypes knows %d keys of %d", len(types), len(Keys()))
	}
}

// TestEveryAppKeyIsDescribed guards that each application key has a
// meaning and a default to show, and that no name is taken twice or by a
// worker-system key or alias.
func TestEveryAppKeyIsDescribed(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range AppKeys() {
		if k.Meaning == "" || (k.Shown == "" && k.Default == "") {
			t.Errorf("application key %s lacks a meaning or a default to show", k.Name)
		}
		if seen[k.Name] || Known(k.Name) {
			t.Errorf("application key %s is defined twice, or is a worker-system key or alias", k.Name)
		}
		seen[k.Name] = true
	}
}

// docs/configuration.md holds config.Reference and config.AppReference
// between their markers, as generated from the keys, their defaults and
// their meanings.
func TestConfigurationDoc(t *testing.T) {
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	next := doc
	for _, part := range []struct{ begin, end, want string }{
		{ReferenceBegin, ReferenceEnd, Reference()},
		{AppReferenceBegin, AppReferenceEnd, AppReference()},
	} {
		head, rest, ok1 := strings.Cut(next, part.begin+"\n")
		_, tail, ok2 := strings.Cut(rest, part.end)
		if !ok1 || !ok2 {
			t.Fatalf("%s lacks the markers %q and %q", referencePath, part.begin, part.end)
		}
		next = head + part.begin + "\n" + part.want + part.end + tail
	}
	if next == doc {
		return
	}
	if *update {
		if err := os.WriteFile(referencePath, []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the configuration keys; rewrite it with\n\tgo test ./config -run TestConfigurationDoc -update", referencePath)
}

// TestMeaningCoversEveryKey: Meaning answers for every worker-system and
// application key, and for nothing else.
func TestMeaningCoversEveryKey(t *testing.T) {
	keys := Keys()
	for _, k := range AppKeys() {
		keys = append(keys, k.Name)
	}
	for _, k := range keys {
		if Meaning(k) == "" {
			t.Errorf("Meaning(%q) is empty", k)
		}
	}
	for _, k := range []string{"tagger_worker_count", "no_such_key", ""} {
		if m := Meaning(k); m != "" {
			t.Errorf("Meaning(%q) = %q, want \"\"", k, m)
		}
	}
}
