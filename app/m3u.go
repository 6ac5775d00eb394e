package app

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/nomarr/nomarr/core/store"
)

// WriteM3U writes files as an extended M3U8 playlist meant to live in
// dir: `#EXTM3U`, then per track `#EXTINF:-1,ARTIST - TITLE` (the length
// unknown: the store does not keep it; TrackTitle's artist and title) and
// its path relative to dir (absolute when it has none, another drive),
// with forward slashes. extra lines (comments, each starting with #) come
// right after the header.
func WriteM3U(w io.Writer, dir string, files []store.File, extra ...string) error {
	b := bufio.NewWriter(w)
	fmt.Fprintln(b, "#EXTM3U")
	for _, x := range extra {
		fmt.Fprintln(b, x)
	}
	for _, f := range files {
		artist, title := TrackTitle(f.Path)
		name := title
		if artist != "" {
			name = artist + " - " + title
		}
		fmt.Fprintf(b, "#EXTINF:-1,%s\n%s\n", oneLine(name), oneLine(playlistPath(dir, f.Path)))
	}
	return b.Flush()
}

// playlistPath is path relative to dir, as a playlist there names it.
func playlistPath(dir, path string) string {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(absDir, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

// oneLine keeps a playlist entry on its line.
func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }
