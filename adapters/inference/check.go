package inference

import "context"

// CheckModels loads the model files of cfg.ModelsDir once on the CPU, as a
// worker loads them, and unloads them: a file missing, cut short or not a
// model of the expected shapes is an error naming it (ErrModelNotFound,
// ErrModelInvalid), found before any worker is spawned. CUDA is never
// tried (cfg.UseCUDA is ignored): a main process holds no GPU memory, and
// a file that loads on the CPU is whole. Batch size 1 keeps the check's
// tensors small; the library stays loaded in the process (Init).
func CheckModels(ctx context.Context, cfg Config) error {
	cfg.UseCUDA, cfg.BatchSize, cfg.Threads = false, 1, 1
	m := New(cfg)
	defer m.Unload()
	return m.Load(ctx)
}
