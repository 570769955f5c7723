package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

// manifestObjects decodes every document of the manifest. Built-in kinds
// are decoded strictly into their Go types (an unknown or misspelt field
// fails); CRDs, unknown to client-go's scheme, as unstructured.
func manifestObjects(t *testing.T) []runtime.Object {
	t.Helper()
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(Manifest)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, gvk, err := strict.Decode(doc, nil, nil)
		if runtime.IsNotRegisteredError(err) && gvk != nil && gvk.Kind == "CustomResourceDefinition" {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(mustJSON(t, doc)); err != nil {
				t.Fatal(err)
			}
			out = append(out, u)
			continue
		}
		if err != nil {
			t.Fatalf("manifest document does not decode strictly: %v\n%s", err, firstLines(doc, 8))
		}
		out = append(out, obj)
	}
	return out
}

func find[T runtime.Object](objs []runtime.Object, name string) T {
	var zero T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			if m, ok := any(v).(interface{ GetName() string }); ok && m.GetName() == name {
				return v
			}
		}
	}
	return zero
}

func TestManifestHasTheInstallation(t *testing.T) {
	objs := manifestObjects(t)
	if ns := find[*corev1.Namespace](objs, types.DefaultNamespace); ns == nil {
		t.Fatal("no Namespace longhorn-system")
	}
	for _, o := range objs {
		m, ok := o.(interface{ GetNamespace() string })
		if ok && m.GetNamespace() != "" && m.GetNamespace() != types.DefaultNamespace {
			t.Errorf("%T in namespace %q", o, m.GetNamespace())
		}
	}
	if find[*corev1.ServiceAccount](objs, "longhorn-service-account") == nil {
		t.Error("no ServiceAccount longhorn-service-account")
	}
	for _, name := range []string{"longhorn-default-setting", "longhorn-default-resource", "longhorn-storageclass"} {
		if find[*corev1.ConfigMap](objs, name) == nil {
			t.Errorf("no ConfigMap %s", name)
		}
	}
	cm := find[*corev1.ConfigMap](objs, "longhorn-default-setting")
	if _, ok := cm.Data["default-setting.yaml"]; !ok {
		t.Error("longhorn-default-setting lacks key default-setting.yaml")
	}
	wantSvc := map[string]int32{"longhorn-backend": 9500, "longhorn-conversion-webhook": 9501,
		webhook.ServiceName: webhook.DefaultPort, "longhorn-recovery-backend": 9503}
	for name, port := range wantSvc {
		svc := find[*corev1.Service](objs, name)
		if svc == nil {
			t.Errorf("no Service %s", name)
			continue
		}
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != port {
			t.Errorf("Service %s ports %+v, want %d", name, svc.Spec.Ports, port)
		}
	}
}

// TestManifestCRDsAreTheGeneratedOnes: every CRD of k8s/crds is installed.
func TestManifestCRDsAreTheGeneratedOnes(t *testing.T) {
	files, err := filepath.Glob("../k8s/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in k8s/crds: %v", err)
	}
	var want, got []string
	for _, f := range files {
		want = append(want, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "longhorn.io_"), ".yaml")+".longhorn.io")
	}
	for _, o := range manifestObjects(t) {
		// Unstructured, or typed when a test dependency registered the
		// apiextensions types in client-go's scheme.
		m, err := meta.Accessor(o)
		if err == nil && o.GetObjectKind().GroupVersionKind().Kind == "CustomResourceDefinition" {
			got = append(got, m.GetName())
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("manifest CRDs %v\nwant %v", got, want)
	}
}

func TestManagerDaemonSet(t *testing.T) {
	ds := find[*appsv1.DaemonSet](manifestObjects(t), "longhorn-manager")
	if ds == nil {
		t.Fatal("no DaemonSet longhorn-manager")
	}
	spec := ds.Spec.Template.Spec
	if spec.ServiceAccountName != "longhorn-service-account" {
		t.Errorf("serviceAccountName %q", spec.ServiceAccountName)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Error("manager is not privileged")
	}
	if !strings.HasPrefix(c.Image, "longhornio/longhorn:") {
		t.Errorf("image %q, want longhornio/longhorn:<version>", c.Image)
	}
	if len(c.Command) < 2 || c.Command[0] != "longhorn" || c.Command[1] != "manager" {
		t.Errorf("command %v, want longhorn manager ...", c.Command)
	}
	for _, flag := range []string{"--engine-image", "--instance-manager-image"} {
		if i := indexOf(c.Command, flag); i < 0 || i+1 >= len(c.Command) || c.Command[i+1] != c.Image {
			t.Errorf("command %v: %s is not followed by the image %s", c.Command, flag, c.Image)
		}
	}
	checkPorts(t, c)
	checkEnv(t, c)
	checkMounts(t, spec)
	// The manager serves /v1/readyz and /v1/healthz on the API port (api.NewRouter).
	for name, p := range map[string]*corev1.Probe{"/v1/readyz": c.ReadinessProbe, "/v1/healthz": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "manager" ||
			(p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP) {
			t.Errorf("probe %+v, want HTTP GET %s on port manager (9500)", p, name)
		}
	}
}

func checkPorts(t *testing.T, c corev1.Container) {
	t.Helper()
	want := map[string]int32{"manager": 9500, "conversion-wh": 9501, "admission-wh": 9502, "recov-backend": 9503}
	got := map[string]int32{}
	for _, p := range c.Ports {
		got[p.Name] = p.ContainerPort
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ports %v, want %v", got, want)
	}
}

