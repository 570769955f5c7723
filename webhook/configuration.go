package webhook

import (
	"context"
	"fmt"
	"sort"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Names of the webhook configurations and their single webhooks (Longhorn's).
const (
	ValidatorConfigName = "longhorn-webhook-validator"
	MutatorConfigName   = "longhorn-webhook-mutator"
	ValidatorName       = "validator.longhorn.io"
	MutatorName         = "mutator.longhorn.io"
	// ServiceName is the Service in front of every manager's webhook port.
	ServiceName = "longhorn-admission-webhook"
	// DefaultPort is the webhook port (Longhorn's 9502).
	DefaultPort = 9502
)

// Endpoint says how the API server reaches the webhook: through the
// Service (the normal case) or, when URL is set, at a fixed https URL base
// such as "https://127.0.0.1:9502" (single-node test set-ups).
type Endpoint struct {
	Namespace string
	Service   string
	Port      int32
	URL       string
}

func (e Endpoint) clientConfig(path string, caBundle []byte) admissionregv1.WebhookClientConfig {
	if e.URL != "" {
		u := e.URL + path
		return admissionregv1.WebhookClientConfig{URL: &u, CABundle: caBundle}
	}
	p, port := path, e.Port
	return admissionregv1.WebhookClientConfig{CABundle: caBundle,
		Service: &admissionregv1.ServiceReference{Namespace: e.Namespace, Name: e.Service, Path: &p, Port: &port}}
}

// rules builds one rule per registered resource that has the given role.
func (reg *Registry) rules(mutating bool) []admissionregv1.RuleWithOperations {
	names := make([]string, 0, len(reg.handlers))
	for n := range reg.handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	scope := admissionregv1.NamespacedScope
	var out []admissionregv1.RuleWithOperations
	for _, n := range names {
		h := reg.handlers[n]
		if (mutating && !h.mutates) || (!mutating && !h.validates) {
			continue
		}
		ops := h.operations
		if mutating {
			ops = withoutDelete(ops)
		}
		out = append(out, admissionregv1.RuleWithOperations{
			Operations: ops,
			Rule: admissionregv1.Rule{APIGroups: []string{"longhorn.io"}, APIVersions: []string{"v1beta2"},
				Resources: []string{n}, Scope: &scope},
		})
	}
	return out
}

func withoutDelete(ops []admissionregv1.OperationType) []admissionregv1.OperationType {
	var out []admissionregv1.OperationType
	for _, o := range ops {
		if o != admissionregv1.Delete {
			out = append(out, o)
		}
	}
	return out
}

// ValidatingConfiguration renders longhorn-webhook-validator.
func (reg *Registry) ValidatingConfiguration(ep Endpoint, caBundle []byte) *admissionregv1.ValidatingWebhookConfiguration {
	fail, none, timeout := admissionregv1.Fail, admissionregv1.SideEffectClassNone, int32(10)
	return &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ValidatorConfigName},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    ValidatorName,
			ClientConfig:            ep.clientConfig(ValidationPath, caBundle),
			Rules:                   reg.rules(false),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
		}},
	}
}

// MutatingConfiguration renders longhorn-webhook-mutator.
func (reg *Registry) MutatingConfiguration(ep Endpoint, caBundle []byte) *admissionregv1.MutatingWebhookConfiguration {
	fail, none, timeout := admissionregv1.Fail, admissionregv1.SideEffectClassNone, int32(10)
	never := admissionregv1.NeverReinvocationPolicy
	return &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatorConfigName},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    MutatorName,
			ClientConfig:            ep.clientConfig(MutationPath, caBundle),
			Rules:                   reg.rules(true),
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          &timeout,
			ReinvocationPolicy:      &never,
		}},
	}
}

// EnsureConfigurations creates or updates both webhook configurations so
// that they carry the current rules, endpoint and CA bundle.
func (reg *Registry) EnsureConfigurations(ctx context.Context, kube kubernetes.Interface, ep Endpoint, caBundle []byte) error {
	vc := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	want := reg.ValidatingConfiguration(ep, caBundle)
	cur, err := vc.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = vc.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		cur.Webhooks = want.Webhooks
		_, err = vc.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("validating webhook configuration %s: %w", want.Name, err)
	}
	mc := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	wantM := reg.MutatingConfiguration(ep, caBundle)
	curM, err := mc.Get(ctx, wantM.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = mc.Create(ctx, wantM, metav1.CreateOptions{})
	case err == nil:
		curM.Webhooks = wantM.Webhooks
		_, err = mc.Update(ctx, curM, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("mutating webhook configuration %s: %w", wantM.Name, err)
	}
	return nil
}
