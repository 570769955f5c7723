package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/longhorn-go/longhorn/engine/frontend/nbd"
	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
	"github.com/longhorn-go/longhorn/types"
)

// Multus annotations (k8s.v1.cni.cncf.io): the networks a pod asks for, and
// the network status Multus writes back.
const (
	multusNetworksAnnotation = "k8s.v1.cni.cncf.io/networks"
	multusStatusAnnotation   = "k8s.v1.cni.cncf.io/network-status"
	// storageNetworkInterface is the interface name inside the pod.
	storageNetworkInterface = "lhnet1"
	// imContainerName is the instance-manager container.
	imContainerName = "instance-manager"
	// imPortRange is the range engine and replica processes get ports from.
	imPortRange = "10000-30000"
)

// imPodParams are the inputs of the instance-manager pod.
type imPodParams struct {
	Namespace      string
	ServiceAccount string
	// StorageNetwork is the storage-network setting ("<namespace>/<name>" of
	// a NetworkAttachmentDefinition, or "").
	StorageNetwork string
	// DataPath is default-data-path, mounted at the same path.
	DataPath string
	// System are the settings applied to every pod the manager creates.
	System systemManaged
	// NoProxy adds --no-proxy (Options.InstanceManagerNoProxy).
	NoProxy bool
	// CPURequest is the container's CPU request in millicpu (0: none); see
	// imCPURequest.
	CPURequest int64
}

// imPod renders the instance-manager pod of im: privileged, pod network
// (not host network), pinned to the node, running
// `longhorn instance-manager --listen $(POD_IP):8500 --proxy-listen $(POD_IP):8501`
// from the instance manager's image, with the Multus annotation when a
// storage network is set, and the system-managed settings (priority class,
// tolerations, node selector, pull secret and policy). The pod carries an
// owner reference to im.
func imPod(im *longhorn.InstanceManager, p imPodParams) *corev1.Pod {
	privileged, isController, optional := true, true, true
	bidir := corev1.MountPropagationBidirectional
	dirType := corev1.HostPathDirectoryOrCreate
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: im.Name, Namespace: p.Namespace,
			Labels: map[string]string{
				types.LonghornLabelComponent:           types.LonghornComponentInstanceManager,
				types.LonghornLabelInstanceManager:     im.Name,
				types.LonghornLabelInstanceManagerType: string(longhorn.InstanceManagerTypeAllInOne),
				types.LonghornLabelNode:                im.Spec.NodeID,
				types.LonghornLabelDataEngine:          string(longhorn.DataEngineTypeV1),
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: longhorn.SchemeGroupVersion.String(), Kind: "InstanceManager",
				Name: im.Name, UID: im.UID, Controller: &isController}},
		},
		Spec: corev1.PodSpec{
			NodeName:           im.Spec.NodeID,
			ServiceAccountName: p.ServiceAccount,
			RestartPolicy:      corev1.RestartPolicyNever,
			HostNetwork:        false,
			Containers: []corev1.Container{{
				Name:    imContainerName,
				Image:   im.Spec.Image,
				Command: []string{"longhorn"},
				Args: []string{"instance-manager",
					"--listen", fmt.Sprintf("$(POD_IP):%d", engineapi.DefaultInstanceManagerPort),
					"--proxy-listen", fmt.Sprintf("$(POD_IP):%d", engineapi.DefaultProxyPort),
					"--port-range", imPortRange,
					"--data-root", p.DataPath + "/instance-manager",
					"--tls-dir", engineapi.TLSDir},
				Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports: []corev1.ContainerPort{
					{Name: "im-grpc", ContainerPort: engineapi.DefaultInstanceManagerPort},
					{Name: "im-proxy", ContainerPort: engineapi.DefaultProxyPort},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{
					Port: intstr.FromInt32(engineapi.DefaultInstanceManagerPort)}}, PeriodSeconds: 5},
				SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "dev", MountPath: "/dev"},
					{Name: "proc", MountPath: "/host/proc"},
					{Name: "longhorn", MountPath: p.DataPath, MountPropagation: &bidir},
					{Name: "grpc-tls", MountPath: engineapi.TLSDir, ReadOnly: true},
					{Name: "nbd-sockets", MountPath: nbd.DefaultSocketDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "dev", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/dev"}}},
				{Name: "proc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/proc"}}},
				{Name: "longhorn", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p.DataPath, Type: &dirType}}},
				// The engines' nbd sockets are the node's: a live engine
				// upgrade's new engine, in the instance manager of the new
				// image, takes the old engine's socket over.
				{Name: "nbd-sockets", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: nbd.DefaultSocketDir, Type: &dirType}}},
				// Mutual TLS when the Secret exists (engineapi.TLSSecretName).
				{Name: "grpc-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: engineapi.TLSSecretName, Optional: &optional}}},
			},
		},
	}
	if p.CPURequest > 0 {
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewMilliQuantity(p.CPURequest, resource.DecimalSI)}
	}
	if p.NoProxy {
		c := &pod.Spec.Containers[0]
		c.Args = append(c.Args, "--no-proxy")
		c.Ports = c.Ports[:1]
	}
	if p.StorageNetwork != "" {
		pod.Annotations = map[string]string{multusNetworksAnnotation: multusNetworks(p.StorageNetwork)}
	}
	p.System.apply(pod)
	return pod
}

