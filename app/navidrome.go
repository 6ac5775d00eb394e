package app

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nomarr/nomarr/adapters/tagwrite"
	"github.com/nomarr/nomarr/core/tags"
)

// NavidromeTag is one custom tag of navidrome.toml's Tags section: the
// name Navidrome gives it, the names under which Navidrome finds it in
// the files (Aliases) and how it reads the value.
type NavidromeTag struct {
	Name    string
	Key     string // the nom key it shows
	Aliases []string
	Float   bool // Type = "float": a score
	List    bool // Split = ["; "]: values joined by tags.ListSep
}

// NavidromeFormats are the formats whose names NavidromeTags lists, one
// of each naming: ID3v2 TXXX (MP3, WAV, AIFF; an ASF attribute has the
// same name), MP4 free-form atom, Vorbis comment (FLAC, Ogg, APEv2).
var NavidromeFormats = []tagwrite.Format{tagwrite.MP3, tagwrite.MP4, tagwrite.FLAC, tagwrite.WavPack, tagwrite.ASF}

// NavidromeName is Navidrome's name for a nom key: "nom_" and the key,
// '-' as '_' ("mood-strict" → "nom_mood_strict").
func NavidromeName(key string) string { return "nom_" + strings.ReplaceAll(key, "-", "_") }

// NavidromeAlias is the name under which Navidrome (through TagLib) finds
// a tag named name in a file: lower-cased, as it lower-cases every name
// it reads. A TXXX frame is known by its description ("nom:mood-strict"),
// an MP4 free-form atom by its whole name (Navidrome cuts only a
// lower-case "com.apple.itunes" prefix), a Vorbis comment or APE item by
// its name ("nom_mood_strict").
func NavidromeAlias(name string) string { return strings.ToLower(name) }

// NavidromeTags are the custom tags that show every nom key Nomarr
// writes (tags.Keys, tags.WrittenKeys) in Navidrome, sorted by name. The
// standard fields need none: Navidrome reads MOOD and GENRE as its mood
// and genre.
func NavidromeTags() []NavidromeTag {
	keys := append(tags.Keys(), tags.WrittenKeys()...)
	sort.Strings(keys)
	lists := []string{tags.KeyTopTags, tags.KeyMoodStrict, tags.KeyMoodRegular, tags.KeyMoodLoose}
	lists = append(lists, tags.WrittenKeys()...)
	var scores []string
	for _, h := range tags.Heads {
		c := tags.Classes[h]
		scores = append(scores, tags.ClassKey(h, c[0]), tags.ClassKey(h, c[1]), tags.SpreadKey(h))
	}
	out := make([]NavidromeTag, 0, len(keys))
	for _, k := range keys {
		t := NavidromeTag{Name: NavidromeName(k), Key: k, Float: slices.Contains(scores, k), List: slices.Contains(lists, k)}
		for _, f := range NavidromeFormats {
			if a := NavidromeAlias(tagwrite.FileName(f, k)); !slices.Contains(t.Aliases, a) {
				t.Aliases = append(t.Aliases, a)
			}
		}
		out = append(out, t)
	}
	return out
}

// WriteNavidromeConfig writes the Tags section of navidrome.toml that
// declares NavidromeTags, with a comment on where it goes.
func WriteNavidromeConfig(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Nomarr's tags as Navidrome (0.55 or later) custom tags: add to navidrome.toml,\n" +
		"# then run a full scan. MOOD and GENRE need nothing here: Navidrome reads them\n" +
		"# as its mood and genre tags. Scores are floats; lists are split on \"; \".\n")
	for _, t := range NavidromeTags() {
		fmt.Fprintf(&b, "\n# nom:%s\n[Tags.%s]\nAliases = [", t.Key, t.Name)
		for i, a := range t.Aliases {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(a))
		}
		b.WriteString("]\n")
		if t.Float {
			b.WriteString("Type = \"float\"\n")
		}
		if t.List {
			fmt.Fprintf(&b, "Split = [%s]\n", strconv.Quote(tags.ListSep))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
