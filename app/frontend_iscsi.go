package app

import (
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/iscsi"
)

// The iSCSI frontend: an iSCSI target inside the engine controller serving
// the volume as LUN 1 of iqn.2019-10.io.longhorn:<volume>.
func init() {
	registerFrontend(frontendFactory{
		name: "iscsi",
		flags: []cli.Flag{
			&cli.StringFlag{Name: "iscsi-listen", Value: fmt.Sprintf(":%d", iscsi.DefaultPort),
				Usage: "HOST:PORT of the iSCSI portal (frontend iscsi)"},
			&cli.StringFlag{Name: "iscsi-chap-user", Usage: "require one-way CHAP with this user name (frontend iscsi)"},
			&cli.StringFlag{Name: "iscsi-chap-secret", Usage: "CHAP secret for --iscsi-chap-user", EnvVars: []string{"ISCSI_CHAP_SECRET"}},
		},
		build: func(c *cli.Context) (frontend.Frontend, error) {
			t, err := iscsi.New(iscsi.Config{
				Listen:     c.String("iscsi-listen"),
				CHAPUser:   c.String("iscsi-chap-user"),
				CHAPSecret: c.String("iscsi-chap-secret"),
				Log:        logrus.WithField("frontend", "iscsi"),
			})
			if err != nil {
				return nil, fmt.Errorf("--iscsi-listen/--iscsi-chap-*: %w", err)
			}
			return t, nil
		},
	})
}
