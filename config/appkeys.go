package config

// AppKey is a key of the application (the commands, the store, the
// tagging job) rather than of the worker system: package config lists it
// with its default and meaning, for the configuration reference
// (AppReference) and `nomarr help`; package app reads and checks its
// value.
type AppKey struct {
	Name string
	// Default is the value a source that does not set the key leaves;
	// "" where there is none or it is computed (the host name, a path
	// under data_dir, …).
	Default string
	// Shown is the default as the reference writes it.
	Shown string
	// Path marks a key that takes a path (db takes sqlite:PATH): a value
	// given but empty or blank is an error, since an empty path would
	// mean the working directory, or the default, unasked; a key no
	// source sets keeps its default (docs/decisions/limits.md).
	Path    bool
	Meaning string
}

// appKeys are the application's keys, in the reference's order.
var appKeys = []AppKey{
	{Name: "db", Shown: "`sqlite:<data_dir>/nomarr.db`", Path: true,
		Meaning: "The store: `sqlite:PATH`, or `arangodb://USER:PASS@HOST:8529/DB` for several hosts ([deployment.md](deployment.md))."},
	{Name: "data_dir", Shown: "`$STATE_DIRECTORY`, else `$XDG_DATA_HOME/nomarr`, else `~/.local/share/nomarr`", Path: true,
		Meaning: "Where the SQLite store lives by default, and where `models_dir` and `onnxruntime_lib` are looked for before the Debian package's places. `STATE_DIRECTORY` is the folder systemd makes for a unit's `StateDirectory=`; with no `HOME`, `~` is the user's home in the user database, and with no home there nomarr exits 2 asking for `data_dir` ([decisions/data-dir.md](decisions/data-dir.md))."},
	{Name: "library_root", Shown: "none", Path: true,
		Meaning: "The folder `serve` scans; without it `serve` scans nothing."},
	{Name: "playlists_dir", Shown: "none", Path: true,
		Meaning: "The folder the Playlists page saves into (M3U8 and Navidrome NSP, as `nomarr playlists --out` writes them); without it the page cannot save."},
	{Name: "models_dir", Shown: "`../shared/models/musicnn`", Path: true,
		Meaning: "The ten ONNX model files. Looked for from the working directory, then from the checkout holding the binary, then as `<data_dir>/models/musicnn`, then as `/usr/share/nomarr/models/musicnn` (the Debian package's)."},
	{Name: "onnxruntime_lib", Shown: "`.cache/onnxruntime/libonnxruntime.so.1`", Path: true,
		Meaning: "The ONNX Runtime library (`make deps` fetches it). Looked for as `models_dir` is, then under `<data_dir>/onnxruntime/`, then as `/usr/lib/nomarr/libonnxruntime.so.1` (the Debian package's)."},
	{Name: "write_mode", Default: "full",
		Meaning: "`full` writes every tag into the files, `minimal` only the mood lists and `nom_version`, `none` nothing (the tags are kept in the store)."},
	{Name: "standard_tags", Default: "mood",
		Meaning: "The standard fields written next to the `nom:` keys, comma-separated: `mood`, `genre`, `mood,genre`, or `none` ([media-servers.md](media-servers.md)). GENRE is only added to: the user's values stay."},
	{Name: "mood_tier", Default: "mood-regular",
		Meaning: "The mood list written into MOOD: `mood-strict`, `mood-regular` or `mood-loose`."},
	{Name: "mood_thresholds", Default: "0.7,0.6,0.5",
		Meaning: "The least score of a mood for the strict, regular and loose lists, comma-separated, each in [0, 1], strict ≥ regular ≥ loose."},
	{Name: "top_tags_threshold", Default: "0.1",
		Meaning: "The least score of an MSD tag listed in `top_tags`, in [0, 1]."},
	{Name: "top_tags_max", Default: "5",
		Meaning: "The most tags `top_tags` lists (0 lists none)."},
	{Name: "calibration", Default: "none",
		Meaning: "`library` scales each mood score by the library's 5th/95th percentiles (`nomarr calibrate` computes them) before the thresholds apply; `none` uses the models' scores as they are."},
	{Name: "reuse_file_tags", Default: "true",
		Meaning: "A file that already holds this model set's whole analysis is decoded but not run through the models again ([decisions/tag-writing.md](decisions/tag-writing.md))."},
	{Name: "http_addr", Default: "127.0.0.1:8356",
		Meaning: "The HTTP API and dashboard of `serve`; the address `status` and `workers` call."},
	{Name: "api_token", Shown: "none",
		Meaning: "Bearer token of the API; required on any address but loopback ([api.md](api.md))."},
	{Name: "node", Shown: "the host name",
		Meaning: "This host's name: it keys restart state, the GPU health (`gpu:health:<node>`) and the model-set record, and one main process at a time may hold it."},
	{Name: "analyzer", Default: "musicnn",
		Meaning: "`musicnn` runs the models; `noop` runs the worker system without them; `script:SCENARIO` replays a scenario's files (drills)."},
	{Name: "rescan_interval", Default: "1h",
		Meaning: "How often `serve` scans `library_root`; 0 scans once, at start."},
	{Name: "log_level", Default: "info",
		Meaning: "`debug`, `info`, `warn` or `error`."},
	{Name: "ort_threads", Default: "1",
		Meaning: "ONNX Runtime threads per worker."},
	{Name: "batch_size", Default: "8",
		Meaning: "Patches per inference run."},
	{Name: "ort_cpu_arena", Default: "true",
		Meaning: "ONNX Runtime keeps its CPU memory arena: 10–30 % faster, about 80 MiB more held per loaded worker at batch 8."},
}

// AppKeys returns the application's keys, in the reference's order. The
// slice is a copy.
func AppKeys() []AppKey { return append([]AppKey(nil), appKeys...) }
