package app

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/internal/testpki"
)

func tlsSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	ca, cert, key, err := testpki.New(engineapi.TLSServerName)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: engineapi.TLSSecretName, Namespace: "ns"},
		Data: map[string][]byte{engineapi.TLSCAFile: ca, engineapi.TLSCertFile: cert, engineapi.TLSKeyFile: key}}
}

// TestGRPCTLSWatcher: a rotated Secret (new data) is loaded into the
// handler; bad new data keeps the old; a Secret appearing for a manager that
// started in plaintext changes nothing (its instance managers serve
// plaintext until they restart).
func TestGRPCTLSWatcher(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(tlsSecret(t))
	w := &grpcTLSWatcher{kube: kube, namespace: "ns"}
	h, err := w.handler(ctx)
	if err != nil || !w.enabled {
		t.Fatalf("handler: %v enabled=%v", err, w.enabled)
	}
	defer h.Close()
	first := w.digest
	w.check(ctx)
	if w.digest != first {
		t.Fatal("an unchanged Secret changed the digest")
	}
	rotated := tlsSecret(t)
	if _, err := kube.CoreV1().Secrets("ns").Update(ctx, rotated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.check(ctx)
	if w.digest == first || w.digest != secretDigest(rotated) {
		t.Fatal("the rotated Secret was not loaded")
	}
	bad := rotated.DeepCopy()
	bad.Data[engineapi.TLSCertFile] = []byte("garbage")
	if _, err := kube.CoreV1().Secrets("ns").Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.check(ctx)
	if w.digest != secretDigest(rotated) {
		t.Fatal("a broken Secret replaced the certificates in use")
	}

	plain := &grpcTLSWatcher{kube: fake.NewClientset(), namespace: "ns"}
	ph, err := plain.handler(ctx)
	if err != nil || plain.enabled {
		t.Fatalf("plaintext start: %v enabled=%v", err, plain.enabled)
	}
	defer ph.Close()
	if _, err := plain.kube.CoreV1().Secrets("ns").Create(ctx, tlsSecret(t), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	plain.check(ctx)
	if plain.enabled || plain.digest != "ignored" {
		t.Fatalf("a Secret created later switched a plaintext manager: enabled=%v digest=%q", plain.enabled, plain.digest)
	}
}
