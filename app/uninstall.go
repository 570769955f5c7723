package app

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/uninstall"
)

func init() {
	registerCommand(&cli.Command{
		Name:  "uninstall",
		Usage: "remove every volume and its data, the managers' objects, the webhooks and the longhorn.io CRDs (only when Setting deleting-confirmation-flag is true)",
		Description: "Longhorn's longhorn-uninstall Job (the chart's pre-delete hook). Refuses, removing nothing, unless " +
			"Setting deleting-confirmation-flag is \"true\". Then, in order: deletes the volumes and waits --grace for the " +
			"managers to remove their engines, replicas and data; deletes the longhorn-manager DaemonSet and waits for its " +
			"pods; deletes the admission webhook configurations; deletes every longhorn.io object (removing finalizers); " +
			"deletes the longhorn.io CRDs.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Value: "longhorn-system", EnvVars: []string{"POD_NAMESPACE"}},
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
			&cli.DurationFlag{Name: "grace", Value: 2 * time.Minute, Usage: "how long the managers get to remove volumes and to stop before finalizers are removed"},
		},
		Action: runUninstall,
	})
}

func runUninstall(c *cli.Context) error {
	rc, err := restConfig(c.String("kubeconfig"))
	if err != nil {
		return fmt.Errorf("kubernetes client config: %w", err)
	}
	var cl uninstall.Clients
	if cl.Kube, err = kubernetes.NewForConfig(rc); err != nil {
		return err
	}
	if cl.LH, err = versioned.NewForConfig(rc); err != nil {
		return err
	}
	if cl.Ext, err = apiext.NewForConfig(rc); err != nil {
		return err
	}
	if cl.Dynamic, err = dynamic.NewForConfig(rc); err != nil {
		return err
	}
	grace := c.Duration("grace")
	ctx, cancel := context.WithTimeout(c.Context, 3*grace+5*time.Minute)
	defer cancel()
	return uninstall.Run(ctx, cl, uninstall.Options{Namespace: c.String("namespace"), Grace: grace,
		Log: func(format string, args ...any) { fmt.Fprintf(c.App.Writer, format+"\n", args...) }})
}
