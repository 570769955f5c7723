package deploy

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/longhorn-go/longhorn/types"
	"github.com/longhorn-go/longhorn/webhook"
)

const serviceAccount = "system:serviceaccount:longhorn-system:longhorn-service-account"

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := env.KubectlCmd(args...)
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// applyManifest applies deploy/longhorn.yaml (CRDs first need to be
// established before nothing else refers to them; the manifest has no CRs).
func applyManifest(t *testing.T) string {
	t.Helper()
	return kubectl(t, "apply", "-f", "longhorn.yaml")
}

// TestManifestAppliesToARealAPIServer applies the manifest as a user does,
// reads the installed objects back, and applies it again after the manager
// has filled in the webhook rules and CA: the second apply must keep them.
func TestManifestAppliesToARealAPIServer(t *testing.T) {
	env.Require(t)
	out := applyManifest(t)
	for _, want := range []string{"namespace/longhorn-system", "customresourcedefinition.apiextensions.k8s.io/volumes.longhorn.io",
		"daemonset.apps/longhorn-manager", "service/longhorn-backend"} {
		if !strings.Contains(out, want+" created") && !strings.Contains(out, want+" unchanged") {
			t.Errorf("apply output lacks %q created/unchanged:\n%s", want, out)
		}
	}
	kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/volumes.longhorn.io", "crd/settings.longhorn.io")
	kubectl(t, "-n", types.DefaultNamespace, "get", "daemonset/longhorn-manager", "service/longhorn-backend",
		"service/longhorn-admission-webhook", "service/longhorn-conversion-webhook", "configmap/longhorn-default-setting",
		"configmap/longhorn-storageclass", "configmap/longhorn-default-resource", "serviceaccount/longhorn-service-account")
	if got := kubectl(t, "get", "crd", "-o", "name"); strings.Count(got, ".longhorn.io") < 20 {
		t.Errorf("only these CRDs installed:\n%s", got)
	}
	// Custom resources work once the CRDs are in (no webhook rules yet).
	kubectl(t, "-n", types.DefaultNamespace, "get", "volumes.longhorn.io,settings.longhorn.io")

	// The manager fills rules and caBundle in; a repeated apply keeps them.
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	reg := webhook.NewRegistryFor(nil, "longhornio/longhorn:test")
	ep := webhook.Endpoint{Namespace: types.DefaultNamespace, Service: webhook.ServiceName, Port: webhook.DefaultPort}
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := reg.EnsureConfigurations(ctx, kube, ep, ca); err != nil {
		t.Fatal(err)
	}
	out = applyManifest(t)
	if strings.Contains(out, "created") {
		t.Errorf("second apply created objects:\n%s", out)
	}
	vc, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhook.ValidatorConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vc.Webhooks) != 1 || len(vc.Webhooks[0].Rules) == 0 || string(vc.Webhooks[0].ClientConfig.CABundle) != string(ca) {
		t.Errorf("after re-apply the validating webhook lost the manager's rules or CA: %+v", vc.Webhooks)
	}
	mc, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhook.MutatorConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(mc.Webhooks) != 1 || len(mc.Webhooks[0].Rules) == 0 || string(mc.Webhooks[0].ClientConfig.CABundle) != string(ca) {
		t.Errorf("after re-apply the mutating webhook lost the manager's rules or CA: %+v", mc.Webhooks)
	}
	// Leave no webhook pointing at a manager that does not run here.
	kubectl(t, "delete", "validatingwebhookconfiguration/"+webhook.ValidatorConfigName, "mutatingwebhookconfiguration/"+webhook.MutatorConfigName)
}

// TestServiceAccountPermissions asks the API server what the manager's
// service account may do: every grant of the manifest's Role and
// ClusterRole (so the bindings work; through SubjectAccessReview, what
// `kubectl auth can-i` sends, for speed, plus a sample through kubectl), and
// none of a list of things it must not do (not cluster-admin, no secrets
// elsewhere, no RBAC changes), through kubectl auth can-i.
func TestServiceAccountPermissions(t *testing.T) {
	env.Require(t)
	applyManifest(t)
	kube, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range roleRules(manifestObjects(t)) {
		for _, g := range r.rule.APIGroups {
			for _, res := range r.rule.Resources {
				if res == "*" {
					res = "volumes"
				}
				for _, v := range r.rule.Verbs {
					n++
					if !reviewAllowed(t, kube, v, g, res, r.ns) {
						t.Errorf("service account cannot %s %s.%s in %q", v, res, g, r.ns)
					}
				}
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d grants in the manifest", n)
	}
	type check struct{ verb, resource, ns string }
	for _, c := range []check{{"create", "pods", types.DefaultNamespace}, {"update", "volumes.longhorn.io", types.DefaultNamespace}, {"list", "nodes", ""}} {
		if !canI(t, c.verb, c.resource, c.ns) {
			t.Errorf("kubectl auth can-i %s %s -n %q: no", c.verb, c.resource, c.ns)
		}
	}
	denied := []check{
		{"*", "*", ""}, {"get", "secrets", "kube-system"}, {"list", "secrets", "default"},
		{"create", "clusterrolebindings.rbac.authorization.k8s.io", ""}, {"create", "roles.rbac.authorization.k8s.io", types.DefaultNamespace},
		{"delete", "nodes", ""}, {"create", "pods", "default"}, {"delete", "customresourcedefinitions.apiextensions.k8s.io", ""},
		{"create", "volumes.longhorn.io", "default"}, {"delete", "namespaces", ""}, {"impersonate", "users", ""},
	}
	for _, c := range denied {
		if canI(t, c.verb, c.resource, c.ns) {
			t.Errorf("service account may %s %s in %q; it must not", c.verb, c.resource, c.ns)
		}
	}
}

// reviewAllowed asks the API server (SubjectAccessReview) whether the
// manager's service account may verb group/resource[/sub] in ns.
func reviewAllowed(t *testing.T, kube kubernetes.Interface, verb, group, resource, ns string) bool {
	t.Helper()
	res, sub, _ := strings.Cut(resource, "/")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   serviceAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + types.DefaultNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Group: group,
			Resource: res, Subresource: sub},
	}}
	out, err := kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out.Status.Allowed
}

// canI runs kubectl auth can-i as the manager's service account.
func canI(t *testing.T, verb, resource, ns string) bool {
	t.Helper()
	args := []string{"auth", "can-i", verb, resource, "--as=" + serviceAccount}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	cmd := env.KubectlCmd(args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr // warnings ("not namespace scoped") go there
	out, err := cmd.Output()
	ans := strings.TrimSpace(string(out))
	switch {
	case err == nil && ans == "yes":
		return true
	case strings.HasPrefix(ans, "no"):
		return false
	}
	t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, stderr.String())
	return false
}
