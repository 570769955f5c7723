// Package metrics serves the manager's Prometheus metrics (/metrics on the
// manager's API port, Service longhorn-backend port 9500) with Longhorn's
// metric names and labels (longhorn.io docs, monitoring/metrics, 1.12):
// volume capacity, actual size, state and robustness, the engine's I/O
// throughput, IOPS and latency, node status and storage, disk storage, and
// the CPU and memory of the instance managers (with their pods' requests)
// and of the manager itself, read from the proc file system, and the size
// and state of backups and snapshots (backup.go).
// Like Longhorn's collectors, each manager reports the volumes it owns
// (status.ownerID) and its own node, so a scrape of every manager pod
// covers the cluster once; longhorn_node_count_total counts every node.
package metrics

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/longhorn-go/longhorn/engineapi"
	longhorn "github.com/longhorn-go/longhorn/k8s/pkg/apis/longhorn/v1beta2"
)

// Source lists the objects the collectors read (the manager's informer
// caches; the objects must not be modified).
type Source interface {
	ListVolumes(ctx context.Context) ([]*longhorn.Volume, error)
	ListEngines(ctx context.Context, volume string) ([]*longhorn.Engine, error)
	ListNodes(ctx context.Context) ([]*longhorn.Node, error)
	ListInstanceManagers(ctx context.Context) ([]*longhorn.InstanceManager, error)
	ListBackups(ctx context.Context) ([]*longhorn.Backup, error)
	ListSnapshots(ctx context.Context, volume string) ([]*longhorn.Snapshot, error)
}

// EngineMetricsFunc returns the I/O metrics of the engine serving at
// address (host:port); engineapi.MetricsClient.EngineMetrics.
type EngineMetricsFunc func(ctx context.Context, address string) (engineapi.Metrics, error)

// Options configure the collectors.
type Options struct {
	Source Source
	// NodeName is this manager's node: its volumes and node are reported.
	NodeName string
	// Engine reads engine I/O metrics; nil reports none.
	Engine EngineMetricsFunc
	// Timeout bounds the engine calls of one scrape (default 3 s).
	Timeout time.Duration
	// Log receives collection errors (default: logrus standard logger).
	Log logrus.FieldLogger
	// Procs measures this node's instance-manager processes (the host's
	// proc file system, /host/proc in the manager pod); nil reports no
	// instance-manager usage.
	Procs *UsageMeter
	// Pod returns a pod of Longhorn's namespace by name (the instance
	// managers' requests); nil reports none.
	Pod func(ctx context.Context, name string) (*corev1.Pod, error)
	// Self measures this manager's process SelfPID (its own /proc);
	// ManagerName (the pod's name) labels it. Nil reports no manager usage.
	Self        *UsageMeter
	SelfPID     int
	ManagerName string
}

