// Package replica is the replica store: one Longhorn replica directory of
// layered sparse files, opened for block I/O, snapshots, revert, snapshot
// removal and purge, and expansion. The engine's replica process serves it
// over dataconn; rebuild copies its files. Facts from longhorn-engine
// pkg/replica (replica.go, diff_disk.go, revision_counter.go) and
// pkg/util/disk; the code is our own.
//
// # API
//
//	Create(dir, size, Options) / Open(dir, Options) / OpenOrCreate(dir, size, Options)
//	ReadVolumeMeta(dir)                       volume.meta of a closed replica
//	(*Store) ReadAt(p, off) / WriteAt(p, off) / UnmapAt(length uint32, off) / Flush()
//	(*Store) Snapshot(name, userCreated, created, labels) / Revert(name, created) / Expand(size)
//	(*Store) MarkDiskAsRemoved(name) / PrepareRemoveDisk(name) / PurgeSnapshot(ctx, name, progress) / Purge(ctx, progress)
//	(*Store) Info() / Chain() / Size() / ListDisks() / SnapshotUsage() / HeadStat()
//	(*Store) SetRebuilding(b) / RevisionCounter() / SetRevisionCounter(n)
//	(*Store) SetUnmapMarkSnapChainRemoved(b) / SetSnapshotMaxCount(n) / SetSnapshotMaxSize(n)
//	(*Store) RebuildFiles() / FilePath(name) / RemoveDiffDisk(name, force) / Reload()
//	(*Store) Close() / Delete() / Dir()
//
// Names: where a method takes a disk "name" it accepts a snapshot name
// (NAME) or a disk file name (volume-snap-NAME.img, volume-head-NNN.img).
// Snapshot names are 1..200 characters of [A-Za-z0-9_.-] starting with a
// letter or digit; a new snapshot may not be named "volume-head" or like a
// disk file (volume-head-NNN.img, volume-snap-X.img). The engine generates
// UUIDs for empty names, the store does not. Sizes are positive multiples of
// 4096 up to MaxVolumeSize (64 TiB). created strings are stored as given ("" = now, RFC 3339 UTC).
//
// # On-disk layout (exactly Longhorn's, readable both ways)
//
//	volume-head-NNN.img        writable head, sparse, apparent size = volume size (%03d)
//	volume-head-NNN.img.meta   {"Name","Parent","Removed","UserCreated","Created","Labels"}
//	volume-snap-NAME.img       read-only snapshot layer (a former head)
//	volume-snap-NAME.img.meta  same keys; Name is the former head's file name, as Longhorn writes it
//	volume-snap-NAME.img.checksum  Longhorn's snapshot hash; removed when the file changes
//	volume.meta                {"Size","Head","Dirty","Rebuilding","Error","Parent","SectorSize","BackingFilePath","Encrypted"}
//	revision.counter           4096 bytes: ASCII decimal, NUL padded (O_DIRECT when possible)
//
// JSON is compact with a trailing newline (Go's json.Encoder, as Longhorn),
// keys capitalised in the order above, Labels null when empty, Created RFC
// 3339 UTC. Every metadata file is replaced atomically: NAME.tmp written and
// fsynced, renamed over NAME, directory fsynced. volume.meta SectorSize is 512
// (Longhorn's ReplicaSectorSize) unless Options.MetaSectorSize says 4096;
// the store itself always works in 4096-byte sectors.
//
// # Layers, the location index and reads
//
// The live chain is found by following Parent from volume.meta Head. Layer 1
// is the oldest disk (or the backing file), the head is the last; at most
// MaxChainLength (250) disks. The location index has one byte per 4096-byte
// sector naming the newest layer that holds it (0 = none: reads as zeroes).
// Open rebuilds it from each file's data extents (FIEMAP, or lseek
// SEEK_DATA/SEEK_HOLE where FIEMAP is missing; package sparse), oldest first. A read walks the index and issues one pread
// per run of sectors held by the same layer. A file shorter than the volume
// (a snapshot taken before an expansion) reads as zeroes past its end.
//
// # Alignment and ranges
//
// ReadAt and WriteAt accept any offset and length, as Longhorn's replica
// does (its controller forwards client writes unaligned): aligned requests
// are the fast path; an unaligned write reads the partial sectors at its
// ends, merges and writes whole sectors, excluding every other write
// meanwhile (so no concurrent write to the same sector is lost). UnmapAt
// unmaps the whole sectors inside its range only. Every request must lie
// inside the volume (ErrOutOfRange); there are no short reads or writes.
//
// # Unmap
//
// UnmapAt punches holes in the head and in the removed snapshots directly
// below it (stopping at a snapshot that is not removed or has several
// children; with Options.UnmapMarkSnapChainRemoved those snapshots are marked
// removed first, as Longhorn's --unmap-mark-snap-chain-removed). Longhorn
// punches those layers unconditionally, which lets older snapshot data
// reappear, and only after a restart. This store punches a sector only when
// no older retained layer holds it and leaves it unchanged otherwise, so a
// read after an unmap returns zeroes or the pre-unmap data and the same after
// a reopen. It returns the bytes that now read as zeroes.
//
// # Concurrency
//
// ReadAt, WriteAt and Flush hold a RWMutex shared; the index is updated with
// atomic word operations, so many goroutines read and write at once.
// Snapshot, Expand, Revert, MarkDiskAsRemoved, UnmapAt, SetRebuilding, the
// final swap of a purge and Reload take it exclusively (briefly: no data is
// copied under it). A purge's copy runs with no lock (coalesce) or with the
// shared lock per 64 MiB chunk (prune); purges are serialised, and Revert,
// Reload, RemoveDiffDisk and Close wait for a running purge. Snapshot and
// Expand may run during a purge; UnmapAt then leaves the two disks being
// coalesced alone.
// An engine on the same node may read the layer files and (without the
// revision counter) write the head itself, through a ReadView (view.go):
// such a write counts as one under the shared lock, and taking the lock
// exclusively waits for it. Snapshot syncs the head before taking the lock and again
// under it, so the I/O pause covers only data written in between.
//
// # Revision counter
//
// Unless disabled, every WriteAt and UnmapAt increments the counter and
// returns only once revision.counter holds that value or a newer one, as
// Longhorn acknowledges a write only after its counter update; concurrent
// writes share one counter write (group commit). Flush also fdatasyncs it.
//
// # Crash safety
//
// Multi-step operations commit with one atomic rename; Open finishes or
// undoes what a crash leaves: stale *.tmp files are removed (Open and Reload
// remove every *.tmp file in the directory, so a rebuild receiver must not
// use that suffix); a head file
// other than volume.meta Head (a snapshot, revert or expansion interrupted
// before or after its volume.meta commit) is removed; a volume-snap file that
// is a hard link of the head (a snapshot interrupted before the commit) is
// removed; a removed disk whose .meta survived its data file (a purge
// interrupted after its rename or leaf removal) is finished. volume.meta
// missing or empty is rebuilt from the single head, as Longhorn does.
//
// # Snapshot limits
//
// Snapshot and Expand fail with ErrSnapshotCountLimit when the snapshots not
// marked removed reach snapshot-max-count (default 250), and with
// ErrChainTooLong when the live chain holds 250 disks. Snapshot fails with
// ErrSnapshotSizeLimit when snapshot-max-size is set and the head's
// allocated bytes exceed what the existing snapshots leave of it (Longhorn's
// canDoSnapshot).
//
// # Purge (snapshot delete)
//
// MarkDiskAsRemoved, then PurgeSnapshot or Purge, as Longhorn: a removed
// snapshot with no children is deleted; with exactly one child that is not
// the head, the child is folded into it (coalesce) and the result renamed to
// the child's name (replace); with the head as only child, the ranges the
// head overwrote are punched out of it (prune, the snapshot stays); with more
// children it is skipped. PrepareRemoveDisk shows the plan.
//
// # Rebuild support
//
// RebuildFiles lists the files a rebuild copies (every disk but the head,
// with its .meta); the receiver may write layout files (FilePath validates
// names) into the directory of an open store, RemoveDiffDisk drops disks the
// source lacks, Reload adopts the result, SetRebuilding and
// SetRevisionCounter mark the replica. Errors are *Error values wrapping the
// sentinels in errors.go; use errors.Is.
package replica
