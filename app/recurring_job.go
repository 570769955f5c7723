package app

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/recurringjob"
	"github.com/longhorn-go/longhorn/types"
)

func init() { registerCommand(recurringJobCommand()) }

// recurringJobCommand is `longhorn recurring-job NAME`: what the CronJob of a
// RecurringJob runs (Longhorn's `longhorn-manager recurring-job`).
func recurringJobCommand() *cli.Command {
	return &cli.Command{
		Name:      "recurring-job",
		Usage:     "run the RecurringJob NAME once on its volumes (what its CronJob runs)",
		ArgsUsage: "NAME",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
			&cli.StringFlag{Name: "namespace", Value: types.DefaultNamespace, EnvVars: []string{"POD_NAMESPACE"}, Usage: "namespace of Longhorn's objects"},
			&cli.StringFlag{Name: "manager-url", Value: recurringjob.DefaultManagerURL, EnvVars: []string{"LONGHORN_MANAGER_URL"},
				Usage: "the manager's REST API, which filesystem-trim jobs call (trimFilesystem)"},
			&cli.DurationFlag{Name: "timeout", Value: 6 * time.Hour, Usage: "give up on the snapshots and backups still running after this long"},
		},
		Action: runRecurringJob,
	}
}

func runRecurringJob(c *cli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("recurring-job takes one argument, the RecurringJob's name, after the flags; got %d: %q", c.NArg(), c.Args().Slice())
	}
	rc, err := restConfig(c.String("kubeconfig"))
	if err != nil {
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	lh, err := versioned.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if d := c.Duration("timeout"); d > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	r := &recurringjob.Runner{LH: lh, Namespace: c.String("namespace"), Log: logrus.StandardLogger(), ManagerURL: c.String("manager-url")}
	return r.Run(ctx, c.Args().First())
}
