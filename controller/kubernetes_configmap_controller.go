package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// The chart's other two ConfigMaps (Longhorn's
// kubernetes_configmap_controller.go): longhorn-storageclass holds the
// default StorageClass as YAML, longhorn-default-resource the default
// backup target.
const (
	StorageClassConfigMapName    = "longhorn-storageclass"
	StorageClassConfigMapKey     = "storageclass.yaml"
	DefaultResourceConfigMapName = "longhorn-default-resource"
	DefaultResourceConfigMapKey  = "default-resource.yaml"
	// LastAppliedConfigMapAnnotation on the StorageClass holds the
	// ConfigMap text it was made from; a different text means the class is
	// deleted and created again (StorageClass parameters are immutable).
	LastAppliedConfigMapAnnotation = "longhorn.io/last-applied-configmap"
	// DefaultBackupTargetName is the BackupTarget longhorn-default-resource
	// configures.
	DefaultBackupTargetName = types.DefaultBackupTargetName
	// DefaultBackupTargetPollInterval is the default target's poll interval
	// when the ConfigMap does not set one (Longhorn's 300 s).
	DefaultBackupTargetPollInterval = 300 * time.Second
)

// Keys of default-resource.yaml (chart defaultBackupStore.*).
const (
	defaultResourceBackupTarget       = "backup-target"
	defaultResourceCredentialSecret   = "backup-target-credential-secret"
	defaultResourceBackupPollInterval = "backupstore-poll-interval"
)

// ErrInvalidConfigMap is wrapped by every parse error of the two
// ConfigMaps' documents.
var ErrInvalidConfigMap = errors.New("invalid ConfigMap")

// KubernetesConfigMapController creates the default StorageClass from
// longhorn-storageclass and the default BackupTarget from
// longhorn-default-resource. Every manager runs it; writes are idempotent
// and a StorageClass is only deleted by UID, so two managers cannot remove
// each other's fresh copy.
type KubernetesConfigMapController struct {
	*env
	w *Worker
}

