package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// runMissing implements `nomarr missing [DIR] [--json | -0]`: the files
// the store keeps that are no longer on disk (under DIR), one path per
// line (listFormat), by path.
func runMissing(args []string, stdout, stderr io.Writer) int {
	var format listFormat
	return withGone("missing", &format, args, stdout, stderr, func(_ context.Context, _ store.Store, gone []store.File, sc scope) int {
		slices.SortFunc(gone, func(a, b store.File) int { return strings.Compare(a.Path, b.Path) })
		enc := jsonLines(stdout)
		for _, f := range gone {
			switch {
			case format.nul:
				fmt.Fprintf(stdout, "%s\x00", f.Path)
			case format.json:
				if err := enc.Encode(newListedFile(f.Path)); err != nil {
					fmt.Fprintf(stderr, "nomarr missing: %v\n", err)
					return 1
				}
			default:
				fmt.Fprintln(stdout, printable(f.Path))
			}
		}
		printTally(stderr, nFiles(len(gone), "")+" no longer on disk"+sc.where, len(gone),
			pick(len(gone), "once it left for good, `"+sc.again("forget")+"` deletes it from the store",
				"once they left for good, `"+sc.again("forget")+"` deletes them from the store"))
		return 0
	})
}

// runForget implements `nomarr forget [DIR]`: the store forgets the files
// that are no longer on disk (under DIR), with their stored tags.
func runForget(args []string, stdout, stderr io.Writer) int {
	return withGone("forget", nil, args, stdout, stderr, func(ctx context.Context, st store.Store, gone []store.File, sc scope) int {
		n, err := inBatches(ctx, gone, st.ForgetMissing)
		if err != nil {
			fmt.Fprintf(stderr, "nomarr forget: %v (%s forgotten before it)\n", err, nFiles(n, ""))
			return 1
		}
		fmt.Fprintf(stdout, "%s no longer on disk%s forgotten", nFiles(n, ""), sc.where)
		if skipped := len(gone) - n; skipped > 0 {
			fmt.Fprintf(stdout, " (%d found again by a scan meanwhile: kept)", skipped)
		}
		fmt.Fprintln(stdout)
		return 0
	})
}

// withGone is withFiles picking the files that are not valid and not on
// disk as a scan counts files (inventory.Gone, library.OnDisk: a dangling
// symbolic link is not on disk; a path that cannot be looked at is).
func withGone(name string, own ownFlags, args []string, stdout, stderr io.Writer,
	do func(ctx context.Context, st store.Store, gone []store.File, sc scope) int) int {
	return withFiles(name, own, func(page []store.File) []store.File { return inventory.Gone(page, "", library.OnDisk) }, args, stdout, stderr, do)
}
