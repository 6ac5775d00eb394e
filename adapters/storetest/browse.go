package storetest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

// RunBrowse is the contract of store.Browser: every store filters, sorts,
// pages and summarises a library alike. Run calls it.
func RunBrowse(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*h, *browseLib)
	}{
		{"Cases", testBrowseCases},
		{"AgreesWithTheRule", testBrowseAgrees},
		{"Paging", testBrowsePaging},
		{"FileTags", testBrowseFileTags},
		{"FileInfo", testFileInfo},
		{"TagStats", testBrowseTagStats},
		{"RepeatedLabels", testBrowseRepeatedLabels},
		{"Retagged", testBrowseRetagged},
		{"ScoreShapes", testBrowseScoreShapes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &h{T: t, st: open(t)}
			tc.fn(h, newBrowseLib(h))
		})
	}
}

// browseLib is the library the Browse tests build: the files and the tags
// each was completed with, as a reference to check answers against.
type browseLib struct {
	files map[string]store.File
	tags  map[string]map[string]string
	infos map[string]store.FileInfo
}

// browseTags are tags of the shape a completion records.
func browseTags(happy, sad, dance float64, strict, regular, loose, top string) map[string]string {
	f := func(x float64) string { return fmt.Sprintf("%.4f", x) }
	return map[string]string{
		"nom_version": "v1", "happy_musicnn_mood_happy": f(happy), "not_happy_musicnn_mood_happy": f(1 - happy),
		"sad_musicnn_mood_sad": f(sad), "not_sad_musicnn_mood_sad": f(1 - sad),
		"danceable_musicnn_danceability": f(dance), "spread_musicnn_mood_happy": "0.1000",
		"mood-strict": strict, "mood-regular": regular, "mood-loose": loose, "top_tags": top,
	}
}

// newBrowseLib stores: 0a–0f tagged (0f with its artist and title as
// file info, 0b with an artist tag of the old kind, not searched), 10 failed,
// 11 pending, 12 missing (tagged before it went), 13 pending with a name
// in capitals. Every directory name starts with a capital, so that byte
// order and ArangoDB's (ICU) order of the paths agree.
func newBrowseLib(h *h) *browseLib {
	l := &browseLib{files: map[string]store.File{}, tags: map[string]map[string]string{}, infos: map[string]store.FileInfo{}}
	tagged := []struct {
		key, path string
		tags      map[string]string
	}{
		{"0a", "/music/Abba/Waterloo.flac", browseTags(0.91, 0.05, 0.8, "happy", "happy", "happy; party", "pop; dance; 70s")},
		{"0b", "/music/Adele/Hello.mp3", withTag(browseTags(0.10, 0.85, 0.2, "sad", "sad", "sad; relaxed", "pop; soul; female vocalists"), "artist", "Zappa")},
		{"0c", "/music/Metallica/One.flac", browseTags(0.20, 0.40, 0.3, "", "aggressive", "aggressive", "metal; heavy metal; rock")},
		{"0d", "/music/Miles Davis/So What.ogg", browseTags(0.55, 0.30, 0.4, "", "", "happy; relaxed", "jazz")},
		{"0e", "/music/Daft Punk/One More Time.m4a", browseTags(0.65, 0.05, 0.95, "party", "happy; party", "happy; party", "electronic; dance; House")},
		{"0f", "/music/Misc/track01.mp3", browseTags(0.50, 0.50, 0.5, "", "", "", "")},
		{"12", "/music/Gone/Lost.mp3", browseTags(0.75, 0.10, 0.6, "happy", "happy", "happy", "rock")},
	}
	var all []store.File
	for _, f := range tagged {
		fl := NewFile(f.key)
		fl.Path = f.path
		all = append(all, fl)
	}
	for _, k := range []string{"10", "11", "13"} {
		fl := NewFile(k)
		fl.Path = map[string]string{"10": "/music/Broken/Bad.wav", "11": "/music/New/Fresh.flac", "13": "/music/Loud/ABBA LIVE.FLAC"}[k]
		all = append(all, fl)
	}
	h.upsert(all...)
	for i, f := range tagged {
		at := At(time.Duration(i+1) * time.Minute)
		h.claim(f.key, "i/w0", at, time.Minute)
		h.complete(f.key, "i/w0", store.Completion{Tags: f.tags, Version: "v1", At: at})
		l.tags[f.key] = f.tags
	}
	for k, info := range map[string]store.FileInfo{
		"0f": {Artist: "The Beatles", Title: "Let It Be", Album: "Let It%Be", DurationMs: 243_000},
		"0c": {Title: "One", DurationMs: 446_000},
	} {
		if err := h.st.PutFileInfo(h.Context(), k, info); err != nil {
			h.Fatalf("PutFileInfo(%s): %v", k, err)
		}
		l.infos[k] = info
	}
	if err := h.st.Quarantine(h.Context(), "10", "decode: bad header"); err != nil {
		h.Fatalf("Quarantine: %v", err)
	}
	if _, err := h.st.MarkMissing(h.Context(), []string{"12"}); err != nil {
		h.Fatalf("MarkMissing: %v", err)
	}
	for _, f := range all {
		l.files[f.Key] = h.file(f.Key)
	}
	return l
}

