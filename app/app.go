// Package app wires the subcommands of the longhorn binary. Each subcommand lives
// in its own file and registers itself with registerCommand from an init function,
// so adding a subcommand never edits this file.
package app

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/meta"
)

var commands []*cli.Command

// registerCommand adds a top-level subcommand. It is called from init functions of
// the files in this package.
func registerCommand(c *cli.Command) { commands = append(commands, c) }

// New returns the root CLI application with every registered subcommand, the
// global --log-level and --log-format flags, and --version.
func New() *cli.App {
	cmds := append([]*cli.Command(nil), commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "longhorn version %s\n", meta.VersionString())
	}
	return &cli.App{
		Name:    "longhorn",
		Usage:   "distributed block storage for Kubernetes",
		Version: meta.Version,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "panic|fatal|error|warn|info|debug|trace", EnvVars: []string{"LOG_LEVEL"}},
			&cli.StringFlag{Name: "log-format", Value: "plain", Usage: "plain|json (text = plain)", EnvVars: []string{"LOG_FORMAT"}},
		},
		Before:   func(c *cli.Context) error { return setupLogging(c.String("log-level"), c.String("log-format")) },
		Commands: cmds,
	}
}

// setupLogging configures the global logrus logger. Formats are Longhorn's
// chart values (longhornManager.log.format: plain or json) plus text, the
// same as plain; case does not matter. It returns an error naming the flag
// when the level or format is unknown.
func setupLogging(level, format string) error {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("--log-level %q: %w", level, err)
	}
	logrus.SetLevel(lvl)
	switch strings.ToLower(format) {
	case "plain", "text", "":
		logrus.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	case "json":
		logrus.SetFormatter(&logrus.JSONFormatter{})
	default:
		return fmt.Errorf("--log-format %q: must be plain (or text) or json", format)
	}
	return nil
}
