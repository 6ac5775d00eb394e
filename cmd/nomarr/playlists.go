package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/app"
)

// runPlaylists implements `nomarr playlists --out DIR [--rules FILE]`:
// M3U8 and Navidrome smart playlists per mood label and per rule.
func runPlaylists(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("playlists", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the folder to write the playlists in (required)")
	rulesFile := fs.String("rules", "", "a YAML list of playlist rules (docs/commands.md)")
	s, rest, code, ok := commandSettings("playlists", fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return usageError(stderr, "playlists")
	}
	if !pathArgOK(stderr, "playlists", "--out", *out) {
		return exitUsage
	}
	var rules []app.PlaylistRule
	if *rulesFile != "" {
		var err error
		if rules, err = app.LoadPlaylistRules(*rulesFile); err != nil {
			fmt.Fprintf(stderr, "nomarr playlists: %v\n", err)
			return exitUsage
		}
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr playlists: %v\n", err)
		return 1
	}
	defer st.Close()
	lists, err := app.Playlists(context.Background(), st, app.ModelSetVersion(s), rules)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr playlists: %v\n", err)
		return 1
	}
	written, err := app.WritePlaylists(*out, lists)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr playlists: %v\n", err)
		return 1
	}
	for _, p := range lists {
		fmt.Fprintf(stdout, "%s: %s\n", printable(p.Name), nFiles(len(p.Files), ""))
	}
	fmt.Fprintf(stdout, "%d playlist files in %s\n", len(written), printable(*out))
	return 0
}
