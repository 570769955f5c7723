package framework

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// ReadVolumeManifest parses a YAML (or JSON) file holding one Volume, such
// as examples/volume.yaml. An empty namespace becomes Namespace.
func ReadVolumeManifest(path string) (*longhorn.Volume, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v longhorn.Volume
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.Kind != "Volume" || v.Name == "" {
		return nil, fmt.Errorf("%s: kind %q name %q: want a named Volume", path, v.Kind, v.Name)
	}
	if v.Namespace == "" {
		v.Namespace = Namespace
	}
	return &v, nil
}

// ApplyFile runs `kubectl apply -f path`, as a user creates objects.
func (c *Cluster) ApplyFile(ctx context.Context, path string) error {
	_, err := c.Kubectl(ctx, "apply", "-f", path)
	return err
}

// CreateVolume creates v (namespace Namespace when empty) through the
// clientset and returns the stored object.
func (c *Cluster) CreateVolume(ctx context.Context, v *longhorn.Volume) (*longhorn.Volume, error) {
	v = v.DeepCopy()
	if v.Namespace == "" {
		v.Namespace = Namespace
	}
	var out *longhorn.Volume
	err := retryWebhookCall(ctx, func() (err error) {
		out, err = c.LH.LonghornV1beta2().Volumes(Namespace).Create(ctx, v, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create volume %s: %w", v.Name, err)
	}
	return out, nil
}

// webhookRetryFor bounds retryWebhookCall.
const webhookRetryFor = 30 * time.Second

// webhookUnreachable reports the API server's "failed calling webhook"
// InternalError: it could not reach the admission webhook (a manager pod
// restarting, or its pooled connection reset after a test cut a node's
// network). Nothing was stored, so the call may be repeated.
func webhookUnreachable(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed calling webhook")
}

// retryWebhookCall runs call until it returns anything but
// webhookUnreachable, for at most webhookRetryFor.
func retryWebhookCall(ctx context.Context, call func() error) error {
	deadline := time.Now().Add(webhookRetryFor)
	for {
		err := call()
		if !webhookUnreachable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}

// NewVolume returns a v1 Volume spec: size bytes (a multiple of 4096),
// replicas copies, frontend fe, and the fields Longhorn's API fills for
// a volume created without them. The revision counter is off, as Longhorn's
// default for v1 volumes.
func NewVolume(name string, size int64, replicas int, fe longhorn.VolumeFrontend) *longhorn.Volume {
	return &longhorn.Volume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "longhorn.io/v1beta2", Kind: "Volume"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: longhorn.VolumeSpec{
			Size: size, NumberOfReplicas: replicas, Frontend: fe,
			DataEngine: longhorn.DataEngineTypeV1, AccessMode: longhorn.AccessModeReadWriteOnce,
			StaleReplicaTimeout: 2880, RevisionCounterDisabled: true,
		},
	}
}

// Volume returns the volume named name.
func (c *Cluster) Volume(ctx context.Context, name string) (*longhorn.Volume, error) {
	v, err := c.LH.LonghornV1beta2().Volumes(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", name, err)
	}
	return v, nil
}

// SetFrontend sets spec.frontend of a volume (allowed while detached).
func (c *Cluster) SetFrontend(ctx context.Context, name string, fe longhorn.VolumeFrontend) error {
	return c.updateVolume(ctx, name, func(v *longhorn.Volume) bool {
		if v.Spec.Frontend == fe {
			return false
		}
		v.Spec.Frontend = fe
		return true
	})
}

// SetNumberOfReplicas sets spec.numberOfReplicas of a volume.
func (c *Cluster) SetNumberOfReplicas(ctx context.Context, name string, n int) error {
	return c.updateVolume(ctx, name, func(v *longhorn.Volume) bool {
		if v.Spec.NumberOfReplicas == n {
			return false
		}
		v.Spec.NumberOfReplicas = n
		return true
	})
}

func (c *Cluster) updateVolume(ctx context.Context, name string, mutate func(*longhorn.Volume) bool) error {
	return retryConflict(func() error {
		v, err := c.Volume(ctx, name)
		if err != nil {
			return err
		}
		if !mutate(v) {
			return nil
		}
		_, err = c.LH.LonghornV1beta2().Volumes(Namespace).Update(ctx, v, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update volume %s: %w", name, err)
		}
		return nil
	})
}

// DeleteVolume deletes a volume (NotFound is not an error) and waits up to
// timeout until the volume, its engines and its replicas are gone.
func (c *Cluster) DeleteVolume(ctx context.Context, name string, timeout time.Duration) error {
	err := c.LH.LonghornV1beta2().Volumes(Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !IsNotFound(err) {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	err = poll(ctx, timeout, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		left, err := c.volumeObjects(ctx, name)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(left) == 0, "still there: " + strings.Join(left, ", "), nil
	})
	if err != nil {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	return nil
}

// volumeObjects lists "kind/name" of the volume and its engines and replicas.
func (c *Cluster) volumeObjects(ctx context.Context, name string) ([]string, error) {
	var left []string
	if _, err := c.LH.LonghornV1beta2().Volumes(Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		left = append(left, "lhv/"+name)
	} else if !IsNotFound(err) {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: types.LonghornLabelVolume + "=" + name}
	es, err := c.LH.LonghornV1beta2().Engines(Namespace).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, e := range es.Items {
		left = append(left, "lhe/"+e.Name)
	}
	rs, err := c.LH.LonghornV1beta2().Replicas(Namespace).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, r := range rs.Items {
		left = append(left, "lhr/"+r.Name)
	}
	return left, nil
}
