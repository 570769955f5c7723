// The snapshot chain of an attached volume, as a tree from the oldest
// snapshot to the volume head. Fetched with the snapshotList action when
// the volume's live resource changes (a snapshot, a purge, a revert all
// change it) and after each action here, never on a timer.

import { useCallback, useEffect, useState } from "react";
import { api, can, errorMessage } from "../api/client";
import type { Collection, Snapshot, Volume } from "../api/types";
import { Confirm } from "../components/Dialog";
import { useAction } from "../components/useAction";
import { Badge, Progress } from "../components/Widgets";
import { formatBytes, formatTime } from "../lib/format";
import { HEAD, isSystem, snapshotTree, type SnapshotNode } from "../lib/snapshots";

/** changeKey is what of the volume moves when its snapshots may have changed. */
function changeKey(v: Volume): string {
  return JSON.stringify([v.state, v.actualSize, v.purgeStatus, v.controllers?.map((c) => [c.name, c.running, c.actualSize]), v.disableFrontend]);
}

type Pending = { kind: "delete" | "revert" | "purge" | "backup"; name: string } | null;

export function SnapshotTree({ volume }: { volume: Volume }) {
  const [snaps, setSnaps] = useState<Snapshot[] | null>(null);
  const [loadErr, setLoadErr] = useState("");
  const [pending, setPending] = useState<Pending>(null);
  const [showSystem, setShowSystem] = useState(true);
  const { busy, run } = useAction();
  const listable = can(volume, "snapshotList");
  const key = changeKey(volume);
  const load = useCallback(async () => {
    if (!listable) return;
    try {
      const c = await api.action<Collection<Snapshot>>("volumes", volume.name, "snapshotList");
      setSnaps(c.data ?? []);
      setLoadErr("");
    } catch (err) {
      setLoadErr(errorMessage(err));
    }
  }, [listable, volume.name]);
  useEffect(() => {
    void load();
  }, [load, key]);

  const take = async () => {
    await run("Take snapshot", () => api.action("volumes", volume.name, "snapshotCreate", {}), "Snapshot taken");
    await load();
  };
  const confirm = async () => {
    if (!pending) return;
    const { kind, name } = pending;
    if (kind === "delete") await run(`Delete snapshot ${name}`, () => api.action("volumes", volume.name, "snapshotDelete", { name }), `Snapshot ${name} deleted`);
    if (kind === "revert") await run(`Revert to ${name}`, () => api.action("volumes", volume.name, "snapshotRevert", { name }), `Reverted to ${name}`);
    if (kind === "purge") await run("Purge snapshots", () => api.action("volumes", volume.name, "snapshotPurge", {}), "Purge started");
    if (kind === "backup") await run(`Back up ${name}`, () => api.action("volumes", volume.name, "snapshotBackup", { name }), `Backup of ${name} started`);
    setPending(null);
    await load();
  };
  const purging = (volume.purgeStatus ?? []).filter((p) => p.isPurging);
  const canRevert = can(volume, "snapshotRevert") && volume.disableFrontend;
  return (
    <section aria-labelledby="snap-h">
      <div className="section-head">
        <h2 id="snap-h">Snapshots</h2>
        <div className="actions">
          <button type="button" className="primary" disabled={busy || !can(volume, "snapshotCreate")} onClick={take}>
            Take Snapshot
          </button>
          <button type="button" disabled={busy || !can(volume, "snapshotPurge")} onClick={() => setPending({ kind: "purge", name: "" })}>
            Purge
          </button>
          <label className="check">
            <input type="checkbox" checked={showSystem} onChange={(e) => setShowSystem(e.target.checked)} /> Show system-created
          </label>
        </div>
      </div>
      {purging.length > 0 && (
        <p className="progress-line">
          Purging: <Progress value={Math.min(...purging.map((p) => p.progress))} label="Purge progress" />
        </p>
      )}
      {!listable && <p className="empty">Snapshots are shown while the volume is attached.</p>}
      {listable && loadErr && (
        <p className="form-error" role="alert">
          Cannot list snapshots: {loadErr}
        </p>
      )}
      {listable && snaps === null && !loadErr && <p className="empty">Loading snapshots…</p>}
      {listable && snaps !== null && (
        <ul className="tree" role="tree" aria-label={`Snapshots of ${volume.name}`}>
          {snapshotTree(snaps).map((n) => (
            <TreeNode key={n.snap.name} node={n} showSystem={showSystem} canRevert={canRevert} canDelete={can(volume, "snapshotDelete")} canBackup={can(volume, "snapshotBackup")} onPending={setPending} />
          ))}
        </ul>
      )}
      {listable && !canRevert && can(volume, "snapshotRevert") && <p className="hint">To revert, detach and attach the volume in maintenance mode.</p>}
      {pending && (
        <Confirm
          title={TITLES[pending.kind](pending.name)}
          message={pending.kind === "backup" ? `The snapshot is uploaded to the backup target "${volume.backupTargetName || "default"}"; the Backups section shows its progress.` : MESSAGES[pending.kind]}
          confirmLabel={LABELS[pending.kind]}
          danger={pending.kind !== "backup"}
          busy={busy}
          onConfirm={confirm}
          onCancel={() => setPending(null)}
        />
      )}
    </section>
  );
}

