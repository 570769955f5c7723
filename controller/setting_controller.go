package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/meta"
	"github.com/longhorn-go/longhorn/types"
)

// The chart's default settings (Longhorn's kubernetes_configmap_controller):
// ConfigMap longhorn-default-setting, key default-setting.yaml, lines of
// "setting-name: value".
const (
	DefaultSettingConfigMapName = "longhorn-default-setting"
	DefaultSettingConfigMapKey  = "default-setting.yaml"
	// configMapRVAnnotation records which ConfigMap version last wrote a setting.
	configMapRVAnnotation = "longhorn.io/configmap-resource-version"
	// configMapKey is the workqueue key of the ConfigMap sync.
	configMapKey = "\x00configmap"
)

// SettingController creates every Setting object with its default, applies
// the chart's ConfigMap, keeps default-engine-image equal to the manager's
// --engine-image, and marks valid settings applied.
type SettingController struct {
	*env
	w *Worker
}

func newSettingController(e *env) (runner, error) {
	c := &SettingController{env: e}
	c.w = NewWorker("longhorn-setting", c.syncSetting)
	if err := addHandler(e.ds.SettingInformer(), onChange(c.w.EnqueueObject)); err != nil {
		return nil, err
	}
	if err := addHandler(e.nsFactory.Core().V1().ConfigMaps().Informer(), onChange(func(obj any) {
		if nameOf(obj) == DefaultSettingConfigMapName {
			c.w.Enqueue(configMapKey)
		}
	})); err != nil {
		return nil, err
	}
	// An instance manager of this node that runs no instance any more may be
	// one storage-network waits for (reconcileStorageNetwork): look again now
	// rather than at the next storageNetworkRecheck.
	if err := addHandler(e.ds.InstanceManagerInformer(), onChange(c.onInstanceManager)); err != nil {
		return nil, err
	}
	return c, nil
}

// onInstanceManager queues the storage-network setting when obj is an
// instance manager of this node that runs no instance.
func (c *SettingController) onInstanceManager(obj any) {
	if im, ok := obj.(*longhorn.InstanceManager); ok && imIdleOnNode(im, c.opts.NodeName) {
		c.w.Enqueue(c.key(string(types.SettingNameStorageNetwork)))
	}
}

// imIdleOnNode reports whether im is an instance manager of node that runs
// no engine or replica. Pure.
func imIdleOnNode(im *longhorn.InstanceManager, node string) bool {
	return im.Spec.NodeID == node && len(im.Status.InstanceEngines) == 0 && len(im.Status.InstanceReplicas) == 0
}

func (c *SettingController) run(ctx context.Context, workers int) error {
	c.w.Enqueue(configMapKey)
	return c.w.Run(ctx, workers)
}

func (c *SettingController) syncSetting(ctx context.Context, key string) (Result, error) {
	if key == configMapKey {
		return Done, c.applyDefaults(ctx)
	}
	sRO, err := c.ds.GetSettingRO(ctx, types.SettingName(splitKey(key)))
	if apierrors.IsNotFound(err) {
		return Done, nil
	}
	if err != nil {
		return Done, err
	}
	applied := types.ValidateSetting(sRO.Name, sRO.Value) == nil &&
		types.ValidateSettingSupported(types.SettingName(sRO.Name), sRO.Value) == nil
	if applied && sRO.Name == string(types.SettingNameLogLevel) {
		c.applyLogLevel(sRO.Value)
	}
	res := Done
	if applied && sRO.Name == string(types.SettingNameStorageNetwork) {
		if res, err = c.reconcileStorageNetwork(ctx, sRO); err != nil {
			return Done, err
		}
	}
	if sRO.Status.Applied == applied {
		return res, nil
	}
	s := sRO.DeepCopy()
	s.Status.Applied = applied
	_, err = c.ds.UpdateSettingStatus(ctx, s)
	if apierrors.IsConflict(err) {
		return Done, nil
	}
	return res, err
}

// applyLogLevel sets the manager's log level from the log-level setting.
func (c *SettingController) applyLogLevel(v string) {
	lvl, err := parseLogLevel(v)
	if err != nil || logrus.GetLevel() == lvl {
		return
	}
	logrus.SetLevel(lvl)
	logrus.WithField("level", lvl.String()).Info("Log level set from setting log-level")
}

