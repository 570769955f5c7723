package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// ActionTrimFilesystem is Longhorn's trimFilesystem volume action.
const ActionTrimFilesystem = "trimFilesystem"

// FilesystemTrimmer trims the filesystem mounted from a volume's block
// device on this node and returns the bytes discarded (internal/fstrim).
type FilesystemTrimmer func(volume string) (trimmed uint64, err error)

// forwardedHeader marks a request one manager forwarded to the manager of
// the node named in its value; that manager never forwards it again.
const forwardedHeader = "X-Longhorn-Forwarded-To-Node"

// trimFilesystem is Longhorn's VolumeFilesystemTrim: on the node the
// volume is attached to, find the mount point of its block device and trim
// that filesystem (best effort, as Longhorn documents it). A request that
// reaches the manager of another node is forwarded to the manager of the
// attached node (Longhorn's router forwards it to the volume owner's
// manager), whose answer is passed back. The volume must be attached with
// its frontend (a blockdev one: an iSCSI frontend gives this node no
// device); RWX volumes would be trimmed by their share manager, which this
// product does not have.
func (s *Server) trimFilesystem(ctx context.Context, r *http.Request, u urls, v *longhorn.Volume) (int, any, error) {
	if err := trimRefusal(v); err != nil {
		return 0, nil, err
	}
	node := v.Status.CurrentNodeID
	if node != s.opts.NodeName {
		if to := r.Header.Get(forwardedHeader); to != "" {
			return 0, nil, newError(http.StatusBadGateway, CodeServerError,
				"trimFilesystem of %s was forwarded to node %s, but this manager runs on node %q and the volume is attached to %s",
				v.Name, to, s.opts.NodeName, node)
		}
		return s.forwardToNode(ctx, r, node)
	}
	if s.opts.Trim == nil {
		return 0, nil, newError(http.StatusServiceUnavailable, CodeServerError, "this API server cannot trim filesystems: no trimmer is configured")
	}
	if err := runTrim(ctx, s.opts.Trim, v.Name, s.opts.Log); err != nil {
		return 0, nil, err
	}
	return s.volumeOK(ctx, u, v)
}

// trimRefusal says why v's filesystem cannot be trimmed now (nil: it can).
func trimRefusal(v *longhorn.Volume) error {
	switch {
	case v.Spec.AccessMode == longhorn.AccessModeReadWriteMany:
		return notSupported("trimming an RWX volume's filesystem (its share manager)")
	case v.Status.State != longhorn.VolumeStateAttached || v.Status.CurrentNodeID == "":
		return invalidState("volume %s is %s: trimFilesystem needs it attached", v.Name, orUnknown(string(v.Status.State)))
	case v.Status.FrontendDisabled:
		return invalidState("volume %s is attached with its frontend disabled: no filesystem to trim", v.Name)
	case v.Spec.Frontend != longhorn.VolumeFrontendBlockDev && v.Spec.Frontend != "":
		return invalidState("volume %s has frontend %s: only the blockdev frontend gives its node a device to mount and trim",
			v.Name, v.Spec.Frontend)
	}
	return nil
}

// runTrim runs trim, answering once it returns or ctx ends (the ioctl
// cannot be interrupted: a trim still running then goes on and is logged).
func runTrim(ctx context.Context, trim FilesystemTrimmer, volume string, log logrus.FieldLogger) error {
	type result struct {
		n   uint64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := trim(volume)
		if err == nil {
			log.Infof("Trimmed the filesystem of volume %s: %d bytes discarded", volume, n)
		}
		done <- result{n, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return newError(http.StatusInternalServerError, CodeServerError, "unable to trim filesystem for volume %s: %v", volume, res.err)
		}
		return nil
	case <-ctx.Done():
		return newError(http.StatusGatewayTimeout, CodeServerError,
			"trimming the filesystem of volume %s is still running after the request's time; it goes on in the background", volume)
	}
}

// forwardToNode sends r to the manager of node and returns its answer.
func (s *Server) forwardToNode(ctx context.Context, r *http.Request, node string) (int, any, error) {
	if s.opts.ManagerAddress == nil {
		return 0, nil, newError(http.StatusServiceUnavailable, CodeServerError,
			"the volume is attached to node %s and this API server cannot reach other managers", node)
	}
	addr, err := s.opts.ManagerAddress(ctx, node)
	if err != nil {
		return 0, nil, newError(http.StatusServiceUnavailable, CodeServerError, "the volume is attached to node %s: %v", node, err)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	if err != nil {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidBody, "reading body: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, "http://"+addr+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(forwardedHeader, node)
	for _, h := range []string{"X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if req.Header.Get("X-Forwarded-Host") == "" {
		req.Header.Set("X-Forwarded-Host", r.Host) // links in the answer point where the client asked
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, newError(http.StatusBadGateway, CodeServerError, "forward to the manager of node %s at %s: %v", node, addr, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return 0, nil, newError(http.StatusBadGateway, CodeServerError, "answer of the manager of node %s: %v", node, err)
	}
	if !json.Valid(out) {
		return 0, nil, newError(http.StatusBadGateway, CodeServerError, "the manager of node %s answered %d with a body that is not JSON", node, resp.StatusCode)
	}
	return resp.StatusCode, json.RawMessage(out), nil
}

// ManagerPodAddress finds the REST API (HOST:9500) of the manager on a
// node the way Longhorn's forwarder does: the running pod labeled
// app=longhorn-manager in namespace on that node, by its pod IP.
func ManagerPodAddress(kube kubernetes.Interface, namespace string) func(ctx context.Context, node string) (string, error) {
	return func(ctx context.Context, node string) (string, error) {
		pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=longhorn-manager",
			FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return "", fmt.Errorf("list the longhorn-manager pods of node %s: %w", node, err)
		}
		return managerPodIP(pods.Items, node)
	}
}

// managerPodIP picks the running manager pod of node (the newest first).
func managerPodIP(pods []corev1.Pod, node string) (string, error) {
	sort.Slice(pods, func(i, j int) bool { return pods[j].CreationTimestamp.Before(&pods[i].CreationTimestamp) })
	for _, p := range pods {
		if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(DefaultPort)), nil
		}
	}
	return "", fmt.Errorf("no running longhorn-manager pod on node %s", node)
}
