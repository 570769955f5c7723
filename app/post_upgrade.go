package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/meta"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/upgrade"
)

func init() {
	registerCommand(&cli.Command{
		Name:  "post-upgrade",
		Usage: "migrate the stored objects from the version upgraded from to this binary's (upgrade/ steps)",
		Description: "Run after `helm upgrade` (the chart's post-upgrade hook Job). Waits until the managers of the " +
			"target version run (Setting current-longhorn-version holds it), then applies every upgrade step newer " +
			"than the version pre-upgrade recorded (annotation " + UpgradeFromVersionAnnotation + "), or every step " +
			"when none is recorded (each is idempotent), and clears the record.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Value: "longhorn-system", EnvVars: []string{"POD_NAMESPACE"}},
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
			&cli.StringFlag{Name: "from-version", Usage: "the version upgraded from (default: the one pre-upgrade recorded)"},
			&cli.StringFlag{Name: "target-version", Value: meta.Version, Usage: "the version upgraded to (default: this binary's)"},
			&cli.DurationFlag{Name: "wait", Value: 5 * time.Minute, Usage: "how long to wait for the managers of the target version; 0: do not wait"},
		},
		Action: runPostUpgrade,
	})
}

func runPostUpgrade(c *cli.Context) error {
	cs, err := longhornClientset(c.String("kubeconfig"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("wait")+2*time.Minute)
	defer cancel()
	return postUpgrade(ctx, c.App.Writer, cs, postUpgradeOptions{
		namespace: c.String("namespace"), from: c.String("from-version"),
		target: c.String("target-version"), wait: c.Duration("wait"),
	})
}

// postUpgradeOptions are the post-upgrade flags.
type postUpgradeOptions struct {
	namespace, from, target string
	wait                    time.Duration
}

// postUpgrade waits for the target version's managers (opts.wait), takes the
// from version (the flag, else pre-upgrade's record), migrates the stored
// objects with upgrade.PlanFor(from), retrying the whole pass on a conflict,
// then clears the record. Progress goes to out.
func postUpgrade(ctx context.Context, out io.Writer, cs versioned.Interface, opts postUpgradeOptions) error {
	name := string(types.SettingNameCurrentLonghornVersion)
	settings := cs.LonghornV1beta2().Settings(opts.namespace)
	if opts.wait > 0 {
		var seen string
		err := wait.PollUntilContextTimeout(ctx, time.Second, opts.wait, true, func(ctx context.Context) (bool, error) {
			s, err := settings.Get(ctx, name, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
			if s != nil {
				seen = s.Value
			}
			return err == nil && s.Value == opts.target, nil
		})
		if err != nil {
			return fmt.Errorf("post-upgrade: the managers of version %s are not running after %v (Setting %s is %q): %w",
				opts.target, opts.wait, name, seen, err)
		}
	}
	from := opts.from
	if from == "" {
		s, err := settings.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("post-upgrade: read Setting %s: %w", name, err)
		}
		if err == nil {
			from = s.Annotations[UpgradeFromVersionAnnotation]
		}
	}
	plan := upgrade.PlanFor(from)
	fmt.Fprintf(out, "post-upgrade: %q -> %q: steps %v\n", from, opts.target, plan.Keys())
	if plan.AllSteps != "" {
		fmt.Fprintf(out, "post-upgrade: %s\n", plan.AllSteps)
	}
	for _, s := range plan.Steps {
		fmt.Fprintf(out, "post-upgrade: step %s:\n  %s\n", s.Key(), strings.Join(s.Changes, "\n  "))
	}
	var written []string
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		before, err := upgrade.Load(ctx, cs, opts.namespace)
		if err != nil {
			return err
		}
		after := before.DeepCopy()
		if err := plan.Migrate(after); err != nil {
			return err
		}
		w, err := upgrade.Write(ctx, cs, before, after)
		written = append(written, w...)
		return err
	})
	if err != nil {
		return fmt.Errorf("post-upgrade: migrate: %w", err)
	}
	fmt.Fprintf(out, "post-upgrade: %d objects migrated: %s\n", len(written), strings.Join(written, ", "))
	return clearUpgradeFrom(ctx, cs, opts.namespace)
}

// clearUpgradeFrom removes pre-upgrade's record once the objects are migrated.
func clearUpgradeFrom(ctx context.Context, cs versioned.Interface, ns string) error {
	settings := cs.LonghornV1beta2().Settings(ns)
	name := string(types.SettingNameCurrentLonghornVersion)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := settings.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, ok := s.Annotations[UpgradeFromVersionAnnotation]; !ok {
			return nil
		}
		delete(s.Annotations, UpgradeFromVersionAnnotation)
		_, err = settings.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("post-upgrade: clear %s on Setting %s: %w", UpgradeFromVersionAnnotation, name, err)
	}
	return nil
}
