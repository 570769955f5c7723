package controller

import (
	"context"
	"reflect"
	"time"

	"github.com/longhorn-go/longhorn/engineapi"
)

// enginePollInterval is how often a running engine is polled (Longhorn's
// EnginePollInterval is 5 s; shorter here so modes and rebuild progress
// reach the volume sooner).
const enginePollInterval = 2 * time.Second

// engineObservation is one poll of a running engine.
type engineObservation struct {
	Volume    *engineapi.Volume
	Replicas  []engineapi.Replica
	Rebuild   map[string]*engineapi.RebuildStatus
	Snapshots map[string]*engineapi.Snapshot
	// Restore is every replica's restore by address, polled only for an
	// engine asked to restore a backup; RestoreErr why it could not be read.
	Restore    map[string]*engineapi.RestoreStatus
	RestoreErr string
	// Clone is every replica's snapshot clone by address, polled only for
	// an engine asked to clone (spec.requestedDataSource is set); CloneErr
	// why it could not be read.
	Clone    map[string]*engineapi.CloneStatus
	CloneErr string
	Err      string
	At       time.Time
}

// sameAs compares two observations ignoring the time.
func (o *engineObservation) sameAs(p *engineObservation) bool {
	if o == nil || p == nil {
		return o == p
	}
	a, b := *o, *p
	a.At, b.At = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// engineTarget is what one engine monitor polls: the engine ref through the
// instance manager at IM; Key is the engine's queue key. Restore also polls
// the replicas' restore status (spec.requestedBackupRestore is set), Clone
// their clone status (spec.requestedDataSource is set).
type engineTarget struct {
	Key     string
	IM      engineapi.IMAddress
	Ref     engineapi.EngineRef
	Restore bool
	Clone   bool
}

// engineMonitors poll running engines: each loop records its latest
// observation and enqueues the engine when it changed.
type engineMonitors = monitors[engineTarget, *engineObservation]

func newEngineMonitors(api instanceAPI, enqueue func(string)) *engineMonitors {
	return newMonitors(func(ctx context.Context, t engineTarget, record func(*engineObservation)) {
		pollEngine(ctx, api, t, record, enqueue)
	})
}

// pollEngine observes t every enginePollInterval until ctx is done.
func pollEngine(ctx context.Context, api instanceAPI, t engineTarget, record func(*engineObservation), enqueue func(string)) {
	tick := time.NewTicker(enginePollInterval)
	defer tick.Stop()
	var last *engineObservation
	for {
		obs := observeEngine(ctx, api, t)
		if ctx.Err() != nil {
			return
		}
		record(obs)
		if !obs.sameAs(last) {
			enqueue(t.Key)
		}
		last = obs
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// observeEngine makes one round of calls; the first failure ends the round.
func observeEngine(ctx context.Context, api instanceAPI, t engineTarget) *engineObservation {
	obs := &engineObservation{At: time.Now()}
	c, err := api.Engine(ctx, t.IM, t.Ref)
	if err == nil {
		obs.Volume, err = c.VolumeGet(ctx)
	}
	if err == nil {
		obs.Replicas, err = c.ReplicaList(ctx)
	}
	if err == nil {
		obs.Rebuild, err = c.ReplicaRebuildingStatus(ctx)
	}
	if err == nil {
		obs.Snapshots, err = c.SnapshotList(ctx)
	}
	if err != nil {
		obs.Err = err.Error()
		return obs
	}
	if t.Restore {
		bc, ok := c.(engineapi.BackupClient)
		if !ok {
			obs.RestoreErr = "the engine client cannot restore backups"
		} else if obs.Restore, err = bc.BackupRestoreStatus(ctx); err != nil {
			obs.RestoreErr = err.Error()
		}
	}
	if t.Clone {
		if obs.Clone, err = c.SnapshotCloneStatus(ctx); err != nil {
			obs.CloneErr = err.Error()
		}
	}
	return obs
}