func withTag(m map[string]string, k, v string) map[string]string {
	m[k] = v
	return m
}

// want is the reference answer to q: the rule applied to the library.
func (l *browseLib) want(q store.BrowseQuery) ([]string, int) {
	q = q.Normalized()
	var rows []store.BrowseRow
	for k, f := range l.files {
		r := store.BrowseRow{File: f, Tags: l.tags[k], Info: l.infos[k]}
		if store.BrowseMatch(q, r) {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b store.BrowseRow) int {
		if store.BrowseLess(q, a, b) {
			return -1
		}
		if store.BrowseLess(q, b, a) {
			return 1
		}
		return 0
	})
	var keys []string
	for _, r := range rows[min(q.Offset, len(rows)):] {
		if len(keys) == q.Limit {
			break
		}
		keys = append(keys, r.File.Key)
	}
	return keys, len(rows)
}

func (h *h) browse(q store.BrowseQuery) ([]string, int) {
	h.Helper()
	p, err := h.st.Browse(h.Context(), q)
	if err != nil {
		h.Fatalf("Browse(%+v): %v", q, err)
	}
	var keys []string
	for _, r := range p.Rows {
		keys = append(keys, r.File.Key)
	}
	return keys, p.Total
}

// testBrowseCases checks answers written out by hand.
func testBrowseCases(h *h, l *browseLib) {
	cases := []struct {
		name  string
		q     store.BrowseQuery
		want  string // keys in order, space separated
		total int
	}{
		{"all by path", store.BrowseQuery{}, "0a 0b 10 0e 12 13 0c 0d 0f 11", 10},
		{"text in path, any case", store.BrowseQuery{Text: "abba"}, "0a 13", 2},
		{"text in the file's artist", store.BrowseQuery{Text: "beatles"}, "0f", 1},
		{"text in the file's title", store.BrowseQuery{Text: "LET IT"}, "0f", 1},
		{"LIKE's wildcards are text", store.BrowseQuery{Text: "t it%b"}, "0f", 1},
		{"'_' is no wildcard", store.BrowseQuery{Text: "let_it_"}, "", 0},
		{"a stored artist tag is not searched", store.BrowseQuery{Text: "zappa"}, "", 0},
		{"text with a LIKE wildcard is literal", store.BrowseQuery{Text: "_"}, "", 0},
		{"tagged", store.BrowseQuery{Status: store.StatusTagged}, "0a 0b 0e 0c 0d 0f", 6},
		{"failed", store.BrowseQuery{Status: store.StatusFailed}, "10", 1},
		{"pending", store.BrowseQuery{Status: store.StatusPending}, "13 11", 2},
		{"missing", store.BrowseQuery{Status: store.StatusMissing}, "12", 1},
		{"mood, loose by default", store.BrowseQuery{Mood: "happy"}, "0a 0e 12 0d", 4},
		{"mood strict", store.BrowseQuery{Mood: "Happy", MoodTier: store.TierStrict}, "0a 12", 2},
		{"mood regular and tagged", store.BrowseQuery{Mood: "party", MoodTier: store.TierRegular, Status: store.StatusTagged}, "0e", 1},
		{"genre, any case, whole label", store.BrowseQuery{Genre: "house"}, "0e", 1},
		{"genre is not a substring", store.BrowseQuery{Genre: "metal"}, "0c", 1},
		{"score range", store.BrowseQuery{Scores: []store.ScoreRange{{Key: "happy_musicnn_mood_happy", Min: 0.5, Max: 0.7}}}, "0e 0d 0f", 3},
		{"two score ranges", store.BrowseQuery{Scores: []store.ScoreRange{
			{Key: "happy_musicnn_mood_happy", Min: 0.5, Max: 1}, {Key: "danceable_musicnn_danceability", Min: 0.7, Max: 1}}}, "0a 0e", 2},
		{"sort by score, files without last", store.BrowseQuery{Sort: "sad_musicnn_mood_sad"}, "0a 0e 12 0d 0c 0f 0b 10 11 13", 10},
		{"sort by score descending, files without still last", store.BrowseQuery{Sort: "sad_musicnn_mood_sad", Desc: true}, "0b 0f 0c 0d 12 0e 0a 13 11 10", 10},
		{"sort by tagging time descending", store.BrowseQuery{Sort: store.SortTaggedAt, Desc: true, Status: store.StatusTagged}, "0f 0e 0d 0c 0b 0a", 6},
		{"sort by status", store.BrowseQuery{Sort: store.SortStatus}, "10 12 11 13 0a 0b 0c 0d 0e 0f", 10},
		{"path descending, paged", store.BrowseQuery{Desc: true, Offset: 2, Limit: 3}, "0d 0c 13", 10},
	}
	for _, c := range cases {
		got, total := h.browse(c.q)
		if strings.Join(got, " ") != c.want || total != c.total {
			h.Errorf("%s: Browse = %q (total %d), want %q (total %d)", c.name, strings.Join(got, " "), total, c.want, c.total)
		}
		if ref, rt := l.want(c.q); strings.Join(ref, " ") != c.want || rt != c.total {
			h.Errorf("%s: the rule answers %q (total %d), the case says %q (total %d)", c.name, strings.Join(ref, " "), rt, c.want, c.total)
		}
	}
}