var (
	volumeLabels = []string{"pvc_namespace", "node", "pvc", "volume"}
	stateLabels  = append(append([]string{}, volumeLabels...), "state")

	descVolumeCapacity   = desc("volume_capacity_bytes", "Configured size in bytes for this volume", volumeLabels...)
	descVolumeActualSize = desc("volume_actual_size_bytes", "Actual space used by each replica of the volume on the corresponding node", volumeLabels...)
	descVolumeState      = desc("volume_state", "Volume state: 1 for the current state (label state), 0 for the others", stateLabels...)
	descVolumeRobustness = desc("volume_robustness", "Volume robustness: 1 for the current robustness (label state), 0 for the others", stateLabels...)
	descReadThroughput   = desc("volume_read_throughput", "Read throughput of this volume (Bytes/s)", volumeLabels...)
	descWriteThroughput  = desc("volume_write_throughput", "Write throughput of this volume (Bytes/s)", volumeLabels...)
	descReadIOPS         = desc("volume_read_iops", "Read IOPS of this volume", volumeLabels...)
	descWriteIOPS        = desc("volume_write_iops", "Write IOPS of this volume", volumeLabels...)
	descReadLatency      = desc("volume_read_latency", "Read latency of this volume (ns)", volumeLabels...)
	descWriteLatency     = desc("volume_write_latency", "Write latency of this volume (ns)", volumeLabels...)

	descNodeCount       = desc("node_count_total", "Total number of nodes in the Longhorn system")
	descNodeStatus      = desc("node_status", "Status of this node: 1=true, 0=false", "condition", "condition_reason", "node")
	descNodeCapacity    = desc("node_storage_capacity_bytes", "The storage capacity of this node", "node")
	descNodeUsage       = desc("node_storage_usage_bytes", "The used storage of this node", "node")
	descNodeReservation = desc("node_storage_reservation_bytes", "The reserved storage for other applications and system on this node", "node")
	descDiskCapacity    = desc("disk_capacity_bytes", "The storage capacity of this disk", "disk", "node")
	descDiskUsage       = desc("disk_usage_bytes", "The used storage of this disk", "disk", "node")
	descDiskReservation = desc("disk_reservation_bytes", "The reserved storage for other applications and system on this disk", "disk", "node")
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("longhorn_"+name, help, labels, nil)
}

// volumeStates and robustnesses are the label values of volume_state and
// volume_robustness, in Longhorn's order.
var (
	volumeStates = []longhorn.VolumeState{longhorn.VolumeStateCreating, longhorn.VolumeStateAttached,
		longhorn.VolumeStateDetached, longhorn.VolumeStateAttaching, longhorn.VolumeStateDetaching, longhorn.VolumeStateDeleting}
	robustnesses = []longhorn.VolumeRobustness{longhorn.VolumeRobustnessUnknown, longhorn.VolumeRobustnessHealthy,
		longhorn.VolumeRobustnessDegraded, longhorn.VolumeRobustnessFaulted}
)

// collector is the prometheus.Collector of every metric above.
type collector struct{ o Options }

// NewRegistry returns a registry holding the Longhorn collectors.
func NewRegistry(o Options) *prometheus.Registry {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second
	}
	if o.Log == nil {
		o.Log = logrus.StandardLogger()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&collector{o: o})
	return reg
}

