package backupstore

import (
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
)

// Layout constants (Longhorn's backupstore config.go, lock.go, deltablock.go).
const (
	// Base is the top directory of the store under the target URL.
	Base            = "backupstore"
	volumeDir       = "volumes"
	volumeCfg       = "volume.cfg"
	backupDir       = "backups"
	backupCfgPrefix = "backup_"
	cfgSuffix       = ".cfg"
	blocksDir       = "blocks"
	blkSuffix       = ".blk"
	locksDir        = "locks"
	lockPrefix      = "lock"
	lockSuffix      = ".lck"

	// ChecksumLength is the number of hex digits of a block checksum.
	ChecksumLength = 64
)

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// ValidateName checks a volume, backup or lock name as Longhorn does
// (util.ValidateName: 2 or more characters of [a-zA-Z0-9_.-], starting with
// a letter or digit, at most 253 here); field names the value in the error.
func ValidateName(field, name string) error {
	if len(name) > 253 || !nameRE.MatchString(name) {
		return fmt.Errorf("%w: %s name %q: want 2-253 characters of [a-zA-Z0-9_.-] starting with a letter or digit",
			ErrInvalid, field, name)
	}
	return nil
}

// Checksum returns a block's name: hex(sha512(data))[:64] (Longhorn's util.GetChecksum).
func Checksum(data []byte) string {
	sum := sha512.Sum512(data)
	return hex.EncodeToString(sum[:])[:ChecksumLength]
}

// IsChecksum reports whether s has the form of a block checksum.
func IsChecksum(s string) bool {
	if len(s) != ChecksumLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// GenerateName returns prefix-<16 hex digits> (Longhorn's util.GenerateName,
// used for backup names "backup-..." and lock names "lock-...").
func GenerateName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// VolumePath returns backupstore/volumes/<h[0:2]>/<h[2:4]>/<volume>, with
// h = hex(sha512(volume)).
func VolumePath(volume string) string {
	h := Checksum([]byte(volume))
	return path.Join(Base, volumeDir, h[0:2], h[2:4], volume)
}

// VolumeConfigPath returns the path of volume.cfg.
func VolumeConfigPath(volume string) string { return path.Join(VolumePath(volume), volumeCfg) }

// BackupsPath returns the directory of a volume's backup .cfg files.
func BackupsPath(volume string) string { return path.Join(VolumePath(volume), backupDir) }

// BackupConfigPath returns backups/backup_<backup>.cfg of a volume.
func BackupConfigPath(volume, backup string) string {
	return path.Join(BackupsPath(volume), backupCfgPrefix+backup+cfgSuffix)
}

// BlocksPath returns the directory of a volume's blocks.
func BlocksPath(volume string) string { return path.Join(VolumePath(volume), blocksDir) }

// BlockPath returns blocks/<c[0:2]>/<c[2:4]>/<c>.blk of a volume.
func BlockPath(volume, checksum string) string {
	return path.Join(BlocksPath(volume), checksum[0:2], checksum[2:4], checksum+blkSuffix)
}

// LocksPath returns the directory of a volume's lock files.
func LocksPath(volume string) string { return path.Join(VolumePath(volume), locksDir) }

func lockPath(volume, name string) string { return path.Join(LocksPath(volume), name+lockSuffix) }

// extractNames keeps the entries of list that are prefix+NAME+suffix with a
// valid NAME and returns the NAMEs (Longhorn's util.ExtractNames).
func extractNames(list []string, prefix, suffix string) []string {
	var out []string
	for _, f := range list {
		f = strings.TrimLeft(f, "/")
		if !strings.HasPrefix(f, prefix) || !strings.HasSuffix(f, suffix) {
			continue
		}
		n := strings.TrimSuffix(strings.TrimPrefix(f, prefix), suffix)
		if ValidateName("file", n) == nil {
			out = append(out, n)
		}
	}
	return out
}

// EncodeBackupURL returns <target>?backup=<backup>&volume=<volume>, the URL
// Longhorn gives a backup (EncodeBackupURL; the backup is left out when empty,
// which names the backup volume).
func EncodeBackupURL(backup, volume, target string) string {
	v := url.Values{}
	v.Add("volume", volume)
	if backup != "" {
		v.Add("backup", backup)
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	return target + sep + v.Encode()
}

// DecodeBackupURL splits a backup URL into backup name (may be empty),
// volume name and target URL (with the target's own query options, if any).
func DecodeBackupURL(backupURL string) (backup, volume, target string, err error) {
	u, err := url.Parse(backupURL)
	if err != nil {
		return "", "", "", fmt.Errorf("%w: backup URL %q: %v", ErrInvalid, backupURL, err)
	}
	q := u.Query()
	volume, backup = q.Get("volume"), q.Get("backup")
	if err := ValidateName("volume", volume); err != nil {
		return "", "", "", fmt.Errorf("backup URL %q: %w", backupURL, err)
	}
	if backup != "" {
		if err := ValidateName("backup", backup); err != nil {
			return "", "", "", fmt.Errorf("backup URL %q: %w", backupURL, err)
		}
	}
	q.Del("volume")
	q.Del("backup")
	u.RawQuery = q.Encode() // keep the target's own options (nfsOptions=...)
	return backup, volume, u.String(), nil
}

// formatTime returns the time in Longhorn's format (RFC 3339, UTC, seconds).
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