// ParseDefaultSettings reads the ConfigMap's default-setting.yaml: a YAML
// map of setting name to value (scalars, or maps rendered as JSON). Unknown
// names, invalid values and values a not-supported setting refuses
// (types.ValidateSettingSupported) are returned in rejected with the
// reason, as Longhorn skips them with a warning.
func ParseDefaultSettings(doc string) (values map[types.SettingName]string, rejected map[string]string, err error) {
	raw := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &raw); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", DefaultSettingConfigMapKey, err)
	}
	values, rejected = map[types.SettingName]string{}, map[string]string{}
	for name, v := range raw {
		if v == nil {
			continue
		}
		s := fmt.Sprint(v)
		if m, ok := v.(map[string]any); ok {
			b, _ := yaml.Marshal(m)
			j, jerr := yaml.YAMLToJSON(b)
			if jerr != nil {
				rejected[name] = jerr.Error()
				continue
			}
			s = string(j)
		}
		s = strings.TrimSpace(s)
		if err := types.ValidateSetting(name, s); err != nil {
			rejected[name] = err.Error()
			continue
		}
		if err := types.ValidateSettingSupported(types.SettingName(name), s); err != nil {
			rejected[name] = err.Error()
			continue
		}
		values[types.SettingName(name)] = s
	}
	return values, rejected, nil
}

// applyDefaults creates every missing Setting with the ConfigMap's value or
// the definition default, overwrites settings whose ConfigMap value changed
// (the ConfigMap wins over edits when it changes), and pins
// default-engine-image to --engine-image.
func (c *SettingController) applyDefaults(ctx context.Context) error {
	values, rv := map[types.SettingName]string{}, ""
	cm, err := c.configMaps.ConfigMaps(c.opts.Namespace).Get(DefaultSettingConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	default:
		var rejected map[string]string
		values, rejected, err = ParseDefaultSettings(cm.Data[DefaultSettingConfigMapKey])
		if err != nil {
			c.recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidDefaultSettings", "%v", err)
			return nil // terminal until the ConfigMap changes
		}
		for name, why := range rejected {
			c.recorder.Eventf(cm, corev1.EventTypeWarning, "InvalidDefaultSetting", "Skipping %s: %s", name, why)
		}
		rv = cm.ResourceVersion
	}
	pins := c.pinnedValues()
	for name, v := range pins {
		values[name] = v
	}
	names := types.SettingNameList()
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	// One refused setting (the webhook refuses storage-network while volumes
	// are attached) must not hold back the others: apply every one, report
	// each refusal on the ConfigMap, and retry the refused ones with backoff.
	var errs []error
	for _, name := range names {
		_, pinned := pins[name]
		if err := c.applyOne(ctx, name, values, rv, pinned); err != nil {
			errs = append(errs, err)
			if cm != nil {
				c.recorder.Eventf(cm, corev1.EventTypeWarning, "FailedApplyingDefaultSetting", "%v", err)
			}
		}
	}
	return errors.Join(errs...)
}

// pinnedValues are the settings the manager owns, whatever the ConfigMap or
// a user says: default-engine-image is its --engine-image (when given) and
// current-longhorn-version the version it was built as (meta.Version).
func (c *SettingController) pinnedValues() map[types.SettingName]string {
	pins := map[types.SettingName]string{types.SettingNameCurrentLonghornVersion: meta.Version}
	if c.opts.EngineImage != "" {
		pins[types.SettingNameDefaultEngineImage] = c.opts.EngineImage
	}
	return pins
}

// applyOne creates or updates setting name from values; a pinned setting
// is rewritten whenever it differs.
func (c *SettingController) applyOne(ctx context.Context, name types.SettingName, values map[types.SettingName]string, rv string, pinned bool) error {
	def, _ := types.GetSettingDefinition(name)
	want, fromCM := values[name]
	cur, err := c.ds.GetSettingRO(ctx, name)
	if apierrors.IsNotFound(err) {
		if !fromCM {
			want = def.Default
		}
		s := &longhorn.Setting{ObjectMeta: metav1.ObjectMeta{Name: string(name), Namespace: c.opts.Namespace}, Value: want}
		if fromCM && rv != "" {
			s.Annotations = map[string]string{configMapRVAnnotation: rv}
		}
		if _, err := c.ds.CreateSetting(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create setting %s: %w", name, err)
		}
		return nil
	}
	if err != nil || !fromCM || cur.Value == want {
		return err
	}
	if skipReconcileRequested(cur) && !pinned {
		return nil // left alone for a repair by hand
	}
	if !pinned && cur.Annotations[configMapRVAnnotation] == rv {
		return nil // already applied from this ConfigMap version; later edits stay
	}
	next := cur.DeepCopy()
	next.Value = want
	if rv != "" && !pinned {
		if next.Annotations == nil {
			next.Annotations = map[string]string{}
		}
		next.Annotations[configMapRVAnnotation] = rv
	}
	if _, err := c.ds.UpdateSetting(ctx, next); err != nil {
		return fmt.Errorf("update setting %s: %w", name, err)
	}
	return nil
}
