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

// docs/configuration.md holds config.Reference between its markers, as
// generated from the keys, their defaults and their meanings.
func TestConfigurationDoc(t *testing.T) {
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	head, rest, ok1 := strings.Cut(doc, ReferenceBegin+"\n")
	old, tail, ok2 := strings.Cut(rest, ReferenceEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers %q and %q", referencePath, ReferenceBegin, ReferenceEnd)
	}
	want := Reference()
	if old == want {
		return
	}
	if *update {
		if err := os.WriteFile(referencePath, []byte(head+ReferenceBegin+"\n"+want+ReferenceEnd+tail), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the configuration keys; rewrite it with\n\tgo test ./config -run TestConfigurationDoc -update", referencePath)
}
