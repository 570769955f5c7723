package upgrade

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
)

// Load reads the objects the steps migrate from namespace ns.
func Load(ctx context.Context, cs versioned.Interface, ns string) (*Objects, error) {
	c := cs.LonghornV1beta2()
	objs := &Objects{Settings: map[string]*longhorn.Setting{}}
	sl, err := c.Settings(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list settings: %w", err)
	}
	for i := range sl.Items {
		objs.Settings[sl.Items[i].Name] = &sl.Items[i]
	}
	vl, err := c.Volumes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	for i := range vl.Items {
		objs.Volumes = append(objs.Volumes, &vl.Items[i])
	}
	bl, err := c.Backups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list backups: %w", err)
	}
	for i := range bl.Items {
		objs.Backups = append(objs.Backups, &bl.Items[i])
	}
	bvl, err := c.BackupVolumes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list backup volumes: %w", err)
	}
	for i := range bvl.Items {
		objs.BackupVolumes = append(objs.BackupVolumes, &bvl.Items[i])
	}
	nl, err := c.Nodes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	for i := range nl.Items {
		objs.Nodes = append(objs.Nodes, &nl.Items[i])
	}
	return objs, nil
}

// Write stores every object of after that differs from its counterpart in
// before (after is a migrated DeepCopy of before, in the same order): labels,
// annotations and spec (a Setting's value) through Update, status through
// UpdateStatus. It returns "Kind/name" of each object written; an error
// (a conflict with a concurrent writer among them) stops it.
func Write(ctx context.Context, cs versioned.Interface, before, after *Objects) ([]string, error) {
	c := cs.LonghornV1beta2()
	var written []string
	for name, s := range after.Settings {
		old := before.Settings[name]
		if old != nil && old.Value == s.Value && metaEqual(old, s) {
			continue
		}
		if _, err := c.Settings(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return written, fmt.Errorf("update setting %s: %w", name, err)
		}
		written = append(written, "Setting/"+name)
	}
	steps := []func() error{
		func() error {
			return writeKind(ctx, &written, "Volume", func(ns string) updater[*longhorn.Volume] { return c.Volumes(ns) },
				before.Volumes, after.Volumes, func(x *longhorn.Volume) (any, any) { return x.Spec, x.Status })
		},
		func() error {
			return writeKind(ctx, &written, "Backup", func(ns string) updater[*longhorn.Backup] { return c.Backups(ns) },
				before.Backups, after.Backups, func(x *longhorn.Backup) (any, any) { return x.Spec, x.Status })
		},
		func() error {
			return writeKind(ctx, &written, "BackupVolume", func(ns string) updater[*longhorn.BackupVolume] { return c.BackupVolumes(ns) },
				before.BackupVolumes, after.BackupVolumes, func(x *longhorn.BackupVolume) (any, any) { return x.Spec, x.Status })
		},
		func() error {
			return writeKind(ctx, &written, "Node", func(ns string) updater[*longhorn.Node] { return c.Nodes(ns) },
				before.Nodes, after.Nodes, func(x *longhorn.Node) (any, any) { return x.Spec, x.Status })
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return written, err
		}
	}
	return written, nil
}

// updater is the part of a generated typed client Write uses.
type updater[T any] interface {
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// writeKind writes each object of after that differs from the one at the
// same index of before: Update when labels, annotations or spec differ,
// then UpdateStatus (with the resource version Update returned) when the
// status differs. parts gives an object's spec and status; client gives the
// typed client of a namespace. Written objects are appended to written as
// "kind/name".
func writeKind[T metav1.Object](ctx context.Context, written *[]string, kind string, client func(ns string) updater[T],
	before, after []T, parts func(T) (any, any)) error {
	for i, obj := range after {
		old := before[i]
		oSpec, oStatus := parts(old)
		spec, status := parts(obj)
		specChanged := !reflect.DeepEqual(oSpec, spec) || !metaEqual(old, obj)
		statusChanged := !reflect.DeepEqual(oStatus, status)
		if !specChanged && !statusChanged {
			continue
		}
		c := client(obj.GetNamespace())
		if specChanged {
			u, err := c.Update(ctx, obj, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("update %s %s: %w", kind, obj.GetName(), err)
			}
			obj.SetResourceVersion(u.GetResourceVersion())
		}
		if statusChanged {
			if _, err := c.UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update %s %s status: %w", kind, obj.GetName(), err)
			}
		}
		*written = append(*written, kind+"/"+obj.GetName())
	}
	return nil
}

// metaEqual compares the metadata the steps change: labels and annotations.
func metaEqual(a, b metav1.Object) bool {
	return reflect.DeepEqual(a.GetLabels(), b.GetLabels()) && reflect.DeepEqual(a.GetAnnotations(), b.GetAnnotations())
}
