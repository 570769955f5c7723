// Package monitor measures the node the manager runs on: disk capacity with
// statfs and the disk identity file longhorn-disk.cfg. The node controller
// calls it; nothing here talks to Kubernetes.
package monitor

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DiskConfigFile is the identity file at the root of every disk
// (Longhorn's util.DiskConfigFile).
const DiskConfigFile = "longhorn-disk.cfg"

// ReplicaDirectory is the sub-directory of a disk that holds replica data
// directories: <disk>/replicas/<volume>-<8 hex>.
const ReplicaDirectory = "replicas"

// DiskConfig is the JSON content of longhorn-disk.cfg.
type DiskConfig struct {
	DiskName   string `json:"diskName"`
	DiskUUID   string `json:"diskUUID"`
	DiskDriver string `json:"diskDriver"`
	State      string `json:"state,omitempty"`
}

// DiskStat is a disk's size as statfs reports it, in bytes.
type DiskStat struct {
	// FSID identifies the filesystem (two disks on the same filesystem share
	// it, which Longhorn refuses).
	FSID string
	// FSType is the filesystem name ("ext4", "xfs", "tmpfs", ...) or
	// "0x<magic>" for an unknown one.
	FSType string
	// StorageMaximum = blocks * fragment size; StorageAvailable = blocks
	// available to unprivileged users * fragment size.
	StorageMaximum   int64
	StorageAvailable int64
}

// fsMagic names the statfs f_type values we expect under /var/lib/longhorn
// (linux/magic.h).
var fsMagic = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0x6969:     "nfs",
	0x65735546: "fuse",
}

// StatDisk measures the filesystem holding path.
func StatDisk(path string) (DiskStat, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return DiskStat{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := st.Frsize
	if bsize == 0 {
		bsize = st.Bsize
	}
	name, ok := fsMagic[int64(st.Type)]
	if !ok {
		name = fmt.Sprintf("0x%x", st.Type)
	}
	return DiskStat{
		FSID:             fmt.Sprintf("%x%x", st.Fsid.Val[0], st.Fsid.Val[1]),
		FSType:           name,
		StorageMaximum:   int64(st.Blocks) * bsize,
		StorageAvailable: int64(st.Bavail) * bsize,
	}, nil
}

// ErrNoDiskConfig means the disk has no longhorn-disk.cfg yet.
var ErrNoDiskConfig = errors.New("no " + DiskConfigFile)

// ReadDiskConfig reads <path>/longhorn-disk.cfg. It returns ErrNoDiskConfig
// when the file does not exist, and an error naming the file when it is not
// valid JSON or has no diskUUID.
func ReadDiskConfig(path string) (DiskConfig, error) {
	file := filepath.Join(path, DiskConfigFile)
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return DiskConfig{}, ErrNoDiskConfig
	}
	if err != nil {
		return DiskConfig{}, err
	}
	var cfg DiskConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return DiskConfig{}, fmt.Errorf("%s: %w", file, err)
	}
	if cfg.DiskUUID == "" {
		return DiskConfig{}, fmt.Errorf("%s: diskUUID is empty", file)
	}
	return cfg, nil
}

// EnsureDiskConfig returns the disk's config, creating the directory, its
// replicas/ sub-directory and a config with a fresh UUID when there is none.
// An existing config keeps its UUID; its diskName is updated to name.
func EnsureDiskConfig(path, name string) (DiskConfig, error) {
	cfg, err := ReadDiskConfig(path)
	switch {
	case err == nil && cfg.DiskName == name:
		return cfg, os.MkdirAll(filepath.Join(path, ReplicaDirectory), 0o755)
	case err == nil:
		cfg.DiskName = name
	case errors.Is(err, ErrNoDiskConfig):
		cfg = DiskConfig{DiskName: name, DiskUUID: newUUID()}
	default:
		return DiskConfig{}, err
	}
	if err := os.MkdirAll(filepath.Join(path, ReplicaDirectory), 0o755); err != nil {
		return DiskConfig{}, err
	}
	return cfg, writeDiskConfig(path, cfg)
}

// writeDiskConfig writes the config atomically (temp file + rename).
func writeDiskConfig(path string, cfg DiskConfig) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	tmp := filepath.Join(path, DiskConfigFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(path, DiskConfigFile))
}

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ReplicaDataDirectories lists the replica data directory names on a disk.
func ReplicaDataDirectories(path string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(path, ReplicaDirectory))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
