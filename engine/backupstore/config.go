package backupstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// QuotedString is a string that Longhorn stores JSON-encoded twice: its
// volume.cfg fields carry the `json:",string"` option on string fields, so the
// value "lz4" is written as "\"lz4\"". Marshal writes that form; Unmarshal
// accepts it and the plain form (older files, hand-made fixtures).
type QuotedString string

// MarshalJSON encodes the string twice, as Longhorn writes it.
func (q QuotedString) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal(string(q))
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(inner))
}

// UnmarshalJSON accepts "\"x\"" (Longhorn) and "x".
func (q *QuotedString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*q = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		var inner string
		if err := json.Unmarshal([]byte(s), &inner); err == nil {
			s = inner
		}
	}
	*q = QuotedString(s)
	return nil
}

// Volume is volume.cfg, the metadata of one backup volume (Longhorn's
// backupstore Volume, field for field, in Longhorn's order and encoding:
// Size and BlockCount as decimal strings, the trailing string fields
// double-quoted, see QuotedString).
type Volume struct {
	Name                      string
	Size                      int64 `json:",string"`
	Labels                    map[string]string
	CreatedTime               string
	LastBackupName            string
	LastBackupAt              string
	BlockCount                int64 `json:",string"`
	BackingImageName          QuotedString
	BackingImageChecksum      QuotedString
	CompressionMethod         QuotedString
	StorageClassName          QuotedString
	DataEngine                QuotedString
	LinkedCloneSourceVolume   QuotedString
	LinkedCloneSourceSnapshot QuotedString
}

// BlockMapping names the block holding the volume bytes [Offset,
// Offset+block size): BlockChecksum is hex(sha512(raw block))[:64], also the
// block file's name.
type BlockMapping struct {
	Offset        int64
	BlockChecksum string
}

// BackupFile is Longhorn's single-file backup reference (backing images);
// volume backups leave it empty but write it, as Longhorn does.
type BackupFile struct {
	FilePath string
}

// Backup is backups/backup_<name>.cfg (Longhorn's backupstore Backup, field
// for field). CreatedTime is empty while the backup is in progress. Blocks
// lists every block of the backup (not only the new ones), sorted by offset.
type Backup struct {
	Name                  string
	VolumeName            string
	SnapshotName          string
	SnapshotCreatedAt     string
	CreatedTime           string
	Size                  int64 `json:",string"`
	Labels                map[string]string
	Parameters            map[string]string
	IsIncremental         bool
	CompressionMethod     string
	NewlyUploadedDataSize int64           `json:",string"`
	ReUploadedDataSize    int64           `json:",string"`
	ProcessingBlocks      json.RawMessage // always null; Longhorn serialises an in-memory field here
	Blocks                []BlockMapping  `json:",omitempty"`
	SingleFile            BackupFile
}

// InProgress reports whether the backup has not completed (empty CreatedTime).
func (b *Backup) InProgress() bool { return b.CreatedTime == "" }

// BlockSize returns the backup's block size from its Parameters (default 2 MiB).
func (b *Backup) BlockSize() (int64, error) { return BlockSizeFromParameters(b.Parameters) }

// encodeConfig marshals v as Longhorn does (json.Marshal, no newline).
func encodeConfig(v any) ([]byte, error) { return json.Marshal(v) }

// maxConfigSize bounds a .cfg read: a 64 TiB volume in 2 MiB blocks lists
// 33.5 M blocks of ~100 bytes; anything past 4 GiB is not a Longhorn file.
const maxConfigSize = 4 << 30

// loadConfig reads and decodes a JSON config file.
func loadConfig(ctx context.Context, d Driver, path string, v any) error {
	rc, err := d.Read(ctx, path)
	if err != nil {
		return err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxConfigSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxConfigSize {
		return fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, path, int64(maxConfigSize))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return nil
}

func saveConfig(ctx context.Context, d Driver, path string, v any) error {
	data, err := encodeConfig(v)
	if err != nil {
		return err
	}
	return d.Write(ctx, path, bytes.NewReader(data), int64(len(data)))
}

// LoadVolume reads volume.cfg of a backup volume; ErrNotFound when absent.
func (s *Store) LoadVolume(ctx context.Context, volume string) (*Volume, error) {
	if err := ValidateName("volume", volume); err != nil {
		return nil, err
	}
	v := &Volume{}
	if err := loadConfig(ctx, s.d, VolumeConfigPath(volume), v); err != nil {
		return nil, err
	}
	return v, nil
}

func (s *Store) saveVolume(ctx context.Context, v *Volume) error {
	return saveConfig(ctx, s.d, VolumeConfigPath(v.Name), v)
}

// LoadBackup reads backups/backup_<name>.cfg; ErrNotFound when absent.
func (s *Store) LoadBackup(ctx context.Context, volume, backup string) (*Backup, error) {
	if err := ValidateName("volume", volume); err != nil {
		return nil, err
	}
	if err := ValidateName("backup", backup); err != nil {
		return nil, err
	}
	b := &Backup{}
	if err := loadConfig(ctx, s.d, BackupConfigPath(volume, backup), b); err != nil {
		return nil, err
	}
	if err := checkBlocks(b); err != nil {
		return nil, fmt.Errorf("%w: backup %s of volume %s: %v", ErrCorrupt, backup, volume, err)
	}
	return b, nil
}

// checkBlocks validates a loaded block list: checksums well formed, offsets
// aligned to the block size, sorted and unique (sorted in place if only the
// order is off).
func checkBlocks(b *Backup) error {
	bs, err := b.BlockSize()
	if err != nil {
		return err
	}
	for _, blk := range b.Blocks {
		if !IsChecksum(blk.BlockChecksum) {
			return fmt.Errorf("block at offset %d: checksum %q is not 64 lowercase hex digits", blk.Offset, blk.BlockChecksum)
		}
		if blk.Offset < 0 || blk.Offset%bs != 0 {
			return fmt.Errorf("block %s: offset %d is not a non-negative multiple of the block size %d", blk.BlockChecksum, blk.Offset, bs)
		}
	}
	sort.SliceStable(b.Blocks, func(i, j int) bool { return b.Blocks[i].Offset < b.Blocks[j].Offset })
	for i := 1; i < len(b.Blocks); i++ {
		if b.Blocks[i].Offset == b.Blocks[i-1].Offset {
			return fmt.Errorf("two blocks at offset %d", b.Blocks[i].Offset)
		}
	}
	return nil
}

func (s *Store) saveBackup(ctx context.Context, b *Backup) error {
	if b.VolumeName == "" {
		return errors.New("backupstore: backup without a volume name")
	}
	return saveConfig(ctx, s.d, BackupConfigPath(b.VolumeName, b.Name), b)
}

// BackupConfigModTime returns the modification time of a backup's .cfg file
// (Longhorn's BackupConfigMetaGet).
func (s *Store) BackupConfigModTime(ctx context.Context, volume, backup string) (time.Time, error) {
	if err := ValidateName("volume", volume); err != nil {
		return time.Time{}, err
	}
	if err := ValidateName("backup", backup); err != nil {
		return time.Time{}, err
	}
	fi, err := s.d.Stat(ctx, BackupConfigPath(volume, backup))
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime, nil
}

// VolumeConfigModTime returns the modification time of volume.cfg.
func (s *Store) VolumeConfigModTime(ctx context.Context, volume string) (time.Time, error) {
	if err := ValidateName("volume", volume); err != nil {
		return time.Time{}, err
	}
	fi, err := s.d.Stat(ctx, VolumeConfigPath(volume))
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime, nil
}
