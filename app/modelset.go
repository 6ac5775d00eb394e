package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nomarr/nomarr/adapters/analyzer"
	"github.com/nomarr/nomarr/adapters/inference"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// ModelSetVersion is the version the configured analyzer records on the
// files it tags (store.File.TaggedVersion): the model files' hash for
// musicnn, NoopVersion for noop. A scan sends the files under its folder
// that were tagged under another version back to work
// (store.Inventory.Retag), so new models, or the models after a trial run
// with noop into the same store, tag the library again. "" sends nothing
// back: the drills' script analyzer, or model files that cannot be read
// (the run itself then fails on them, saying why).
func ModelSetVersion(s *Settings) string {
	switch s.Get("analyzer") {
	case "musicnn":
		v, err := inference.Version(s.Get("models_dir"))
		if err != nil {
			return ""
		}
		return v
	case "noop":
		return analyzer.NoopVersion
	}
	return ""
}

// VectorModelSet is the model set whose track vectors the configured
// analyzer makes: the musicnn models' (ModelSetVersion); "" for an
// analyzer that makes none, or models that cannot be read.
func VectorModelSet(s *Settings) string {
	if s.Get("analyzer") != "musicnn" {
		return ""
	}
	return ModelSetVersion(s)
}

// ModelScan is what a scan needs to send back to work the files another
// model set tagged: this host's node name and the version of its models
// (ModelSetVersion; "": send nothing back).
type ModelScan struct {
	Node, Version string
}

// ScanModels is the ModelScan of this host's settings.
func ScanModels(s *Settings) ModelScan {
	return ModelScan{Node: s.Get("node"), Version: ModelSetVersion(s)}
}

// agree records this host's model-set version in the store and returns
// the version the scan sends files back to work under: ms.Version, or ""
// when another host ran under another version within
// inventory.ModelSetFresh (inventory.ModelSets.Conflict decides; it is
// logged), or when the record cannot be read or written.
func (ms ModelScan) agree(ctx context.Context, st store.Store, log *slog.Logger) string {
	if ms.Version == "" {
		return ""
	}
	sets, err := ms.record(ctx, st)
	if err != nil {
		log.Warn("scan: cannot record this host's model set; no file is sent back to work for new models this time", "err", err)
		return ""
	}
	if other, set := sets.Conflict(ms.Node, ms.Version, time.Now()); other != "" {
		log.Warn("scan: another host sharing this store tags with another model set; files tagged by other models are "+
			"not sent back to work until every host runs the same ones", "version", ms.Version, "other_node", other,
			"other_version", set.Version, "other_recorded_at", time.UnixMilli(set.AtMs).UTC().Format(time.RFC3339))
		return ""
	}
	return ms.Version
}

// record writes this host's model-set version into the hosts' records
// (inventory.ModelSetsKey, by compare-and-set, read again when another
// host wrote meanwhile) and returns the records as they were before.
func (ms ModelScan) record(ctx context.Context, st store.Store) (inventory.ModelSets, error) {
	for range 5 {
		raw, _, err := st.GetMeta(ctx, inventory.ModelSetsKey)
		if err != nil {
			return nil, err
		}
		sets, err := inventory.DecodeModelSets(raw)
		if err != nil {
			sets = inventory.ModelSets{} // damaged: written anew
		}
		ok, err := st.SwapMeta(ctx, inventory.ModelSetsKey, raw, sets.Record(ms.Node, ms.Version, time.Now()).Encode())
		if err != nil {
			return nil, err
		}
		if ok {
			return sets, nil
		}
	}
	return nil, errors.New("the hosts' model-set records kept changing")
}

// KeepRecorded writes this host's model-set record every period
// (inventory.ModelSetRenew) until ctx ends, so that it stays fresh while
// the workers tag, between scans or without any (serve with no
// library_root or rescan_interval 0, a long tag run). current gives the
// version as the model files are at each write (ScanModels): models
// replaced meanwhile are what the workers reload (Result.ModelsChanged),
// and a renewal must not write the old version back over a scan's.
func KeepRecorded(ctx context.Context, st store.Store, current func() ModelScan, every time.Duration, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ms := current()
			if ms.Version == "" {
				continue
			}
			if _, err := ms.record(ctx, st); err != nil && ctx.Err() == nil {
				log.Warn("cannot record this host's model set (tried again later)", "err", err)
			}
		}
	}
}
