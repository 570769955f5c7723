package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/types"
)

// systemManagedAnnotation records, on a pod the manager creates, a hash of
// the settings that shaped it (systemManaged), so a change of those settings
// is seen as an outdated pod.
const systemManagedAnnotation = "longhorn.io/system-managed-settings-hash"

// systemManaged are the settings Longhorn applies to the pods it creates
// (instance-manager pods here): priority-class, taint-toleration,
// system-managed-components-node-selector, registry-secret and
// system-managed-pods-image-pull-policy.
type systemManaged struct {
	PriorityClass  string
	Tolerations    []corev1.Toleration
	NodeSelector   map[string]string
	RegistrySecret string
	PullPolicy     corev1.PullPolicy
}

// pullPolicies maps system-managed-pods-image-pull-policy to the pod field.
var pullPolicies = map[string]corev1.PullPolicy{
	"if-not-present": corev1.PullIfNotPresent, "never": corev1.PullNever, "always": corev1.PullAlways,
}

// systemManagedFrom reads the settings through get (the setting's value or
// its default). Errors: get fails, or a value does not parse (the webhook
// keeps invalid values out, so this means a stale or hand-edited object);
// the error names the setting.
func systemManagedFrom(get func(types.SettingName) (string, error)) (systemManaged, error) {
	var s systemManaged
	vals := map[types.SettingName]string{}
	for _, n := range []types.SettingName{types.SettingNamePriorityClass, types.SettingNameTaintToleration,
		types.SettingNameSystemManagedComponentsNodeSelector, types.SettingNameRegistrySecret,
		types.SettingNameSystemManagedPodsImagePullPolicy} {
		v, err := get(n)
		if err != nil {
			return s, err
		}
		vals[n] = strings.TrimSpace(v)
	}
	var err error
	if s.Tolerations, err = types.ParseTolerations(vals[types.SettingNameTaintToleration]); err != nil {
		return s, fmt.Errorf("setting %s: %w", types.SettingNameTaintToleration, err)
	}
	if s.NodeSelector, err = types.ParseNodeSelector(vals[types.SettingNameSystemManagedComponentsNodeSelector]); err != nil {
		return s, fmt.Errorf("setting %s: %w", types.SettingNameSystemManagedComponentsNodeSelector, err)
	}
	pp, ok := pullPolicies[vals[types.SettingNameSystemManagedPodsImagePullPolicy]]
	if !ok {
		return s, fmt.Errorf("setting %s: %q is not if-not-present, never or always",
			types.SettingNameSystemManagedPodsImagePullPolicy, vals[types.SettingNameSystemManagedPodsImagePullPolicy])
	}
	s.PriorityClass, s.RegistrySecret, s.PullPolicy = vals[types.SettingNamePriorityClass], vals[types.SettingNameRegistrySecret], pp
	return s, nil
}

// apply sets the pod's priority class, tolerations (added to its own), node
// selector (merged; the pod's own keys win), pull secret and the pull policy
// of every container, and records the hash annotation.
func (s systemManaged) apply(pod *corev1.Pod) {
	spec := &pod.Spec
	spec.PriorityClassName = s.PriorityClass
	spec.Tolerations = append(spec.Tolerations, s.Tolerations...)
	if len(s.NodeSelector) > 0 {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		for k, v := range s.NodeSelector {
			if _, own := spec.NodeSelector[k]; !own {
				spec.NodeSelector[k] = v
			}
		}
	}
	if s.RegistrySecret != "" {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.RegistrySecret})
	}
	for i := range spec.Containers {
		spec.Containers[i].ImagePullPolicy = s.PullPolicy
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[systemManagedAnnotation] = s.hash()
}

// hash is a short digest of the settings (stable: JSON of the struct, maps
// sorted by encoding/json).
func (s systemManaged) hash() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// parseLogLevel maps the log-level setting (Longhorn's Panic, Fatal, Error,
// Warn, Info, Debug, Trace) to a logrus level.
func parseLogLevel(v string) (logrus.Level, error) {
	l, err := logrus.ParseLevel(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("setting %s: %w", types.SettingNameLogLevel, err)
	}
	return l, nil
}
