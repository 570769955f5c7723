package app

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/engine/frontend"
	"github.com/longhorn-go/longhorn/engine/frontend/nbd"
)

// The nbd frontend: `longhorn engine controller VOL --frontend nbd
// [--nbd-listen unix:PATH|tcp:HOST:PORT]`.
func init() {
	registerFrontend(frontendFactory{
		name: "nbd",
		flags: []cli.Flag{
			&cli.StringFlag{
				Name: "nbd-listen",
				Usage: "where the nbd frontend listens: unix:PATH or tcp:HOST:PORT (port 0 picks one); " +
					"default unix:" + nbd.DefaultSocketDir + "/VOLUME.sock",
			},
		},
		build: func(c *cli.Context) (frontend.Frontend, error) {
			f, err := nbd.New(nbd.Config{Listen: c.String("nbd-listen")})
			if err != nil {
				return nil, fmt.Errorf("--nbd-listen: %w", err)
			}
			return f, nil
		},
	})
}
