package store

// The stat sequence orders the observations of a file's size and mtime
// that reach the store, so that an older one never replaces a newer one.
//
// A scan reads a file's stat and writes it with a batch of up to a
// thousand files, seconds later; a job that rewrote the file (the tag
// write replaces it: new size, mtime and inode) records the new stat with
// its completion (Completion.Rewritten). Without an order, a scan batch
// that read the file before the rewrite but wrote after the completion put
// the old stat back and the file needed tagging again: it was analysed a
// second time.
//
// The order is a counter kept in the store (MetaStatSeq), not a time:
// hosts sharing a store may read different wall clocks, and a clock may
// be stepped back.
//
//   - A scan takes n = NextStatSeq before it reads the stats of a batch,
//     and upserts the batch with StatSeq n.
//   - A completion that records a rewrite stamps the file with the
//     counter's current value c, read in the completion's own operation,
//     which begins after the write.
//   - An upsert numbered n changes a stored file only if its stamp is
//     lower than n (StatNewer).
//
// If c >= n, the scan took n before the completion read c: it may have
// read the stat before the write, and is refused for that file. If c < n,
// the completion read the counter before the scan took n, and the scan
// read the stat after that, so after the write: its stat is as new as the
// job's or newer, and applies. A refusal errs on the safe side: a file
// changed again between the completion and the scan batch's read is seen
// by the next scan. A scan's own upsert stamps what it writes with n, so
// of two scans running at once the one that took the later number wins.
//
// No stamp exceeds the counter. The completion's c is the counter's value;
// an upsert reads the counter in its own operation and writes a number
// above it as the counter's value (ClampStatSeq), without moving the
// counter. A number the scan took from this store is never clamped: the
// counter only grows, and the upsert reads it after NextStatSeq returned
// n, so it reads at least n (ArangoDB reads it in the upsert's snapshot,
// taken after that). A number above the counter comes from another
// incarnation of the store: the database replaced, or restored from a
// backup, while a scan ran and its handle reopened on the new one. Written
// as given, it would stamp files above every number the next scans take,
// and they would refuse every change to those files until the counter
// passed it, hundreds of scans later. Clamped, the scan is ordered as
// though it took the counter's value when it writes: no observation in
// the new store orders it, so a rewrite recorded there since its walk may
// still be replaced by its older stat, at the cost of one more analysis,
// and the next scan, numbered above every stamp, corrects what it wrote.

// StatNewer reports whether an observation numbered given replaces a
// stored one numbered stored: one without a number (0) always, otherwise
// only a later number.
func StatNewer(given, stored int64) bool { return given == 0 || given > stored }

// ClampStatSeq is the number an upsert writes for a scan's number given
// when the stat sequence's value is counter: given, or counter when given
// is above it (a number from another store; counter 0, a store where no
// scan took a number, makes it 0, no order, which is what every stamp
// there is). Never above counter, so no stamp outruns the sequence.
func ClampStatSeq(given, counter int64) int64 { return min(given, counter) }
