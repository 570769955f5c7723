package engineapi

import (
	"context"
	"time"

	"github.com/longhorn-go/longhorn/engine/backupstore"
)

// Backup volume and backup information as the backupstore reports them.
type (
	BackupVolumeInfo = backupstore.VolumeInfo
	BackupInfo       = backupstore.BackupInfo
)

// Backupstore errors, for errors.Is.
var (
	ErrBackupNotFound       = backupstore.ErrNotFound
	ErrBackupInvalid        = backupstore.ErrInvalid
	ErrBackupTargetDown     = backupstore.ErrUnavailable
	ErrBackupCorrupt        = backupstore.ErrCorrupt
	ErrBackupVolumeIsLocked = backupstore.ErrLocked
)

// BackupStore is what the manager's backup controllers read and delete in a
// backup target. The manager runs these itself (Longhorn's manager ran them
// with the engine binary); only backups and restores of volume data go
// through an engine.
type BackupStore interface {
	URL() string
	ListVolumeNames(ctx context.Context) ([]string, error)
	InspectVolume(ctx context.Context, volume string) (*BackupVolumeInfo, error)
	ListBackupNames(ctx context.Context, volume string) ([]string, error)
	InspectBackup(ctx context.Context, volume, backup string) (*BackupInfo, error)
	// DeleteBackup removes a backup and the blocks no other backup uses.
	DeleteBackup(ctx context.Context, volume, backup string) error
	// DeleteVolume removes a whole backup volume.
	DeleteVolume(ctx context.Context, volume string) error
	Close() error
}

// OpenBackupStoreTimeout bounds reaching a target.
const OpenBackupStoreTimeout = time.Minute

// OpenBackupStore opens a backup target; an unreachable target or wrong
// credentials fail within OpenBackupStoreTimeout with ErrBackupTargetDown,
// a bad URL with ErrBackupInvalid.
func OpenBackupStore(ctx context.Context, t BackupTarget) (BackupStore, error) {
	ctx, cancel := context.WithTimeout(ctx, OpenBackupStoreTimeout)
	defer cancel()
	s, err := backupstore.Open(ctx, t.URL, t.Credential, backupstore.Options{})
	if err != nil {
		return nil, err
	}
	return store{s}, nil
}

type store struct{ *backupstore.Store }

func (s store) DeleteBackup(ctx context.Context, volume, backup string) error {
	_, err := s.Store.DeleteBackup(ctx, volume, backup)
	return err
}

// DecodeBackupURL splits a backup URL into backup, volume and target.
func DecodeBackupURL(u string) (backup, volume, target string, err error) {
	return backupstore.DecodeBackupURL(u)
}
