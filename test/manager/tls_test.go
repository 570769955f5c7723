package manager_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	"github.com/longhorn-go/longhorn/instance-manager/imrpc"
	"github.com/longhorn-go/longhorn/internal/testpki"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// TestGRPCMutualTLS: with the Secret longhorn-grpc-tls (ca.crt, tls.crt,
// tls.key) created, managers restarted and the idle instance-manager pods
// recreated (they mount the Secret), every instance manager serves mutual
// TLS: the managers reach them (running, versions read), a volume attaches
// and takes a snapshot through the proxy, and a plaintext client of an
// instance manager is refused. Then the certificates rotate while the
// volume is attached (rotateGRPCTLS).
func TestGRPCMutualTLS(t *testing.T) {
	c := newCluster(t)
	ca, cert, key := grpcTestPKI(t)
	_, err := c.kube.CoreV1().Secrets(ns).Create(c.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "longhorn-grpc-tls"},
		Data: map[string][]byte{"ca.crt": ca, "tls.crt": cert, "tls.key": key}}, metav1.CreateOptions{})
	c.must(err)
	for _, n := range c.nodes {
		c.stopManager(n)
	}
	old := c.imPods()
	for _, p := range old {
		c.must(c.kube.CoreV1().Pods(ns).Delete(c.ctx, p.Name, metav1.DeleteOptions{}))
	}
	for _, n := range c.nodes {
		c.startManager(n)
	}
	c.eventually("three new instance-manager pods", 60*time.Second, func() (bool, string) {
		pods := c.imPods()
		fresh := 0
		for node, p := range pods {
			if p.UID != old[node].UID && p.Status.Phase == corev1.PodRunning {
				fresh++
			}
		}
		return fresh == 3, fmt.Sprintf("%d fresh", fresh)
	})
	c.waitProxyVersions(true)
	for _, p := range c.imPods() {
		if log := c.podLog(p.Name); !strings.Contains(log, "tls=true") {
			t.Fatalf("instance manager %s does not serve TLS:\n%s", p.Name, grepLines(log, "gRPC transport"))
		}
	}
	cc, err := grpc.NewClient("passthrough:///"+net.JoinHostPort(c.nodes[0].ip, "8500"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(c.ctx, 3*time.Second)
	defer cancel()
	if _, err := imrpc.NewInstanceServiceClient(cc).VersionGet(ctx, &imrpc.Empty{}); err == nil {
		t.Fatal("a plaintext client was answered by an instance manager serving mutual TLS")
	} else {
		t.Logf("plaintext client refused: %v", err)
	}
	const vol = "tls-vol"
	manifest := fmt.Sprintf("apiVersion: longhorn.io/v1beta2\nkind: Volume\nmetadata: {name: %s, namespace: %s}\nspec: {size: 32Mi, numberOfReplicas: 2, frontend: nbd}\n", vol, ns)
	if out, err := c.kubectl(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	c.attach(vol, "n1")
	c.waitState(vol, longhorn.VolumeStateAttached, longhorn.VolumeRobustnessHealthy, 120*time.Second)
	qemuIO(t, c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint), "write -P 0x7e 0 1M", "read -P 0x7e 0 1M")
	c.snapshot(t, vol, "tls-snap")
	if log := c.podLog(c.imPods()["n1"].Name); !strings.Contains(log, proxyService+"VolumeSnapshot") {
		t.Fatal("the snapshot did not go through n1's proxy")
	}
	c.rotateGRPCTLS(t, vol, ca, cert, key)
	c.attach(vol, "")
	c.waitState(vol, longhorn.VolumeStateDetached, "", 60*time.Second)
	if out, err := c.kubectl("", "-n", ns, "delete", "volumes.longhorn.io", vol, "--wait=false"); err != nil {
		t.Fatalf("delete: %v\n%s", err, out)
	}
}

// rotateGRPCTLS replaces the Secret's CA and certificate while vol is
// attached and rewrites the instance managers' mounted files as the kubelet
// would: the managers re-dial with the new certificates, the instance
// managers reload theirs - same pods, same processes, no restart - and the
// volume keeps serving I/O and snapshots through the proxy, while a client
// with the old certificate is refused.
func (c *cluster) rotateGRPCTLS(t *testing.T, vol string, oldCA, oldCert, oldKey []byte) {
	t.Helper()
	pods := c.imPods()
	ca, cert, key := grpcTestPKI(t)
	s, err := c.kube.CoreV1().Secrets(ns).Get(c.ctx, "longhorn-grpc-tls", metav1.GetOptions{})
	c.must(err)
	s.Data = map[string][]byte{"ca.crt": ca, "tls.crt": cert, "tls.key": key}
	_, err = c.kube.CoreV1().Secrets(ns).Update(c.ctx, s, metav1.UpdateOptions{})
	c.must(err)
	for _, n := range c.nodes {
		dir := filepath.Join(c.dir, n.name, "secret-longhorn-grpc-tls")
		for k, v := range s.Data {
			tmp := filepath.Join(dir, "."+k+".new")
			c.must(os.WriteFile(tmp, v, 0o600))
			c.must(os.Rename(tmp, filepath.Join(dir, k)))
		}
	}
	took := c.eventually("managers re-dialed with the rotated certificates", 30*time.Second, func() (bool, string) {
		for _, n := range c.nodes {
			b, _ := os.ReadFile(n.log)
			if !strings.Contains(string(b), "Secret longhorn-grpc-tls changed: instance-manager connections re-dialed") {
				return false, n.name + " not yet"
			}
		}
		return true, ""
	})
	qemuIO(t, c.hostEndpoint("n1", c.engineOf(vol).Status.Endpoint), "write -P 0x7f 1M 1M", "read -P 0x7e 0 1M", "read -P 0x7f 1M 1M")
	c.snapshot(t, vol, "tls-snap-rotated")
	for node, p := range c.imPods() {
		if p.UID != pods[node].UID {
			t.Fatalf("instance-manager pod of %s replaced during the rotation", node)
		}
	}
	if log := c.podLog(pods["n1"].Name); !strings.Contains(log, "certificates reloaded") || strings.Count(log, "instance manager serving") != 1 {
		t.Fatalf("n1's instance manager did not reload its certificates in place:\n%s", grepLines(log, "TLS files"))
	}
	oldCfg, err := engineapi.ClientTLS(oldCA, oldCert, oldKey)
	c.must(err)
	h := engineapi.NewHandler(engineapi.HandlerOptions{TLS: oldCfg, CheckTimeout: 2 * time.Second})
	defer h.Close()
	addr := engineapi.IMAddress{Address: net.JoinHostPort(c.nodes[0].ip, "8500"), ProxyAddress: net.JoinHostPort(c.nodes[0].ip, "8501")}
	if _, err := h.InstanceManager(c.ctx, addr); err == nil {
		t.Fatal("a client with the replaced certificate was answered")
	}
	t.Logf("certificates rotated with %s attached: managers re-dialed within %v, same instance-manager pods, I/O and a snapshot through the proxy", vol, took)
}

// grpcTestPKI returns a CA and a certificate it signed for
// longhorn-backend (server and client use), PEM.
func grpcTestPKI(t *testing.T) (ca, cert, key []byte) {
	t.Helper()
	ca, cert, key, err := testpki.New("longhorn-backend")
	if err != nil {
		t.Fatal(err)
	}
	return ca, cert, key
}
