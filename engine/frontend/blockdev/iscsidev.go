package blockdev

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi"
)

// iscsiLoginTimeout bounds the wait for the SCSI disk after the login.
const iscsiLoginTimeout = 30 * time.Second

// iscsiDevice is the iscsi mode: the engine's own iSCSI target, logged in to
// with open-iscsi on this node (Longhorn's tgt-blockdev way, without tgtd).
type iscsiDevice struct {
	cfg    Config
	target *iscsi.Target
	iqn    string
	portal string
	path   string
	dev    uint64
}

// iscsiAdmCommand is the iscsiadm command line prefix: Config.ISCSIAdm, or
// iscsiadm through nsenter into the host's namespaces when the host's /proc
// is mounted at /host/proc (Longhorn's instance manager), or plain iscsiadm.
func iscsiAdmCommand(cfg Config, hostProc bool) []string {
	if len(cfg.ISCSIAdm) > 0 {
		return cfg.ISCSIAdm
	}
	if hostProc {
		return []string{"nsenter", "--mount=/host/proc/1/ns/mnt", "--net=/host/proc/1/ns/net", "iscsiadm"}
	}
	return []string{"iscsiadm"}
}

func runISCSIAdm(ctx context.Context, cfg Config, args ...string) error {
	_, err := os.Stat("/host/proc/1/ns/mnt")
	cmd := append(iscsiAdmCommand(cfg, err == nil), args...)
	out, err := exec.CommandContext(ctx, cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(cmd, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// iscsiByPath is udev's name for LUN 1 of iqn at portal
// (60-persistent-storage.rules: ip-<portal>-iscsi-<iqn>-lun-<lun>).
func iscsiByPath(portal, iqn string) string {
	return fmt.Sprintf("/dev/disk/by-path/ip-%s-iscsi-%s-lun-1", portal, iqn)
}

func attachISCSI(ctx context.Context, cfg Config, name string, size int64, be frontend.Backend) (device, error) {
	host, _, err := net.SplitHostPort(cfg.ISCSIListen)
	if err != nil || host == "" || net.ParseIP(host).IsUnspecified() {
		return nil, fmt.Errorf("iscsi mode: --iscsi-listen %q must name this node's address (the login goes to it)", cfg.ISCSIListen)
	}
	t, err := iscsi.New(iscsi.Config{Listen: cfg.ISCSIListen, Log: cfg.Log.WithField("frontend", "blockdev-iscsi")})
	if err != nil {
		return nil, err
	}
	if err := t.Startup(ctx, name, size, be); err != nil {
		return nil, err
	}
	d := &iscsiDevice{cfg: cfg, target: t, iqn: iscsi.IQN(name), portal: cfg.ISCSIListen}
	if err := d.login(ctx); err != nil {
		return nil, errors.Join(err, iscsiLogout(cfg, d.iqn, d.portal), t.Shutdown())
	}
	return d, nil
}

func (d *iscsiDevice) login(ctx context.Context) error {
	if err := runISCSIAdm(ctx, d.cfg, "-m", "discovery", "-t", "sendtargets", "-p", d.portal); err != nil {
		return err
	}
	if err := runISCSIAdm(ctx, d.cfg, "-m", "node", "-T", d.iqn, "-p", d.portal, "--login"); err != nil {
		return err
	}
	deadline := time.Now().Add(iscsiLoginTimeout)
	for time.Now().Before(deadline) {
		if p, err := filepath.EvalSymlinks(iscsiByPath(d.portal, d.iqn)); err == nil {
			if rdev, ok := blockRdev(p); ok {
				d.path, d.dev = p, rdev
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("iscsi mode: no disk %s within %s of the login", iscsiByPath(d.portal, d.iqn), iscsiLoginTimeout)
}

// iscsiLogout logs out of and forgets the node record; "no session" is success.
func iscsiLogout(cfg Config, iqn, portal string) error {
	ctx, cancel := context.WithTimeout(context.Background(), iscsiLoginTimeout)
	defer cancel()
	err := runISCSIAdm(ctx, cfg, "-m", "node", "-T", iqn, "-p", portal, "--logout")
	_ = runISCSIAdm(ctx, cfg, "-m", "node", "-T", iqn, "-p", portal, "-o", "delete")
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 21 { // ISCSI_ERR_NO_OBJS_FOUND
		return nil
	}
	return err
}

func (d *iscsiDevice) kernelPath() string { return d.path }
func (d *iscsiDevice) rdev() uint64       { return d.dev }
func (d *iscsiDevice) record() ownerRecord {
	return ownerRecord{Mode: ModeISCSI, Path: d.path, NBDIndex: -1, IQN: d.iqn, Portal: d.portal}
}

// expand: the target raises a capacity-changed unit attention; the
// initiator rescans the session so the SCSI disk shows the new size.
func (d *iscsiDevice) expand(size int64) error {
	if err := d.target.Expand(size); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), iscsiLoginTimeout)
	defer cancel()
	return runISCSIAdm(ctx, d.cfg, "-m", "node", "-T", d.iqn, "-p", d.portal, "--rescan")
}

func (d *iscsiDevice) close() error {
	return errors.Join(iscsiLogout(d.cfg, d.iqn, d.portal), d.target.Shutdown())
}
