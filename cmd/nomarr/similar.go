package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nomarr/nomarr/adapters/vectorindex"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/store"
)

// Bounds of -n for similar, mix and path.
const maxTracks = 1000

// withSimilar parses `nomarr NAME` with fs's own flags, checks the
// positional argument count (between least and most; most < 0: any) and
// -n, opens the store, loads the current model set's vectors and runs do
// with the positional arguments.
func withSimilar(name string, fs *flag.FlagSet, n *int, least, most int, args []string, stdout, stderr io.Writer,
	do func(ctx context.Context, st store.Store, sim *app.Similar, rest []string) int) int {
	fs.SetOutput(stderr)
	s, rest, code, ok := commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) < least || (most >= 0 && len(rest) > most) {
		return usageError(stderr, name)
	}
	if *n < 1 || *n > maxTracks {
		fmt.Fprintf(stderr, "nomarr %s: -n %d outside 1–%d\n", name, *n, maxTracks)
		return exitUsage
	}
	for _, p := range rest {
		if !pathArgOK(stderr, name, "FILE", p) {
			return exitUsage
		}
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	defer st.Close()
	ctx := context.Background()
	sim, err := app.LoadSimilar(ctx, st, app.ModelSetVersion(s), vectorindex.Config{})
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	return do(ctx, st, sim, rest)
}

// seeds resolves each path to a track with a vector; on an error it says
// which on stderr and returns false.
func seeds(ctx context.Context, name string, st store.Store, sim *app.Similar, paths []string, stderr io.Writer) ([]string, bool) {
	keys := make([]string, 0, len(paths))
	for _, p := range paths {
		k, err := sim.Seed(ctx, st, p)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
			return nil, false
		}
		keys = append(keys, k)
	}
	return keys, true
}

// similarLine is one track of `nomarr similar --json`.
type similarLine struct {
	Path  string  `json:"path"`
	Score float32 `json:"score"`
}

// runSimilar implements `nomarr similar FILE [-n 20] [--json | --m3u]`:
// the tracks closest to FILE, best first.
func runSimilar(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("similar", flag.ContinueOnError)
	n := fs.Int("n", 20, "how many tracks")
	asJSON := fs.Bool("json", false, "one JSON object a line: path and cosine score")
	asM3U := fs.Bool("m3u", false, "an M3U8 playlist (paths relative to the working directory)")
	return withSimilar("similar", fs, n, 1, 1, args, stdout, stderr, func(ctx context.Context, st store.Store, sim *app.Similar, rest []string) int {
		if *asJSON && *asM3U {
			fmt.Fprintln(stderr, "nomarr similar: --json and --m3u exclude each other")
			return exitUsage
		}
		keys, ok := seeds(ctx, "similar", st, sim, rest, stderr)
		if !ok {
			return 1
		}
		near, err := sim.Nearest(keys[0], *n)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr similar: %v\n", err)
			return 1
		}
		switch {
		case *asM3U:
			files := make([]store.File, len(near))
			for i, x := range near {
				files[i] = x.File
			}
			return writeM3U("similar", stdout, stderr, ".", files)
		case *asJSON:
			enc := jsonLines(stdout)
			for _, x := range near {
				if err := enc.Encode(similarLine{Path: x.File.Path, Score: x.Score}); err != nil {
					fmt.Fprintf(stderr, "nomarr similar: %v\n", err)
					return 1
				}
			}
		default:
			for _, x := range near {
				fmt.Fprintf(stdout, "%.3f  %s\n", x.Score, printable(x.File.Path))
			}
		}
		return 0
	})
}

// runMix implements `nomarr mix SEED… [-n 30] [--out FILE.m3u8]`.
func runMix(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mix", flag.ContinueOnError)
	n := fs.Int("n", 30, "how many tracks, the seeds included")
	out := fs.String("out", "", "write an M3U8 playlist there (paths relative to its folder) instead of listing paths")
	return withSimilar("mix", fs, n, 1, -1, args, stdout, stderr, func(ctx context.Context, st store.Store, sim *app.Similar, rest []string) int {
		keys, ok := seeds(ctx, "mix", st, sim, rest, stderr)
		if !ok {
			return 1
		}
		files, err := sim.Mix(keys, *n)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr mix: %v\n", err)
			return 1
		}
		return playlistOut("mix", *out, files, stdout, stderr)
	})
}

// runPath implements `nomarr path A B [-n 15]`.
func runPath(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("path", flag.ContinueOnError)
	n := fs.Int("n", 15, "how many tracks, both ends included (at least 2)")
	out := fs.String("out", "", "write an M3U8 playlist there (paths relative to its folder) instead of listing paths")
	return withSimilar("path", fs, n, 2, 2, args, stdout, stderr, func(ctx context.Context, st store.Store, sim *app.Similar, rest []string) int {
		if *n < 2 {
			fmt.Fprintln(stderr, "nomarr path: -n must be at least 2 (both ends)")
			return exitUsage
		}
		keys, ok := seeds(ctx, "path", st, sim, rest, stderr)
		if !ok {
			return 1
		}
		files, err := sim.Path(keys[0], keys[1], *n)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr path: %v\n", err)
			return 1
		}
		return playlistOut("path", *out, files, stdout, stderr)
	})
}

// playlistOut lists files' paths on stdout, or writes them as an M3U8
// playlist to out.
func playlistOut(name, out string, files []store.File, stdout, stderr io.Writer) int {
	if out == "" {
		for _, f := range files {
			fmt.Fprintln(stdout, printable(f.Path))
		}
		return 0
	}
	fh, err := os.Create(out)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	code := writeM3U(name, fh, stderr, filepath.Dir(out), files)
	if err := fh.Close(); err != nil && code == 0 {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	if code == 0 {
		fmt.Fprintf(stdout, "%s: %s\n", out, nFiles(len(files), ""))
	}
	return code
}

func writeM3U(name string, w, stderr io.Writer, dir string, files []store.File) int {
	if err := app.WriteM3U(w, dir, files); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	return 0
}
