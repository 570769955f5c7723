package nodeagent

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestImageMapArgv(t *testing.T) {
	m, err := NewImageMap(map[string]string{"longhornio/longhorn:*": "/opt/bin/longhorn", "busybox": "/bin/busybox"})
	if err != nil {
		t.Fatal(err)
	}
	look := func(n string) (string, error) {
		if n == "sh" {
			return "/bin/sh", nil
		}
		return "", errors.New("not found")
	}
	for name, tc := range map[string]struct {
		image         string
		command, args []string
		want          []string
		err           bool
	}{
		"entrypoint":        {"longhornio/longhorn:v1.2.3", nil, []string{"manager", "-d"}, []string{"/opt/bin/longhorn", "manager", "-d"}, false},
		"docker.io prefix":  {"docker.io/longhornio/longhorn:master", nil, nil, []string{"/opt/bin/longhorn"}, false},
		"command by name":   {"longhornio/longhorn:x", []string{"longhorn", "instance-manager"}, []string{"--port", "1"}, []string{"/opt/bin/longhorn", "instance-manager", "--port", "1"}, false},
		"command by path":   {"longhornio/longhorn:x", []string{"/usr/local/bin/longhorn", "a"}, nil, []string{"/opt/bin/longhorn", "a"}, false},
		"host shell":        {"longhornio/longhorn:x", []string{"sh", "-c", "echo"}, nil, []string{"/bin/sh", "-c", "echo"}, false},
		"library image":     {"library/busybox", nil, []string{"ls"}, []string{"/bin/busybox", "ls"}, false},
		"unmapped no cmd":   {"nginx:1", nil, nil, nil, true},
		"unmapped host cmd": {"nginx:1", []string{"/bin/true"}, nil, []string{"/bin/true"}, false},
		"missing cmd":       {"nginx:1", []string{"nope"}, nil, nil, true},
	} {
		got, err := m.Argv(tc.image, tc.command, tc.args, look)
		if tc.err {
			if !errors.Is(err, ErrImage) {
				t.Errorf("%s: err = %v, want ErrImage", name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Argv = %v, %v; want %v", name, got, err, tc.want)
		}
	}
	if _, err := NewImageMap(map[string]string{"a*b": "/x"}); !errors.Is(err, ErrImage) {
		t.Error("inner * accepted")
	}
	if _, err := NewImageMap(map[string]string{"a": "rel/x"}); !errors.Is(err, ErrImage) {
		t.Error("relative binary accepted")
	}
}

type fakeObjects struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, errors.New("not found")
}

func (f fakeObjects) Secret(ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, errors.New("not found")
}

func TestContainerEnv(t *testing.T) {
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa"},
	}
	c := &corev1.Container{
		Name:      "c",
		EnvFrom:   []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		Env: []corev1.EnvVar{
			{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "none"}, Key: "k", Optional: &yes}}},
			{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPUS", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "URL", Value: "http://$(POD_IP):9500/$(UNDEFINED)/$$(NODE_NAME)"},
		},
	}
	objs := fakeObjects{
		cms:     map[string]*corev1.ConfigMap{"ns/cm": {Data: map[string]string{"A": "1"}}},
		secrets: map[string]*corev1.Secret{"ns/s": {Data: map[string][]byte{"k": []byte("pw")}}},
	}
	pc := podContext{PodIP: "10.99.0.1", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	env, err := containerEnv(pod, c, objs, pc, map[string]string{"PATH": "/bin"})
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(env)
	want := map[string]string{"PATH": "/bin", "CM_A": "1", "NODE_NAME": "node-1", "POD_IP": "10.99.0.1", "APP": "x",
		"PASS": "pw", "MEM_MI": "64", "CPUS": "2", "URL": "http://10.99.0.1:9500/$(UNDEFINED)/$(NODE_NAME)"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("env = %v\nwant %v", got, want)
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "missing"}}})
	if _, err := containerEnv(pod, c, objs, pc, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"X"`) {
		t.Fatalf("missing key: err = %v, want ErrConfig naming X", err)
	}
}

func cs(state corev1.ContainerState, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
	s := corev1.ContainerStatus{State: state}
	if last != nil {
		s.LastTerminationState.Terminated = last
	}
	return s
}

func TestPodPhase(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}
	exit := func(c int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: c}}
	}
	failed := &corev1.ContainerStateTerminated{ExitCode: 1}
	always, never, onFail := corev1.RestartPolicyAlways, corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure
	for name, tc := range map[string]struct {
		policy      corev1.RestartPolicy
		inits, ctrs []corev1.ContainerStatus
		initDone    bool
		want        corev1.PodPhase
	}{
		"init running":     {always, []corev1.ContainerStatus{cs(running, nil)}, []corev1.ContainerStatus{cs(waiting, nil)}, false, corev1.PodPending},
		"init failed":      {never, []corev1.ContainerStatus{cs(exit(2), nil)}, nil, false, corev1.PodFailed},
		"never started":    {always, nil, []corev1.ContainerStatus{cs(running, nil), cs(waiting, nil)}, true, corev1.PodPending},
		"running":          {always, nil, []corev1.ContainerStatus{cs(running, nil)}, true, corev1.PodRunning},
		"crashloop":        {always, nil, []corev1.ContainerStatus{cs(waiting, failed)}, true, corev1.PodRunning},
		"succeeded":        {never, nil, []corev1.ContainerStatus{cs(exit(0), nil), cs(exit(0), nil)}, true, corev1.PodSucceeded},
		"failed never":     {never, nil, []corev1.ContainerStatus{cs(exit(0), nil), cs(exit(3), nil)}, true, corev1.PodFailed},
		"onfailure retry":  {onFail, nil, []corev1.ContainerStatus{cs(exit(3), nil)}, true, corev1.PodRunning},
		"onfailure done":   {onFail, nil, []corev1.ContainerStatus{cs(exit(0), nil)}, true, corev1.PodSucceeded},
		"always completed": {always, nil, []corev1.ContainerStatus{cs(exit(0), nil)}, true, corev1.PodRunning},
	} {
		if got := podPhase(tc.policy, tc.inits, tc.ctrs, tc.initDone); got != tc.want {
			t.Errorf("%s: podPhase = %s, want %s", name, got, tc.want)
		}
	}
	if restartAfterExit(never, 1) || !restartAfterExit(onFail, 1) || restartAfterExit(onFail, 0) || !restartAfterExit(always, 0) {
		t.Error("restartAfterExit")
	}
}

func TestPodConditionsKeepTransitionTime(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	ready := []corev1.ContainerStatus{{Ready: true}}
	c1 := podConditions(nil, true, true, ready, corev1.PodRunning, t0)
	c2 := podConditions(c1, true, true, ready, corev1.PodRunning, t1)
	for _, c := range c2 {
		if c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Equal(&t0) {
			t.Errorf("%s: %s at %v, want True since t0", c.Type, c.Status, c.LastTransitionTime)
		}
	}
	c3 := podConditions(c2, true, true, []corev1.ContainerStatus{{Ready: false}}, corev1.PodRunning, t1)
	for _, c := range c3 {
		if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Equal(&t1)) {
			t.Errorf("Ready after readiness loss: %+v", c)
		}
	}
}

func TestLogRendering(t *testing.T) {
	data := "2026-01-01T00:00:01Z stdout F one\n" +
		"2026-01-01T00:00:02Z stderr P tw\n" +
		"2026-01-01T00:00:02.5Z stderr F o\n" +
		"garbage line\n" +
		"2026-01-01T00:00:03Z stdout F three\n" +
		"2026-01-01T00:00:04Z stdout F incompl"
	recs, used := readRecords([]byte(data))
	if len(recs) != 4 || used != len(data)-len("2026-01-01T00:00:04Z stdout F incompl") {
		t.Fatalf("readRecords: %d records, used %d", len(recs), used)
	}
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	for name, tc := range map[string]struct {
		opts api.ContainerLogOpts
		want string
	}{
		"all":        {api.ContainerLogOpts{}, "one\ntwo\nthree\n"},
		"tail":       {api.ContainerLogOpts{Tail: 2}, "two\nthree\n"},
		"timestamps": {api.ContainerLogOpts{Tail: 1, Timestamps: true}, "2026-01-01T00:00:03Z three\n"},
		"since":      {api.ContainerLogOpts{SinceTime: time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC)}, "two\nthree\n"},
		"sinceSecs":  {api.ContainerLogOpts{SinceSeconds: 7}, "three\n"},
	} {
		if got := string(renderLogs(recs, tc.opts, now)); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
	var b bytes.Buffer
	lw := newLimitWriter(&b, 5)
	if n, err := lw.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	if n, err := lw.Write([]byte("defg")); n != 2 || !errors.Is(err, errLimit) || b.String() != "abcde" {
		t.Fatal(n, err, b.String())
	}
	if _, err := lw.Write([]byte("x")); !errors.Is(err, errLimit) {
		t.Fatal("write after limit")
	}
	if _, err := newLimitWriter(&b, 0).Write(make([]byte, 100)); err != nil {
		t.Fatal("unlimited writer failed")
	}
}

func TestExpandAndMountinfo(t *testing.T) {
	env := map[string]string{"A": "1"}
	for in, want := range map[string]string{"$(A)": "1", "$$(A)": "$(A)", "$(B)": "$(B)", "x$": "x$", "$(A": "$(A", "$x": "$x"} {
		if got := expand(in, env); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
	if got := unescapeMountinfo(`/mnt/a\040b\134c`); got != `/mnt/a b\c` {
		t.Errorf("unescapeMountinfo = %q", got)
	}
	if !under("/var/lib/longhorn/x", []string{"/var/lib/longhorn"}) || under("/var/lib/longhornx", []string{"/var/lib/longhorn"}) {
		t.Error("under")
	}
}

func TestContainerMounts(t *testing.T) {
	bidir := corev1.MountPropagationBidirectional
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "lh", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/longhorn/"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}}}
	c := &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{
		{Name: "lh", MountPath: "/var/lib/longhorn", MountPropagation: &bidir},
		{Name: "cfg", MountPath: "/etc/cfg", SubPath: "sub", ReadOnly: true},
	}}
	ms, err := containerMounts(pod, c, map[string]string{"cfg": "/pods/u/volumes/cfg", "lh": "/pods/u/volumes/lh"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{Source: "/var/lib/longhorn", Target: "/var/lib/longhorn", Bidirectional: true},
		{Source: "/pods/u/volumes/cfg/sub", Target: "/etc/cfg", ReadOnly: true},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("mounts = %+v\nwant %+v", ms, want)
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/x", SubPath: "../../etc"}}
	if _, err := containerMounts(pod, c, map[string]string{"cfg": "/v"}); !errors.Is(err, ErrConfig) {
		t.Fatalf("escaping subPath: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	max := 10 * time.Second
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, max, max}
	for n, w := range want {
		if got := backoff(n, max); got != w {
			t.Errorf("backoff(%d) = %v, want %v", n, got, w)
		}
	}
}
