package tagwrite

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/tags"
)

// Info is what a file's own tags say of it: its artist, title and album,
// each "" when the file has none (several values joined by "; ").
type Info struct {
	Artist, Title, Album string
}

// MaxInfoText bounds each text of an Info, in bytes (a longer one is cut
// at a character boundary).
const MaxInfoText = 1024

// infoNames are the names of the artist, title and album fields in a file
// of format f ("": not one TagLib lists among the fields: a WMA's title and
// author are in its content description).
func infoNames(f Format) [3]string {
	switch f {
	case MP3, WAV, AIFF:
		return [3]string{"TPE1", "TIT2", "TALB"}
	case MP4:
		return [3]string{"\u00a9ART", "\u00a9nam", "\u00a9alb"}
	case ASF:
		return [3]string{"", "", "WM/AlbumTitle"}
	}
	return [3]string{"ARTIST", "TITLE", "ALBUM"} // Vorbis comment, APEv2 (names upper-cased)
}

// ReadInfo reads the artist, title and album of the file at path from its
// tags with TagLib (an ID3v2 tag for MP3 and AIFF, not ID3v1; a WAV's
// ID3v2 chunk or RIFF INFO chunk). Errors are Read's.
func ReadInfo(path string) (Info, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return Info{}, fmt.Errorf("tagwrite: read info %s: %w", path, err)
	}
	defer f.Close()
	format, err := detect(f)
	if err != nil {
		return Info{}, err
	}
	names := infoNames(format)
	var ask []string
	for _, n := range names {
		if n != "" {
			ask = append(ask, n)
		}
	}
	recs, err := taglibRead(f, format, prefix(format), ask)
	if err != nil {
		return Info{}, fmt.Errorf("tagwrite: read info %s (%s): %w", path, format, err)
	}
	var vals [3][]string
	for _, r := range recs {
		for i, n := range names {
			if n != "" && r[0] == n && strings.TrimSpace(r[1]) != "" {
				vals[i] = append(vals[i], strings.TrimSpace(r[1]))
			}
		}
	}
	text := func(v []string) string {
		return cut(strings.ToValidUTF8(strings.Join(v, tags.ListSep), "\uFFFD"), MaxInfoText)
	}
	return Info{Artist: text(vals[0]), Title: text(vals[1]), Album: text(vals[2])}, nil
}

// cut is s cut to at most n bytes at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
