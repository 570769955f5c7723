// Package blockdev is the engine's `blockdev` frontend: it gives the node a
// real block device, /dev/longhorn/<volume>, as Longhorn's tgt-blockdev
// frontend does. Three ways exist; Startup picks the first the node can do
// and logs the choice and the reason:
//
//  1. nbd: the kernel NBD client, configured over generic netlink
//     (linux/nbd-netlink.h), connected to the engine's own NBD server on a
//     unix socket; the device is /dev/nbdN. Needs the nbd module.
//  2. iscsi: open-iscsi's iscsiadm logs in to the engine's own iSCSI target
//     (Longhorn's way); the device is the SCSI disk of LUN 1. Needs iscsiadm
//     and the iscsi_tcp module.
//  3. fuse: the volume served as one file through FUSE by this process,
//     attached to a loop device with direct I/O; the device is /dev/loopN.
//     Needs /dev/fuse and loop devices.
//
// In every mode /dev/longhorn/<volume> is a block device node with the
// kernel device's number, re-created on every start: a stale node, loop
// device, FUSE mount, NBD device or iSCSI session of an earlier engine of the
// volume is removed first (Cleanup). The kernel without nbd and iSCSI
// modules that this project's CI runs on exercises the fuse mode only; the
// nbd and iscsi modes are unit-tested on what can be tested without them.
package blockdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// Mode is how the block device is made.
type Mode string

const (
	// ModeAuto picks nbd, then iscsi, then fuse (see ChooseMode).
	ModeAuto  Mode = ""
	ModeNBD   Mode = "nbd"
	ModeISCSI Mode = "iscsi"
	ModeFUSE  Mode = "fuse"
)

// Defaults of Config.
const (
	// DefaultDevDir holds the device nodes, as Longhorn's /dev/longhorn/<volume>.
	DefaultDevDir = "/dev/longhorn"
	// DefaultStateDir holds the FUSE mounts (<dir>/<volume>/<volume>), the
	// owner records (<dir>/<volume>.json) and the per-volume locks.
	DefaultStateDir = "/var/run/longhorn/blockdev"
)

// Config configures the frontend. Zero values take the defaults.
type Config struct {
	// DevDir is where the device node is made; default DefaultDevDir.
	DevDir string
	// FuseDir is the state directory; default DefaultStateDir.
	FuseDir string
	// Mode forces a mode; ModeAuto chooses (ChooseMode).
	Mode Mode
	// NBDSocketDir is where the nbd mode's NBD server listens (<dir>/<volume>.sock).
	NBDSocketDir string
	// ISCSIListen is the HOST:PORT of the iscsi mode's portal; the login goes
	// to it, so HOST must be an address of this node.
	ISCSIListen string
	// ISCSIAdm is the command that runs iscsiadm (default: iscsiadm, run in
	// the host's mount and network namespaces through nsenter when
	// /host/proc/1/ns exists, as Longhorn's instance manager does).
	ISCSIAdm []string
	// Log receives the mode choice and failures; default logrus.StandardLogger().
	Log logrus.FieldLogger
}

func (c *Config) setDefaults() {
	if c.DevDir == "" {
		c.DevDir = DefaultDevDir
	}
	if c.FuseDir == "" {
		c.FuseDir = DefaultStateDir
	}
	if c.NBDSocketDir == "" {
		c.NBDSocketDir = "/var/run/longhorn/nbd"
	}
	if c.Log == nil {
		c.Log = logrus.StandardLogger()
	}
}

// device is one way of making the kernel block device.
type device interface {
	// kernelPath is the device the kernel made (/dev/loop3, /dev/nbd0, /dev/sdb).
	kernelPath() string
	// rdev is its device number, for the node in DevDir.
	rdev() uint64
	// record is what Cleanup needs to undo it if this process dies.
	record() ownerRecord
	// expand makes the device show size bytes.
	expand(size int64) error
	// close removes the kernel device and stops what serves it.
	close() error
}

// Frontend is the blockdev frontend of one volume (frontend.Frontend).
type Frontend struct {
	cfg Config

	mu   sync.Mutex
	name string
	dev  device
	lock *os.File
}

var _ frontend.Frontend = (*Frontend)(nil)

// ErrAlreadyUp is returned by Startup on a started frontend.
var ErrAlreadyUp = errors.New("blockdev: frontend already started")

// New returns a stopped frontend.
func New(cfg Config) (*Frontend, error) {
	cfg.setDefaults()
	switch cfg.Mode {
	case ModeAuto, ModeNBD, ModeISCSI, ModeFUSE:
	default:
		return nil, fmt.Errorf("blockdev: mode %q: want nbd, iscsi, fuse or empty (automatic)", cfg.Mode)
	}
	return &Frontend{cfg: cfg}, nil
}