func newKubernetesConfigMapController(e *env) (runner, error) {
	c := &KubernetesConfigMapController{env: e}
	c.w = NewWorker("longhorn-kubernetes-configmap", c.syncConfigMap)
	if err := addHandler(e.nsFactory.Core().V1().ConfigMaps().Informer(), onChange(func(obj any) {
		if n := nameOf(obj); n == StorageClassConfigMapName || n == DefaultResourceConfigMapName {
			c.w.Enqueue(e.key(n))
		}
	})); err != nil {
		return nil, err
	}
	// A StorageClass deleted or edited by hand is put back.
	if err := addHandler(e.kubeFactory.Storage().V1().StorageClasses().Informer(), onChange(func(any) {
		c.w.Enqueue(e.key(StorageClassConfigMapName))
	})); err != nil {
		return nil, err
	}
	if err := addHandler(e.ds.BackupTargetInformer(), onChange(func(obj any) {
		if nameOf(obj) == DefaultBackupTargetName {
			c.w.Enqueue(e.key(DefaultResourceConfigMapName))
		}
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *KubernetesConfigMapController) run(ctx context.Context, workers int) error {
	c.w.Enqueue(c.key(StorageClassConfigMapName))
	c.w.Enqueue(c.key(DefaultResourceConfigMapName))
	return c.w.Run(ctx, workers)
}

func (c *KubernetesConfigMapController) syncConfigMap(ctx context.Context, key string) (Result, error) {
	name := splitKey(key)
	cm, err := c.configMaps.ConfigMaps(c.opts.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	switch name {
	case StorageClassConfigMapName:
		err = c.reconcileStorageClass(ctx, cm)
	case DefaultResourceConfigMapName:
		err = c.reconcileDefaultBackupTarget(ctx, cm)
	}
	if errors.Is(err, ErrInvalidConfigMap) {
		c.recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidConfigMap", "%v", err)
		return Done, Terminal(err)
	}
	return Done, err
}

// ParseStorageClassConfigMap decodes storageclass.yaml into the StorageClass
// to create, carrying the document in LastAppliedConfigMapAnnotation. The
// document must be a StorageClass with metadata.name and provisioner set.
func ParseStorageClassConfigMap(doc string) (*storagev1.StorageClass, error) {
	if strings.TrimSpace(doc) == "" {
		return nil, fmt.Errorf("%w: %s: %s is empty", ErrInvalidConfigMap, StorageClassConfigMapName, StorageClassConfigMapKey)
	}
	sc := &storagev1.StorageClass{}
	if err := yaml.UnmarshalStrict([]byte(doc), sc); err != nil {
		return nil, fmt.Errorf("%w: %s: %s: %v", ErrInvalidConfigMap, StorageClassConfigMapName, StorageClassConfigMapKey, err)
	}
	switch {
	case sc.Kind != "" && sc.Kind != "StorageClass":
		return nil, fmt.Errorf("%w: %s: kind is %q, want StorageClass", ErrInvalidConfigMap, StorageClassConfigMapName, sc.Kind)
	case sc.Name == "":
		return nil, fmt.Errorf("%w: %s: metadata.name must be set", ErrInvalidConfigMap, StorageClassConfigMapName)
	case sc.Provisioner == "":
		return nil, fmt.Errorf("%w: %s: provisioner must be set", ErrInvalidConfigMap, StorageClassConfigMapName)
	}
	if sc.Annotations == nil {
		sc.Annotations = map[string]string{}
	}
	sc.Annotations[LastAppliedConfigMapAnnotation] = doc
	sc.ResourceVersion, sc.UID = "", ""
	return sc, nil
}

// storageClassStep is what reconcileStorageClass does next.
type storageClassStep int

const (
	scKeep     storageClassStep = iota // the class matches the ConfigMap
	scCreate                           // no class of that name
	scRecreate                         // the class was made from another text (or by hand)
)

// decideStorageClass compares the class in the cluster (nil when missing)
// with the ConfigMap document.
func decideStorageClass(have *storagev1.StorageClass, doc string) storageClassStep {
	switch {
	case have == nil:
		return scCreate
	case have.DeletionTimestamp != nil:
		return scKeep // wait for it to go; its delete event requeues
	case have.Annotations[LastAppliedConfigMapAnnotation] != doc:
		return scRecreate
	}
	return scKeep
}

func (c *KubernetesConfigMapController) reconcileStorageClass(ctx context.Context, cm *corev1.ConfigMap) error {
	doc := cm.Data[StorageClassConfigMapKey]
	want, err := ParseStorageClassConfigMap(doc)
	if err != nil {
		return err
	}
	have, err := c.storageClasses.Get(want.Name)
	if apierrors.IsNotFound(err) {
		have, err = nil, nil
	}
	if err != nil {
		return err
	}
	scs := c.kube.StorageV1().StorageClasses()
	switch decideStorageClass(have, doc) {
	case scKeep:
		return nil
	case scRecreate:
		uid := have.UID
		err := scs.Delete(ctx, have.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete StorageClass %s: %w", have.Name, err)
		}
		c.recorder.Eventf(cm, corev1.EventTypeNormal, "StorageClassChanged", "Recreating StorageClass %s from %s", have.Name, cm.Name)
	}
	_, err = scs.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The old class is still going away, or another manager was
		// first: the StorageClass's next event brings us back.
		return nil
	}
	if err != nil {
		return fmt.Errorf("create StorageClass %s: %w", want.Name, err)
	}
	LoggerFrom(ctx).WithField("storageClass", want.Name).Info("Created StorageClass from ConfigMap")
	return nil
}

// DefaultBackupTarget is the content of default-resource.yaml; nil fields
// were not set and leave the BackupTarget's value alone.
type DefaultBackupTarget struct {
	URL              *string
	CredentialSecret *string
	PollInterval     *time.Duration
}

// ParseDefaultResource decodes default-resource.yaml: a YAML map with the
// keys backup-target (URL), backup-target-credential-secret (Secret name)
// and backupstore-poll-interval (whole seconds, 0 disables polling). Other
// keys and a negative or non-integer interval are errors naming the key.
func ParseDefaultResource(doc string) (DefaultBackupTarget, error) {
	var out DefaultBackupTarget
	raw := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		return out, fmt.Errorf("%w: %s: %s: %v", ErrInvalidConfigMap, DefaultResourceConfigMapName, DefaultResourceConfigMapKey, err)
	}
	for k, v := range raw {
		if v == nil {
			continue
		}
		s := strings.TrimSpace(fmt.Sprint(v))
		switch k {
		case defaultResourceBackupTarget:
			out.URL = &s
		case defaultResourceCredentialSecret:
			out.CredentialSecret = &s
		case defaultResourceBackupPollInterval:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 || n > int64(time.Duration(1<<62)/time.Second) {
				return out, fmt.Errorf("%w: %s: %s must be a whole number of seconds >= 0, got %q",
					ErrInvalidConfigMap, DefaultResourceConfigMapName, k, s)
			}
			d := time.Duration(n) * time.Second
			out.PollInterval = &d
		default:
			return out, fmt.Errorf("%w: %s: unknown key %q (known: %s, %s, %s)", ErrInvalidConfigMap, DefaultResourceConfigMapName,
				k, defaultResourceBackupTarget, defaultResourceCredentialSecret, defaultResourceBackupPollInterval)
		}
	}
	return out, nil
}

// applyTo sets the given fields on a backup target spec.
func (d DefaultBackupTarget) applyTo(spec *longhorn.BackupTargetSpec) {
	if d.URL != nil {
		spec.BackupTargetURL = *d.URL
	}
	if d.CredentialSecret != nil {
		spec.CredentialSecret = *d.CredentialSecret
	}
	if d.PollInterval != nil {
		spec.PollInterval = metav1.Duration{Duration: *d.PollInterval}
	}
}

// reconcileDefaultBackupTarget creates BackupTarget "default" from the
// ConfigMap, and writes the ConfigMap's values into an existing one when the
// ConfigMap changed since they were last applied (as with settings, the
// ConfigMap wins only when it changes).
func (c *KubernetesConfigMapController) reconcileDefaultBackupTarget(ctx context.Context, cm *corev1.ConfigMap) error {
	d, err := ParseDefaultResource(cm.Data[DefaultResourceConfigMapKey])
	if err != nil {
		return err
	}
	cur, err := c.ds.GetBackupTargetRO(ctx, DefaultBackupTargetName)
	if apierrors.IsNotFound(err) {
		bt := &longhorn.BackupTarget{
			ObjectMeta: metav1.ObjectMeta{Name: DefaultBackupTargetName, Namespace: c.opts.Namespace,
				Annotations: map[string]string{configMapRVAnnotation: cm.ResourceVersion}},
			Spec: longhorn.BackupTargetSpec{PollInterval: metav1.Duration{Duration: DefaultBackupTargetPollInterval}},
		}
		d.applyTo(&bt.Spec)
		if _, err := c.ds.CreateBackupTarget(ctx, bt); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create BackupTarget %s: %w", DefaultBackupTargetName, err)
		}
		return nil
	}
	if err != nil || cur.Annotations[configMapRVAnnotation] == cm.ResourceVersion {
		return err
	}
	next := cur.DeepCopy()
	d.applyTo(&next.Spec)
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[configMapRVAnnotation] = cm.ResourceVersion
	if _, err := c.ds.UpdateBackupTarget(ctx, next); err != nil {
		return fmt.Errorf("update BackupTarget %s: %w", DefaultBackupTargetName, err)
	}
	return nil
}
