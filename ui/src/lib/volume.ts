// What the volume pages derive from a Volume resource: its status label,
// the replicas being rebuilt and their progress, and the sums the
// dashboard shows.

import type { Replica, Volume } from "../api/types";
import { parseTime } from "./format";

/** Health is the one-word status Longhorn's UI shows for a volume. */
export type Health = "healthy" | "degraded" | "faulted" | "detached" | "attaching" | "detaching" | "creating" | "deleting" | "unknown";

/** volumeHealth combines state and robustness the way a user reads them. */
export function volumeHealth(v: Pick<Volume, "state" | "robustness">): Health {
  switch (v.state) {
    case "attached":
      return v.robustness === "healthy" || v.robustness === "degraded" || v.robustness === "faulted" ? v.robustness : "unknown";
    case "detached":
      return v.robustness === "faulted" ? "faulted" : "detached";
    case "attaching":
    case "detaching":
    case "creating":
    case "deleting":
      return v.state;
    default:
      return v.robustness === "faulted" ? "faulted" : "unknown";
  }
}

/** Rebuild is one replica being rebuilt: from rebuildStatus, else from its WO mode. */
export interface Rebuild {
  replica: string;
  progress: number | null;
  state: string;
  error: string;
  fromReplica: string;
}

/**
 * rebuilds lists the replicas being rebuilt. rebuildStatus (the engine's
 * report, keyed by replica address or name) gives progress; a replica in
 * mode WO without a status entry is rebuilding with unknown progress, and
 * so is a running replica of an attached volume that the engine does not
 * list yet (state "pending": it is being added, the first step of a
 * rebuild; a reused replica can pass through WO in well under a second).
 */
export function rebuilds(v: Volume): Rebuild[] {
  const out: Rebuild[] = [];
  const seen = new Set<string>();
  for (const s of v.rebuildStatus ?? []) {
    if (!s.isRebuilding && !s.error) continue;
    const r = replicaByAddress(v.replicas, s.replica);
    const name = r?.name ?? s.replica;
    seen.add(name);
    out.push({ replica: name, progress: s.progress ?? 0, state: s.state ?? "", error: s.error ?? "", fromReplica: s.fromReplica ?? "" });
  }
  const engineUp = v.state === "attached" && (v.controllers ?? []).some((c) => c.running);
  for (const r of v.replicas ?? []) {
    if (seen.has(r.name)) continue;
    if (r.mode === "WO") out.push({ replica: r.name, progress: null, state: "in_progress", error: "", fromReplica: "" });
    else if (engineUp && r.running && !r.mode && !r.failedAt) out.push({ replica: r.name, progress: null, state: "pending", error: "", fromReplica: "" });
  }
  return out;
}

function replicaByAddress(rs: Replica[] | undefined, key: string): Replica | undefined {
  if (!rs) return undefined;
  const bare = key.replace(/^tcp:\/\//, "");
  return rs.find((r) => r.name === key || r.address === key || r.address.replace(/^tcp:\/\//, "") === bare);
}

/**
 * replicaState is what the replica table shows: its mode, or why it has
 * none. A running replica without a mode is "rebuilding" while its volume
 * is attached (the engine is adding it), else just "running".
 */
export function replicaState(r: Replica, attached = false): string {
  if (r.failedAt) return "failed";
  if (!r.running) return "stopped";
  if (r.mode === "RW") return "healthy";
  if (r.mode === "WO") return "rebuilding";
  if (r.mode === "ERR") return "error";
  return attached ? "rebuilding" : "running";
}

/** attachedNode is the node the volume is attached to ("" when none). */
export function attachedNode(v: Volume): string {
  if (v.currentNodeID) return v.currentNodeID;
  return v.controllers?.find((c) => c.running)?.hostId ?? "";
}

/** countBy counts volumes per health value, every Health present. */
export function countByHealth(vs: Volume[]): Record<Health, number> {
  const out: Record<Health, number> = { healthy: 0, degraded: 0, faulted: 0, detached: 0, attaching: 0, detaching: 0, creating: 0, deleting: 0, unknown: 0 };
  for (const v of vs) out[volumeHealth(v)]++;
  return out;
}

/** newestFirst orders by the created timestamp, newest first, unknown last. */
export function createdOrder(a: { created: string }, b: { created: string }): number {
  const ta = parseTime(a.created);
  const tb = parseTime(b.created);
  return (Number.isNaN(tb) ? -Infinity : tb) - (Number.isNaN(ta) ? -Infinity : ta);
}

/** expansion reports an expansion in progress or failed, from the engine. */
export function expansion(v: Volume): { expanding: boolean; error: string; from: string; to: string } | null {
  const c = v.controllers?.find((x) => x.isExpanding || x.lastExpansionError);
  if (c) return { expanding: c.isExpanding, error: c.lastExpansionError ?? "", from: c.size, to: v.size };
  if (v.expansionRequired) return { expanding: true, error: "", from: v.controllers?.[0]?.size ?? "", to: v.size };
  return null;
}
