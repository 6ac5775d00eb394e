package arangodb

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/clockskew"
)

// ServerTime reads the server's clock (GET /_db/<db>/_admin/time, with
// the store's credentials) to the microsecond, so that a host whose clock
// is off the server's measures the offset: here the server's clock is set
// 42 s ahead of this machine's, then 42 s behind.
func TestServerTime(t *testing.T) {
	f := newFake(t, "nomarr")
	f.user, f.pass = "root", secret
	s := openFake(t, f)
	f.locked(func() { f.serverTime = func() float64 { return 1772366400.123456 } })
	got, err := s.ServerTime(bg)
	if want := time.Unix(1772366400, 123456000); err != nil || !got.Equal(want) {
		t.Fatalf("ServerTime = %v, %v; want %v", got, err, want)
	}
	if r := f.requests(); r[len(r)-1] != "GET /_db/nomarr/_admin/time" {
		t.Fatalf("last request %q, want GET /_db/nomarr/_admin/time", r[len(r)-1])
	}
	for _, skew := range []time.Duration{42 * time.Second, -42 * time.Second} {
		f.locked(func() {
			f.serverTime = func() float64 { return float64(time.Now().Add(skew).UnixMicro()) / 1e6 }
		})
		t0 := time.Now()
		ts, err := s.ServerTime(bg)
		if err != nil {
			t.Fatalf("ServerTime with the server %v off: %v", skew, err)
		}
		r := clockskew.ForLease(30 * time.Second).Judge(clockskew.Sample{Sent: t0, Received: time.Now(), Server: ts})
		if d := r.Offset - skew; d < -r.Uncertainty-time.Millisecond || d > r.Uncertainty+time.Millisecond || r.State != clockskew.Dangerous {
			t.Errorf("server %v off: measured %v ± %v (%s), want %v, dangerous", skew, r.Offset, r.Uncertainty, r.State, skew)
		}
	}
}

// A server that cannot say its time is a fault, after one request (no
// retry lengthens the round trip the caller times), and so is an answer
// without a time, and a closed store.
func TestServerTimeFaults(t *testing.T) {
	f := newFake(t, "nomarr")
	f.user, f.pass = "root", secret
	s := openFake(t, f)
	var calls atomic.Int32
	f.setHook(func(route, _ string) *fakeErr {
		if strings.HasSuffix(route, "/_admin/time") {
			calls.Add(1)
			return &fakeErr{503, 503, "service unavailable"}
		}
		return nil
	})
	_, err := s.ServerTime(bg)
	wantFault(t, "ServerTime under 503", err, "arangodb: server time: server unreachable at", "HTTP 503")
	if n := calls.Load(); n != 1 {
		t.Errorf("ServerTime made %d requests under 503, want 1", n)
	}
	f.setHook(nil)
	for _, v := range []float64{0, -1} {
		f.locked(func() { f.serverTime = func() float64 { return v } })
		_, err = s.ServerTime(bg)
		wantFault(t, "ServerTime answered no time", err, "arangodb: server time: the server answered no time")
	}
	s.Close()
	_, err = s.ServerTime(bg)
	wantFault(t, "ServerTime on a closed store", err, "store is closed")
}

// A real server answers its clock: on the machine of the test (or one kept
// in time with it), within a second of this one's.
func TestServerTimeReal(t *testing.T) {
	base, ok := serverURL(t, true)
	if !ok {
		t.Skip(skipMsg)
	}
	s := openReal(t, freshDatabase(t, base))
	t0 := time.Now()
	ts, err := s.ServerTime(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := clockskew.ForLease(30 * time.Second).Judge(clockskew.Sample{Sent: t0, Received: time.Now(), Server: ts})
	if r.Offset < -time.Second || r.Offset > time.Second {
		t.Errorf("the server's clock is %v ± %v off this one's, want within 1s", r.Offset, r.Uncertainty)
	}
}
