package arangodb

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/nomarr/nomarr/core/store"
)

var _ store.ServerClock = (*Store)(nil)

// ServerTime implements store.ServerClock: the clock of the server this
// store talks to (GET /_db/<db>/_admin/time, {"time": <Unix seconds with
// microseconds>}), which every host sharing the database reads. It makes
// one request, never tried again (the caller times the round trip; it
// takes several samples itself), bounded by the store's timeout. In a
// cluster the answer is the coordinator's clock: keep the servers of the
// cluster synchronised too.
func (s *Store) ServerTime(ctx context.Context) (time.Time, error) {
	const op = "server time"
	if s.closed.Load() {
		return time.Time{}, s.fault(op, errClosed)
	}
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	sec, err := s.client.GetSystemTime(ctx, s.t.db)
	if err != nil {
		return time.Time{}, s.fault(op, err)
	}
	t, err := unixSeconds(sec)
	if err != nil {
		return time.Time{}, s.fault(op, err)
	}
	return t, nil
}

// unixSeconds is the time of sec, Unix seconds with a fraction, rounded to
// the microsecond (the server's precision; a float64 near today's time
// holds about a quarter of one). A time that is no time (absent: 0,
// negative, not a number, beyond any int64 of seconds) is an error.
func unixSeconds(sec float64) (time.Time, error) {
	if !(sec > 0 && sec < math.MaxInt64) {
		return time.Time{}, fmt.Errorf("the server answered no time (%v)", sec)
	}
	whole := math.Floor(sec)
	us := math.Round((sec - whole) * 1e6)
	return time.Unix(int64(whole), int64(us)*1e3), nil
}