type Kind = NonNullable<Pending>["kind"];
const TITLES: Record<Kind, (name: string) => string> = {
  purge: () => "Purge snapshots?",
  revert: (n) => `Revert to ${n}?`,
  delete: (n) => `Delete snapshot ${n}?`,
  backup: (n) => `Back up snapshot ${n}?`,
};
const MESSAGES: Record<Exclude<Kind, "backup">, string> = {
  purge: "Removed snapshots are merged into their children and their space is freed.",
  revert: "The volume's current data is replaced by this snapshot's. Writes made after it are lost.",
  delete: "The snapshot is marked removed; its data is merged away by the next purge.",
};
const LABELS: Record<Kind, string> = { purge: "Purge", revert: "Revert", delete: "Delete", backup: "Create Backup" };

interface NodeProps {
  node: SnapshotNode;
  showSystem: boolean;
  canRevert: boolean;
  canDelete: boolean;
  canBackup: boolean;
  onPending: (p: Pending) => void;
}

function TreeNode({ node, showSystem, canRevert, canDelete, canBackup, onPending }: NodeProps) {
  const s = node.snap;
  const head = s.name === HEAD;
  const hidden = !showSystem && isSystem(s);
  const kids = node.children.map((c) => (
    <TreeNode key={c.snap.name} node={c} showSystem={showSystem} canRevert={canRevert} canDelete={canDelete} canBackup={canBackup} onPending={onPending} />
  ));
  if (hidden) return <>{kids}</>;
  return (
    <li role="treeitem" aria-expanded={node.children.length > 0 ? true : undefined} aria-label={head ? "Volume Head" : s.name} data-snapshot={s.name}>
      <div className={`snap ${head ? "head" : ""} ${s.removed ? "removed" : ""}`}>
        <span className="snap-name">{head ? "Volume Head" : s.name}</span>
        {!head && <Badge value={s.usercreated ? "normal" : "unknown"} label={s.usercreated ? "user" : "system"} />}
        {s.removed && <Badge value="deleting" label="removed" />}
        <span className="snap-meta">
          {!head && formatTime(s.created)} · {formatBytes(s.size)}
        </span>
        {!head && !s.removed && (
          <span className="snap-actions">
            <button type="button" className="small" disabled={!canBackup} onClick={() => onPending({ kind: "backup", name: s.name })} aria-label={`Back up snapshot ${s.name}`}>
              Back up
            </button>
            <button type="button" className="small" disabled={!canRevert} onClick={() => onPending({ kind: "revert", name: s.name })} aria-label={`Revert to ${s.name}`}>
              Revert
            </button>
            <button type="button" className="small danger" disabled={!canDelete} onClick={() => onPending({ kind: "delete", name: s.name })} aria-label={`Delete snapshot ${s.name}`}>
              Delete
            </button>
          </span>
        )}
      </div>
      {kids.length > 0 && <ul role="group">{kids}</ul>}
    </li>
  );
}