// testBrowseAgrees compares random queries with the rule.
func testBrowseAgrees(h *h, l *browseLib) {
	rng := rand.New(rand.NewPCG(7, 28))
	pick := func(v ...string) string { return v[rng.IntN(len(v))] }
	for i := range 200 {
		q := store.BrowseQuery{
			Text:     pick("", "", "music", "one", "ABBA", "mp3", "zz"),
			Status:   pick("", "", store.StatusTagged, store.StatusFailed, store.StatusPending, store.StatusMissing),
			Mood:     pick("", "", "happy", "sad", "party", "relaxed"),
			MoodTier: pick("", store.TierStrict, store.TierRegular, store.TierLoose),
			Genre:    pick("", "", "", "pop", "dance", "rock"),
			Sort:     pick("", store.SortPath, store.SortTaggedAt, store.SortStatus, "happy_musicnn_mood_happy", "danceable_musicnn_danceability"),
			Desc:     rng.IntN(2) == 0,
			Offset:   rng.IntN(4),
			Limit:    1 + rng.IntN(6),
		}
		if rng.IntN(3) == 0 {
			lo := float64(rng.IntN(10)) / 10
			q.Scores = []store.ScoreRange{{Key: pick("happy_musicnn_mood_happy", "sad_musicnn_mood_sad"), Min: lo, Max: lo + 0.4}}
		}
		got, total := h.browse(q)
		want, wt := l.want(q)
		if !slices.Equal(got, want) || total != wt {
			h.Fatalf("query %d %+v: Browse = %v (total %d), the rule %v (total %d)", i, q, got, total, want, wt)
		}
	}
}

// testBrowsePaging checks that the pages of a query, read one after the
// other, hold every match once, and that rows carry the file and its tags.
func testBrowsePaging(h *h, l *browseLib) {
	var seen []string
	for off := 0; off < 20; off += 3 {
		p, err := h.st.Browse(h.Context(), store.BrowseQuery{Offset: off, Limit: 3, Sort: "happy_musicnn_mood_happy"})
		if err != nil {
			h.Fatalf("Browse: %v", err)
		}
		if p.Total != len(l.files) {
			h.Fatalf("Total = %d, want %d", p.Total, len(l.files))
		}
		for _, r := range p.Rows {
			seen = append(seen, r.File.Key)
			if d := DiffFile(r.File, l.files[r.File.Key]); d != "" {
				h.Errorf("row %s: %s", r.File.Key, d)
			}
			want := l.tags[r.File.Key]
			if want == nil {
				want = map[string]string{}
			}
			if !maps.Equal(r.Tags, want) {
				h.Errorf("row %s tags = %v, want %v", r.File.Key, r.Tags, want)
			}
		}
	}
	slices.Sort(seen)
	if want := slices.Sorted(maps.Keys(l.files)); !slices.Equal(seen, want) {
		h.Fatalf("pages hold %v, want each of %v once", seen, want)
	}
	if p, err := h.st.Browse(h.Context(), store.BrowseQuery{Offset: 100}); err != nil || len(p.Rows) != 0 || p.Total != len(l.files) {
		h.Fatalf("Browse past the end = %d rows, total %d, %v", len(p.Rows), p.Total, err)
	}
}

