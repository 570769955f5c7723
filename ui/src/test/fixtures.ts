// Resources in the shapes the manager's /v1 sends.

import type { LonghornNode, Setting, Snapshot, Volume } from "../api/types";

export function volume(name: string, over: Partial<Volume> = {}): Volume {
  return {
    id: name,
    type: "volume",
    links: { self: `http://x/v1/volumes/${name}` },
    actions: { attach: "", detach: "", expand: "", updateReplicaCount: "", replicaRemove: "" },
    name,
    size: String(2 * 1024 ** 3),
    frontend: "blockdev",
    disableFrontend: false,
    state: "detached",
    robustness: "unknown",
    created: "2026-12-01 18:49:00 +0000 UTC",
    numberOfReplicas: 3,
    dataLocality: "disabled",
    accessMode: "rwo",
    dataEngine: "v1",
    staleReplicaTimeout: 30,
    currentNodeID: "",
    actualSize: 0,
    ready: true,
    conditions: { Scheduled: { type: "Scheduled", status: "True" } },
    replicas: [],
    controllers: [],
    ...over,
  };
}

export function attached(name: string, node = "node-1", over: Partial<Volume> = {}): Volume {
  return volume(name, {
    state: "attached",
    robustness: "healthy",
    currentNodeID: node,
    actions: {
      attach: "", detach: "", expand: "", updateReplicaCount: "", replicaRemove: "",
      snapshotCreate: "", snapshotList: "", snapshotGet: "", snapshotDelete: "", snapshotRevert: "", snapshotPurge: "",
    },
    replicas: [1, 2, 3].map((i) => ({
      name: `${name}-r-${i}`, hostId: `node-${i}`, address: `tcp://10.0.0.${i}:10000`, running: true, mode: "RW",
      diskID: "d", diskPath: "/var/lib/longhorn", dataPath: "", failedAt: "",
    })),
    controllers: [{ name: `${name}-e-0`, hostId: node, address: "", running: true, endpoint: "nbd://x", size: String(2 * 1024 ** 3), actualSize: "0", isExpanding: false }],
    ...over,
  });
}

export function snap(name: string, parent: string, over: Partial<Snapshot> = {}): Snapshot {
  return { id: name, type: "snapshot", name, parent, children: {}, removed: false, usercreated: true, created: "2026-12-01T10:00:00Z", size: "4096", labels: {}, ...over };
}

export function node(name: string, over: Partial<LonghornNode> = {}): LonghornNode {
  return {
    id: name,
    type: "node",
    name,
    address: "10.0.0.1",
    allowScheduling: true,
    evictionRequested: false,
    conditions: { Ready: { status: "True" }, Schedulable: { status: "True" } },
    tags: [],
    region: "",
    zone: "",
    disks: {
      "default-disk": {
        path: "/var/lib/longhorn",
        allowScheduling: true,
        evictionRequested: false,
        storageReserved: 30 * 1024 ** 3,
        tags: [],
        storageAvailable: 80 * 1024 ** 3,
        storageScheduled: 6 * 1024 ** 3,
        storageMaximum: 100 * 1024 ** 3,
        scheduledReplica: {},
        conditions: { Schedulable: { status: "True" } },
      },
    },
    ...over,
  };
}

export function setting(name: string, value: string, def: Partial<Setting["definition"]> = {}): Setting {
  return {
    id: name,
    type: "setting",
    name,
    value,
    definition: { displayName: name, description: `about ${name}`, category: "general", type: "string", required: false, readOnly: false, default: "", ...def },
  };
}
