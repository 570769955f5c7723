package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

var (
	imLabels      = []string{"instance_manager", "instance_manager_type", "node"}
	managerLabels = []string{"manager", "node"}

	descIMCPUUsage      = desc("instance_manager_cpu_usage_millicpu", "The cpu usage of this longhorn instance manager", imLabels...)
	descIMCPURequests   = desc("instance_manager_cpu_requests_millicpu", "Requested CPU resources in kubernetes of this longhorn instance manager", imLabels...)
	descIMMemUsage      = desc("instance_manager_memory_usage_bytes", "The memory usage of this longhorn instance manager", imLabels...)
	descIMMemRequests   = desc("instance_manager_memory_requests_bytes", "Requested memory in Kubernetes of this longhorn instance manager", imLabels...)
	descManagerCPUUsage = desc("manager_cpu_usage_millicpu", "The cpu usage of this longhorn manager", managerLabels...)
	descManagerMemUsage = desc("manager_memory_usage_bytes", "The memory usage of this longhorn manager", managerLabels...)

	resourceDescs = []*prometheus.Desc{descIMCPUUsage, descIMCPURequests, descIMMemUsage, descIMMemRequests,
		descManagerCPUUsage, descManagerMemUsage}
)

// collectManager reports this manager's own CPU and memory (Options.Self).
func (c *collector) collectManager(ch chan<- prometheus.Metric) {
	if c.o.Self == nil || c.o.SelfPID == 0 {
		return
	}
	u, ok := c.o.Self.Measure("manager", c.o.SelfPID)
	if !ok {
		return
	}
	gauge(ch, descManagerCPUUsage, u.MilliCPU, c.o.ManagerName, c.o.NodeName)
	gauge(ch, descManagerMemUsage, float64(u.MemoryBytes), c.o.ManagerName, c.o.NodeName)
}

// collectInstanceManagers reports the CPU and memory of this node's
// running instance managers (the instance-manager process and its engine
// and replica processes, found in Options.Procs by the pod IP) and their
// pods' requests.
func (c *collector) collectInstanceManagers(ctx context.Context, ch chan<- prometheus.Metric) {
	if c.o.Procs == nil {
		return
	}
	ims, err := c.o.Source.ListInstanceManagers(ctx)
	if err != nil {
		c.o.Log.WithError(err).Warn("metrics: list instance managers")
		return
	}
	for _, im := range ims {
		if im.Spec.NodeID != c.o.NodeName || im.Status.CurrentState != longhorn.InstanceManagerStateRunning {
			continue
		}
		labels := []string{im.Name, string(longhorn.InstanceManagerTypeAllInOne), im.Spec.NodeID}
		if pid := c.o.Procs.FindInstanceManager(im.Status.IP); pid != 0 {
			if u, ok := c.o.Procs.Measure("im/"+im.Name, pid); ok {
				gauge(ch, descIMCPUUsage, u.MilliCPU, labels...)
				gauge(ch, descIMMemUsage, float64(u.MemoryBytes), labels...)
			}
		}
		if c.o.Pod == nil {
			continue
		}
		if pod, err := c.o.Pod(ctx, im.Name); err == nil {
			cpu, mem := podRequests(pod)
			gauge(ch, descIMCPURequests, float64(cpu), labels...)
			gauge(ch, descIMMemRequests, float64(mem), labels...)
		}
	}
}

// podRequests sums the CPU (millicpu) and memory (bytes) requests of the
// pod's containers.
func podRequests(p *corev1.Pod) (cpu, mem int64) {
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
			cpu += q.MilliValue()
		}
		if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			mem += q.Value()
		}
	}
	return cpu, mem
}
