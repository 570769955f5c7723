package blockdev

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/longhorn-go/longhorn/engine/frontend"
)

// fuseDevice is the fuse mode: FuseDir/<volume>/<volume> served by this
// process, attached to /dev/loopN with direct I/O.
type fuseDevice struct {
	fs   *fuseFS
	loop *loopDevice
}

func attachFUSE(cfg Config, name string, size int64, be frontend.Backend) (device, error) {
	fsys, err := mountFuse(filepath.Join(cfg.FuseDir, name), name, size, be)
	if err != nil {
		return nil, err
	}
	loop, err := loopAttach(fsys.file, name)
	if err != nil {
		return nil, errors.Join(err, fsys.unmount())
	}
	return &fuseDevice{fs: fsys, loop: loop}, nil
}

func (d *fuseDevice) kernelPath() string { return d.loop.path }
func (d *fuseDevice) rdev() uint64       { return d.loop.rdev }
func (d *fuseDevice) record() ownerRecord {
	return ownerRecord{Mode: ModeFUSE, Path: d.loop.path, NBDIndex: -1, LoopTag: d.loop.tag, BackingFile: d.fs.file}
}

func (d *fuseDevice) expand(size int64) error {
	if err := d.fs.expand(size); err != nil {
		return err
	}
	if err := loopSetCapacity(d.loop.path); err != nil {
		return fmt.Errorf("blockdev: %w", err)
	}
	return nil
}

func (d *fuseDevice) close() error {
	return errors.Join(loopDetach(d.loop.path), d.fs.unmount())
}
