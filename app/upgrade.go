package app

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/meta"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/upgrade"
)

func init() {
	registerCommand(&cli.Command{
		Name:  "pre-upgrade",
		Usage: "refuse an upgrade from the installed version (Setting current-longhorn-version) to this binary's version along a path Longhorn refuses",
		Description: "Run before the new managers start (Longhorn runs it as the chart's pre-upgrade hook Job). " +
			"Exits non-zero with the reason on a downgrade, a skipped minor or a skipped major version.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "namespace", Value: "longhorn-system", EnvVars: []string{"POD_NAMESPACE"}},
			&cli.StringFlag{Name: "kubeconfig", EnvVars: []string{"KUBECONFIG"}, Usage: "kubeconfig file; empty means in-cluster"},
			&cli.StringFlag{Name: "target-version", Value: meta.Version, Usage: "the version upgraded to (default: this binary's)"},
		},
		Action: runPreUpgrade,
	})
}

func runPreUpgrade(c *cli.Context) error {
	cs, err := longhornClientset(c.String("kubeconfig"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context, time.Minute)
	defer cancel()
	msg, err := preUpgradeCheck(ctx, cs, c.String("namespace"), c.String("target-version"))
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, msg)
	return nil
}

// UpgradeFromVersionAnnotation on Setting current-longhorn-version records the
// version installed when `longhorn pre-upgrade` allowed an upgrade: the new
// managers overwrite the setting's value with their own version, and
// `longhorn post-upgrade` migrates the stored objects from the recorded one.
const UpgradeFromVersionAnnotation = "longhorn.io/upgrade-from-version"

// preUpgradeCheck reads the installed version from Setting current-longhorn-version
// in ns (absent: a fresh install) and applies upgrade.CheckPath to target. An
// allowed upgrade from an installed version is recorded on the setting
// (UpgradeFromVersionAnnotation) for post-upgrade. It returns the line to print, or
// an error naming both versions when the path is refused.
func preUpgradeCheck(ctx context.Context, cs versioned.Interface, ns, target string) (string, error) {
	s, msg, err := checkInstalledVersion(ctx, cs, ns, target)
	if err != nil {
		return "", fmt.Errorf("pre-upgrade: %w", err)
	}
	if s != nil && s.Value != "" {
		if err := recordUpgradeFrom(ctx, cs, s, s.Value); err != nil {
			return "", err
		}
	}
	return "pre-upgrade: " + msg, nil
}

// checkInstalledVersion applies upgrade.CheckPath from the version in Setting
// current-longhorn-version of ns (nil when absent: a fresh install) to target.
// It returns the setting, a line saying what was checked, or the refusal.
// The manager runs it at start with --upgrade-version-check.
func checkInstalledVersion(ctx context.Context, cs versioned.Interface, ns, target string) (*longhorn.Setting, string, error) {
	name := string(types.SettingNameCurrentLonghornVersion)
	current := ""
	s, err := cs.LonghornV1beta2().Settings(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		current = s.Value
	case apierrors.IsNotFound(err):
		s = nil
	default:
		return nil, "", fmt.Errorf("read Setting %s/%s: %w", ns, name, err)
	}
	v, err := upgrade.CheckPath(current, target)
	if err != nil {
		return s, "", err
	}
	if v.Skipped != "" {
		return s, fmt.Sprintf("%q -> %q not checked: %s", current, target, v.Skipped), nil
	}
	return s, fmt.Sprintf("upgrade from %s to %s is a supported path", current, target), nil
}

// recordUpgradeFrom writes UpgradeFromVersionAnnotation = from on setting s
// (retrying on a conflict with the managers' own writes). An annotation left
// by an earlier pre-upgrade whose post-upgrade did not run is kept: the
// objects are still in that older version's shape.
func recordUpgradeFrom(ctx context.Context, cs versioned.Interface, s *longhorn.Setting, from string) error {
	settings := cs.LonghornV1beta2().Settings(s.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := settings.Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := cur.Annotations[UpgradeFromVersionAnnotation]; ok {
			return nil
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[UpgradeFromVersionAnnotation] = from
		_, err = settings.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("pre-upgrade: record the installed version %s on Setting %s: %w", from, s.Name, err)
	}
	return nil
}

// managerVersionCheck is the manager's --upgrade-version-check: before it
// starts anything (and pins current-longhorn-version to its own version), it
// refuses an upgrade path Longhorn refuses, so a skipped version never runs.
func managerVersionCheck(ctx context.Context, rc *rest.Config, ns string) error {
	cs, err := versioned.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, msg, err := checkInstalledVersion(ctx, cs, ns, meta.Version)
	if err != nil {
		return fmt.Errorf("upgrade version check: %w", err)
	}
	logrus.Info("Upgrade version check: " + msg)
	return nil
}
