package tags

import "strconv"

// KeyDerived names the options the derived tags were derived under
// (Derivation): the mood thresholds, the top-tag threshold and count, and
// the calibration. With nom_version it says whether a file's lists are
// the ones this configuration gives: the numbers next to them are the
// models' own, the lists are not.
const KeyDerived = "derived"

// Derivation is the value of KeyDerived for opt, e.g.
// "mood=0.7/0.6/0.5 top=0.1/5 cal=none", or "cal=library:1a2b3c4d" for a
// calibration (its ID). It covers what changes the derived values, not
// what selects which of them are written (write mode, standard fields,
// mood tier): those show in the file as they are.
func Derivation(opt Options) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	cal := CalibrationNone
	if opt.Calibration != nil {
		cal = CalibrationLibrary + ":" + opt.Calibration.ID()
	}
	return "mood=" + f(opt.MoodStrict) + "/" + f(opt.MoodRegular) + "/" + f(opt.MoodLoose) +
		" top=" + f(opt.TopThreshold) + "/" + strconv.Itoa(opt.TopMax) + " cal=" + cal
}

// legacyDerivation is what files tagged before KeyDerived existed were
// derived under: the fixed defaults, no calibration.
var legacyDerivation = Derivation(DefaultOptions())
