package syncagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// ChecksumSuffix names the file next to a disk that records its checksum:
// volume-snap-X.img.checksum.
const ChecksumSuffix = ".checksum"

// RecordedMetadata is the content of <disk>.checksum (sparse-tools
// types.SnapshotHashInfo; longhorn-engine pkg/replica/hash.go): the
// checksum of the disk file and the file's change time when it was taken.
// JSON keys as Longhorn writes them.
type RecordedMetadata struct {
	Method            string `json:"method"`
	Checksum          string `json:"checksum"`
	ChangeTime        string `json:"change_time"`
	LastHashedAt      string `json:"last_hashed_at"`
	SilentlyCorrupted bool   `json:"silently_corrupted"`
}

// ErrFileChanged is a recorded checksum whose change time is not the
// file's: the file changed since it was hashed.
var ErrFileChanged = errors.New("disk file changed since its checksum was recorded")

// ChangeTime returns the file's ctime as Longhorn records it: Go's
// time.Time.String of the ctime, in the local zone, e.g.
// "2026-12-01 19:06:12.994857985 +0000 UTC".
func ChangeTime(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).String(), nil
}

// ReadRecorded reads path+".checksum". A missing file is fs.ErrNotExist.
func ReadRecorded(path string) (RecordedMetadata, []byte, error) {
	b, err := os.ReadFile(path + ChecksumSuffix)
	if err != nil {
		return RecordedMetadata{}, nil, err
	}
	var m RecordedMetadata
	if err := json.Unmarshal(b, &m); err != nil {
		return RecordedMetadata{}, b, fmt.Errorf("%s%s: %w", path, ChecksumSuffix, err)
	}
	return m, b, nil
}

// CurrentRecorded returns the recorded metadata of path when its change
// time is the file's current one; ErrFileChanged otherwise, fs.ErrNotExist
// when nothing is recorded.
func CurrentRecorded(path string) (RecordedMetadata, []byte, error) {
	m, raw, err := ReadRecorded(path)
	if err != nil {
		return m, raw, err
	}
	ct, err := ChangeTime(path)
	if err != nil {
		return m, raw, err
	}
	if m.ChangeTime != ct {
		return m, raw, fmt.Errorf("%w: %s recorded %q, now %q", ErrFileChanged, path, m.ChangeTime, ct)
	}
	return m, raw, nil
}

// WriteRecorded writes path+".checksum" (through a temporary file of its
// own and a rename, so a reader never sees half of it and two writers, as
// a sender recording a mirror and the receiver's own hash, never write
// into one temporary file).
func WriteRecorded(path string, m RecordedMetadata) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+ChecksumSuffix+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path+ChecksumSuffix)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
