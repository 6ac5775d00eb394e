package app

import (
	"testing"
)

func TestClosestKey(t *testing.T) {
	for name, want := range map[string]string{
		"WROKERS": "workers", "wrkers": "workers", "LOGLEVEL": "log_level", "log-levle": "log_level",
		"workers": "workers", "STOP_GRACE": "stop_grace", "FROBNICATE": "", "DB_PATH": "", "X": "",
	} {
		if got := closestKey(name); got != want {
			t.Errorf("closestKey(%q) = %q, want %q", name, got, want)
		}
	}
}
