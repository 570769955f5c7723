package backupstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
)

// NFS targets: nfs://server:/export/path[?nfsOptions=opt,opt=value]
// (Longhorn's format). Two clients:
//
//   - kernel: the export is mounted (mount -t nfs) under MountDir and the
//     store is a directory there, as Longhorn does. Used where the kernel has
//     an NFS client.
//   - userspace: an NFSv3 client in this process (github.com/willscott/go-nfs-client)
//     talks MOUNT and NFS over TCP; no mount, no kernel module, no privilege
//     beyond reaching the server. Used where the kernel has no NFS client
//     (this test bed's VM), or when LONGHORN_NFS_CLIENT=userspace.
//
// LONGHORN_NFS_CLIENT=kernel|userspace|auto (default auto: kernel when
// /proc/filesystems lists nfs and mount.nfs exists, userspace otherwise).
// nfsOptions go to mount -o; the userspace client reads port=N and
// mountport=N from them (the NFS and MOUNT ports, as the kernel's options;
// without them it asks the server's portmapper on port 111).

// MountDir is where the kernel client mounts NFS targets (Longhorn's).
const MountDir = "/var/lib/longhorn-backupstore-mounts"

// nfsClientEnv selects the NFS client.
const nfsClientEnv = "LONGHORN_NFS_CLIENT"

// defaultNFSOptions are the kernel mount options when the URL has none
// (Longhorn's soft mount with a bounded retry, so a dead server fails
// operations instead of hanging them).
const defaultNFSOptions = "nfsvers=4.2,actimeo=1,soft,timeo=300,retry=2"

// nfsTarget is a parsed NFS URL.
type nfsTarget struct {
	host    string
	export  string   // absolute path on the server
	options []string // nfsOptions, split on commas
	url     string   // nfs://host:/export
}

func parseNFSURL(u *url.URL) (nfsTarget, error) {
	host := u.Hostname()
	if host == "" || u.Path == "" || !strings.HasPrefix(u.Path, "/") {
		return nfsTarget{}, fmt.Errorf("%w: backup target URL %q: want nfs://server:/export/path", ErrInvalid, u.String())
	}
	if u.Port() != "" {
		return nfsTarget{}, fmt.Errorf("%w: backup target URL %q: put the NFS port in nfsOptions=port=N, not after the host",
			ErrInvalid, u.String())
	}
	t := nfsTarget{host: host, export: filepath.Clean(u.Path), url: "nfs://" + host + ":" + filepath.Clean(u.Path)}
	for _, o := range u.Query()["nfsOptions"] {
		for _, p := range strings.Split(o, ",") {
			if p = strings.TrimSpace(p); p != "" {
				t.options = append(t.options, p)
			}
		}
	}
	return t, nil
}

// option returns the integer value of name=N in the options, or 0.
func (t nfsTarget) option(name string) (int, error) {
	for _, o := range t.options {
		k, v, ok := strings.Cut(o, "=")
		if !ok || k != name {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > 65535 {
			return 0, fmt.Errorf("%w: nfsOptions %s=%q: want a port 1-65535", ErrInvalid, name, v)
		}
		return n, nil
	}
	return 0, nil
}

func openNFS(ctx context.Context, u *url.URL) (Driver, error) {
	t, err := parseNFSURL(u)
	if err != nil {
		return nil, err
	}
	switch mode := os.Getenv(nfsClientEnv); mode {
	case "kernel":
		return mountNFS(ctx, t)
	case "userspace":
		return openUserNFS(ctx, t)
	case "", "auto":
		if kernelHasNFS() {
			return mountNFS(ctx, t)
		}
		return openUserNFS(ctx, t)
	default:
		return nil, fmt.Errorf("%w: %s=%q: want kernel, userspace or auto", ErrInvalid, nfsClientEnv, mode)
	}
}

// kernelHasNFS reports whether this kernel can mount NFS.
func kernelHasNFS() bool {
	b, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return false
	}
	has := false
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[len(f)-1] == "nfs" || f[len(f)-1] == "nfs4") {
			has = true
		}
	}
	if !has {
		return false
	}
	_, err = exec.LookPath("mount.nfs")
	return err == nil
}

// mountPoint returns the directory a target is mounted on: one per server
// and export, named by a hash so no path characters leak into it.
func (t nfsTarget) mountPoint() string {
	h := sha256.Sum256([]byte(t.host + ":" + t.export))
	return filepath.Join(MountDir, t.host+"-"+hex.EncodeToString(h[:8]))
}

// mountArgs returns the mount(8) arguments for a target.
func (t nfsTarget) mountArgs(mnt string) []string {
	opts := defaultNFSOptions
	if len(t.options) > 0 {
		opts = strings.Join(t.options, ",")
	}
	return []string{"-t", "nfs", "-o", opts, t.host + ":" + t.export, mnt}
}

// isMounted reports whether mnt is a mount point, from the mount table only
// (github.com/moby/sys/mountinfo): it never stats mnt, which on a hung NFS
// server would hang too.
func isMounted(mnt string) bool {
	infos, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(mnt))
	return err == nil && len(infos) > 0
}

func mountNFS(ctx context.Context, t nfsTarget) (Driver, error) {
	mnt := t.mountPoint()
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, t.url, err)
	}
	if !isMounted(mnt) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "mount", t.mountArgs(mnt)...).CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: mount %s: %v: %s", ErrUnavailable, t.url, strings.Join(t.mountArgs(mnt), " "),
				err, strings.TrimSpace(string(out)))
		}
	}
	// The mount stays for other users of the target; CleanupMountPoints
	// removes it (the proxy's CleanupBackupMountPoints).
	return newDirDriver(KindNFS, t.url, mnt, nil)
}

func unmount(ctx context.Context, mnt string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "umount", "-l", mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("umount %s: %v: %s", mnt, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// CleanupMountPoints unmounts every NFS target mounted under MountDir
// (Longhorn's CleanupBackupMountPoints) and removes the empty mount points.
func CleanupMountPoints(ctx context.Context) error {
	ents, err := os.ReadDir(MountDir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		mnt := filepath.Join(MountDir, e.Name())
		if isMounted(mnt) {
			if err := unmount(ctx, mnt); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		_ = os.Remove(mnt)
	}
	return errors.Join(errs...)
}
