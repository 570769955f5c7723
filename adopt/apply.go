package adopt

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
)

// Load reads the Volumes and Replicas of the namespace.
func Load(ctx context.Context, cs versioned.Interface, namespace string) (Cluster, error) {
	c := Cluster{Volumes: map[string]*longhorn.Volume{}}
	vl, err := cs.LonghornV1beta2().Volumes(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, err
	}
	for i := range vl.Items {
		c.Volumes[vl.Items[i].Name] = &vl.Items[i]
	}
	rl, err := cs.LonghornV1beta2().Replicas(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return c, err
	}
	for i := range rl.Items {
		c.Replicas = append(c.Replicas, &rl.Items[i])
	}
	return c, nil
}

// Apply carries out a plan, one volume at a time: the Volume is created
// (or marked) with the adoption annotation, so the volume controller makes
// no replicas of its own meanwhile; the Replicas are created owned by it,
// with its engine image; then the annotation goes and the replica count is
// set. A volume that fails stops the run with its error; what was created
// stays (a second run skips it).
func Apply(ctx context.Context, cs versioned.Interface, p Plan, t Target) error {
	for _, vp := range p.Volumes {
		if err := applyVolume(ctx, cs, vp, t); err != nil {
			return fmt.Errorf("volume %s: %w", vp.Name, err)
		}
	}
	return nil
}

func applyVolume(ctx context.Context, cs versioned.Interface, vp VolumePlan, t Target) error {
	vols := cs.LonghornV1beta2().Volumes(t.Namespace)
	if vp.Create {
		if _, err := vols.Create(ctx, NewVolume(vp, t), metav1.CreateOptions{}); err != nil {
			return err
		}
	} else if err := updateVolume(ctx, cs, vp.Name, t.Namespace, func(v *longhorn.Volume) {
		if v.Annotations == nil {
			v.Annotations = map[string]string{}
		}
		v.Annotations[Annotation] = "true"
	}); err != nil {
		return err
	}
	v, err := vols.Get(ctx, vp.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	owner := metav1.OwnerReference{APIVersion: longhorn.SchemeGroupVersion.String(), Kind: "Volume", Name: v.Name, UID: v.UID}
	for _, r := range vp.Replicas {
		r = r.DeepCopy()
		r.OwnerReferences = []metav1.OwnerReference{owner}
		r.Spec.Image = v.Spec.Image
		if _, err := cs.LonghornV1beta2().Replicas(t.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil &&
			!apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("replica %s: %w", r.Name, err)
		}
	}
	return updateVolume(ctx, cs, vp.Name, t.Namespace, func(v *longhorn.Volume) {
		delete(v.Annotations, Annotation)
		v.Spec.NumberOfReplicas = vp.NumberOfReplicas
	})
}

func updateVolume(ctx context.Context, cs versioned.Interface, name, namespace string, change func(*longhorn.Volume)) error {
	vols := cs.LonghornV1beta2().Volumes(namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		v, err := vols.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(v)
		_, err = vols.Update(ctx, v, metav1.UpdateOptions{})
		return err
	})
}
