package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/supervisor"
)

// The line of a stop waiting on the store says what it waits for and how
// to leave it; the claims' fate is told only when claims are left.
func TestLogStoreWait(t *testing.T) {
	for _, c := range []struct {
		w    supervisor.StoreWait
		want string
	}{
		{supervisor.StoreWait{Releases: []string{"a", "b"}, RestartStates: []string{"a"}},
			`msg="stopping: waiting for the store to take 2 claim releases and 1 restart state; press Ctrl-C again to leave them (the claims return when their lease expires)" waited=30s`},
		{supervisor.StoreWait{RestartStates: []string{"a", "b"}},
			`msg="stopping: waiting for the store to take 2 restart states; press Ctrl-C again to leave them" waited=30s`},
	} {
		var buf bytes.Buffer
		logStoreWait(slog.New(slog.NewTextHandler(&buf, nil)))(c.w, 30*time.Second+200*time.Millisecond)
		if !strings.Contains(buf.String(), "level=WARN "+c.want) {
			t.Errorf("for %+v:\n%s\nwant %s", c.w, buf.String(), c.want)
		}
	}
}
