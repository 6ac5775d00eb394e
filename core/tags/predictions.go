// Package tags turns model predictions into the tags Nomarr stores and writes
// (docs/design.md §9): one number per class, the MSD top tags above a threshold,
// mood label lists and the model-set version. It is pure.
package tags

// Predictions are a track's raw model outputs, one row per patch.
type Predictions struct {
	// MSD holds the backbone's activations: per patch, 50 scores in the MSD
	// top-50 order of docs/design.md §9.
	MSD [][]float32
	// Heads holds, per head stem (e.g. "mood_happy"), per patch, the two
	// class scores in the alphabetical class order of docs/design.md §9.
	Heads map[string][][]float32
	// EmbeddingSum is the sum, over the patches of MSD, of the backbone's
	// 200-unit patch embeddings (the heads' input), in float64 so that a
	// long track's sum loses nothing to rounding; nil when none was kept
	// (a simulated analyzer, predictions built by hand). Its direction is
	// the track vector's (similar.TrackVector: the unit mean).
	EmbeddingSum []float64
}

// Heads are the nine classifier heads, in a fixed order.
var Heads = []string{"danceability", "gender", "mood_aggressive", "mood_happy", "mood_party", "mood_relaxed", "mood_sad",
	"tonal_atonal", "voice_instrumental"}

// Classes names each head's two outputs, in output order (alphabetical).
var Classes = map[string][2]string{
	"danceability":       {"danceable", "not_danceable"},
	"gender":             {"female", "male"},
	"mood_aggressive":    {"aggressive", "not_aggressive"},
	"mood_happy":         {"happy", "non_happy"},
	"mood_party":         {"non_party", "party"},
	"mood_relaxed":       {"non_relaxed", "relaxed"},
	"mood_sad":           {"non_sad", "sad"},
	"tonal_atonal":       {"atonal", "tonal"},
	"voice_instrumental": {"instrumental", "voice"},
}

// MSDTop50 is the backbone's output order.
var MSDTop50 = []string{"rock", "pop", "alternative", "indie", "electronic", "female vocalists", "dance", "00s",
	"alternative rock", "jazz", "beautiful", "metal", "chillout", "male vocalists", "classic rock", "soul", "indie rock",
	"Mellow", "electronica", "80s", "folk", "90s", "chill", "instrumental", "punk", "oldies", "blues", "hard rock",
	"ambient", "acoustic", "experimental", "female vocalist", "guitar", "Hip-Hop", "70s", "party", "country",
	"easy listening", "sexy", "catchy", "funk", "electro", "heavy metal", "Progressive rock", "60s", "rnb", "indie pop",
	"sad", "House", "happy"}
