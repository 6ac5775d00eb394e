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

// StatNewer reports whether an observation numbered given replaces a
// stored one numbered stored: one without a number (0) always, otherwise
// only a later number.
func StatNewer(given, stored int64) bool { return given == 0 || given > stored }
