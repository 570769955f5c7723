package syncagent

import (
	"context"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/longhorn-go/longhorn/engine/rpc/enginerpc"
	"github.com/longhorn-go/longhorn/engine/sparse"
)

// Snapshot hashing (Longhorn's snapshot checksum and bit rot detection,
// longhorn-engine pkg/replica/hash.go): the checksum of a snapshot disk
// file is the CRC-64 (ISO polynomial) of its whole content, holes read as
// zeroes, as 16 lower-case hex digits, recorded in <disk>.checksum with the
// file's change time.

// HashMethod is the method recorded in .checksum files.
const HashMethod = "crc64"

// DefaultHashLockPath is the node-wide lock file that keeps one hashing job
// at a time on a node (Longhorn: <data path>/.lock/hash).
const DefaultHashLockPath = "/var/lib/longhorn/.lock/hash"

// hashRetries bounds how often a hash is recomputed when the file changed
// while it was being hashed.
const hashRetries = 3

var crcTable = crc64.MakeTable(crc64.ISO)

// hashTask is one snapshot's hashing job (guarded by Agent.mu).
type hashTask struct {
	state, checksum, err string
	corrupted            bool
	cancel               context.CancelFunc
}

// SnapshotHash starts hashing snapshot snapshot_name (a bare name). With
// rehash false a recorded checksum that is still current is taken as is
// (Longhorn's fast-check); with rehash true the file is always hashed, and
// a current record with another checksum marks the snapshot silently
// corrupted (the record is then kept).
func (a *Agent) SnapshotHash(_ context.Context, req *enginerpc.SnapshotHashRequest) (*emptypb.Empty, error) {
	name := req.GetSnapshotName()
	path, err := a.r.FilePath("volume-snap-" + name + ".img")
	if err != nil {
		return nil, invalid(err)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s: %v", name, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.hashes[name]; t != nil && t.state == StateInProgress {
		return nil, status.Errorf(codes.FailedPrecondition, "snapshot %s is already being hashed", name)
	}
	ctx, cancel := context.WithCancel(a.ctx)
	t := &hashTask{state: StateInProgress, cancel: cancel}
	a.hashes[name] = t
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer cancel()
		sum, corrupted, err := a.hashLocked(ctx, path, req.GetRehash())
		a.mu.Lock()
		defer a.mu.Unlock()
		if err != nil {
			t.state, t.err = StateError, err.Error()
			return
		}
		t.state, t.checksum, t.corrupted = StateComplete, sum, corrupted
	}()
	return &emptypb.Empty{}, nil
}

// hashLocked takes the node's hash lock, then hashes.
func (a *Agent) hashLocked(ctx context.Context, path string, rehash bool) (string, bool, error) {
	unlock, err := lockFile(ctx, a.cfg.HashLockPath)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	return HashDisk(ctx, path, rehash)
}

// mirror is a file a local copy wrote with the bytes of the file sent
// (SendStats.Mirror), and its change time once the copy was closed.
type mirror struct{ path, changeTime string }

// hashLater hashes the snapshot disk file at path in the background when
// it has no current record (a local copy skipped the hash: see
// SendStats.Unhashed), so the next fast rebuild can skip the file whole;
// the rebuild does not wait for it. It takes the node's hash lock and runs
// on a thread at nice 19 (the client's I/O comes first); it stops with
// the agent. Does nothing for other files or once the agent is closed.
//
// The checksum is also recorded for each mirror whose change time is still
// the one after the copy (recordMirror), so the receiver's file gets its
// record even when the receiver stops before its own hash of it ran (a
// replica dropped soon after its rebuild: its next fast rebuild compared
// every byte, 9.9 s instead of 2-4 s at 4 GiB), and the receiver's own
// hash then finds the record current and reads nothing.
func (a *Agent) hashLater(path string, mirrors ...mirror) {
	if !isSnapshotDisk(path) {
		return
	}
	if _, _, err := CurrentRecorded(path); err == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx.Err() != nil {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		// Not unlocked: the runtime ends the niced thread with the goroutine.
		runtime.LockOSThread()
		_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
		t0 := time.Now()
		sum, _, err := a.hashLocked(a.ctx, path, false)
		if errors.Is(err, context.Canceled) {
			return // the agent closed; the next rebuild or hash job covers it
		}
		log := a.log.WithField("file", filepath.Base(path))
		if err != nil {
			log.WithError(err).Warn("sync agent: hashing the synced snapshot failed")
			return
		}
		for _, m := range mirrors {
			if err := recordMirror(m, sum); err != nil {
				log.WithError(err).WithField("mirror", m.path).Warn("sync agent: recording the checksum of a locally copied snapshot failed")
			}
		}
		log.WithFields(logrus.Fields{"checksum": sum, "took": time.Since(t0).Round(time.Millisecond).String()}).
			Info("sync agent: synced snapshot hashed")
	}()
}

