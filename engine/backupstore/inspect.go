package backupstore

import (
	"context"
	"errors"
	"path"
	"sort"
	"strconv"
)

// ListVolumeNames returns the names of every backup volume of the target,
// sorted (the three directory levels of Longhorn's layout).
func (s *Store) ListVolumeNames(ctx context.Context) ([]string, error) {
	base := path.Join(Base, volumeDir)
	l1, err := s.d.List(ctx, base)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range l1 {
		l2, err := s.d.List(ctx, path.Join(base, a))
		if err != nil {
			return nil, err
		}
		for _, b := range l2 {
			vols, err := s.d.List(ctx, path.Join(base, a, b))
			if err != nil {
				return nil, err
			}
			for _, v := range vols {
				if ValidateName("volume", v) == nil {
					out = append(out, v)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// ListBackupNames returns the names of a volume's backups (completed or
// not), sorted.
func (s *Store) ListBackupNames(ctx context.Context, volume string) ([]string, error) {
	if err := ValidateName("volume", volume); err != nil {
		return nil, err
	}
	files, err := s.d.List(ctx, BackupsPath(volume))
	if err != nil {
		return nil, err
	}
	names := extractNames(files, backupCfgPrefix, cfgSuffix)
	sort.Strings(names)
	return names, nil
}

// VolumeInfo is a backup volume as the manager shows it (Longhorn's
// backupstore VolumeInfo).
type VolumeInfo struct {
	Name                 string
	Size                 int64
	Labels               map[string]string
	Created              string
	LastBackupName       string
	LastBackupAt         string
	DataStored           int64 // BlockCount x 2 MiB, as Longhorn reports it
	BackingImageName     string
	BackingImageChecksum string
	StorageClassName     string
	DataEngine           string
	CompressionMethod    string
	Messages             map[string]string
}

// BackupInfo is one completed backup as the manager shows it.
type BackupInfo struct {
	Name                  string
	URL                   string
	SnapshotName          string
	SnapshotCreated       string
	Created               string
	Size                  int64
	Labels                map[string]string
	Parameters            map[string]string
	IsIncremental         bool
	VolumeName            string
	VolumeSize            int64
	VolumeCreated         string
	VolumeBackingImage    string
	CompressionMethod     string
	NewlyUploadedDataSize int64
	ReUploadedDataSize    int64
	BlockSize             int64
	Messages              map[string]string
}

// InspectVolume returns a backup volume's information.
func (s *Store) InspectVolume(ctx context.Context, volume string) (*VolumeInfo, error) {
	v, err := s.LoadVolume(ctx, volume)
	if err != nil {
		return nil, err
	}
	return &VolumeInfo{
		Name: v.Name, Size: v.Size, Labels: v.Labels, Created: v.CreatedTime,
		LastBackupName: v.LastBackupName, LastBackupAt: v.LastBackupAt,
		DataStored:       v.BlockCount * DefaultBlockSize,
		BackingImageName: string(v.BackingImageName), BackingImageChecksum: string(v.BackingImageChecksum),
		StorageClassName: string(v.StorageClassName), DataEngine: string(v.DataEngine),
		CompressionMethod: effectiveMethod(string(v.CompressionMethod)),
	}, nil
}

// InspectBackup returns a completed backup's information; an in-progress
// backup is ErrNotFound, as Longhorn does not list it.
func (s *Store) InspectBackup(ctx context.Context, volume, backup string) (*BackupInfo, error) {
	v, err := s.LoadVolume(ctx, volume)
	if err != nil {
		return nil, err
	}
	b, err := s.LoadBackup(ctx, volume, backup)
	if err != nil {
		return nil, err
	}
	if b.InProgress() {
		return nil, errors.Join(ErrNotFound, errors.New("backup "+backup+" is in progress"))
	}
	bs, _ := b.BlockSize()
	return &BackupInfo{
		Name: b.Name, URL: EncodeBackupURL(b.Name, volume, s.URL()),
		SnapshotName: b.SnapshotName, SnapshotCreated: b.SnapshotCreatedAt, Created: b.CreatedTime,
		Size: b.Size, Labels: b.Labels, Parameters: b.Parameters, IsIncremental: b.IsIncremental,
		VolumeName: volume, VolumeSize: v.Size, VolumeCreated: v.CreatedTime,
		VolumeBackingImage: string(v.BackingImageName), CompressionMethod: b.CompressionMethod,
		NewlyUploadedDataSize: b.NewlyUploadedDataSize, ReUploadedDataSize: b.ReUploadedDataSize,
		BlockSize: bs,
	}, nil
}

// FormatSize renders a byte count as Longhorn's API does (decimal string).
func FormatSize(n int64) string { return strconv.FormatInt(n, 10) }
