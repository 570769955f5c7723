// Node and disk status and storage sums, as Longhorn's UI reports them.

import type { Disk, LonghornNode } from "../api/types";
import { conditionTrue } from "./format";

export type NodeStatus = "schedulable" | "unschedulable" | "disabled" | "down";

/** nodeStatus: down when not Ready, disabled when scheduling is off, else from the Schedulable condition. */
export function nodeStatus(n: LonghornNode): NodeStatus {
  if (!conditionTrue(n.conditions, "Ready")) return "down";
  if (!n.allowScheduling) return "disabled";
  return conditionTrue(n.conditions, "Schedulable") ? "schedulable" : "unschedulable";
}

/** diskStatus: disabled when scheduling is off, else from the disk's Schedulable condition. */
export function diskStatus(d: Disk): "schedulable" | "unschedulable" | "disabled" {
  if (!d.allowScheduling) return "disabled";
  if (d.conditions && Object.keys(d.conditions).length > 0 && !conditionTrue(d.conditions, "Schedulable")) return "unschedulable";
  return "schedulable";
}

/** Storage sums in bytes. */
export interface Storage {
  total: number;
  reserved: number;
  used: number;
  scheduled: number;
  schedulable: number;
  disabled: number;
}

/**
 * storageOf sums disks: total = maximum; used = maximum - available;
 * reserved = storageReserved; schedulable = available - reserved (not
 * below 0) of disks that take replicas; disabled = the maximum of disks
 * (or nodes) with scheduling off or down.
 */
export function storageOf(nodes: LonghornNode[]): Storage {
  const s: Storage = { total: 0, reserved: 0, used: 0, scheduled: 0, schedulable: 0, disabled: 0 };
  for (const n of nodes) {
    const off = nodeStatus(n) === "down" || !n.allowScheduling;
    for (const d of Object.values(n.disks ?? {})) {
      s.total += d.storageMaximum ?? 0;
      s.used += Math.max(0, (d.storageMaximum ?? 0) - (d.storageAvailable ?? 0));
      s.scheduled += d.storageScheduled ?? 0;
      if (off || diskStatus(d) !== "schedulable") {
        s.disabled += d.storageMaximum ?? 0;
        continue;
      }
      s.reserved += d.storageReserved ?? 0;
      s.schedulable += Math.max(0, (d.storageAvailable ?? 0) - (d.storageReserved ?? 0));
    }
  }
  return s;
}
