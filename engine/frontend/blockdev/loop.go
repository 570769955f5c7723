package blockdev

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// loopTag returns the lo_file_name a loop device of ours carries: the
// volume's loopPrefix and a random id of this attachment, recorded in the
// owner record. A stale device of a dead engine is then told apart from any
// other (another node's or another cluster's on a shared kernel) without
// guessing from names. lo_file_name is LO_NAME_SIZE (64) bytes with the NUL
// (linux/loop.h); the kernel keeps it as given (modern kernels store no
// other settable text field of loop_info64).
func loopTag(volume string) string {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	return loopPrefix(volume) + hex.EncodeToString(id)
}

// loopPrefix is "lhbd:" + 16 hex digits of SHA-256(volume) + ":".
func loopPrefix(volume string) string {
	sum := sha256.Sum256([]byte(volume))
	return "lhbd:" + hex.EncodeToString(sum[:8]) + ":"
}

// loopDevice is an attached /dev/loopN.
type loopDevice struct {
	path  string // /dev/loopN
	rdev  uint64 // its device number, for mknod
	index int
	tag   string // lo_file_name, see loopTag
}

// loopAttach attaches backing (opened here with O_DIRECT) to a free loop
// device with direct I/O and 512-byte logical blocks, tagged for volume
// (a fresh loopTag). A free device taken by someone else between
// LOOP_CTL_GET_FREE and LOOP_CONFIGURE (EBUSY) is retried.
func loopAttach(backing, volume string) (*loopDevice, error) {
	bf, err := os.OpenFile(backing, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		return nil, fmt.Errorf("loop: open backing file with O_DIRECT: %w", err)
	}
	defer bf.Close() // the loop device holds its own reference
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	defer ctl.Close()
	cfg := unix.LoopConfig{Fd: uint32(bf.Fd()), Size: 512}
	cfg.Info.Flags = unix.LO_FLAGS_DIRECT_IO
	tag := loopTag(volume)
	copy(cfg.Info.File_name[:], tag)
	for attempt := 0; attempt < 20; attempt++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("loop: LOOP_CTL_GET_FREE: %w", err)
		}
		dev, err := configureLoop(n, &cfg)
		if errors.Is(err, unix.EBUSY) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if dev != nil {
			dev.tag = tag
		}
		return dev, err
	}
	return nil, errors.New("loop: every free loop device was taken by someone else (20 tries)")
}

func configureLoop(n int, cfg *unix.LoopConfig) (*loopDevice, error) {
	path := "/dev/loop" + strconv.Itoa(n)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("loop: %w", err)
	}
	defer f.Close()
	if err := unix.IoctlLoopConfigure(int(f.Fd()), cfg); err != nil {
		return nil, fmt.Errorf("loop: LOOP_CONFIGURE %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		_ = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
		return nil, fmt.Errorf("loop: stat %s: %w", path, err)
	}
	return &loopDevice{path: path, rdev: st.Rdev, index: n}, nil
}

// loopSetCapacity makes the loop device re-read its backing file's size
// (after a volume expansion).
func loopSetCapacity(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("loop: LOOP_SET_CAPACITY %s: %w", path, err)
	}
	return nil
}

// loopDetach detaches /dev/loopN. A device still held open (a mounted file
// system) is detached by the kernel when its last user closes it
// (LOOP_CLR_FD then sets autoclear). ENXIO (already detached) is success.
func loopDetach(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("loop: LOOP_CLR_FD %s: %w", path, err)
	}
	return nil
}

// loopOwner reads the tag (lo_file_name) of /dev/loopN; "" for a detached
// device (ENXIO).
func loopOwner(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
	if errors.Is(err, unix.ENXIO) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("loop: LOOP_GET_STATUS64 %s: %w", path, err)
	}
	return cString(info.File_name[:]), nil
}

func cString(b []uint8) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// attachedLoop is one attached /dev/loopN as loopsMatching sees it.
type attachedLoop struct {
	dev string // /dev/loopN
	// tag is lo_file_name; tagKnown is false when LOOP_GET_STATUS64 failed,
	// as it does with ENOTCONN once the FUSE daemon serving the backing
	// file died (the kernel stats the backing file to answer it).
	tag      string
	tagKnown bool
	// backing is /sys/block/loopN/loop/backing_file, read without touching
	// the backing file (a " (deleted)" suffix is kept as the kernel prints it).
	backing string
}

// loopsMatching lists the attached loop devices for which match is true,
// from /sys/block/loop*. A device whose status cannot be read is passed with
// tagKnown false rather than failing the scan: on a shared kernel it may be
// anyone's, and it may be the stale device of our own dead engine.
func loopsMatching(match func(attachedLoop) bool) ([]string, error) {
	dirs, err := filepath.Glob("/sys/block/loop*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		backing, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue // not attached
		}
		l := attachedLoop{dev: "/dev/" + filepath.Base(d), backing: strings.TrimSuffix(string(backing), "\n")}
		tag, err := loopOwner(l.dev)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		l.tag, l.tagKnown = tag, err == nil
		if match(l) {
			out = append(out, l.dev)
		}
	}
	return out, nil
}

// ownedLoop reports whether l is the loop device tagged tag, or, when its
// tag cannot be read, the one whose backing file is backingFile (the FUSE
// file FuseDir/<volume>/<volume>, unique to this node's state directory).
func ownedLoop(l attachedLoop, tag, backingFile string) bool {
	if l.tagKnown {
		return tag != "" && l.tag == tag
	}
	return backingFile != "" && (l.backing == backingFile || l.backing == backingFile+" (deleted)")
}
