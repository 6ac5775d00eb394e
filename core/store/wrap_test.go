package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
)

// writes is whether each method of Store may change the store: every
// method of the port must have an entry, so that a new one is classified
// here as it is in Wrap.
var writes = map[string]bool{
	"UpsertFiles": true, "NextStatSeq": true, "Discover": false, "Claim": true,
	"Complete": true, "Release": true, "ReleaseWorker": true, "Quarantine": true,
	"KeepClaim": true, "RenewLeases": true, "CleanupClaims": true, "File": false,
	"Counts": false, "ListFiles": false, "MarkMissing": true, "RetryFailed": true,
	"Retag": true, "ForgetMissing": true, "GetMeta": false, "SetMeta": true,
	"SwapMeta": true, "LoadRestart": false, "SaveRestart": true,
	"AppendHistory": true, "PruneHistory": true,
	"PutTrackVector": true, "TrackVectors": false, "ListTags": false,
	"Browse": false, "FileTags": false, "TagStats": false,
	"MarkRetag": true, "DiscoverRetag": false, "NeedsVector": false, "CountJobs": false,
	"PutFileInfo": true, "FileInfo": false,
}

// snake is a method's name in snake case: UpsertFiles → upsert_files.
func snake(name string) string {
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TestWrapEveryMethod calls every method of the port (by reflection over
// Store's method set) on a wrapped store whose calls go to another
// wrapped store: the outer around must see the method's name and write
// flag, the inner one the same name (the call went to the same-named
// method), and the caller the inner error with zero values.
func TestWrapEveryMethod(t *testing.T) {
	errInner := errors.New("inner")
	var inner, outer []Op
	in := Wrap(func(ctx context.Context, op Op, call Call) error {
		inner = append(inner, op)
		return errInner
	})
	out := Wrap(func(ctx context.Context, op Op, call Call) error {
		outer = append(outer, op)
		return call(ctx, in)
	})
	port := reflect.TypeFor[Store]()
	seen := map[string]bool{}
	for i := range port.NumMethod() {
		m := port.Method(i)
		seen[m.Name] = true
		inner, outer = nil, nil
		args := []reflect.Value{reflect.ValueOf(context.Background())}
		for i := 1; i < m.Type.NumIn(); i++ {
			args = append(args, reflect.Zero(m.Type.In(i)))
		}
		res := reflect.ValueOf(out).MethodByName(m.Name).Call(args)
		want, ok := writes[m.Name]
		if !ok {
			t.Errorf("%s: no entry in writes (read or write?)", m.Name)
		}
		if len(outer) != 1 || outer[0].Name != snake(m.Name) || outer[0].Writes != want {
			t.Errorf("%s: around saw %+v, want one op %q writes=%v", m.Name, outer, snake(m.Name), want)
		}
		if len(inner) != 1 || inner[0].Name != snake(m.Name) {
			t.Errorf("%s: the call went to %+v, want %q", m.Name, inner, snake(m.Name))
		}
		last := res[len(res)-1]
		if err, _ := last.Interface().(error); !errors.Is(err, errInner) {
			t.Errorf("%s: error %v, want the inner store's", m.Name, err)
		}
		for i, r := range res[:len(res)-1] {
			if !r.IsZero() {
				t.Errorf("%s: result %d is %v with an error, want zero", m.Name, i, r)
			}
		}
	}
	for name := range writes {
		if !seen[name] {
			t.Errorf("writes names %s, which Store does not have", name)
		}
	}
}

// answering is a store that answers Claim, GetMeta and CleanupClaims with
// fixed values; its other methods are not called.
type answering struct {
	Store
	err error
}

func (a answering) Claim(_ context.Context, c Claim) (File, error) {
	return File{Key: c.FileKey}, a.err
}

func (a answering) GetMeta(context.Context, string) (string, bool, error) {
	return "v", true, a.err
}

func (a answering) CleanupClaims(context.Context, time.Time) ([]Claim, error) {
	return []Claim{{FileKey: "f1", WorkerID: "w1"}, {FileKey: "f2", WorkerID: "w2"}}, a.err
}

// TestWrapAnswers: the caller gets the last call's answer with around's
// error, and zero values when around fails a call that succeeded or makes
// none.
func TestWrapAnswers(t *testing.T) {
	ctx := context.Background()
	errStore, errAround := errors.New("store"), errors.New("around")
	through := func(st Store, fail error) Store {
		return Wrap(func(ctx context.Context, _ Op, call Call) error {
			if err := call(ctx, st); err != nil {
				return err
			}
			return fail
		})
	}

	if f, err := through(answering{}, nil).Claim(ctx, Claim{FileKey: "k"}); err != nil || f.Key != "k" {
		t.Errorf("passed through: %+v, %v", f, err)
	}
	if v, ok, err := through(answering{}, nil).GetMeta(ctx, "k"); err != nil || v != "v" || !ok {
		t.Errorf("passed through: %q %v %v", v, ok, err)
	}
	// The store's own error keeps its answer (CleanupClaims' claims come
	// with an error).
	if gone, err := through(answering{err: errStore}, nil).CleanupClaims(ctx, time.Time{}); !errors.Is(err, errStore) || len(gone) != 2 {
		t.Errorf("store failed: %v, %v; want its claims and error", gone, err)
	}
	// Around fails a call that succeeded: no answer.
	if gone, err := through(answering{}, errAround).CleanupClaims(ctx, time.Time{}); !errors.Is(err, errAround) || gone != nil {
		t.Errorf("around failed: %v, %v; want nil and its error", gone, err)
	}
	if v, ok, err := through(answering{}, errAround).GetMeta(ctx, "k"); !errors.Is(err, errAround) || v != "" || ok {
		t.Errorf("around failed: %q %v %v; want zero values", v, ok, err)
	}
	// No call made.
	refuse := Wrap(func(context.Context, Op, Call) error { return errAround })
	if f, err := refuse.Claim(ctx, Claim{FileKey: "k"}); !errors.Is(err, errAround) || f.Key != "" {
		t.Errorf("no call: %+v, %v", f, err)
	}
	// A call made again: the last answer counts.
	n := 0
	retry := Wrap(func(ctx context.Context, _ Op, call Call) error {
		n++
		if err := call(ctx, answering{err: errStore}); err == nil {
			t.Fatal("first call succeeded")
		}
		return call(ctx, answering{})
	})
	if f, err := retry.Claim(ctx, Claim{FileKey: "k"}); err != nil || f.Key != "k" || n != 1 {
		t.Errorf("retried: %+v, %v (%d arounds)", f, err, n)
	}
}

// TestWrapRefs: Op.Refs gives the claims a call names or answers.
func TestWrapRefs(t *testing.T) {
	ctx := context.Background()
	var got map[string][]Ref
	st := Wrap(func(ctx context.Context, op Op, call Call) error {
		err := call(ctx, answering{})
		if op.Refs != nil {
			got[op.Name] = op.Refs()
		}
		return err
	})
	got = map[string][]Ref{}
	ref := Ref{FileKey: "f", WorkerID: "w"}
	_, _ = st.Claim(ctx, Claim{FileKey: "f", WorkerID: "w"})
	_, _ = st.CleanupClaims(ctx, time.Time{})
	_, _, _ = st.GetMeta(ctx, "k")
	want := map[string][]Ref{
		"claim":          {ref},
		"cleanup_claims": {{FileKey: "f1", WorkerID: "w1"}, {FileKey: "f2", WorkerID: "w2"}},
	}
	for op, refs := range want {
		if !slices.Equal(got[op], refs) {
			t.Errorf("%s: Refs %v, want %v", op, got[op], refs)
		}
	}
	if _, ok := got["get_meta"]; ok {
		t.Errorf("get_meta has Refs")
	}

	released := Wrap(func(ctx context.Context, op Op, call Call) error {
		_ = call(ctx, releasing{})
		got[op.Name] = op.Refs()
		return nil
	})
	_, _ = released.ReleaseWorker(ctx, "w", Death{}, nil)
	if want := []Ref{{FileKey: "a", WorkerID: "w"}, {FileKey: "b", WorkerID: "w"}}; !slices.Equal(got["release_worker"], want) {
		t.Errorf("release_worker: Refs %v, want %v", got["release_worker"], want)
	}
	// The claim a call names is known before the call: none is made.
	named := Wrap(func(_ context.Context, op Op, _ Call) error {
		got[op.Name] = op.Refs()
		return nil
	})
	_ = named.Complete(ctx, ref, Completion{})
	_ = named.Release(ctx, ref, nil)
	_ = named.KeepClaim(ctx, ref, time.Time{})
	for _, name := range []string{"complete", "release", "keep_claim"} {
		if !slices.Equal(got[name], []Ref{ref}) {
			t.Errorf("%s: Refs %v, want %v", name, got[name], []Ref{ref})
		}
	}
}

// releasing is a store whose ReleaseWorker releases files a and b.
type releasing struct{ Store }

func (releasing) ReleaseWorker(context.Context, string, Death, *Crash) ([]Released, error) {
	return []Released{{FileKey: "a"}, {FileKey: "b"}}, nil
}