func testBrowseFileTags(h *h, l *browseLib) {
	got, err := h.st.FileTags(h.Context(), "0b")
	if err != nil || !maps.Equal(got, l.tags["0b"]) {
		h.Fatalf("FileTags(0b) = %v, %v; want %v", got, err, l.tags["0b"])
	}
	if got, err := h.st.FileTags(h.Context(), "11"); err != nil || len(got) != 0 {
		h.Fatalf("FileTags of a file never tagged = %v, %v; want none", got, err)
	}
	if _, err := h.st.FileTags(h.Context(), "ff"); !errors.Is(err, store.ErrNotFound) {
		h.Fatalf("FileTags of an unknown file: %v, want ErrNotFound", err)
	}
	p, err := h.st.Browse(h.Context(), store.BrowseQuery{Text: "beatles"})
	if err != nil || len(p.Rows) != 1 || p.Rows[0].Info != l.infos["0f"] {
		h.Fatalf("Browse's row of 0f: %+v, %v; want its info %+v", p.Rows, err, l.infos["0f"])
	}
}

// testFileInfo: the last info put is the file's; none is the zero info;
// an unknown file is ErrNotFound and a bad info is refused, nothing
// stored; the info goes with its file.
func testFileInfo(h *h, l *browseLib) {
	ctx := h.Context()
	if got, err := h.st.FileInfo(ctx, "0f"); err != nil || got != l.infos["0f"] {
		h.Fatalf("FileInfo(0f) = %+v, %v; want %+v", got, err, l.infos["0f"])
	}
	if got, err := h.st.FileInfo(ctx, "0a"); err != nil || got != (store.FileInfo{}) {
		h.Fatalf("FileInfo of a file without = %+v, %v; want zero", got, err)
	}
	if _, err := h.st.FileInfo(ctx, "ff"); !errors.Is(err, store.ErrNotFound) {
		h.Fatalf("FileInfo of an unknown file: %v, want ErrNotFound", err)
	}
	if err := h.st.PutFileInfo(ctx, "ff", store.FileInfo{Artist: "x"}); !errors.Is(err, store.ErrNotFound) {
		h.Fatalf("PutFileInfo of an unknown file: %v, want ErrNotFound", err)
	}
	for _, bad := range []store.FileInfo{{Artist: "\xff\xfe"}, {Title: strings.Repeat("x", store.MaxInfoText+1)}, {DurationMs: -1}} {
		if err := h.st.PutFileInfo(ctx, "0f", bad); err == nil {
			h.Fatalf("PutFileInfo(%+v) took it", bad)
		}
	}
	next := store.FileInfo{Artist: "Beatles", Title: "Help!", DurationMs: 1}
	if err := h.st.PutFileInfo(ctx, "0f", next); err != nil {
		h.Fatal(err)
	}
	if got, err := h.st.FileInfo(ctx, "0f"); err != nil || got != next {
		h.Fatalf("FileInfo after a second put = %+v, %v; want %+v", got, err, next)
	}
	if err := h.st.PutFileInfo(ctx, "12", next); err != nil {
		h.Fatal(err)
	}
	if n, err := h.st.ForgetMissing(ctx, []string{"12"}); err != nil || n != 1 {
		h.Fatalf("ForgetMissing(12) = %d, %v", n, err)
	}
	if _, err := h.st.FileInfo(ctx, "12"); !errors.Is(err, store.ErrNotFound) {
		h.Fatalf("FileInfo of a forgotten file: %v, want ErrNotFound", err)
	}
	h.upsert(NewFile("12"))
	if got, err := h.st.FileInfo(ctx, "12"); err != nil || got != (store.FileInfo{}) {
		h.Fatalf("FileInfo of a forgotten file found again = %+v, %v; want zero", got, err)
	}
}

