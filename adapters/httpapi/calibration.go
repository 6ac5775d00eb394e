package httpapi

import (
	"context"
	"errors"

	"github.com/nomarr/nomarr/core/tags"
)

// CalibrationState is what Insights shows of the calibration: the
// configured mode (tags.CalibrationNone or tags.CalibrationLibrary), the
// model set in use and the calibration `nomarr calibrate` stored (nil:
// none).
type CalibrationState struct {
	Mode     string
	ModelSet string
	Stored   *tags.Calibration
}

// CalibrationBackend is a Backend that can say which calibration is in
// force; GET /api/v1/insights then carries it.
type CalibrationBackend interface {
	Calibration(ctx context.Context) (CalibrationState, error)
}

// calibrationJSON is the calibration part of GET /api/v1/insights.
type calibrationJSON struct {
	Mode     string `json:"mode"`
	ModelSet string `json:"model_set,omitempty"`
	// InForce: mode library and a stored calibration of the model set in
	// use: the mood tiers of the files analysed from the next start on
	// are derived from the scaled scores.
	InForce bool   `json:"in_force"`
	Why     string `json:"why"`
	// Stored is the stored calibration, whatever the mode; null: none.
	Stored *storedCalibrationJSON `json:"stored"`
}

type storedCalibrationJSON struct {
	ID      string                `json:"id"`
	Version string                `json:"model_set"`
	Files   int                   `json:"files"`
	Ranges  map[string]tags.Range `json:"ranges"`
}

func newCalibrationJSON(st CalibrationState) *calibrationJSON {
	out := &calibrationJSON{Mode: st.Mode, ModelSet: st.ModelSet}
	if c := st.Stored; c != nil {
		out.Stored = &storedCalibrationJSON{ID: c.ID(), Version: c.Version, Files: c.Files, Ranges: c.Ranges}
	}
	switch {
	case st.Mode != tags.CalibrationLibrary:
		out.Why = "calibration is none: the mood tiers apply to the models' scores as they are"
	case st.Stored == nil:
		out.Why = "calibration is library, but no calibration is stored: run `nomarr calibrate` once the library is tagged"
	case st.Stored.Version != st.ModelSet:
		out.Why = "calibration is library, but the stored calibration is of another model set: run `nomarr calibrate` again"
	default:
		out.InForce = true
		out.Why = "each mood score is scaled by the library's 5th and 95th percentiles before the thresholds apply"
	}
	return out
}

// calibration is the backend's calibration for insights, nil when it
// cannot say; an error reading it is logged, and insights answers
// without it.
func (s *Server) calibration(ctx context.Context) *calibrationJSON {
	cb, ok := s.b.(CalibrationBackend)
	if !ok {
		return nil
	}
	st, err := cb.Calibration(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrUnavailable) {
			s.log.Warn("http api: reading the calibration failed", "err", err)
		}
		return nil
	}
	return newCalibrationJSON(st)
}
