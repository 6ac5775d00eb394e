package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/tags"
)

// navidromeTagConf is Navidrome's own reading of a custom tag (its
// conf.TagConf fields that the snippet sets).
type navidromeTagConf struct {
	Aliases []string
	Type    string
	Split   []string
}

// The snippet is valid TOML, and every nom key Nomarr writes, in every
// format TagLib writes, has an alias under which Navidrome reads it: the
// file's name lower-cased. Scores are floats, lists split on "; ".
func TestNavidromeConfigCoversEveryKey(t *testing.T) {
	var b bytes.Buffer
	if err := WriteNavidromeConfig(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct{ Tags map[string]navidromeTagConf }
	md, err := toml.Decode(b.String(), &doc)
	if err != nil {
		t.Fatalf("not TOML: %v\n%s", err, b.String())
	}
	if und := md.Undecoded(); len(und) > 0 {
		t.Errorf("keys Navidrome does not know: %v", und)
	}
	formats := []tagwrite.Format{tagwrite.MP3, tagwrite.MP4, tagwrite.FLAC, tagwrite.Vorbis, tagwrite.Opus, tagwrite.OggFLAC,
		tagwrite.WAV, tagwrite.AIFF, tagwrite.WavPack, tagwrite.APE, tagwrite.ASF}
	keys := append(tags.Keys(), tags.WrittenKeys()...)
	if len(doc.Tags) != len(keys) {
		t.Errorf("%d tags for %d keys", len(doc.Tags), len(keys))
	}
	aliased := map[string]string{}
	for name, c := range doc.Tags {
		for _, a := range c.Aliases {
			if other, ok := aliased[a]; ok {
				t.Errorf("alias %q of both %s and %s", a, name, other)
			}
			aliased[a] = name
			if a != strings.ToLower(a) {
				t.Errorf("%s: alias %q not lower case", name, a)
			}
		}
	}
	for _, k := range keys {
		c, ok := doc.Tags[NavidromeName(k)]
		if !ok {
			t.Errorf("no tag for %s", k)
			continue
		}
		for _, f := range formats {
			if a := strings.ToLower(tagwrite.FileName(f, k)); !slices.Contains(c.Aliases, a) {
				t.Errorf("%s in %s: no alias %q (aliases %v)", k, f, a, c.Aliases)
			}
		}
		score := strings.Contains(k, "_musicnn_")
		if score != (c.Type == "float") {
			t.Errorf("%s: Type %q", k, c.Type)
		}
		list := k == tags.KeyTopTags || strings.HasPrefix(k, "mood-") || strings.HasSuffix(k, "-written")
		if list != slices.Equal(c.Split, []string{"; "}) {
			t.Errorf("%s: Split %q", k, c.Split)
		}
	}
	if got := doc.Tags["nom_mood_strict"].Aliases; !slices.Equal(got,
		[]string{"nom:mood-strict", "----:com.apple.itunes:nom:mood-strict", "nom_mood_strict"}) {
		t.Errorf("mood-strict aliases %q", got)
	}
}