func testBrowseTagStats(h *h, l *browseLib) {
	got, err := h.st.TagStats(h.Context())
	if err != nil {
		h.Fatalf("TagStats: %v", err)
	}
	if got.Files != 7 {
		h.Errorf("Files = %d, want 7", got.Files)
	}
	hist := got.Histograms["happy_musicnn_mood_happy"]
	want := make([]int, store.HistogramBins)
	for _, x := range []float64{0.91, 0.10, 0.20, 0.55, 0.65, 0.50, 0.75} {
		want[store.Bin(x)]++
	}
	if !slices.Equal(hist, want) {
		h.Errorf("happy histogram = %v, want %v", hist, want)
	}
	if len(got.Histograms) != 3 {
		h.Errorf("histograms of %v, want the three positive classes only", slices.Sorted(maps.Keys(got.Histograms)))
	}
	if m := got.Moods[store.TierLoose]; m["happy"] != 4 || m["party"] != 2 || m["aggressive"] != 1 {
		h.Errorf("loose moods = %v", m)
	}
	if m := got.Moods[store.TierStrict]; m["happy"] != 2 || m["sad"] != 1 || m["party"] != 1 || len(m) != 3 {
		h.Errorf("strict moods = %v", m)
	}
	if got.TopTags["pop"] != 2 || got.TopTags["dance"] != 2 || got.TopTags["heavy metal"] != 1 || got.TopTags["rock"] != 2 {
		h.Errorf("top tags = %v", got.TopTags)
	}
}

// testBrowseRetagged checks that a second completion replaces what the
// filters see, and that a forgotten file leaves every answer.
func testBrowseRetagged(h *h, l *browseLib) {
	if n, err := h.st.Retag(h.Context(), []string{"0b"}, "v2"); err != nil || n != 1 {
		h.Fatalf("Retag = %d, %v", n, err)
	}
	h.claim("0b", "i/w0", At(time.Hour), time.Minute)
	h.complete("0b", "i/w0", store.Completion{Tags: browseTags(0.95, 0.01, 0.9, "happy", "happy", "happy", "rock"), Version: "v2", At: At(time.Hour)})
	if got, _ := h.browse(store.BrowseQuery{Mood: "happy", MoodTier: store.TierStrict}); strings.Join(got, " ") != "0a 0b 12" {
		h.Errorf("strict happy after retagging 0b = %v", got)
	}
	if got, _ := h.browse(store.BrowseQuery{Mood: "sad"}); len(got) != 0 {
		h.Errorf("sad after retagging 0b = %v", got)
	}
	if got, _ := h.browse(store.BrowseQuery{Scores: []store.ScoreRange{{Key: "sad_musicnn_mood_sad", Min: 0.8, Max: 1}}}); len(got) != 0 {
		h.Errorf("sad ≥ 0.8 after retagging 0b = %v", got)
	}
	if n, err := h.st.ForgetMissing(h.Context(), []string{"12"}); err != nil || n != 1 {
		h.Fatalf("ForgetMissing = %d, %v", n, err)
	}
	if got, total := h.browse(store.BrowseQuery{Mood: "happy", MoodTier: store.TierStrict}); strings.Join(got, " ") != "0a 0b" || total != 2 {
		h.Errorf("strict happy after forgetting 12 = %v (%d)", got, total)
	}
	st, err := h.st.TagStats(h.Context())
	if err != nil {
		h.Fatalf("TagStats: %v", err)
	}
	if st.Files != 6 || st.Moods[store.TierStrict]["happy"] != 2 || st.TopTags["rock"] != 2 {
		h.Errorf("TagStats after retagging and forgetting = files %d, strict %v, top %v", st.Files, st.Moods[store.TierStrict], st.TopTags)
	}
}

