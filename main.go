// Command longhorn is the single binary of the project: manager, instance manager,
// engine processes and tools are its subcommands (see app/).
package main

import (
	"os"

	"github.com/sirupsen/logrus"

	"github.com/longhorn-go/longhorn/app"
)

func main() {
	if err := app.New().Run(os.Args); err != nil {
		logrus.WithError(err).Error("longhorn: command failed")
		os.Exit(1)
	}
}