// FrontendName is "blockdev".
func (f *Frontend) FrontendName() string { return "blockdev" }

// maxVolumeName is the longest volume name (a Kubernetes object name is at
// most 253 bytes; a file name at most 255).
const maxVolumeName = 253

// checkVolumeName refuses names that cannot be a file name or a loop tag.
func checkVolumeName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name || len(name) > maxVolumeName {
		return fmt.Errorf("blockdev: volume name %q: want a file name of 1..%d bytes", name, maxVolumeName)
	}
	return nil
}

// Startup makes DevDir/<name>: it locks the volume's state, removes anything
// an earlier engine left (Cleanup), chooses the mode, makes the kernel
// device, the node and the owner record. On error nothing is left behind.
func (f *Frontend) Startup(ctx context.Context, name string, size int64, be frontend.Backend) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dev != nil {
		return ErrAlreadyUp
	}
	if err := checkVolumeName(name); err != nil {
		return err
	}
	lock, err := lockVolume(f.cfg, name)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			unlockVolume(lock)
		}
	}()
	log := f.cfg.Log.WithField("volume", name)
	if err := Cleanup(f.cfg, name); err != nil {
		log.WithError(err).Warn("blockdev: cleanup of an earlier device was incomplete")
	}
	mode, reason, err := ChooseMode(f.cfg.Mode, ProbeHost())
	if err != nil {
		return err
	}
	dev, err := f.attach(ctx, mode, name, size, be)
	if err != nil {
		return fmt.Errorf("blockdev %s (%s): %w", name, mode, err)
	}
	if err := f.publish(name, dev); err != nil {
		_ = dev.close()
		return err
	}
	f.name, f.dev, f.lock = name, dev, lock
	log.WithFields(logrus.Fields{"mode": mode, "reason": reason, "device": dev.kernelPath(),
		"endpoint": f.endpointLocked()}).Info("blockdev: device ready")
	return nil
}

func (f *Frontend) attach(ctx context.Context, mode Mode, name string, size int64, be frontend.Backend) (device, error) {
	switch mode {
	case ModeNBD:
		return attachNBD(ctx, f.cfg, name, size, be)
	case ModeISCSI:
		return attachISCSI(ctx, f.cfg, name, size, be)
	default:
		return attachFUSE(f.cfg, name, size, be)
	}
}

// publish writes the owner record and makes the device node.
func (f *Frontend) publish(name string, dev device) error {
	if err := writeOwner(f.cfg, name, dev.record()); err != nil {
		return err
	}
	if err := os.MkdirAll(f.cfg.DevDir, 0o755); err != nil {
		return fmt.Errorf("blockdev: %w", err)
	}
	node := filepath.Join(f.cfg.DevDir, name)
	_ = os.Remove(node)
	if err := unix.Mknod(node, unix.S_IFBLK|0o660, int(dev.rdev())); err != nil {
		_ = os.Remove(ownerPath(f.cfg, name))
		return fmt.Errorf("blockdev: mknod %s: %w", node, err)
	}
	return nil
}

// Shutdown removes the node, the kernel device and what serves it.
func (f *Frontend) Shutdown() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dev == nil {
		return nil
	}
	var errs []error
	if err := os.Remove(filepath.Join(f.cfg.DevDir, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	errs = append(errs, f.dev.close())
	_ = os.Remove(ownerPath(f.cfg, f.name))
	unlockVolume(f.lock)
	f.dev, f.lock = nil, nil
	f.cfg.Log.WithField("volume", f.name).Info("blockdev: device removed")
	return errors.Join(errs...)
}

// Expand makes the device show the new size (the file system on it grows
// with resize2fs/xfs_growfs, run by the CSI node plugin).
func (f *Frontend) Expand(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dev == nil {
		return nil
	}
	return f.dev.expand(size)
}

// Endpoint is DevDir/<volume> while up (Longhorn: /dev/longhorn/<volume>).
func (f *Frontend) Endpoint() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.endpointLocked()
}

func (f *Frontend) endpointLocked() string {
	if f.dev == nil {
		return ""
	}
	return filepath.Join(f.cfg.DevDir, f.name)
}

// State is "up" or "down".
func (f *Frontend) State() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dev == nil {
		return "down"
	}
	return "up"
}

// Mode reports the mode of a started frontend ("" when down).
func (f *Frontend) Mode() Mode {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dev == nil {
		return ""
	}
	return f.dev.record().Mode
}
