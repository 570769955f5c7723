// Package uninstall removes the product from a cluster, as Longhorn's
// longhorn-uninstall Job does: only when Setting deleting-confirmation-flag is
// "true", it deletes the volumes (the managers remove their engines, replicas
// and data), stops the managers, deletes the admission webhooks, every
// longhorn.io object (removing the finalizers no manager is left to remove)
// and the longhorn.io CRDs, in that order.
package uninstall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/k8s/pkg/client/clientset/versioned"
	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

// Group is the API group whose CRDs and objects are the product's.
const Group = "longhorn.io"

// ManagerDaemonSet is the managers' DaemonSet, stopped before the objects
// they would recreate (settings, nodes, instance managers) are removed.
const ManagerDaemonSet = "longhorn-manager"

// ErrNotConfirmed is returned (wrapped) when deleting-confirmation-flag is
// not "true": nothing was removed.
var ErrNotConfirmed = errors.New("uninstall not confirmed")

// Clients are the API clients Run uses.
type Clients struct {
	Kube    kubernetes.Interface
	LH      versioned.Interface
	Ext     apiext.Interface
	Dynamic dynamic.Interface
}

// Options are the namespace and how long deleted objects get to go on their
// own (the managers cleaning up) before their finalizers are removed.
type Options struct {
	Namespace string
	Grace     time.Duration
	Log       func(format string, args ...any)
}

// Run uninstalls the product from opts.Namespace; see the package comment.
// It returns an error wrapping ErrNotConfirmed, having removed nothing, when
// the confirmation flag is not set.
func Run(ctx context.Context, cl Clients, opts Options) error {
	if err := CheckConfirmed(ctx, cl.LH, opts.Namespace); err != nil {
		return err
	}
	crds, err := productCRDs(ctx, cl.Ext)
	if err != nil {
		return err
	}
	u := &run{cl: cl, opts: opts, crds: crds}
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"volumes, engines and replicas", u.deleteVolumes},
		{"managers", u.stopManagers},
		{"admission webhooks", u.deleteWebhooks},
		{"every " + Group + " object", u.deleteObjects},
		{Group + " CRDs", u.deleteCRDs},
	}
	for _, s := range steps {
		u.log("uninstall: removing %s", s.what)
		if err := s.do(ctx); err != nil {
			return fmt.Errorf("uninstall: remove %s: %w", s.what, err)
		}
	}
	u.log("uninstall: done, nothing of %s is left", Group)
	return nil
}

// CheckConfirmed refuses unless Setting deleting-confirmation-flag in ns is
// "true" (Longhorn's guard against an accidental uninstall).
func CheckConfirmed(ctx context.Context, cs versioned.Interface, ns string) error {
	name := string(types.SettingNameDeletingConfirmationFlag)
	s, err := cs.LonghornV1beta2().Settings(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: Setting %s/%s does not exist; nothing removed", ErrNotConfirmed, ns, name)
	case err != nil:
		return fmt.Errorf("uninstall: read Setting %s: %w", name, err)
	case s.Value != "true":
		return fmt.Errorf("%w: Setting %s is %q; set it to \"true\" to confirm removing every volume and its data; nothing removed",
			ErrNotConfirmed, name, s.Value)
	}
	return nil
}

// productCRDs lists the CRDs of Group.
func productCRDs(ctx context.Context, ext apiext.Interface) ([]apiextv1.CustomResourceDefinition, error) {
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list CRDs: %w", err)
	}
	var out []apiextv1.CustomResourceDefinition
	for _, c := range list.Items {
		if c.Spec.Group == Group {
			out = append(out, c)
		}
	}
	return out, nil
}

// run is one uninstall.
type run struct {
	cl   Clients
	opts Options
	crds []apiextv1.CustomResourceDefinition
}

func (u *run) log(format string, args ...any) {
	if u.opts.Log != nil {
		u.opts.Log(format, args...)
	}
}

// first kinds removed, in order, while the managers still run: a volume's
// deletion makes its manager stop and delete its engine and replicas and the
// replicas' data.
var first = []string{"volumes", "engines", "replicas"}

// last kinds removed once nothing else is left (the others go in between,
// by name).
var last = []string{"engineimages", "nodes", "instancemanagers", "settings"}

// resources returns the GVRs of the product CRDs in removal order.
func (u *run) resources() []schema.GroupVersionResource {
	rank := func(plural string) int {
		if i := slices.Index(first, plural); i >= 0 {
			return i
		}
		if i := slices.Index(last, plural); i >= 0 {
			return 100 + i
		}
		return 50
	}
	crds := slices.Clone(u.crds)
	slices.SortStableFunc(crds, func(a, b apiextv1.CustomResourceDefinition) int {
		if d := rank(a.Spec.Names.Plural) - rank(b.Spec.Names.Plural); d != 0 {
			return d
		}
		return cmp.Compare(a.Spec.Names.Plural, b.Spec.Names.Plural)
	})
	var out []schema.GroupVersionResource
	for _, c := range crds {
		out = append(out, schema.GroupVersionResource{Group: Group, Version: storageVersion(c), Resource: c.Spec.Names.Plural})
	}
	return out
}

