package imrpc

import "github.com/longhorn-go/longhorn/instance-manager/cgroup"

// LimitsFromRPC converts the wire form; nil is no limit.
func LimitsFromRPC(l *ResourceLimits) cgroup.Limits {
	return cgroup.Limits{
		CPUMillis: l.GetCpuMillis(), MemoryBytes: l.GetMemoryBytes(),
		ReadBPS: l.GetReadBps(), WriteBPS: l.GetWriteBps(), ReadIOPS: l.GetReadIops(), WriteIOPS: l.GetWriteIops(),
		IOPath: l.GetIoPath(),
	}
}

// LimitsToRPC is the wire form of l; nil when no limit is set.
func LimitsToRPC(l cgroup.Limits) *ResourceLimits {
	if l.IsZero() {
		return nil
	}
	return &ResourceLimits{
		CpuMillis: l.CPUMillis, MemoryBytes: l.MemoryBytes,
		ReadBps: l.ReadBPS, WriteBps: l.WriteBPS, ReadIops: l.ReadIOPS, WriteIops: l.WriteIOPS,
		IoPath: l.IOPath,
	}
}