// Handler serves the registry of o and KubeRegistry (the manager's
// workqueue and REST client metrics) in the Prometheus text format (or
// OpenMetrics when asked); a failed collection part is logged and left out.
func Handler(o Options) http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{NewRegistry(o), KubeRegistry}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVolumeCapacity, descVolumeActualSize, descVolumeState, descVolumeRobustness,
		descReadThroughput, descWriteThroughput, descReadIOPS, descWriteIOPS, descReadLatency, descWriteLatency,
		descNodeCount, descNodeStatus, descNodeCapacity, descNodeUsage, descNodeReservation,
		descDiskCapacity, descDiskUsage, descDiskReservation} {
		ch <- d
	}
	for _, d := range append(append([]*prometheus.Desc{}, resourceDescs...), backupDescs...) {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	c.collectVolumes(ctx, ch)
	c.collectNodes(ctx, ch)
	c.collectInstanceManagers(ctx, ch)
	c.collectManager(ch)
	c.collectBackups(ctx, ch)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectVolumes reports the volumes this node owns.
func (c *collector) collectVolumes(ctx context.Context, ch chan<- prometheus.Metric) {
	vols, err := c.o.Source.ListVolumes(ctx)
	if err != nil {
		c.o.Log.WithError(err).Warn("metrics: list volumes")
		return
	}
	for _, v := range vols {
		if v.Status.OwnerID != c.o.NodeName {
			continue
		}
		ks := v.Status.KubernetesStatus
		l := []string{ks.Namespace, c.o.NodeName, ks.PVCName, v.Name}
		gauge(ch, descVolumeCapacity, float64(v.Spec.Size), l...)
		gauge(ch, descVolumeActualSize, float64(v.Status.ActualSize), l...)
		for _, s := range volumeStates {
			gauge(ch, descVolumeState, boolValue(v.Status.State == s), append(l, string(s))...)
		}
		rob := v.Status.Robustness
		if rob == "" {
			rob = longhorn.VolumeRobustnessUnknown
		}
		for _, r := range robustnesses {
			gauge(ch, descVolumeRobustness, boolValue(rob == r), append(l, string(r))...)
		}
		c.collectSnapshots(ctx, ch, v)
		if m, ok := c.engineMetrics(ctx, v); ok {
			gauge(ch, descReadThroughput, float64(m.ReadThroughput), l...)
			gauge(ch, descWriteThroughput, float64(m.WriteThroughput), l...)
			gauge(ch, descReadIOPS, float64(m.ReadIOPS), l...)
			gauge(ch, descWriteIOPS, float64(m.WriteIOPS), l...)
			gauge(ch, descReadLatency, float64(m.ReadLatency), l...)
			gauge(ch, descWriteLatency, float64(m.WriteLatency), l...)
		}
	}
}

// engineMetrics asks the running engine of an attached volume for its I/O
// metrics; ok is false when there is none to ask or the call failed.
func (c *collector) engineMetrics(ctx context.Context, v *longhorn.Volume) (engineapi.Metrics, bool) {
	if c.o.Engine == nil || v.Status.State != longhorn.VolumeStateAttached {
		return engineapi.Metrics{}, false
	}
	engines, err := c.o.Source.ListEngines(ctx, v.Name)
	if err != nil {
		c.o.Log.WithError(err).WithField("volume", v.Name).Warn("metrics: list engines")
		return engineapi.Metrics{}, false
	}
	for _, e := range engines {
		if e.Status.CurrentState != longhorn.InstanceStateRunning || e.Status.IP == "" || e.Status.Port == 0 {
			continue
		}
		m, err := c.o.Engine(ctx, net.JoinHostPort(e.Status.IP, strconv.Itoa(e.Status.Port)))
		if err != nil {
			c.o.Log.WithError(err).WithField("volume", v.Name).Debug("metrics: engine metrics")
			return engineapi.Metrics{}, false
		}
		return m, true
	}
	return engineapi.Metrics{}, false
}

// collectNodes reports the node count, and this node's status and storage.
func (c *collector) collectNodes(ctx context.Context, ch chan<- prometheus.Metric) {
	nodes, err := c.o.Source.ListNodes(ctx)
	if err != nil {
		c.o.Log.WithError(err).Warn("metrics: list nodes")
		return
	}
	gauge(ch, descNodeCount, float64(len(nodes)))
	for _, n := range nodes {
		if n.Name != c.o.NodeName {
			continue
		}
		for _, cond := range n.Status.Conditions {
			gauge(ch, descNodeStatus, boolValue(cond.Status == longhorn.ConditionStatusTrue),
				strings.ToLower(cond.Type), cond.Reason, n.Name)
		}
		gauge(ch, descNodeStatus, boolValue(n.Spec.AllowScheduling), "allowScheduling", "", n.Name)
		var capacity, usage, reserved int64
		for name, st := range n.Status.DiskStatus {
			if st == nil {
				continue
			}
			spec := n.Spec.Disks[name]
			used := st.StorageMaximum - st.StorageAvailable
			capacity, usage, reserved = capacity+st.StorageMaximum, usage+used, reserved+spec.StorageReserved
			gauge(ch, descDiskCapacity, float64(st.StorageMaximum), name, n.Name)
			gauge(ch, descDiskUsage, float64(used), name, n.Name)
			gauge(ch, descDiskReservation, float64(spec.StorageReserved), name, n.Name)
		}
		gauge(ch, descNodeCapacity, float64(capacity), n.Name)
		gauge(ch, descNodeUsage, float64(usage), n.Name)
		gauge(ch, descNodeReservation, float64(reserved), n.Name)
	}
}
