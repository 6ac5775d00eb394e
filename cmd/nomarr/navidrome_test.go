package main

import (
	"bytes"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/nomarr/nomarr/app"
)

// `nomarr navidrome-config` prints valid TOML with a custom tag for every
// nom key (app's TestNavidromeConfigCoversEveryKey checks the aliases).
func TestNavidromeConfigCommand(t *testing.T) {
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	if code := run([]string{"navidrome-config"}, &out, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	var doc struct {
		Tags map[string]struct{ Aliases []string }
	}
	if _, err := toml.Decode(out.String(), &doc); err != nil {
		t.Fatalf("not TOML: %v", err)
	}
	if len(doc.Tags) != len(app.NavidromeTags()) || len(doc.Tags["nom_mood_regular"].Aliases) != 3 {
		t.Errorf("%d tags: %v", len(doc.Tags), doc.Tags["nom_mood_regular"])
	}
	if code := run([]string{"navidrome-config", "extra"}, &out, &errb); code != exitUsage {
		t.Errorf("an argument: exit %d", code)
	}
}
