package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/blockdev"
	"github.com/longhorn-go/longhorn/instance-manager/process"
)

// The blockdev frontend: /dev/longhorn/<volume> on this node, made with the
// kernel NBD client, an iSCSI login to the engine's own target, or a FUSE
// file on a loop device (engine/frontend/blockdev picks and logs).
func init() {
	registerFrontend(frontendFactory{
		name: "blockdev",
		flags: []cli.Flag{
			&cli.StringFlag{Name: "blockdev-mode", Usage: "how frontend blockdev makes the device: nbd, iscsi, fuse or empty (first the node can do)"},
			&cli.StringFlag{Name: "blockdev-dev-dir", Value: blockdev.DefaultDevDir, EnvVars: []string{"LONGHORN_BLOCKDEV_DEV_DIR"}, Usage: "directory of the device node (frontend blockdev)"},
			&cli.StringFlag{Name: "blockdev-state-dir", Value: blockdev.DefaultStateDir, EnvVars: []string{"LONGHORN_BLOCKDEV_STATE_DIR"}, Usage: "FUSE mounts and owner records (frontend blockdev)"},
		},
		build: func(c *cli.Context) (frontend.Frontend, error) {
			f, err := blockdev.New(blockdevConfig(c.String("blockdev-mode"), c.String("blockdev-dev-dir"),
				c.String("blockdev-state-dir"), c.String("iscsi-listen")))
			if err != nil {
				return nil, fmt.Errorf("--blockdev-mode: %w", err)
			}
			return f, nil
		},
	})
}

func blockdevConfig(mode, devDir, stateDir, iscsiListen string) blockdev.Config {
	return blockdev.Config{Mode: blockdev.Mode(mode), DevDir: devDir, FuseDir: stateDir, ISCSIListen: iscsiListen,
		Log: logrus.WithField("frontend", "blockdev")}
}

// cleanupBlockdevOnExit is the instance manager's process exit hook: when
// an engine with frontend blockdev ends (killed, crashed or stopped), the
// device, loop and FUSE mount it may have left are removed, unless a live
// engine of the volume owns them by then.
func cleanupBlockdevOnExit(log logrus.FieldLogger) func(process.Info) {
	return func(i process.Info) {
		args := i.Spec.Args
		if i.Meta.Type != "engine" || flagValue(args, "--frontend") != "blockdev" {
			return
		}
		cfg := blockdevConfig("", flagOrEnv(args, "--blockdev-dev-dir", "LONGHORN_BLOCKDEV_DEV_DIR"),
			flagOrEnv(args, "--blockdev-state-dir", "LONGHORN_BLOCKDEV_STATE_DIR"), "")
		if err := blockdev.CleanupIfOrphaned(cfg, i.Meta.VolumeName); err != nil {
			log.WithError(err).WithField("volume", i.Meta.VolumeName).Warn("blockdev cleanup after engine exit was incomplete")
		}
	}
}

// flagValue returns the value of "--flag VALUE" or "--flag=VALUE" in args.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// flagOrEnv is the flag's value in args, else the environment variable the
// engine would have read (it inherits the instance manager's environment).
func flagOrEnv(args []string, flag, env string) string {
	if v := flagValue(args, flag); v != "" {
		return v
	}
	return os.Getenv(env)
}
