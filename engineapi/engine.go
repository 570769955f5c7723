package engineapi

import "context"

// EngineClient operates one engine (one volume). The implementation goes
// through the instance manager's proxy (Handler.Engine), or to the engine
// directly for an instance manager without one; tests of controllers
// may use their own fake. Every method honours ctx and, when ctx has no
// deadline, applies DefaultCallTimeout. Engine errors keep their gRPC code
// (see IsNotFound etc.); backup methods are not offered yet.
type EngineClient interface {
	// IsGRPC reports whether calls go through the instance manager's engine
	// proxy (true) or straight to the engine, the fallback for an instance
	// manager older than the proxy (false; Longhorn's EngineClientProxy
	// IsGRPC).
	IsGRPC() bool
	// VersionGet returns the engine binary's versions.
	VersionGet(ctx context.Context) (*EngineVersion, error)
	// VolumeGet returns the volume as the engine serves it.
	VolumeGet(ctx context.Context) (*Volume, error)
	// VolumeExpand grows the volume to size bytes.
	VolumeExpand(ctx context.Context, size int64) error
	// VolumeFrontendStart starts frontend ("nbd", "iscsi") on a running volume.
	VolumeFrontendStart(ctx context.Context, frontend string) error
	// VolumeFrontendShutdown stops the frontend; the volume keeps its replicas.
	VolumeFrontendShutdown(ctx context.Context) error
	// VolumeSnapshot takes a snapshot on every replica and returns its name
	// (name "" lets the engine pick one).
	VolumeSnapshot(ctx context.Context, name string, labels map[string]string) (string, error)
	// SnapshotList returns the snapshots by name; the head is "volume-head".
	SnapshotList(ctx context.Context) (map[string]*Snapshot, error)
	// SnapshotRemove marks snapshots removed (the data is merged by a purge).
	SnapshotRemove(ctx context.Context, names ...string) error
	// SnapshotRevert reverts the volume to snapshot name (frontend down).
	SnapshotRevert(ctx context.Context, name string) error
	// SnapshotPurge starts coalescing removed snapshots on every replica.
	SnapshotPurge(ctx context.Context, skipIfInProgress bool) error
	// SnapshotPurgeStatus returns the purge progress by replica address.
	SnapshotPurgeStatus(ctx context.Context) (map[string]*PurgeStatus, error)
	// SnapshotClone starts copying a snapshot of another volume into this one.
	SnapshotClone(ctx context.Context, req SnapshotCloneRequest) error
	// SnapshotCloneStatus returns the clone progress by replica address.
	SnapshotCloneStatus(ctx context.Context) (map[string]*CloneStatus, error)
	// ReplicaAdd starts rebuilding a new replica (returns once it started).
	ReplicaAdd(ctx context.Context, req ReplicaAddRequest) error
	// ReplicaList returns the replicas and their modes.
	ReplicaList(ctx context.Context) ([]Replica, error)
	// ReplicaRemove drops a replica from the engine.
	ReplicaRemove(ctx context.Context, address, instanceName string) error
	// ReplicaRebuildingStatus returns rebuild progress by replica address.
	ReplicaRebuildingStatus(ctx context.Context) (map[string]*RebuildStatus, error)
	// ReplicaVerifyRebuild checks a rebuilt replica and switches it to RW.
	ReplicaVerifyRebuild(ctx context.Context, address, instanceName string) error
}