// testBrowseRepeatedLabels: a label a file's list repeats (in any case,
// with spaces) counts that file once in TagStats, and the file matches
// its filter once.
func testBrowseRepeatedLabels(h *h, l *browseLib) {
	f := NewFile("14")
	f.Path = "/music/Repeat/Again.mp3"
	h.upsert(f)
	h.claim("14", "i/w0", At(time.Hour), time.Minute)
	h.complete("14", "i/w0", store.Completion{Version: "v1", At: At(time.Hour),
		Tags: browseTags(0.3, 0.3, 0.3, "happy; Happy", "calm; calm", "happy; HAPPY ; happy", "rock; Rock; rock")})
	st, err := h.st.TagStats(h.Context())
	if err != nil {
		h.Fatalf("TagStats: %v", err)
	}
	if st.Files != 8 || st.Moods[store.TierStrict]["happy"] != 3 || st.Moods[store.TierRegular]["calm"] != 1 ||
		st.Moods[store.TierLoose]["happy"] != 5 || st.TopTags["rock"] != 3 {
		h.Errorf("TagStats with a file repeating its labels = files %d, strict %v, regular %v, loose %v, top %v; "+
			"want 8 files, strict happy 3, regular calm 1, loose happy 5, rock 3",
			st.Files, st.Moods[store.TierStrict], st.Moods[store.TierRegular], st.Moods[store.TierLoose], st.TopTags)
	}
	if got, total := h.browse(store.BrowseQuery{Mood: "happy", MoodTier: store.TierStrict, Genre: "rock"}); strings.Join(got, " ") != "12 14" || total != 2 {
		h.Errorf("strict happy rock = %v (%d), want 12 14 (2)", got, total)
	}
}

// testBrowseScoreShapes compares with the rule the shapes a store may
// serve from an index of the scores: every page of a sort by a score,
// alone or with a status, in both directions (pages of files with the
// score, pages across their end, pages past them); a score range alone,
// with a status, text, a sort or a second range; a range with a label; a
// range or sort on a key no file has.
func testBrowseScoreShapes(h *h, l *browseLib) {
	check := func(q store.BrowseQuery) {
		h.Helper()
		got, total := h.browse(q)
		want, wt := l.want(q)
		if !slices.Equal(got, want) || total != wt {
			h.Fatalf("%+v: Browse = %v (total %d), the rule %v (total %d)", q, got, total, want, wt)
		}
	}
	statuses := []string{"", store.StatusTagged, store.StatusMissing, store.StatusPending, store.StatusFailed}
	for _, key := range []string{"happy_musicnn_mood_happy", "sad_musicnn_mood_sad", "danceable_musicnn_danceability", "voice_musicnn_voice_instrumental"} {
		for _, desc := range []bool{false, true} {
			for _, status := range statuses {
				for offset := range 11 {
					for _, limit := range []int{1, 3} {
						check(store.BrowseQuery{Sort: key, Desc: desc, Status: status, Offset: offset, Limit: limit})
					}
				}
			}
		}
	}
	happy := func(lo, hi float64) store.ScoreRange {
		return store.ScoreRange{Key: "happy_musicnn_mood_happy", Min: lo, Max: hi}
	}
	for _, q := range []store.BrowseQuery{
		{Scores: []store.ScoreRange{happy(0.5, 1)}},
		{Scores: []store.ScoreRange{happy(0.5, 1)}, Desc: true, Offset: 1, Limit: 2},
		{Scores: []store.ScoreRange{happy(0.5, 0.91)}, Status: store.StatusTagged},
		{Scores: []store.ScoreRange{happy(0, 1)}, Status: store.StatusMissing},
		{Scores: []store.ScoreRange{happy(0.2, 0.8)}, Text: "m"},
		{Scores: []store.ScoreRange{happy(0.1, 1)}, Sort: "sad_musicnn_mood_sad", Desc: true},
		{Scores: []store.ScoreRange{happy(0.1, 1)}, Sort: "happy_musicnn_mood_happy"},
		{Scores: []store.ScoreRange{happy(0.1, 1)}, Sort: store.SortTaggedAt, Desc: true},
		{Scores: []store.ScoreRange{happy(0.1, 1), {Key: "sad_musicnn_mood_sad", Min: 0, Max: 0.3}}},
		{Scores: []store.ScoreRange{{Key: "sad_musicnn_mood_sad", Min: 0, Max: 0.3}, happy(0.6, 1)}},
		{Scores: []store.ScoreRange{{Key: "other_musicnn_model", Min: 0, Max: 1}, happy(0, 1)}},
		{Scores: []store.ScoreRange{happy(0.9, 0.5)}},
		{Scores: []store.ScoreRange{happy(0.5, 1)}, Mood: "happy"},
		{Scores: []store.ScoreRange{happy(0, 0.6)}, Genre: "pop", Sort: "happy_musicnn_mood_happy", Desc: true},
		{Scores: []store.ScoreRange{{Key: "other_musicnn_model", Min: 0, Max: 1}}},
		{Sort: "other_musicnn_model", Desc: true, Offset: 2, Limit: 4},
		{Sort: "happy_musicnn_mood_happy", Text: "music", Status: store.StatusTagged},
	} {
		check(q)
	}
}
