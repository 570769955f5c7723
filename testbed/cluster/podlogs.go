package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PodLogsDir is where SavePodLogs writes, under the cluster's log directory.
const PodLogsDir = "pods"

// longhornKinds are the Longhorn objects SavePodLogs writes as YAML.
const longhornKinds = "volumes.longhorn.io,engines.longhorn.io,replicas.longhorn.io," +
	"volumeattachments.longhorn.io,snapshots.longhorn.io,nodes.longhorn.io,instancemanagers.longhorn.io"

// SavePodLogs writes the logs of every pod of namespace (all containers,
// with timestamps) to <state>/logs/pods/<pod>.log and the Longhorn objects
// of the namespace to <state>/logs/pods/longhorn-objects.yaml and its
// events to events.txt there, replacing
// an earlier save. Meant for a failed run before the cluster goes: the
// control plane's logs outlive the cluster, the pods' would not. It
// returns the directory; an error only when the pods cannot be listed.
// Bounded by two minutes.
func SavePodLogs(c *Config, namespace string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := filepath.Join(c.StateDir, "logs", PodLogsDir)
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out, err := c.Kubectl(ctx, "get", "pods", "-n", namespace, "-o", "name").Output()
	if err != nil {
		return "", fmt.Errorf("list pods of %s: %w", namespace, err)
	}
	for _, p := range strings.Fields(string(out)) {
		logs, _ := c.Kubectl(ctx, "logs", "-n", namespace, p, "--all-containers", "--timestamps").CombinedOutput()
		_ = os.WriteFile(filepath.Join(dir, strings.TrimPrefix(p, "pod/")+".log"), logs, 0o644)
	}
	objs, _ := c.Kubectl(ctx, "get", "-n", namespace, "-o", "yaml", longhornKinds).CombinedOutput()
	_ = os.WriteFile(filepath.Join(dir, "longhorn-objects.yaml"), objs, 0o644)
	// The events say what the controllers decided (ReusingReplica,
	// Replenishing, Evicting, ...) where the logs at info level do not.
	events, _ := c.Kubectl(ctx, "get", "events", "-n", namespace, "--sort-by=.lastTimestamp", "-o", "wide").CombinedOutput()
	_ = os.WriteFile(filepath.Join(dir, "events.txt"), events, 0o644)
	return dir, nil
}
