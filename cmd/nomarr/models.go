package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// runModels implements `nomarr models [forget NODE]`: the hosts'
// model-set records (inventory.ModelSetsKey) as this host (node) sees
// them, or one host's record forgotten. Both go to the store, daemon or
// not: a main process keeps no copy of the records (each scan and renewal
// reads them and writes its own by compare-and-set), so a forget written
// behind it is not lost, and it writes its own record again at its next
// renewal.
func runModels(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("models", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok := commandSettings("models", fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if !(len(rest) == 0 || len(rest) == 2 && rest[0] == "forget" && rest[1] != "") {
		return usageError(stderr, "models")
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr models:", err)
		return 1
	}
	defer st.Close()
	if len(rest) == 0 {
		return listModelSets(context.Background(), st, s, stdout, stderr)
	}
	return forgetModelSet(context.Background(), st, s, rest[1], stdout, stderr)
}

// errModelSetsDamaged: the stored value does not decode. A host's next
// record writes it anew (app.ModelScan.record), so nothing is done to it here.
var errModelSetsDamaged = errors.New("the hosts' model-set records are damaged; the next record a running host writes replaces them")

// readModelSets reads and decodes the hosts' records, returning the raw
// value too (for a compare-and-set).
func readModelSets(ctx context.Context, st store.Store) (string, inventory.ModelSets, error) {
	raw, _, err := st.GetMeta(ctx, inventory.ModelSetsKey)
	if err != nil {
		return "", nil, fmt.Errorf("reading the hosts' model-set records: %w", err)
	}
	sets, err := inventory.DecodeModelSets(raw)
	if err != nil {
		return "", nil, fmt.Errorf("%w (%v)", errModelSetsDamaged, err)
	}
	return raw, sets, nil
}

// listModelSets prints every host's record as a table, then whether the
// re-tagging is held back (writeHeldBack).
func listModelSets(ctx context.Context, st store.Store, s *app.Settings, stdout, stderr io.Writer) int {
	_, sets, err := readModelSets(ctx, st)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr models:", err)
		return 1
	}
	now := time.Now()
	ms := httpapi.NewModelSetsInfo(sets.Report(s.Get("node"), now))
	if ms == nil {
		fmt.Fprintln(stdout, "no model set recorded in this store (nomarr serve and tag record their host's)")
		return 0
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tMODEL SET\tRECORDED\tCOUNTS UNTIL\t")
	for _, h := range ms.Hosts {
		until, note := when(h.LapsesAt, now), ""
		switch {
		case !h.Counts && h.AgeMs < 0:
			until = "not yet (its clock is ahead: counts once ours catches up)"
		case !h.Counts:
			until = "lapsed"
		case !h.Renewing:
			note = "not renewed for " + roughly(time.Duration(h.AgeMs)*time.Millisecond) + ": its host seems stopped"
		}
		if h.Node == ms.Node {
			note = strings.TrimSuffix("this host; "+note, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Node, h.Version, ago(h.AgeMs), until, note)
	}
	tw.Flush()
	for line := range strings.Lines(table.String()) { // the padding of an empty last column
		fmt.Fprintln(stdout, strings.TrimRight(line, " \n"))
	}
	if !writeHeldBack(stdout, ms, now, s.Again, false) {
		fmt.Fprintln(stdout, "nothing holds the re-tagging back: the records that count name one model set at most")
	}
	return 0
}

// forgetModelSet deletes node's record by compare-and-set (read again
// when a host wrote meanwhile, as app.ModelScan.record does, so its write is
// not lost), and says what that does (inventory.ModelSets.Forget): a
// record being renewed is forgotten too, with a warning that its host, if
// it still runs, writes it again. A node without a record exits 1.
func forgetModelSet(ctx context.Context, st store.Store, s *app.Settings, node string, stdout, stderr io.Writer) int {
	for range 5 {
		raw, sets, err := readModelSets(ctx, st)
		if err != nil {
			fmt.Fprintln(stderr, "nomarr models:", err)
			return 1
		}
		now := time.Now()
		left, f, ok := sets.Forget(node, now)
		if !ok {
			known := "no host has recorded one"
			if len(sets) > 0 {
				var names []string
				for _, h := range sets.Report(node, now).Hosts {
					names = append(names, h.Node)
				}
				known = "recorded: " + strings.Join(names, ", ")
			}
			fmt.Fprintf(stderr, "nomarr models: no model-set record for node %q (%s)\n", node, known)
			return 1
		}
		swapped, err := st.SwapMeta(ctx, inventory.ModelSetsKey, raw, left.Encode())
		if err != nil {
			fmt.Fprintln(stderr, "nomarr models: forgetting the record:", err)
			return 1
		}
		if !swapped {
			continue
		}
		h := f.Host
		fmt.Fprintf(stdout, "forgot %s's model-set record (%s, recorded %s)", node, h.Version, ago(h.Age.Milliseconds()))
		if !h.Counts {
			fmt.Fprint(stdout, ": it no longer counted, and held nothing back")
		}
		fmt.Fprintln(stdout)
		switch {
		case f.Released:
			fmt.Fprintln(stdout, "the re-tagging is no longer held back: each host's next scan sends the files tagged by other models back to work")
		case f.StillHeldBack:
			fmt.Fprintf(stdout, "the re-tagging is still held back: the records left name more than one model set (`%s` lists them)\n", s.Again("models"))
		}
		if h.Renewing {
			fmt.Fprintf(stderr, "warning: %s wrote its record %s: if it still runs nomarr serve or tag, it records its model set again within %s, "+
				"and holds the re-tagging back again if its models differ; stop it, or give it the same models\n",
				node, ago(h.Age.Milliseconds()), roughly(inventory.ModelSetRenew))
		}
		return 0
	}
	fmt.Fprintln(stderr, "nomarr models: the hosts' model-set records kept changing; try again")
	return 1
}

// writeHeldBack writes one line saying that the re-tagging is held back,
// by which hosts (the ones whose records hold ms.Node back) and until
// when, with the command that forgets their records; it writes nothing
// and returns false when nothing is held back. hint: name the command
// that lists the records.
func writeHeldBack(w io.Writer, ms *httpapi.ModelSetsInfo, now time.Time, again func(...string) string, hint bool) bool {
	if ms == nil || !ms.HeldBack {
		return false
	}
	if len(ms.HeldBy) == 0 { // ms.Node has no record that counts: every host is held back
		fmt.Fprint(w, "re-tagging held back on every host: the hosts' records name more than one model set")
		if hint {
			fmt.Fprintf(w, " (`%s` lists them)", again("models"))
		}
		fmt.Fprintln(w)
		return true
	}
	versions := map[string]string{}
	for _, h := range ms.Hosts {
		versions[h.Node] = h.Version
	}
	others := make([]string, len(ms.HeldBy))
	for i, n := range ms.HeldBy {
		others[i] = n + " (" + versions[n] + ")"
	}
	forget := "`" + again("models", "forget", ms.HeldBy[0]) + "`"
	if len(ms.HeldBy) > 1 {
		forget = "`" + again("models", "forget", "NODE") + "` for each"
	}
	sets := map[string]bool{}
	for _, n := range ms.HeldBy {
		sets[versions[n]] = true
	}
	fmt.Fprintf(w, "re-tagging held back by %s, on %s than this host (%s, %s): until %s if %s recording, or at once: %s\n",
		strings.Join(others, ", "), pick(len(sets), "another model set", "other model sets"), ms.Node, ms.Version,
		when(ms.HeldUntil, now), pick(len(others), "it stops", "they stop"), forget)
	return true
}

// writeModelSetsLine writes the records as one short line for status,
// and the held-back line when the re-tagging is held back; nothing when
// no host has a record.
func writeModelSetsLine(w io.Writer, ms *httpapi.ModelSetsInfo, now time.Time, again func(...string) string) {
	if ms == nil {
		return
	}
	if len(ms.Hosts) == 1 {
		h := ms.Hosts[0]
		fmt.Fprintf(w, "model set %s, recorded by %s %s%s", h.Version, h.Node, ago(h.AgeMs), notCounted(h))
		fmt.Fprintln(w)
	} else {
		parts := make([]string, len(ms.Hosts))
		for i, h := range ms.Hosts {
			parts[i] = h.Node + " " + h.Version + " " + ago(h.AgeMs) + notCounted(h)
		}
		fmt.Fprintf(w, "model sets: %s\n", strings.Join(parts, ", "))
	}
	writeHeldBack(w, ms, now, again, true)
}

// notCounted is what status adds to a record that does not count: "
// (lapsed)", or, from a clock more than ModelSetFresh ahead, "(not
// counted: clock ahead)"; "" for one that counts.
func notCounted(h httpapi.ModelSetHost) string {
	switch {
	case h.Counts:
		return ""
	case h.AgeMs < 0:
		return " (not counted: clock ahead)"
	}
	return " (lapsed)"
}

// ago is an age in milliseconds as "12m ago" (one written by a clock
// ahead of ours: "5m from now (clock ahead)").
func ago(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d < 0 {
		return roughly(-d) + " from now (clock ahead)"
	}
	return roughly(d) + " ago"
}

// roughly is d to the second under a minute, else to the minute: "45s",
// "12m", "1h40m", "3h".
func roughly(d time.Duration) string {
	if d.Round(time.Second) < time.Minute {
		return d.Round(time.Second).String()
	}
	s := strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// when is t in local time to the minute, with how long until it.
func when(t, now time.Time) string {
	s := t.Local().Format("2006-01-02 15:04 MST")
	if d := t.Sub(now); d > 0 {
		s += " (in " + roughly(d) + ")"
	}
	return s
}
