package nodeagent

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ErrConfig is wrapped by errors resolving a container's configuration
// (env, volumes): a missing ConfigMap/Secret key, an unsupported field.
var ErrConfig = errors.New("container config")

// objectSource reads the ConfigMaps and Secrets a pod refers to.
type objectSource interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
	Secret(namespace, name string) (*corev1.Secret, error)
}

// podContext is what the downward API needs besides the pod itself.
type podContext struct {
	PodIP    string
	Capacity corev1.ResourceList // node capacity: limits default to it
}

// containerEnv resolves a container's environment the way kubelet does:
// base (service variables), then envFrom, then env with $(VAR) expansion
// against what came before. Returns "NAME=value" strings sorted by name.
func containerEnv(pod *corev1.Pod, c *corev1.Container, src objectSource, pc podContext, base map[string]string) ([]string, error) {
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	for _, ef := range c.EnvFrom {
		data, err := envFromData(pod.Namespace, ef, src)
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			env[ef.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = expand(e.Value, env)
			continue
		}
		v, ok, err := envValueFrom(pod, c, e, src, pc)
		if err != nil {
			return nil, fmt.Errorf("%w: container %q env %q: %v", ErrConfig, c.Name, e.Name, err)
		}
		if ok {
			env[e.Name] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

func envFromData(ns string, ef corev1.EnvFromSource, src objectSource) (map[string]string, error) {
	switch {
	case ef.ConfigMapRef != nil:
		cm, err := src.ConfigMap(ns, ef.ConfigMapRef.Name)
		if err != nil {
			if ef.ConfigMapRef.Optional != nil && *ef.ConfigMapRef.Optional {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: envFrom configMap %q: %v", ErrConfig, ef.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case ef.SecretRef != nil:
		s, err := src.Secret(ns, ef.SecretRef.Name)
		if err != nil {
			if ef.SecretRef.Optional != nil && *ef.SecretRef.Optional {
				return nil, nil
			}
			return nil, fmt.Errorf("%w: envFrom secret %q: %v", ErrConfig, ef.SecretRef.Name, err)
		}
		m := map[string]string{}
		for k, v := range s.Data {
			m[k] = string(v)
		}
		return m, nil
	}
	return nil, nil
}

// envValueFrom resolves one valueFrom; ok=false means "optional and absent".
func envValueFrom(pod *corev1.Pod, c *corev1.Container, e corev1.EnvVar, src objectSource, pc podContext) (string, bool, error) {
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		v, err := fieldValue(pod, vf.FieldRef.FieldPath, pc)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := resourceValue(c, vf.ResourceFieldRef, pc)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		r := vf.ConfigMapKeyRef
		opt := r.Optional != nil && *r.Optional
		cm, err := src.ConfigMap(pod.Namespace, r.Name)
		if err != nil {
			return "", false, optionalErr(opt, fmt.Errorf("configMap %q: %v", r.Name, err))
		}
		v, ok := cm.Data[r.Key]
		if !ok {
			return "", false, optionalErr(opt, fmt.Errorf("configMap %q has no key %q", r.Name, r.Key))
		}
		return v, true, nil
	case vf.SecretKeyRef != nil:
		r := vf.SecretKeyRef
		opt := r.Optional != nil && *r.Optional
		s, err := src.Secret(pod.Namespace, r.Name)
		if err != nil {
			return "", false, optionalErr(opt, fmt.Errorf("secret %q: %v", r.Name, err))
		}
		v, ok := s.Data[r.Key]
		if !ok {
			return "", false, optionalErr(opt, fmt.Errorf("secret %q has no key %q", r.Name, r.Key))
		}
		return string(v), true, nil
	}
	return "", false, errors.New("valueFrom has no source")
}

func optionalErr(optional bool, err error) error {
	if optional {
		return nil
	}
	return err
}

// fieldValue returns a downward-API field of the pod. Supported paths:
// metadata.name, metadata.namespace, metadata.uid, metadata.labels,
// metadata.annotations (and ['key'] subscripts), spec.nodeName,
// spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP,
// status.podIPs (pod IP = node IP here).
func fieldValue(pod *corev1.Pod, path string, pc podContext) (string, error) {
	if base, key, ok := subscript(path); ok {
		switch base {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("%w: field %q does not take a subscript", ErrConfig, path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs":
		return pc.PodIP, nil
	}
	return "", fmt.Errorf("%w: unsupported fieldRef %q", ErrConfig, path)
}

// subscript splits "metadata.labels['k']" into base and key.
func subscript(path string) (string, string, bool) {
	i := strings.Index(path, "['")
	if i < 0 || !strings.HasSuffix(path, "']") {
		return "", "", false
	}
	return path[:i], path[i+2 : len(path)-2], true
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// resourceValue resolves a resourceFieldRef (limits.cpu, limits.memory,
// requests.cpu, requests.memory, limits/requests.ephemeral-storage); a
// missing limit defaults to node capacity. The value is divided by the
// divisor (default 1) and rounded up, as kubelet does.
func resourceValue(c *corev1.Container, r *corev1.ResourceFieldSelector, pc podContext) (string, error) {
	kind, name, ok := strings.Cut(r.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("%w: unsupported resourceFieldRef %q", ErrConfig, r.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		if kind == "requests" {
			q = resource.Quantity{}
		} else if q, ok = pc.Capacity[corev1.ResourceName(name)]; !ok {
			return "", fmt.Errorf("%w: no capacity for %q", ErrConfig, name)
		}
	}
	div := r.Divisor
	if div.IsZero() {
		div = resource.MustParse("1")
	}
	if name == "cpu" {
		v := math.Ceil(float64(q.MilliValue()) / float64(div.MilliValue()))
		return strconv.FormatInt(int64(v), 10), nil
	}
	v := math.Ceil(float64(q.Value()) / float64(div.Value()))
	return strconv.FormatInt(int64(v), 10), nil
}

// expand replaces $(NAME) with env[NAME] when NAME is defined; $$ yields a
// literal $; an undefined $(NAME) stays as written (kubelet's rules).
func expand(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envMap turns "K=V" strings back into a map (for command expansion).
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