// multusNetworks renders the networks annotation for "<namespace>/<name>".
func multusNetworks(nad string) string {
	ns, name, ok := strings.Cut(nad, "/")
	if !ok {
		ns, name = "", nad
	}
	b, _ := json.Marshal([]map[string]string{{"namespace": ns, "name": name, "interface": storageNetworkInterface}})
	return string(b)
}

// storageIPOf returns the pod's storage network IP from Multus' network
// status, or the pod IP when there is no storage network.
func storageIPOf(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	if pod.Annotations[multusNetworksAnnotation] == "" {
		return pod.Status.PodIP
	}
	var st []struct {
		Interface string   `json:"interface"`
		IPs       []string `json:"ips"`
	}
	if err := json.Unmarshal([]byte(pod.Annotations[multusStatusAnnotation]), &st); err != nil {
		return ""
	}
	for _, s := range st {
		if s.Interface == storageNetworkInterface && len(s.IPs) > 0 {
			return s.IPs[0]
		}
	}
	return ""
}

// podNeedsRecreate reports whether an existing pod no longer matches what
// imPod would render (image, CPU request, --no-proxy or system-managed
// settings changed). A pod of an instance manager older than the proxy
// (--no-proxy) left by managers that no longer start them is outdated, as
// Longhorn's older instance managers are after an upgrade: the caller
// replaces it once it runs no instance. A storage-network change is the
// setting controller's (reconcileStorageNetwork).
func podNeedsRecreate(pod *corev1.Pod, want *corev1.Pod) bool {
	if len(pod.Spec.Containers) == 0 || pod.Spec.Containers[0].Image != want.Spec.Containers[0].Image {
		return true
	}
	if slices.Contains(pod.Spec.Containers[0].Args, "--no-proxy") != slices.Contains(want.Spec.Containers[0].Args, "--no-proxy") {
		return true
	}
	if !pod.Spec.Containers[0].Resources.Requests.Cpu().Equal(*want.Spec.Containers[0].Resources.Requests.Cpu()) {
		return true
	}
	return pod.Annotations[systemManagedAnnotation] != want.Annotations[systemManagedAnnotation]
}

// imCPURequest decides an instance-manager pod's CPU request in millicpu,
// as Longhorn does: the node's spec.instanceManagerCPURequest when set, else
// guaranteed-instance-manager-cpu percent of the Kubernetes node's
// allocatable CPU (0: no request) (pure).
func imCPURequest(nodeRequest int, guaranteedPercent float64, allocatableMilli int64) int64 {
	if nodeRequest > 0 {
		return int64(nodeRequest)
	}
	return int64(guaranteedPercent * float64(allocatableMilli) / 100)
}