func checkEnv(t *testing.T, c corev1.Container) {
	t.Helper()
	want := map[string]string{"NODE_NAME": "spec.nodeName", "POD_NAMESPACE": "metadata.namespace",
		"POD_IP": "status.podIP", "POD_NAME": "metadata.name"}
	for _, e := range c.Env {
		if f, ok := want[e.Name]; ok {
			if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != f {
				t.Errorf("env %s is not the downward API field %s", e.Name, f)
			}
			delete(want, e.Name)
		}
	}
	for n := range want {
		t.Errorf("env %s missing", n)
	}
}

func checkMounts(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	host := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			host[v.Name] = strings.TrimSuffix(v.HostPath.Path, "/")
		}
	}
	type mount struct {
		path string
		prop corev1.MountPropagationMode
	}
	got := map[string]mount{}
	for _, m := range spec.Containers[0].VolumeMounts {
		var prop corev1.MountPropagationMode
		if m.MountPropagation != nil {
			prop = *m.MountPropagation
		}
		got[host[m.Name]] = mount{strings.TrimSuffix(m.MountPath, "/"), prop}
	}
	want := map[string]mount{
		"/var/lib/longhorn": {"/var/lib/longhorn", corev1.MountPropagationBidirectional},
		"/dev":              {"/host/dev", ""},
		"/proc":             {"/host/proc", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("host mounts %v, want %v", got, want)
	}
}

// TestWebhookConfigurationsMatchTheManager: apart from rules and caBundle
// (left to the manager), the manifest's webhook configurations equal what
// webhook.Registry.EnsureConfigurations writes, so neither the manager nor
// a repeated kubectl apply undoes the other's fields.
func TestWebhookConfigurationsMatchTheManager(t *testing.T) {
	objs := manifestObjects(t)
	ep := webhook.Endpoint{Namespace: types.DefaultNamespace, Service: webhook.ServiceName, Port: webhook.DefaultPort}
	reg := webhook.NewRegistry()
	vc := find[*admissionregv1.ValidatingWebhookConfiguration](objs, webhook.ValidatorConfigName)
	mc := find[*admissionregv1.MutatingWebhookConfiguration](objs, webhook.MutatorConfigName)
	if vc == nil || mc == nil {
		t.Fatalf("manifest lacks %s or %s", webhook.ValidatorConfigName, webhook.MutatorConfigName)
	}
	wantV := reg.ValidatingConfiguration(ep, nil).Webhooks
	wantM := reg.MutatingConfiguration(ep, nil).Webhooks
	for i := range wantV {
		wantV[i].Rules = nil
	}
	for i := range wantM {
		wantM[i].Rules = nil
	}
	if !reflect.DeepEqual(vc.Webhooks, wantV) {
		t.Errorf("validating webhooks\n got %+v\nwant %+v", vc.Webhooks, wantV)
	}
	if !reflect.DeepEqual(mc.Webhooks, wantM) {
		t.Errorf("mutating webhooks\n got %+v\nwant %+v", mc.Webhooks, wantM)
	}
}

// TestRBACIsNotClusterAdmin: no wildcard verbs, no wildcard groups, and
// wildcard resources only inside longhorn.io.
func TestRBACIsNotClusterAdmin(t *testing.T) {
	objs := manifestObjects(t)
	cr := find[*rbacv1.ClusterRole](objs, "longhorn-role")
	role := find[*rbacv1.Role](objs, "longhorn-role")
	if cr == nil || role == nil {
		t.Fatal("no ClusterRole/Role longhorn-role")
	}
	for _, r := range append(append([]rbacv1.PolicyRule{}, cr.Rules...), role.Rules...) {
		if indexOf(r.Verbs, "*") >= 0 || indexOf(r.APIGroups, "*") >= 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rule %+v grants wildcards", r)
		}
		if indexOf(r.Resources, "*") >= 0 && !reflect.DeepEqual(r.APIGroups, []string{"longhorn.io"}) {
			t.Errorf("rule %+v grants every resource outside longhorn.io", r)
		}
		for _, v := range r.Verbs {
			if v == "escalate" || v == "bind" || v == "impersonate" {
				t.Errorf("rule %+v grants %s", r, v)
			}
		}
	}
	for _, r := range cr.Rules {
		if indexOf(r.APIGroups, "longhorn.io") >= 0 || indexOf(r.Resources, "secrets") >= 0 {
			t.Errorf("ClusterRole rule %+v grants %v cluster-wide; keep it in the namespaced Role", r, r.Resources)
		}
	}
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func mustJSON(t *testing.T, doc []byte) []byte {
	t.Helper()
	j, err := utilyaml.ToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestManifestFileMatchesEmbedded(t *testing.T) {
	b, err := os.ReadFile("longhorn.yaml")
	if err != nil || !bytes.Equal(b, Manifest) {
		t.Fatalf("embedded manifest differs from longhorn.yaml: %v", err)
	}
}

// nsRule is an RBAC rule and the namespace it applies in ("" = cluster).
type nsRule struct {
	rule rbacv1.PolicyRule
	ns   string
}

// roleRules returns the rules of the manifest's ClusterRole and Role.
func roleRules(objs []runtime.Object) []nsRule {
	var out []nsRule
	if cr := find[*rbacv1.ClusterRole](objs, "longhorn-role"); cr != nil {
		for _, r := range cr.Rules {
			out = append(out, nsRule{r, ""})
		}
	}
	if role := find[*rbacv1.Role](objs, "longhorn-role"); role != nil {
		for _, r := range role.Rules {
			out = append(out, nsRule{r, role.Namespace})
		}
	}
	return out
}
