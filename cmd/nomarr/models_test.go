package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/nomarr/nomarr/internal/eventually"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/adapters/sqlite"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// modelsStore scans an empty folder into a new store under data, so that
// the commands find one, and returns the command-line flags that reach
// it as node n1, with no daemon.
func modelsStore(t *testing.T, data string) []string {
	t.Helper()
	base := []string{"--data-dir", data, "--node", "n1", "--http-addr", "127.0.0.1:1"}
	var out, errb bytes.Buffer
	if rc := run(append([]string{"scan", t.TempDir()}, base...), &out, &errb); rc != 0 {
		t.Fatalf("scan: exit %d, %s", rc, errb.String())
	}
	return base
}

// setRaw writes value as the hosts' model-set records of data's store.
func setRaw(t *testing.T, data, value string) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetMeta(context.Background(), inventory.ModelSetsKey, value); err != nil {
		t.Fatal(err)
	}
}

// storedModelSets reads the hosts' model-set records of data's store.
func storedModelSets(t *testing.T, data string) inventory.ModelSets {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(data, "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	raw, _, err := st.GetMeta(context.Background(), inventory.ModelSetsKey)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := inventory.DecodeModelSets(raw)
	if err != nil {
		t.Fatal(err)
	}
	return sets
}

// runOut runs nomarr with args and returns its exit code, stdout and stderr.
func runOut(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	rc := run(args, &out, &errb)
	return rc, out.String(), errb.String()
}

// A host with other models that stopped 50 minutes ago holds this host's
// re-tagging back: `nomarr models` and `nomarr status` (text and JSON)
// say which host, until when, and how to forget its record; `models
// forget` forgets it (exit 0, the re-tagging let go), keeps the other
// records, refuses a node without a record (exit 1, naming those there
// are), and forgets a record being renewed with a warning that its host
// writes it again.
func TestModelsListAndForget(t *testing.T) {
	data := t.TempDir()
	base := modelsStore(t, data)
	now := time.Now()
	n2At := now.Add(-50 * time.Minute)
	sets := inventory.ModelSets{
		"n1": {Version: "0123456789ab", AtMs: now.Add(-time.Minute).UnixMilli()},
		"n2": {Version: "fedcba987654", AtMs: n2At.UnixMilli()},
		"n3": {Version: "aaaaaaaaaaaa", AtMs: now.Add(-3 * time.Hour).UnixMilli()},
	}
	setRaw(t, data, sets.Encode())
	until := when(time.UnixMilli(n2At.UnixMilli()).Add(inventory.ModelSetFresh), now)
	until = until[:strings.Index(until, " (in ")] // the minutes left may have turned meanwhile
	held := "re-tagging held back by n2 (fedcba987654), on another model set than this host (n1, 0123456789ab): until " + until
	forgetN2 := "`nomarr models forget n2 --data-dir " + data + " --node n1`"

	rc, out, errs := runOut(append([]string{"models"}, base...)...)
	if rc != 0 || errs != "" {
		t.Fatalf("models: exit %d, %s", rc, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || lines[0] != "NODE  MODEL SET     RECORDED  COUNTS UNTIL" ||
		!strings.HasPrefix(lines[1], "n1    0123456789ab  1m ago    ") || !strings.HasSuffix(lines[1], "  this host") ||
		!strings.HasPrefix(lines[2], "n2    fedcba987654  50m ago   "+until) ||
		!strings.HasSuffix(lines[2], "  not renewed for 50m: its host seems stopped") ||
		lines[3] != "n3    aaaaaaaaaaaa  3h ago    lapsed" ||
		!strings.HasPrefix(lines[4], held) || !strings.HasSuffix(lines[4], " if it stops recording, or at once: "+forgetN2) {
		t.Errorf("models:\n%s", out)
	}

	rc, out, _ = runOut(append([]string{"status"}, base...)...)
	if rc != 0 || !strings.Contains(out, "\nmodel sets: n1 0123456789ab 1m ago, n2 fedcba987654 50m ago, n3 aaaaaaaaaaaa 3h ago (lapsed)\n"+held) ||
		!strings.HasSuffix(out, forgetN2+"\n") {
		t.Errorf("status: exit %d\n%s", rc, out)
	}
	rc, out, _ = runOut(append([]string{"status", "--json"}, base...)...)
	var info struct {
		ModelSets struct {
			Node      string   `json:"node"`
			Version   string   `json:"version"`
			HeldBack  bool     `json:"held_back"`
			HeldBy    []string `json:"held_by"`
			HeldUntil string   `json:"held_until"`
			Hosts     []struct {
				Node     string `json:"node"`
				Counts   bool   `json:"counts"`
				Renewing bool   `json:"renewing"`
				AgeMs    int64  `json:"age_ms"`
			} `json:"hosts"`
		} `json:"model_sets"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil || rc != 0 {
		t.Fatalf("status --json: exit %d, %v\n%s", rc, err, out)
	}
	ms := info.ModelSets
	wantUntil := time.UnixMilli(n2At.UnixMilli()).Add(inventory.ModelSetFresh).UTC().Format(time.RFC3339Nano)
	if ms.Node != "n1" || ms.Version != "0123456789ab" || !ms.HeldBack || len(ms.HeldBy) != 1 || ms.HeldBy[0] != "n2" ||
		ms.HeldUntil != wantUntil || len(ms.Hosts) != 3 || !ms.Hosts[0].Renewing || ms.Hosts[1].Renewing || ms.Hosts[2].Counts ||
		ms.Hosts[1].AgeMs < (50*time.Minute).Milliseconds() {
		t.Errorf("status --json model_sets: %+v (held until want %s)", ms, wantUntil)
	}

	rc, out, errs = runOut(append([]string{"models", "forget", "n2"}, base...)...)
	if rc != 0 || errs != "" || out != "forgot n2's model-set record (fedcba987654, recorded 50m ago)\n"+
		"the re-tagging is no longer held back: each host's next scan sends the files tagged by other models back to work\n" {
		t.Errorf("models forget n2: exit %d\n%s%s", rc, out, errs)
	}
	if got := storedModelSets(t, data); len(got) != 2 || got["n1"] != sets["n1"] || got["n3"] != sets["n3"] {
		t.Errorf("records after forgetting n2: %v, want n1's and n3's as they were", got)
	}
	if _, out, _ := runOut(append([]string{"status"}, base...)...); strings.Contains(out, "held back") {
		t.Errorf("status after the forget still holds back:\n%s", out)
	}
	rc, out, errs = runOut(append([]string{"models", "forget", "n2"}, base...)...)
	if rc != 1 || out != "" || errs != "nomarr models: no model-set record for node \"n2\" (recorded: n1, n3)\n" {
		t.Errorf("forget n2 again: exit %d, %q, %q", rc, out, errs)
	}

	// A record being renewed: forgotten, with the warning.
	rc, out, errs = runOut(append([]string{"models", "forget", "n1"}, base...)...)
	if rc != 0 || !strings.HasPrefix(out, "forgot n1's model-set record (0123456789ab, recorded 1m ago)\n") ||
		!strings.HasPrefix(errs, "warning: n1 wrote its record 1m ago: if it still runs nomarr serve or tag, it records its model set again within 30m") {
		t.Errorf("forget n1: exit %d\n%s%s", rc, out, errs)
	}
	if got := storedModelSets(t, data); len(got) != 1 || got["n3"] != sets["n3"] {
		t.Errorf("records after forgetting n1: %v", got)
	}
	// A lapsed record: forgotten, saying it held nothing back.
	if rc, out, errs := runOut(append([]string{"models", "forget", "n3"}, base...)...); rc != 0 || errs != "" ||
		out != "forgot n3's model-set record (aaaaaaaaaaaa, recorded 3h ago): it no longer counted, and held nothing back\n" {
		t.Errorf("forget n3: exit %d\n%s%s", rc, out, errs)
	}

	for _, args := range [][]string{{"models", "forget"}, {"models", "frob"}, {"models", "forget", "a", "b"}, {"models", "n1"}} {
		if rc, _, errs := runOut(append(args, base...)...); rc != exitUsage || !strings.HasPrefix(errs, "usage: nomarr models [forget NODE]") {
			t.Errorf("%v: exit %d, %q", args, rc, errs)
		}
	}
}

// With no record, or only this host's, status stays one line or two and
// says nothing is held back; a damaged value is reported by models (exit
// 1) and left as it is by a forget.
func TestModelsCalmWithOneHostOrNone(t *testing.T) {
	data := t.TempDir()
	base := modelsStore(t, data)
	if rc, out, _ := runOut(append([]string{"status"}, base...)...); rc != 0 || strings.Count(out, "\n") != 1 || strings.Contains(out, "model set") {
		t.Errorf("status without a record: exit %d\n%s", rc, out)
	}
	if rc, out, errs := runOut(append([]string{"models"}, base...)...); rc != 0 || errs != "" ||
		out != "no model set recorded in this store (nomarr serve and tag record their host's)\n" {
		t.Errorf("models without a record: exit %d, %q, %q", rc, out, errs)
	}
	if rc, _, errs := runOut(append([]string{"models", "forget", "n2"}, base...)...); rc != 1 ||
		errs != "nomarr models: no model-set record for node \"n2\" (no host has recorded one)\n" {
		t.Errorf("forget without a record: exit %d, %q", rc, errs)
	}

	setRaw(t, data, inventory.ModelSets{}.Record("n1", "0123456789ab", time.Now().Add(-2*time.Minute)).Encode())
	if rc, out, _ := runOut(append([]string{"status"}, base...)...); rc != 0 ||
		!strings.HasSuffix(out, "; workers enabled: true\nmodel set 0123456789ab, recorded by n1 2m ago\n") {
		t.Errorf("status with one record: exit %d\n%s", rc, out)
	}
	if rc, out, _ := runOut(append([]string{"models"}, base...)...); rc != 0 ||
		!strings.HasSuffix(out, "this host\nnothing holds the re-tagging back: the records that count name one model set at most\n") {
		t.Errorf("models with one record: exit %d\n%s", rc, out)
	}

	setRaw(t, data, "{")
	if rc, _, errs := runOut(append([]string{"models"}, base...)...); rc != 1 ||
		!strings.HasPrefix(errs, "nomarr models: the hosts' model-set records are damaged; the next record a running host writes replaces them") {
		t.Errorf("models with a damaged value: exit %d, %q", rc, errs)
	}
	if rc, _, _ := runOut(append([]string{"models", "forget", "n1"}, base...)...); rc != 1 {
		t.Errorf("forget with a damaged value: exit %d", rc)
	}
	if rc, out, _ := runOut(append([]string{"status"}, base...)...); rc != 0 || strings.Contains(out, "model set") {
		t.Errorf("status with a damaged value: exit %d\n%s", rc, out)
	}
}

// racingStore lets another host record its model set between the forget's
// read and its first write, as a scan or a renewal of a running host can.
type racingStore struct {
	store.Store
	swaps int
	other inventory.ModelSet
}

func (r *racingStore) SwapMeta(ctx context.Context, key, old, value string) (bool, error) {
	r.swaps++
	if r.swaps == 1 {
		raw, _, err := r.GetMeta(ctx, key)
		if err != nil {
			return false, err
		}
		sets, err := inventory.DecodeModelSets(raw)
		if err != nil {
			return false, err
		}
		if err := r.SetMeta(ctx, key, sets.Record("n4", r.other.Version, time.UnixMilli(r.other.AtMs)).Encode()); err != nil {
			return false, err
		}
	}
	return r.Store.SwapMeta(ctx, key, old, value)
}

// A forget is a compare-and-set: a record another host writes meanwhile
// is kept, not written over with the records as they were read.
func TestModelsForgetKeepsAConcurrentRecord(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "nomarr.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	sets := inventory.ModelSets{}.Record("n1", "0123456789ab", now).Record("n2", "fedcba987654", now.Add(-time.Hour))
	if err := st.SetMeta(context.Background(), inventory.ModelSetsKey, sets.Encode()); err != nil {
		t.Fatal(err)
	}
	r := &racingStore{Store: st, other: inventory.ModelSet{Version: "0123456789ab", AtMs: now.UnixMilli()}}
	var out, errb bytes.Buffer
	if rc := forgetModelSet(context.Background(), r, &app.Settings{}, "n2", &out, &errb); rc != 0 {
		t.Fatalf("forget: exit %d, %s", rc, errb.String())
	}
	raw, _, _ := st.GetMeta(context.Background(), inventory.ModelSetsKey)
	got, err := inventory.DecodeModelSets(raw)
	if err != nil || len(got) != 2 || got["n1"] != sets["n1"] || got["n4"] != r.other || r.swaps != 2 {
		t.Errorf("records %s after %d swaps (%v); want n1's and n4's, written meanwhile, without n2's", raw, r.swaps, err)
	}
}

// A running daemon shows the records as its host sees them, and a forget
// written in the store behind it lets its re-tagging go: its next look
// at the records (status through its API) no longer names the host.
func TestServeShowsAndForgetsModelSets(t *testing.T) {
	bin := nomarrBinary(t)
	data := t.TempDir()
	base := modelsStore(t, data)
	setRaw(t, data, inventory.ModelSets{}.Record("n2", "fedcba987654", time.Now().Add(-10*time.Minute)).Encode())
	addr := freeAddr(t)
	var logs syncbuf.Buffer
	cmd, done := startServe(t, bin, &logs, "--data-dir", data, "--http-addr", addr, "--node", "n1", "--library-root", t.TempDir())
	defer func() { _ = cmd.Process.Kill() }()
	status := append([]string{"status"}, base...)
	status[len(status)-1] = addr // base ends with --http-addr 127.0.0.1:1
	var out string
	logOnFailure(t, &logs)
	// The daemon announces no model-set record; its status is polled.
	eventually.True(t, 20*time.Second, "status showing n2 holding the daemon back", func() bool {
		_, out, _ = runOut(status...)
		return strings.Contains(out, "re-tagging held back by n2 (fedcba987654), on another model set than this host (n1, "+analyzer.NoopVersion+")")
	})
	rc, fout, errs := runOut(append([]string{"models", "forget", "n2"}, base...)...)
	if rc != 0 || !strings.Contains(fout, "the re-tagging is no longer held back") || !strings.HasPrefix(errs, "warning: n2 wrote its record 10m ago") {
		t.Errorf("forget n2 under a running daemon: exit %d\n%s%s", rc, fout, errs)
	}
	if rc, out, _ := runOut(status...); rc != 0 || strings.Contains(out, "held back") ||
		!strings.Contains(out, "\nmodel set "+analyzer.NoopVersion+", recorded by n1 ") {
		t.Errorf("status after the forget: exit %d\n%s", rc, out)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve still running 10 s after SIGINT; log:\n%s", logs.String())
	}
}

// TestModelSetsWording: ages round before they pick their unit (59.6 s is
// "1m", not "1m0s"); a record from a clock ahead reads as such, never as
// lapsed; two hosts holding one back with one version are "another model
// set".
func TestModelSetsWording(t *testing.T) {
	for d, want := range map[time.Duration]string{
		59600 * time.Millisecond: "1m",
		30 * time.Second:         "30s",
		90 * time.Minute:         "1h30m",
		2 * time.Hour:            "2h",
	} {
		if got := roughly(d); got != want {
			t.Errorf("roughly(%v) = %q, want %q", d, got, want)
		}
	}
	if got := ago(-(30 * time.Minute).Milliseconds()); got != "30m from now (clock ahead)" {
		t.Errorf("ago(-30m) = %q", got)
	}
	now := time.Now()
	sets := inventory.ModelSets{
		"n1": {Version: "aaa", AtMs: now.Add(-time.Minute).UnixMilli()},
		"n2": {Version: "bbb", AtMs: now.Add(-2 * time.Minute).UnixMilli()},
		"n4": {Version: "bbb", AtMs: now.Add(-3 * time.Minute).UnixMilli()},
		"n5": {Version: "ccc", AtMs: now.Add(3 * time.Hour).UnixMilli()},
	}
	ms := httpapi.NewModelSetsInfo(sets.Report("n1", now))
	var b strings.Builder
	writeModelSetsLine(&b, ms, now, func(a ...string) string { return "nomarr " + strings.Join(a, " ") })
	out := b.String()
	if !strings.Contains(out, "n5 ccc 3h from now (clock ahead) (not counted: clock ahead)") || strings.Contains(out, "lapsed") ||
		!strings.Contains(out, "re-tagging held back by n2 (bbb), n4 (bbb), on another model set than this host (n1, aaa)") {
		t.Errorf("status lines:\n%s", out)
	}
}
