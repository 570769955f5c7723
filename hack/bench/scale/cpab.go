package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/longhorn-go/longhorn/testbed/cluster"
	"github.com/longhorn-go/longhorn/testbed/framework"
)

// The A/B of part 4: the managers run a second image (-cp-alt-image, e.g.
// the code before a change, loaded into the nodes with the product image)
// for one rest window at the same volume count, then the product image
// again. Only the longhorn-manager DaemonSet's container changes: instance
// managers, engines and replicas stay as they are.

// archiveRef returns the one image name of an image archive.
func archiveRef(archive string) (string, error) {
	imgs, err := cluster.ReadArchiveImages(archive)
	if err != nil {
		return "", err
	}
	if len(imgs) != 1 {
		return "", fmt.Errorf("%s: %d images, want one", archive, len(imgs))
	}
	return imgs[0].Ref, nil
}

// managerImage returns the longhorn-manager DaemonSet's image.
func managerImage(ctx context.Context, f *framework.Cluster) (string, error) {
	ds, err := f.Kube.AppsV1().DaemonSets(framework.Namespace).Get(ctx, "longhorn-manager", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ds.Spec.Template.Spec.Containers[0].Image, nil
}

// switchManagers sets the managers' image and waits until a Ready manager
// pod of that image runs on every node and Longhorn is ready again, then
// for settle (the new managers' first full pass over every object).
func switchManagers(ctx context.Context, f *framework.Cluster, c *cluster.Config, image string, settle time.Duration) error {
	t0 := time.Now()
	api := f.Kube.AppsV1().DaemonSets(framework.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := api.Get(ctx, "longhorn-manager", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds.Spec.Template.Spec.Containers[0].Image = image
		_, err = api.Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	var why string
	err = pollUntil(ctx, time.Second, 4*time.Minute, func() bool {
		why = managersOn(ctx, f, c, image)
		if why == "" {
			why = notReady(ctx, f, c)
		}
		return why == ""
	})
	if err != nil {
		return fmt.Errorf("managers on %s: %s: %w", image, why, err)
	}
	cpLogf("managers run %s after %.0fs; settling %v", image, time.Since(t0).Seconds(), settle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(settle):
	}
	return nil
}

// managersOn names what is missing before every node runs one Ready
// manager pod of image and no other manager pod is left, "" when nothing.
func managersOn(ctx context.Context, f *framework.Cluster, c *cluster.Config, image string) string {
	pl, err := f.Kube.CoreV1().Pods(framework.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager"})
	if err != nil {
		return err.Error()
	}
	ready := map[string]bool{}
	for _, p := range pl.Items {
		if p.Spec.Containers[0].Image != image {
			return "pod " + p.Name + " of the other image still there"
		}
		if p.DeletionTimestamp == nil && podIsReady(&p) {
			ready[p.Spec.NodeName] = true
		}
	}
	for i := 1; i <= c.Nodes; i++ {
		if !ready[c.NodeName(i)] {
			return "no Ready manager on " + c.NodeName(i)
		}
	}
	return ""
}

// runAB runs both arms at the full volume count: the managers on the
// alternative image, then on the product image again; each arm after its
// restart and settle time: a rest window, then abExtra more volumes created
// and deleted (the fan-out of every create over the existing volumes).
func runAB(ctx context.Context, f *framework.Cluster, c *cluster.Config, tr *tracker, o cpOptions, r *CPRun,
	rest func(string) error, phase func(string, func() Latency)) error {
	product, err := managerImage(ctx, f)
	if err != nil {
		return err
	}
	alt, err := archiveRef(o.altImage)
	if err != nil {
		return err
	}
	for _, arm := range []struct{ name, image string }{{"alt", alt}, {"product", product}} {
		if err := switchManagers(ctx, f, c, arm.image, o.settle); err != nil {
			return err
		}
		tag := " [" + arm.name + " image]"
		if err := rest(fmt.Sprintf("rest, %d detached%s", o.volumes, tag)); err != nil {
			return err
		}
		extra := make([]string, o.abExtra)
		for i := range extra {
			extra[i] = fmt.Sprintf("ab-%s-%03d", arm.name, i)
		}
		phase(fmt.Sprintf("create +%d%s", len(extra), tag), func() Latency {
			ready, _ := createAll(ctx, f, tr, extra, o)
			ready.Phase += tag
			return ready
		})
		phase(fmt.Sprintf("delete +%d%s", len(extra), tag), func() Latency {
			l := deleteAll(ctx, f, tr, extra, o.parallel)
			l.Phase += tag
			return l
		})
	}
	return nil
}
