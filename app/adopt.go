package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/adopt"
	"github.com/longhorn-go/longhorn/controller/monitor"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/types"
)

// `longhorn adopt`: recreate Volume and Replica objects from the replica
// directories a node's disk holds (package adopt; README "Moving from
// Longhorn").
func init() {
	registerCommand(&cli.Command{
		Name:  "adopt",
		Usage: "serve the replica directories on a node's disk again: create the Volume and Replica objects they belong to",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "node", Required: true, EnvVars: []string{"NODE_NAME"}, Usage: "node the disk is on"},
			&cli.StringFlag{Name: "disk-path", Value: "/var/lib/longhorn", Usage: "the disk's path on the node (a disk of the Node object)"},
			&cli.StringFlag{Name: "scan-root", Usage: "where this process reads the disk (default: --disk-path)"},
			&cli.StringFlag{Name: "namespace", Value: "longhorn-system"},
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
			&cli.StringSliceFlag{Name: "volume", Usage: "adopt only this volume (repeatable)"},
			&cli.StringFlag{Name: "frontend", Value: "blockdev", Usage: "frontend of the volumes created"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print the plan, create nothing"},
		},
		Action: runAdopt,
	})
}

func runAdopt(c *cli.Context) error {
	cs, err := longhornClientset(c.String("kubeconfig"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, 5*time.Minute)
	defer cancel()
	t, err := adoptTarget(ctx, c, cs)
	if err != nil {
		return err
	}
	root := c.String("scan-root")
	if root == "" {
		root = t.DiskPath
	}
	found, err := adopt.Scan(root)
	if err != nil {
		return fmt.Errorf("scan %s: %w", root, err)
	}
	cluster, err := adopt.Load(ctx, cs, t.Namespace)
	if err != nil {
		return err
	}
	p := adopt.MakePlan(found, cluster, t)
	printPlan(c.App.Writer, p)
	if c.Bool("dry-run") {
		return nil
	}
	return adopt.Apply(ctx, cs, p, t)
}

// adoptTarget checks the disk against the Node object and reads the
// settings the replicas need.
func adoptTarget(ctx context.Context, c *cli.Context, cs versioned.Interface) (adopt.Target, error) {
	t := adopt.Target{Namespace: c.String("namespace"), Node: c.String("node"), DiskPath: c.String("disk-path"),
		Frontend: longhorn.VolumeFrontend(c.String("frontend")), Now: time.Now().UTC().Format(time.RFC3339)}
	if vs := c.StringSlice("volume"); len(vs) > 0 {
		t.Only = map[string]bool{}
		for _, v := range vs {
			t.Only[v] = true
		}
	}
	root := c.String("scan-root")
	if root == "" {
		root = t.DiskPath
	}
	dc, err := monitor.ReadDiskConfig(root)
	if err != nil {
		return t, fmt.Errorf("disk %s: %w", root, err)
	}
	node, err := cs.LonghornV1beta2().Nodes(t.Namespace).Get(ctx, t.Node, metav1.GetOptions{})
	if err != nil {
		return t, fmt.Errorf("--node %s: %w", t.Node, err)
	}
	if err := matchDisk(node, t.DiskPath, dc.DiskUUID); err != nil {
		return t, err
	}
	t.DiskUUID = dc.DiskUUID
	t.RevisionCounterDisabled, err = revisionCounterDisabled(ctx, cs, t.Namespace)
	return t, err
}

// matchDisk checks that node has a disk at path with the UUID the disk's
// longhorn-disk.cfg holds.
func matchDisk(node *longhorn.Node, path, uuid string) error {
	for name, d := range node.Spec.Disks {
		if d.Path != path {
			continue
		}
		if st := node.Status.DiskStatus[name]; st != nil && st.DiskUUID != "" && st.DiskUUID != uuid {
			return fmt.Errorf("disk %s of node %s has UUID %s, its %s says %s", name, node.Name, st.DiskUUID,
				monitor.DiskConfigFile, uuid)
		}
		return nil
	}
	return fmt.Errorf("node %s has no disk with path %s: add it to the Node first", node.Name, path)
}

func revisionCounterDisabled(ctx context.Context, cs versioned.Interface, ns string) (bool, error) {
	name := types.SettingNameDisableRevisionCounter
	value := ""
	if def, ok := types.GetSettingDefinition(name); ok {
		value = def.Default
	}
	s, err := cs.LonghornV1beta2().Settings(ns).Get(ctx, string(name), metav1.GetOptions{})
	switch {
	case err == nil:
		value = s.Value
	case !apierrors.IsNotFound(err):
		return false, err
	}
	v, err := types.SettingValueForDataEngine(name, value, longhorn.DataEngineTypeV1)
	if err != nil {
		return false, err
	}
	return types.ParseSettingBool(name, v)
}

func printPlan(w io.Writer, p adopt.Plan) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VOLUME\tACTION\tSIZE\tREPLICAS\tDIRECTORIES")
	for _, v := range p.Volumes {
		action := "add replicas"
		if v.Create {
			action = "create"
		}
		var dirs []string
		for _, r := range v.Replicas {
			dirs = append(dirs, r.Spec.DataDirectoryName)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", v.Name, action, v.Size, v.NumberOfReplicas, strings.Join(dirs, ","))
	}
	for _, s := range p.Skipped {
		fmt.Fprintf(tw, "-\tskip %s\t\t\t%s\n", s.Dir, s.Reason)
	}
	_ = tw.Flush()
}
