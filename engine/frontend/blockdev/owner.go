package blockdev

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ownerRecord is FuseDir/<volume>.json: which process made the volume's
// device and how, so that Cleanup can undo it after that process died.
type ownerRecord struct {
	PID  int    `json:"pid"`
	Mode Mode   `json:"mode"`
	Path string `json:"path"` // the kernel device
	// LoopTag is the fuse mode's loop device tag (see loopTag).
	LoopTag string `json:"loopTag,omitempty"`
	// BackingFile is the fuse mode's FUSE file the loop device reads, which
	// finds the loop when its tag cannot be read (dead FUSE daemon).
	BackingFile string `json:"backingFile,omitempty"`
	// NBDIndex is the nbd mode's device index (/dev/nbdN), -1 otherwise.
	NBDIndex int `json:"nbdIndex"`
	// ISCSI target and portal of the iscsi mode.
	IQN    string `json:"iqn,omitempty"`
	Portal string `json:"portal,omitempty"`
}

func ownerPath(cfg Config, volume string) string {
	return filepath.Join(cfg.FuseDir, volume+".json")
}

func writeOwner(cfg Config, volume string, rec ownerRecord) error {
	rec.PID = os.Getpid()
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.FuseDir, 0o700); err != nil {
		return fmt.Errorf("blockdev: %w", err)
	}
	tmp := ownerPath(cfg, volume) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("blockdev: owner record: %w", err)
	}
	return os.Rename(tmp, ownerPath(cfg, volume))
}

func readOwner(cfg Config, volume string) (ownerRecord, error) {
	var rec ownerRecord
	data, err := os.ReadFile(ownerPath(cfg, volume))
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, fmt.Errorf("blockdev: owner record %s: %w", ownerPath(cfg, volume), err)
	}
	return rec, nil
}

// disconnectRecorded undoes a recorded device: the fuse mode's loop (by its
// tag), the nbd mode's NBD device, the iscsi mode's session.
func disconnectRecorded(rec ownerRecord) error {
	switch rec.Mode {
	case ModeFUSE:
		if rec.LoopTag == "" && rec.BackingFile == "" {
			return nil
		}
		loops, err := loopsMatching(func(l attachedLoop) bool { return ownedLoop(l, rec.LoopTag, rec.BackingFile) })
		for _, l := range loops {
			err = errors.Join(err, loopDetach(l))
		}
		return err
	case ModeNBD:
		if rec.NBDIndex >= 0 {
			return nbdDisconnect(rec.NBDIndex)
		}
	case ModeISCSI:
		if rec.IQN != "" {
			return iscsiLogout(Config{}, rec.IQN, rec.Portal)
		}
	}
	return nil
}

// lockVolume takes an exclusive flock on FuseDir/<volume>.lock, so a
// starting engine and the instance manager's cleanup of a dead one never
// interleave. It waits for a holder that is itself finishing.
func lockVolume(cfg Config, volume string) (*os.File, error) {
	if err := os.MkdirAll(cfg.FuseDir, 0o700); err != nil {
		return nil, fmt.Errorf("blockdev: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(cfg.FuseDir, volume+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("blockdev: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("blockdev: lock %s: %w", f.Name(), err)
	}
	return f, nil
}

func unlockVolume(f *os.File) {
	if f != nil {
		_ = f.Close() // releases the flock
	}
}
