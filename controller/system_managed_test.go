package controller

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

func TestSystemManagedFrom(t *testing.T) {
	vals := map[types.SettingName]string{
		types.SettingNamePriorityClass:                       "longhorn-critical",
		types.SettingNameTaintToleration:                     "key1=value1:NoSchedule; key2:NoExecute",
		types.SettingNameSystemManagedComponentsNodeSelector: "disk:ssd;zone:a",
		types.SettingNameRegistrySecret:                      "regcred",
		types.SettingNameSystemManagedPodsImagePullPolicy:    "always",
	}
	get := func(n types.SettingName) (string, error) { return vals[n], nil }
	s, err := systemManagedFrom(get)
	if err != nil {
		t.Fatal(err)
	}
	want := systemManaged{PriorityClass: "longhorn-critical", RegistrySecret: "regcred", PullPolicy: corev1.PullAlways,
		NodeSelector: map[string]string{"disk": "ssd", "zone": "a"},
		Tolerations: []corev1.Toleration{
			{Key: "key1", Operator: corev1.TolerationOpEqual, Value: "value1", Effect: corev1.TaintEffectNoSchedule},
			{Key: "key2", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	for name, bad := range map[types.SettingName]string{
		types.SettingNameTaintToleration:                     "key1=value1",
		types.SettingNameSystemManagedComponentsNodeSelector: "ssd",
		types.SettingNameSystemManagedPodsImagePullPolicy:    "sometimes",
	} {
		old := vals[name]
		vals[name] = bad
		if _, err := systemManagedFrom(get); err == nil || !strings.Contains(err.Error(), string(name)) {
			t.Errorf("%s=%q: error %v, want one naming the setting", name, bad, err)
		}
		vals[name] = old
	}
}

// The settings reach the instance-manager pod the controller creates, and
// a change of them makes the pod outdated.
func TestInstanceManagerPodHonoursSystemManagedSettings(t *testing.T) {
	objs := []runtime.Object{
		setting(types.SettingNamePriorityClass, "longhorn-critical"),
		setting(types.SettingNameTaintToleration, "dedicated=storage:NoSchedule"),
		setting(types.SettingNameSystemManagedComponentsNodeSelector, "storage:yes"),
		setting(types.SettingNameRegistrySecret, "regcred"),
		setting(types.SettingNameSystemManagedPodsImagePullPolicy, "never"),
	}
	f := newFixture(t, objs...)
	c := fixtureController[*InstanceManagerController](f)
	im := &longhorn.InstanceManager{ObjectMeta: metav1.ObjectMeta{Name: "instance-manager-n1", Namespace: testNS, UID: "u1"},
		Spec: longhorn.InstanceManagerSpec{NodeID: "n1", Image: "longhorn:test"}}
	if _, err := c.reconcilePod(f.ctx, im, nil); err != nil {
		t.Fatal(err)
	}
	pod, err := f.kube.CoreV1().Pods(testNS).Get(f.ctx, im.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := pod.Spec
	if spec.PriorityClassName != "longhorn-critical" {
		t.Errorf("priorityClassName %q", spec.PriorityClassName)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "dedicated" || spec.Tolerations[0].Value != "storage" {
		t.Errorf("tolerations %+v", spec.Tolerations)
	}
	if spec.NodeSelector["storage"] != "yes" || spec.NodeName != "n1" {
		t.Errorf("node selector %v, node %s", spec.NodeSelector, spec.NodeName)
	}
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("pull secrets %+v", spec.ImagePullSecrets)
	}
	if spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("pull policy %q", spec.Containers[0].ImagePullPolicy)
	}
	params, err := c.podParams(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if podNeedsRecreate(pod, imPod(im, params)) {
		t.Error("an unchanged pod is outdated")
	}
	params.System.PriorityClass = "other"
	if !podNeedsRecreate(pod, imPod(im, params)) {
		t.Error("a priority class change does not make the pod outdated")
	}
}

// The log-level setting sets the manager's logger.
func TestLogLevelSettingSetsTheLogger(t *testing.T) {
	f := newFixture(t, setting(types.SettingNameLogLevel, "Debug"))
	c := fixtureController[*SettingController](f)
	defer logrus.SetLevel(logrus.GetLevel())
	logrus.SetLevel(logrus.InfoLevel)
	if _, err := c.syncSetting(f.ctx, testNS+"/"+string(types.SettingNameLogLevel)); err != nil {
		t.Fatal(err)
	}
	if logrus.GetLevel() != logrus.DebugLevel {
		t.Errorf("level %v after log-level=Debug", logrus.GetLevel())
	}
	if _, err := parseLogLevel("Loud"); err == nil || !strings.Contains(err.Error(), "log-level") {
		t.Errorf("parseLogLevel(Loud): %v", err)
	}
}
