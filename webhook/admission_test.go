package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// testRegistry admits ConfigMaps: "size" must be set, and a label is added.
func testRegistry() *Registry {
	reg := NewRegistry()
	Register(reg, Kind[*corev1.ConfigMap]{
		Resource:   "configmaps",
		New:        func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update, admissionregv1.Delete},
		Validate: func(_ context.Context, req Request[*corev1.ConfigMap]) error {
			if req.Operation == admissionv1.Delete {
				return nil
			}
			if req.Object.Data["size"] == "" {
				return Invalid("data.size", "must be set")
			}
			if req.HasOld && req.Old.Data["size"] > req.Object.Data["size"] {
				return Invalid("data.size", "cannot shrink from %s to %s", req.Old.Data["size"], req.Object.Data["size"])
			}
			return nil
		},
		Mutate: func(_ context.Context, req Request[*corev1.ConfigMap]) ([]PatchOp, error) {
			return []PatchOp{{Op: "add", Path: "/metadata/labels", Value: map[string]string{"mutated": "yes"}}}, nil
		},
	})
	return reg
}

func raw(t *testing.T, obj runtime.Object) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func cm(size string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"size": size}}
}

func TestServeOverTLS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ca, err := NewCA(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.ServingCert(time.Now(), ServiceDNSNames(ServiceName, "longhorn-system"), []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Listen(ctx, "127.0.0.1:0", cert, testRegistry())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	// The API server verifies the Service DNS name, not the IP.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: ServiceName + ".longhorn-system.svc"}}}
	base := "https://" + srv.Addr().String()

	post := func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		t.Helper()
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
		resp, err := client.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out.Response.UID != req.UID {
			t.Fatalf("UID %q, want %q", out.Response.UID, req.UID)
		}
		return out.Response
	}
	res := metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "configmaps"}
	if r := post(ValidationPath, &admissionv1.AdmissionRequest{UID: "1", Resource: res, Operation: admissionv1.Create, Object: raw(t, cm(""))}); r.Allowed || r.Result.Code != 400 || r.Result.Message != "data.size: must be set" {
		t.Fatalf("invalid create: %+v %+v", r, r.Result)
	}
	if r := post(ValidationPath, &admissionv1.AdmissionRequest{UID: "2", Resource: res, Operation: admissionv1.Create, Object: raw(t, cm("5"))}); !r.Allowed {
		t.Fatalf("valid create refused: %+v", r.Result)
	}
	if r := post(ValidationPath, &admissionv1.AdmissionRequest{UID: "3", Resource: res, Operation: admissionv1.Update, Object: raw(t, cm("4")), OldObject: raw(t, cm("5"))}); r.Allowed {
		t.Fatal("shrink allowed")
	}
	if r := post(ValidationPath, &admissionv1.AdmissionRequest{UID: "4", Resource: res, Operation: admissionv1.Update, SubResource: "status", Object: raw(t, cm("")), OldObject: raw(t, cm("5"))}); !r.Allowed {
		t.Fatal("status updates are not validated")
	}
	if r := post(ValidationPath, &admissionv1.AdmissionRequest{UID: "5", Resource: metav1.GroupVersionResource{Resource: "secrets"}, Operation: admissionv1.Create}); !r.Allowed {
		t.Fatal("unregistered resource refused")
	}
	if r := post(ValidationPath, &admissionv1.AdmissionRequest{UID: "6", Resource: res, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(`{"data":7}`)}}); r.Allowed || r.Result.Code != 400 {
		t.Fatalf("undecodable object: %+v", r)
	}
	r := post(MutationPath, &admissionv1.AdmissionRequest{UID: "7", Resource: res, Operation: admissionv1.Create, Object: raw(t, cm("5"))})
	if !r.Allowed || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch || string(r.Patch) != `[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]` {
		t.Fatalf("mutation: %+v %s", r, r.Patch)
	}
	if resp, err := client.Get(base + HealthPath); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	if resp, err := client.Post(base+ValidationPath, "application/json", bytes.NewReader([]byte("{"))); err != nil || resp.StatusCode != 400 {
		t.Fatalf("garbage body: %v %v", resp, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestEnsureCAAndConfigurations(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	ca1, err := EnsureCA(ctx, kube, "longhorn-system", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca2, err := EnsureCA(ctx, kube, "longhorn-system", time.Now())
	if err != nil || !bytes.Equal(ca1.CertPEM, ca2.CertPEM) {
		t.Fatalf("second EnsureCA returned a different CA: %v", err)
	}
	reg := testRegistry()
	ep := Endpoint{Namespace: "longhorn-system", Service: ServiceName, Port: DefaultPort}
	for range 2 { // create, then update in place
		if err := reg.EnsureConfigurations(ctx, kube, ep, ca1.CertPEM); err != nil {
			t.Fatal(err)
		}
	}
	v, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, ValidatorConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := v.Webhooks[0]
	if w.Name != ValidatorName || !bytes.Equal(w.ClientConfig.CABundle, ca1.CertPEM) || *w.ClientConfig.Service.Path != ValidationPath ||
		*w.FailurePolicy != admissionregv1.Fail || len(w.Rules) != 1 || len(w.Rules[0].Operations) != 3 {
		t.Fatalf("validator config: %+v", w)
	}
	m, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, MutatorConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ops := m.Webhooks[0].Rules[0].Operations; len(ops) != 2 {
		t.Fatalf("mutator must not get DELETE: %v", ops)
	}
	u := reg.ValidatingConfiguration(Endpoint{URL: "https://127.0.0.1:9502"}, nil).Webhooks[0].ClientConfig
	if u.URL == nil || *u.URL != "https://127.0.0.1:9502"+ValidationPath || u.Service != nil {
		t.Fatalf("URL endpoint: %+v", u)
	}
}
