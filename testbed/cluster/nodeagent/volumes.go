package nodeagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// Mount is one bind mount pod-exec makes in a container's mount namespace.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
	// Bidirectional keeps the target's mount shared with the node, so
	// mounts made under it by the container are seen by the node and other
	// pods (mountPropagation: Bidirectional). Only for source == target.
	Bidirectional bool `json:"bidirectional,omitempty"`
}

// tokenSource issues service-account tokens bound to a pod.
type tokenSource interface {
	Token(ctx context.Context, pod *corev1.Pod, sa string, p *corev1.ServiceAccountTokenProjection) (string, error)
}

// volumeEnv is what preparing volumes needs.
type volumeEnv struct {
	objects objectSource
	tokens  tokenSource
	pc      podContext
}

// prepareVolumes materializes the pod's volumes under dir/volumes/<name>
// (hostPath volumes stay where they are) and returns volume name -> path on
// the node. Unsupported volume types are an error naming the volume.
func prepareVolumes(ctx context.Context, pod *corev1.Pod, dir string, ve volumeEnv) (map[string]string, error) {
	paths := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		p, err := prepareVolume(ctx, pod, v, filepath.Join(dir, "volumes", v.Name), ve)
		if err != nil {
			return nil, fmt.Errorf("%w: volume %q: %v", ErrConfig, v.Name, err)
		}
		paths[v.Name] = p
	}
	return paths, nil
}

func prepareVolume(ctx context.Context, pod *corev1.Pod, v corev1.Volume, dir string, ve volumeEnv) (string, error) {
	src := v.VolumeSource
	switch {
	case src.HostPath != nil:
		return dir, prepareHostPath(src.HostPath)
	case src.EmptyDir != nil:
		return dir, os.MkdirAll(dir, 0o777)
	case src.ConfigMap != nil:
		files, err := configMapFiles(pod.Namespace, src.ConfigMap.LocalObjectReference.Name, src.ConfigMap.Items, src.ConfigMap.Optional, ve.objects)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, files, src.ConfigMap.DefaultMode)
	case src.Secret != nil:
		files, err := secretFiles(pod.Namespace, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional, ve.objects)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, files, src.Secret.DefaultMode)
	case src.DownwardAPI != nil:
		files, err := downwardFiles(pod, src.DownwardAPI.Items, ve.pc)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, files, src.DownwardAPI.DefaultMode)
	case src.Projected != nil:
		files, err := projectedFiles(ctx, pod, src.Projected, ve)
		if err != nil {
			return "", err
		}
		return dir, writeFiles(dir, files, src.Projected.DefaultMode)
	}
	return "", fmt.Errorf("unsupported volume type (supported: hostPath, emptyDir, configMap, secret, downwardAPI, projected)")
}

// hostPathOf returns the node path of a hostPath volume.
func hostPathOf(pod *corev1.Pod, name string) (string, bool) {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name && v.HostPath != nil {
			return filepath.Clean(v.HostPath.Path), true
		}
	}
	return "", false
}

func prepareHostPath(hp *corev1.HostPathVolumeSource) error {
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	st, err := os.Stat(hp.Path)
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		return os.MkdirAll(hp.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		if err == nil {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	case corev1.HostPathUnset:
		return nil
	}
	if err != nil {
		return fmt.Errorf("hostPath %s (type %s): %v", hp.Path, t, err)
	}
	want := map[corev1.HostPathType]func(os.FileMode) bool{
		corev1.HostPathDirectory:         func(m os.FileMode) bool { return m.IsDir() },
		corev1.HostPathFile:              func(m os.FileMode) bool { return m.IsRegular() },
		corev1.HostPathSocket:            func(m os.FileMode) bool { return m&os.ModeSocket != 0 },
		corev1.HostPathCharDev:           func(m os.FileMode) bool { return m&os.ModeCharDevice != 0 },
		corev1.HostPathBlockDev:          func(m os.FileMode) bool { return m&os.ModeDevice != 0 && m&os.ModeCharDevice == 0 },
		corev1.HostPathDirectoryOrCreate: func(os.FileMode) bool { return true },
	}
	if ok, known := want[t]; known && !ok(st.Mode()) {
		return fmt.Errorf("hostPath %s is not of type %s", hp.Path, t)
	}
	return nil
}

// file is one file of a configMap/secret/downwardAPI/projected volume.
type file struct {
	path string // relative, validated
	data []byte
	mode *int32
}

func keyFiles(data map[string][]byte, items []corev1.KeyToPath, what string) ([]file, error) {
	var files []file
	if len(items) == 0 {
		for k, v := range data {
			files = append(files, file{path: k, data: v})
		}
		return files, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		files = append(files, file{path: it.Path, data: v, mode: it.Mode})
	}
	return files, nil
}

func configMapFiles(ns, name string, items []corev1.KeyToPath, optional *bool, src objectSource) ([]file, error) {
	cm, err := src.ConfigMap(ns, name)
	if err != nil {
		if optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("configMap %q: %v", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, "configMap "+name)
}

func secretFiles(ns, name string, items []corev1.KeyToPath, optional *bool, src objectSource) ([]file, error) {
	s, err := src.Secret(ns, name)
	if err != nil {
		if optional != nil && *optional {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %q: %v", name, err)
	}
	return keyFiles(s.Data, items, "secret "+name)
}

func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, pc podContext) ([]file, error) {
	var files []file
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldValue(pod, it.FieldRef.FieldPath, pc)
		case it.ResourceFieldRef != nil:
			c := containerByName(pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("downwardAPI %q: no container %q", it.Path, it.ResourceFieldRef.ContainerName)
			}
			v, err = resourceValue(c, it.ResourceFieldRef, pc)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, file{path: it.Path, data: []byte(v), mode: it.Mode})
	}
	return files, nil
}