// storageVersion is the CRD's stored version (its first served one if none).
func storageVersion(c apiextv1.CustomResourceDefinition) string {
	for _, v := range c.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return c.Spec.Versions[0].Name
}

// deleteVolumes deletes the volumes and waits (opts.Grace) for the managers
// to remove them with their engines and replicas; what is left then loses
// its finalizers.
func (u *run) deleteVolumes(ctx context.Context) error {
	var gvrs []schema.GroupVersionResource
	for _, g := range u.resources() {
		if slices.Contains(first, g.Resource) {
			gvrs = append(gvrs, g)
		}
	}
	return u.deleteAndWait(ctx, gvrs, u.opts.Grace)
}

// deleteObjects deletes every remaining product object; no manager runs any
// more, so finalizers are removed at once.
func (u *run) deleteObjects(ctx context.Context) error {
	return u.deleteAndWait(ctx, u.resources(), 0)
}

// deleteAndWait deletes every object of gvrs in the namespace, kind by
// kind, waits up to grace for each kind to be gone, then removes the
// finalizers of what is left and waits until it is gone.
func (u *run) deleteAndWait(ctx context.Context, gvrs []schema.GroupVersionResource, grace time.Duration) error {
	for _, gvr := range gvrs {
		c := u.cl.Dynamic.Resource(gvr).Namespace(u.opts.Namespace)
		if err := c.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", gvr.Resource, err)
		}
		if grace > 0 && u.waitEmpty(ctx, gvr, grace) == nil {
			continue
		}
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list %s: %w", gvr.Resource, err)
		}
		for _, obj := range list.Items {
			if len(obj.GetFinalizers()) == 0 {
				continue
			}
			_, err := c.Patch(ctx, obj.GetName(), k8stypes.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("remove the finalizers of %s %s: %w", gvr.Resource, obj.GetName(), err)
			}
			u.log("uninstall: removed the finalizers of %s %s", gvr.Resource, obj.GetName())
		}
		if err := u.waitEmpty(ctx, gvr, time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// waitEmpty polls until no object of gvr is left in the namespace.
func (u *run) waitEmpty(ctx context.Context, gvr schema.GroupVersionResource, timeout time.Duration) error {
	var left int
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := u.cl.Dynamic.Resource(gvr).Namespace(u.opts.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		left = len(list.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%d %s left after %v: %w", left, gvr.Resource, timeout, err)
	}
	return nil
}

// stopManagers deletes the managers' DaemonSet and waits (opts.Grace) for
// their pods to go, so nothing recreates the objects removed next; the
// instance-manager pods they made are deleted too.
func (u *run) stopManagers(ctx context.Context) error {
	ns := u.opts.Namespace
	err := u.cl.Kube.AppsV1().DaemonSets(ns).Delete(ctx, ManagerDaemonSet, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DaemonSet %s: %w", ManagerDaemonSet, err)
	}
	sel := "app=" + ManagerDaemonSet
	err = wait.PollUntilContextTimeout(ctx, time.Second, u.opts.Grace, true, func(ctx context.Context) (bool, error) {
		pods, err := u.cl.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		return fmt.Errorf("manager pods (%s) still running after %v: %w", sel, u.opts.Grace, err)
	}
	imSel := types.LonghornLabelComponent + "=" + types.LonghornComponentInstanceManager
	err = u.cl.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: imSel})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the instance-manager pods: %w", err)
	}
	return nil
}

// deleteWebhooks deletes the admission webhook configurations, which would
// refuse every longhorn.io write once no manager serves them.
func (u *run) deleteWebhooks(ctx context.Context) error {
	ar := u.cl.Kube.AdmissionregistrationV1()
	if err := ar.ValidatingWebhookConfigurations().Delete(ctx, webhook.ValidatorConfigName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := ar.MutatingWebhookConfigurations().Delete(ctx, webhook.MutatorConfigName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteCRDs deletes the product CRDs and waits until they are gone.
func (u *run) deleteCRDs(ctx context.Context) error {
	crds := u.cl.Ext.ApiextensionsV1().CustomResourceDefinitions()
	for _, c := range u.crds {
		if err := crds.Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete CRD %s: %w", c.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := productCRDs(ctx, u.cl.Ext)
		return err == nil && len(left) == 0, err
	})
}
