package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// runFailed implements `nomarr failed [DIR] [--json | -0]`: the failed
// files (under DIR) with the reason each failed, one per line (listFormat).
func runFailed(args []string, stdout, stderr io.Writer) int {
	var format listFormat
	return withFailed("failed", &format, args, stdout, stderr, func(_ context.Context, _ store.Store, failed []store.File, sc scope) int {
		enc := jsonLines(stdout)
		for _, f := range failed {
			switch {
			case format.nul:
				fmt.Fprintf(stdout, "%s\x00", f.Path)
			case format.json:
				l := newListedFile(f.Path)
				missing := !f.IsValid
				l.Error, l.Missing = &f.LastError, &missing
				if err := enc.Encode(l); err != nil {
					fmt.Fprintf(stderr, "nomarr failed: %v\n", err)
					return 1
				}
			default:
				missing := ""
				if !f.IsValid { // a retry makes it work only once a scan finds it again
					missing = " (not found at the last scan)"
				}
				fmt.Fprintf(stdout, "%s\t%s%s\n", printable(f.Path), printable(f.LastError), missing)
			}
		}
		printTally(stderr, nFiles(len(failed), "failed ")+sc.where, len(failed),
			"after fixing the cause, `"+sc.again("retry")+"` sends "+pick(len(failed), "it", "them")+" back to work")
		return 0
	})
}

// runRetry implements `nomarr retry [DIR]`: the failed files (under DIR)
// become work again; `nomarr tag`, or a running `nomarr serve`, tags them.
func runRetry(args []string, stdout, stderr io.Writer) int {
	return withFailed("retry", nil, args, stdout, stderr, func(ctx context.Context, st store.Store, failed []store.File, sc scope) int {
		n, err := inBatches(ctx, failed, st.RetryFailed)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr retry: %v (%s sent back to work before it)\n", err, nFiles(n, ""))
			return 1
		}
		if n == 0 {
			fmt.Fprintf(stdout, "no failed files%s: nothing sent back to work\n", sc.where)
			return 0
		}
		fmt.Fprintf(stdout, "%s%s sent back to work; `%s`, or a running `nomarr serve`, tags %s\n", nFiles(n, "failed "), sc.where, sc.tag(), pick(n, "it", "them"))
		return 0
	})
}

// inBatches runs op over the keys of files, app.ListBatch at a time, and
// returns the sum of its counts (up to a failure, with its error).
func inBatches(ctx context.Context, files []store.File, op func(context.Context, []string) (int, error)) (int, error) {
	n := 0
	for start := 0; start < len(files); start += app.ListBatch {
		page := files[start:min(start+app.ListBatch, len(files))]
		keys := make([]string, len(page))
		for i, f := range page {
			keys[i] = f.Key
		}
		m, err := op(ctx, keys)
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// printTally writes the tally (nFiles) as one line, followed by hint
// when there is any file.
func printTally(w io.Writer, tally string, n int, hint string) {
	fmt.Fprint(w, tally)
	if n > 0 {
		fmt.Fprint(w, "; "+hint)
	}
	fmt.Fprintln(w)
}

// nFiles is "1 <kind>file" or "N <kind>files" (kind: "", "audio ", …).
func nFiles(n int, kind string) string {
	return fmt.Sprintf("%d %s%s", n, kind, pick(n, "file", "files"))
}

// pick is one for a count of 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// withFailed is withFiles picking the failed files.
func withFailed(name string, own ownFlags, args []string, stdout, stderr io.Writer,
	do func(ctx context.Context, st store.Store, failed []store.File, sc scope) int) int {
	return withFiles(name, own, func(page []store.File) []store.File { return inventory.Failed(page, "") }, args, stdout, stderr, do)
}

// scope is what withFiles's do is told of the files it got: where (" under
// DIR", or "") for its messages, and, for its hints, the commands to run
// next on the same files and store.
type scope struct {
	where string
	s     *app.Settings
	dir   []string // DIR as given, when given
}

// again is `nomarr CMD [DIR]` with the store flags this command was given.
func (sc scope) again(cmd string) string {
	return sc.s.Again(append([]string{cmd}, sc.dir...)...)
}

// tag is `nomarr tag DIR` with those flags, DIR left for the user to fill
// when none was given (tag tags the whole store whatever DIR it scans).
func (sc scope) tag() string {
	if len(sc.dir) == 0 {
		return sc.s.Again("tag", "DIR")
	}
	return sc.again("tag")
}

// ownFlags are a command's own flags, beside the configuration's.
type ownFlags interface {
	define(fs *flag.FlagSet)
	// check refuses, once parsed, a combination that makes no sense.
	check() error
}

// withFiles parses `nomarr NAME [DIR]`, with the command's own flags
// (own; nil: none), opens the store, picks files from each page of the
// library (those under DIR, as an absolute path) and runs do with them.
func withFiles(name string, own ownFlags, pick func(page []store.File) []store.File, args []string, stdout, stderr io.Writer,
	do func(ctx context.Context, st store.Store, files []store.File, sc scope) int) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if own != nil {
		own.define(fs)
	}
	s, rest, code, ok := commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) > 1 {
		return usageError(stderr, name)
	}
	if own != nil {
		if err := own.check(); err != nil {
			fmt.Fprintf(stderr, "nomarr %s: %v; run `nomarr %s --help`\n", name, err, name)
			return exitUsage
		}
	}
	if len(rest) == 1 && !pathArgOK(stderr, name, "DIR", rest[0]) {
		return exitUsage
	}
	match, where := func(string) bool { return true }, ""
	// A DIR that is not there is a mistake to say (a typo would list
	// nothing and exit 0), unless the store knows files under it: a
	// folder deleted or unmounted since it was scanned.
	gone, known := "", false
	if len(rest) == 1 {
		abs, err := filepath.Abs(rest[0])
		if err != nil {
			fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
			return 1
		}
		match, where = underDir(abs), " under "+printable(abs)
		if _, err := os.Stat(abs); errors.Is(err, iofs.ErrNotExist) {
			gone = abs
		}
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	defer st.Close()
	ctx := context.Background()
	var picked []store.File
	for after := ""; ; {
		page, err := st.ListFiles(ctx, after, app.ListBatch)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr %s: store: %v\n", name, err)
			return 1
		}
		for _, f := range pick(page) {
			if match(f.Path) {
				picked = append(picked, f)
			}
		}
		for _, f := range page {
			known = known || (gone != "" && (f.Path == gone || inventory.Under(gone, f.Path)))
		}
		if len(page) < app.ListBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	if gone != "" && !known {
		fmt.Fprintf(stderr, "nomarr %s: %s: no such file or directory, and the store has no file under it\n", name, rest[0])
		return 1
	}
	return do(ctx, st, picked, scope{where: where, s: s, dir: rest})
}

// underDir matches the paths of dir's files, or dir itself, as the scan
// stored them or through symbolic links: a library scanned through /music
// (a link to /nas/music) is found under /nas/music too, and the other way
// round. Only the failed files' folders are resolved, each once.
func underDir(dir string) func(path string) bool {
	real := dir
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		real = r
	}
	in := func(root, p string) bool { return p == root || inventory.Under(root, p) }
	resolved := map[string]string{}
	return func(p string) bool {
		if in(dir, p) || in(real, p) {
			return true
		}
		parent := filepath.Dir(p)
		r, ok := resolved[parent]
		if !ok {
			r, _ = filepath.EvalSymlinks(parent) // "" when it is gone
			resolved[parent] = r
		}
		return r != "" && in(real, filepath.Join(r, filepath.Base(p)))
	}
}