func projectedFiles(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, ve volumeEnv) ([]file, error) {
	var files []file
	for _, s := range p.Sources {
		var fs []file
		var err error
		switch {
		case s.ConfigMap != nil:
			fs, err = configMapFiles(pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, ve.objects)
		case s.Secret != nil:
			fs, err = secretFiles(pod.Namespace, s.Secret.Name, s.Secret.Items, s.Secret.Optional, ve.objects)
		case s.DownwardAPI != nil:
			fs, err = downwardFiles(pod, s.DownwardAPI.Items, ve.pc)
		case s.ServiceAccountToken != nil:
			var tok string
			tok, err = ve.tokens.Token(ctx, pod, pod.Spec.ServiceAccountName, s.ServiceAccountToken)
			fs = []file{{path: s.ServiceAccountToken.Path, data: []byte(tok)}}
		default:
			err = fmt.Errorf("unsupported projected source (supported: configMap, secret, downwardAPI, serviceAccountToken)")
		}
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

// writeFiles writes files under dir (created fresh). Paths must be local
// (no "..", not absolute).
func writeFiles(dir string, files []file, defaultMode *int32) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if !filepath.IsLocal(f.path) {
			return fmt.Errorf("file path %q escapes the volume", f.path)
		}
		mode := os.FileMode(0o644)
		if defaultMode != nil {
			mode = os.FileMode(*defaultMode) & os.ModePerm
		}
		if f.mode != nil {
			mode = os.FileMode(*f.mode) & os.ModePerm
		}
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, mode); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	return nil
}

// containerMounts turns a container's volumeMounts into bind mounts, given
// the node paths of the pod's volumes. Mounts whose source is their target
// (hostPath /dev at /dev) need no bind and are marked Bidirectional when
// asked, so they stay shared with the node.
func containerMounts(pod *corev1.Pod, c *corev1.Container, volPaths map[string]string) ([]Mount, error) {
	var ms []Mount
	for _, vm := range c.VolumeMounts {
		src, ok := volPaths[vm.Name]
		if hp, isHost := hostPathOf(pod, vm.Name); isHost {
			src, ok = hp, true
		}
		if !ok {
			return nil, fmt.Errorf("%w: container %q mounts unknown volume %q", ErrConfig, c.Name, vm.Name)
		}
		if vm.SubPath != "" {
			if !filepath.IsLocal(vm.SubPath) {
				return nil, fmt.Errorf("%w: container %q: subPath %q escapes the volume", ErrConfig, c.Name, vm.SubPath)
			}
			src = filepath.Join(src, vm.SubPath)
		}
		if !filepath.IsAbs(vm.MountPath) {
			return nil, fmt.Errorf("%w: container %q: mountPath %q is not absolute", ErrConfig, c.Name, vm.MountPath)
		}
		m := Mount{Source: src, Target: filepath.Clean(vm.MountPath), ReadOnly: vm.ReadOnly}
		m.Bidirectional = m.Source == m.Target && vm.MountPropagation != nil && *vm.MountPropagation == corev1.MountPropagationBidirectional
		ms = append(ms, m)
	}
	return ms, nil
}

func containerByName(pod *corev1.Pod, name string) *corev1.Container {
	if name == "" && len(pod.Spec.Containers) > 0 {
		return &pod.Spec.Containers[0]
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// apiTokens issues bound service-account tokens with the TokenRequest API.
type apiTokens struct {
	create func(ctx context.Context, ns, sa string, tr *authv1.TokenRequest) (*authv1.TokenRequest, error)
}

// Token requests a token for sa bound to pod, with the projection's
// audience and expiration (default 3607 s, which the apiserver extends for
// kube-apiserver audiences, as for kubelet).
func (a apiTokens) Token(ctx context.Context, pod *corev1.Pod, sa string, p *corev1.ServiceAccountTokenProjection) (string, error) {
	if sa == "" {
		sa = "default"
	}
	exp := int64(3607)
	if p.ExpirationSeconds != nil {
		exp = *p.ExpirationSeconds
	}
	tr := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		tr.Spec.Audiences = []string{p.Audience}
	}
	out, err := a.create(ctx, pod.Namespace, sa, tr)
	if err != nil {
		return "", fmt.Errorf("token for serviceaccount %s/%s: %v", pod.Namespace, sa, err)
	}
	return out.Status.Token, nil
}