// recordMirror records sum (HashMethod) as the checksum of m.path when
// that is a snapshot disk file whose change time is still m.changeTime,
// i.e. it has not changed since the copy that wrote the bytes sum was
// taken of, and it has no current record; otherwise it does nothing.
func recordMirror(m mirror, sum string) error {
	if !isSnapshotDisk(m.path) {
		return nil
	}
	if _, _, err := CurrentRecorded(m.path); err == nil {
		return nil
	}
	ct, err := ChangeTime(m.path)
	if err != nil || ct != m.changeTime {
		return err
	}
	return WriteRecorded(m.path, RecordedMetadata{Method: HashMethod, Checksum: sum, ChangeTime: ct,
		LastHashedAt: time.Now().UTC().Format(time.RFC3339)})
}

// HashDisk returns the checksum of the disk file at path and whether it is
// silently corrupted (see SnapshotHash), recording a new checksum in
// path.checksum.
func HashDisk(ctx context.Context, path string, rehash bool) (string, bool, error) {
	rec, _, recErr := ReadRecorded(path)
	for try := 0; try < hashRetries; try++ {
		before, err := ChangeTime(path)
		if err != nil {
			return "", false, err
		}
		if !rehash && recErr == nil && rec.ChangeTime == before && rec.Checksum != "" {
			return rec.Checksum, false, nil
		}
		sum, err := crc64File(ctx, path)
		if err != nil {
			return "", false, err
		}
		after, err := ChangeTime(path)
		if err != nil {
			return "", false, err
		}
		if after != before {
			continue // changed by a purge meanwhile: hash again
		}
		if recErr == nil && rec.ChangeTime == before && rec.Checksum != "" && rec.Checksum != sum {
			return sum, true, nil
		}
		m := RecordedMetadata{Method: HashMethod, Checksum: sum, ChangeTime: before,
			LastHashedAt: time.Now().UTC().Format(time.RFC3339)}
		return sum, false, WriteRecorded(path, m)
	}
	return "", false, fmt.Errorf("%s kept changing while it was hashed (%d tries)", path, hashRetries)
}

// crc64File is the CRC-64/ISO of the file's content, as 16 hex digits.
// Only the data extents are read; holes are hashed as the zeroes they read
// as without reading them (crc64Zeros).
func crc64File(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := fi.Size()
	var crc uint64
	pos := int64(0)
	buf := make([]byte, 1<<20)
	err = sparse.WalkData(f, 0, size, func(e sparse.Extent) error {
		crc = crc64Zeros(crc, e.Offset-pos)
		for off := e.Offset; off < e.End(); {
			if err := ctx.Err(); err != nil {
				return err
			}
			n, err := f.ReadAt(buf[:min(int64(len(buf)), e.End()-off)], off)
			crc = crc64Combine(crc, crc64Sum(buf[:n]), int64(n))
			off += int64(n)
			if errors.Is(err, io.EOF) {
				crc = crc64Zeros(crc, e.End()-off) // shrank under us: the rest reads as zeroes
				break
			}
			if err != nil {
				return err
			}
		}
		pos = e.End()
		return nil
	})
	if err != nil {
		return "", err
	}
	crc = crc64Zeros(crc, size-pos)
	return fmt.Sprintf("%016x", crc), nil
}

// lockFile takes an exclusive flock on path (creating it and its
// directory), waiting until ctx is done; the function releases it.
func lockFile(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, &fs.PathError{Op: "flock", Path: path, Err: err}
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			f.Close()
			return nil, err
		}
	}
}

// SnapshotHashStatus reports a snapshot's hashing job.
func (a *Agent) SnapshotHashStatus(_ context.Context, req *enginerpc.SnapshotHashStatusRequest) (*enginerpc.SnapshotHashStatusResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.hashes[req.GetSnapshotName()]
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s hashing task not found", req.GetSnapshotName())
	}
	return &enginerpc.SnapshotHashStatusResponse{State: t.state, Checksum: t.checksum, Error: t.err,
		SilentlyCorrupted: t.corrupted}, nil
}

// SnapshotHashCancel cancels a snapshot's hashing job; an unknown job is
// NotFound ("not found", which Longhorn's callers treat as done).
func (a *Agent) SnapshotHashCancel(_ context.Context, req *enginerpc.SnapshotHashCancelRequest) (*emptypb.Empty, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.hashes[req.GetSnapshotName()]
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s hashing task not found", req.GetSnapshotName())
	}
	t.cancel()
	return &emptypb.Empty{}, nil
}

// SnapshotHashLockState reports whether the node's hash lock is held (by
// any replica on the node).
func (a *Agent) SnapshotHashLockState(context.Context, *emptypb.Empty) (*enginerpc.SnapshotHashLockStateResponse, error) {
	f, err := os.OpenFile(a.cfg.HashLockPath, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return &enginerpc.SnapshotHashLockStateResponse{}, nil
	}
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return &enginerpc.SnapshotHashLockStateResponse{IsLocked: true}, nil
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return &enginerpc.SnapshotHashLockStateResponse{}, nil
}
