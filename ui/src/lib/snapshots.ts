// The snapshot chain of a volume as a tree: Longhorn's snapshotList gives
// every snapshot with its parent and children, "volume-head" included.

import type { Snapshot } from "../api/types";
import { parseTime } from "./format";

export const HEAD = "volume-head";

export interface SnapshotNode {
  snap: Snapshot;
  children: SnapshotNode[];
}

/**
 * snapshotTree links snapshots into trees from their parent fields. Roots
 * are snapshots whose parent is empty or unknown. Children are ordered by
 * creation time, the head last. A cycle (a corrupt list) is broken by
 * visiting each snapshot once.
 */
export function snapshotTree(snaps: Snapshot[]): SnapshotNode[] {
  const byName = new Map(snaps.map((s) => [s.name, s]));
  const kids = new Map<string, Snapshot[]>();
  const roots: Snapshot[] = [];
  for (const s of snaps) {
    if (s.parent && byName.has(s.parent) && s.parent !== s.name) {
      const list = kids.get(s.parent) ?? [];
      list.push(s);
      kids.set(s.parent, list);
    } else {
      roots.push(s);
    }
  }
  const seen = new Set<string>();
  const build = (s: Snapshot): SnapshotNode => {
    seen.add(s.name);
    const children = (kids.get(s.name) ?? []).filter((c) => !seen.has(c.name)).sort(byCreated).map(build);
    return { snap: s, children };
  };
  const out = roots.sort(byCreated).map(build);
  // Snapshots only reachable through a cycle: show them as roots.
  for (const s of snaps) if (!seen.has(s.name)) out.push(build(s));
  return out;
}

function byCreated(a: Snapshot, b: Snapshot): number {
  if (a.name === HEAD) return 1;
  if (b.name === HEAD) return -1;
  const d = (parseTime(a.created) || 0) - (parseTime(b.created) || 0);
  return d !== 0 && !Number.isNaN(d) ? d : a.name.localeCompare(b.name);
}

/** isSystem reports a snapshot the system made (rebuild, expansion), not the user. */
export function isSystem(s: Snapshot): boolean {
  return s.name !== HEAD && !s.usercreated;
}

/** countSnapshots counts the user-visible snapshots (not the head, not removed). */
export function countSnapshots(snaps: Snapshot[]): number {
  return snaps.filter((s) => s.name !== HEAD && !s.removed).length;
}
