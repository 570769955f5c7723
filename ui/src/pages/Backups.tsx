// Backups: backup targets with their availability (create, edit, sync,
// delete), backup volumes (sync, delete), and each volume's backups with
// progress; restore a backup to a new volume, delete backups. Everything
// is live over the backuptargets, backupvolumes and backups streams.

import { useState } from "react";
import { api } from "../api/client";
import { useCollection } from "../api/live";
import type { Backup, BackupTarget, BackupVolume } from "../api/types";
import { Confirm } from "../components/Dialog";
import { Table, type Column } from "../components/Table";
import { useAction } from "../components/useAction";
import { Badge, Loading, Progress } from "../components/Widgets";
import { formatBytes, formatTime, parseTime } from "../lib/format";
import { RestoreDialog, TargetDialog } from "./backupDialogs";

const baseTargetColumns: Column<BackupTarget>[] = [
  { key: "name", header: "Name", render: (t) => t.name, sortValue: (t) => t.name },
  { key: "url", header: "URL", render: (t) => <code>{t.backupTargetURL || "(not set)"}</code>, sortValue: (t) => t.backupTargetURL },
  { key: "available", header: "Status", render: (t) => <Badge value={t.available ? "available" : "unavailable"} />, sortValue: (t) => String(t.available) },
  { key: "poll", header: "Poll interval", render: (t) => t.pollInterval || "-" },
  { key: "message", header: "Message", render: (t) => t.message || "-", className: "wrap" },
];

type Pending = { kind: "volume"; bv: BackupVolume } | { kind: "backup"; b: Backup } | { kind: "target"; t: BackupTarget } | null;

export function BackupsPage() {
  const targets = useCollection("backuptargets");
  const bvs = useCollection("backupvolumes");
  const backups = useCollection("backups");
  const [open, setOpen] = useState<string>("");
  const [pending, setPending] = useState<Pending>(null);
  const [restore, setRestore] = useState<Backup | null>(null);
  const [editing, setEditing] = useState<BackupTarget | "new" | null>(null);
  const { busy, run } = useAction();
  const targetColumns: Column<BackupTarget>[] = [
    ...baseTargetColumns,
    {
      key: "ops",
      header: "Operation",
      render: (t) => (
        <span className="actions">
          <button type="button" className="small" onClick={() => setEditing(t)} aria-label={`Edit backup target ${t.name}`}>
            Edit
          </button>
          <button
            type="button"
            className="small"
            disabled={busy}
            onClick={() => run(`Sync ${t.name}`, () => api.action("backuptargets", t.name, "backupTargetSync", { syncBackupTarget: true }), `Sync of ${t.name} requested`)}
            aria-label={`Sync backup target ${t.name}`}
          >
            Sync
          </button>
          <button type="button" className="small danger" disabled={t.name === "default"} onClick={() => setPending({ kind: "target", t })} aria-label={`Delete backup target ${t.name}`}>
            Delete
          </button>
        </span>
      ),
    },
  ];
  const volumeColumns: Column<BackupVolume>[] = [
    {
      key: "name",
      header: "Name",
      render: (bv) => (
        <button type="button" className="link" aria-expanded={open === bv.name} onClick={() => setOpen(open === bv.name ? "" : bv.name)}>
          {open === bv.name ? "▾" : "▸"} {bv.volumeName || bv.name}
        </button>
      ),
      sortValue: (bv) => bv.volumeName || bv.name,
    },
    { key: "size", header: "Size", render: (bv) => formatBytes(bv.size), sortValue: (bv) => Number(bv.size), className: "num" },
    { key: "last", header: "Last backup", render: (bv) => formatTime(bv.lastBackupAt), sortValue: (bv) => parseTime(bv.lastBackupAt) || 0 },
    { key: "target", header: "Target", render: (bv) => bv.backupTargetName || "-", sortValue: (bv) => bv.backupTargetName ?? "" },
    {
      key: "ops",
      header: "Operation",
      render: (bv) => (
        <span className="actions">
          <button
            type="button"
            className="small"
            disabled={busy}
            onClick={() => run(`Sync ${bv.name}`, () => api.action("backupvolumes", bv.name, "backupVolumeSync", { syncBackupVolume: true }), `Sync of ${bv.name} requested`)}
            aria-label={`Sync backup volume ${bv.name}`}
          >
            Sync
          </button>
          <button type="button" className="small danger" onClick={() => setPending({ kind: "volume", bv })} aria-label={`Delete all backups of ${bv.name}`}>
            Delete all
          </button>
        </span>
      ),
    },
  ];
  const backupColumns: Column<Backup>[] = [
    { key: "state", header: "State", render: (b) => (b.state === "InProgress" ? <Progress value={b.progress} label={`Backup ${b.name}`} /> : <Badge value={b.state || "unknown"} />), sortValue: (b) => b.state },
    { key: "name", header: "Name", render: (b) => b.name, sortValue: (b) => b.name },
    { key: "snapshot", header: "Snapshot", render: (b) => b.snapshotName, sortValue: (b) => b.snapshotName },
    { key: "size", header: "Size", render: (b) => formatBytes(b.size), sortValue: (b) => Number(b.size), className: "num" },
    { key: "created", header: "Created", render: (b) => formatTime(b.created), sortValue: (b) => parseTime(b.created) || 0 },
    { key: "error", header: "Error", render: (b) => b.error || "-", className: "wrap" },
    {
      key: "ops",
      header: "Operation",
      render: (b) => (
        <span className="actions">
          <button type="button" className="small" disabled={b.state !== "Completed"} onClick={() => setRestore(b)} aria-label={`Restore backup ${b.name}`}>
            Restore
          </button>
          <button type="button" className="small danger" onClick={() => setPending({ kind: "backup", b })} aria-label={`Delete backup ${b.name}`}>
            Delete
          </button>
        </span>
      ),
    },
  ];
  const confirm = async () => {
    if (!pending) return;
    if (pending.kind === "volume") await run(`Delete backups of ${pending.bv.name}`, () => api.remove("backupvolumes", pending.bv.name), "Backups deleted");
    else if (pending.kind === "target") await run(`Delete backup target ${pending.t.name}`, () => api.remove("backuptargets", pending.t.name), `Backup target ${pending.t.name} deleted`);
    else {
      const b = pending.b;
      const bv = (bvs.data ?? []).find((x) => x.volumeName === b.volumeName && (x.backupTargetName ?? "default") === (b.backupTargetName || "default"));
      await run(`Delete backup ${b.name}`, () => api.action("backupvolumes", bv?.name ?? b.volumeName, "backupDelete", { name: b.name }), `Backup ${b.name} deleted`);
    }
    setPending(null);
  };
  const openBV = (bvs.data ?? []).find((bv) => bv.name === open);
  return (
    <div className="page">
      <h1>Backups</h1>
      <section aria-labelledby="bt-h">
        <div className="section-head">
          <h2 id="bt-h">Backup targets</h2>
          <button type="button" className="primary" onClick={() => setEditing("new")}>
            Create Backup Target
          </button>
        </div>
        <Loading state={targets} what="backup targets">
          {(ts) => <Table label="backup targets" rows={ts} columns={targetColumns} rowKey={(t) => t.name} initialSort={{ key: "name" }} empty="No backup target is set (Settings or the longhorn chart's defaultBackupStore)." />}
        </Loading>
      </section>
      <section aria-labelledby="bv-h">
        <h2 id="bv-h">Backup volumes</h2>
        <Loading state={bvs} what="backup volumes">
          {(list) => <Table label="backup volumes" rows={list} columns={volumeColumns} rowKey={(bv) => bv.name} initialSort={{ key: "name" }} empty="No backups yet." />}
        </Loading>
      </section>
      {openBV && (
        <section aria-labelledby="b-h" className="card">
          <h2 id="b-h">Backups of {openBV.volumeName || openBV.name}</h2>
          <Loading state={backups} what="backups">
            {(list) => (
              <Table
                label={`backups of ${openBV.name}`}
                rows={list.filter((b) => b.volumeName === (openBV.volumeName || openBV.name) && (b.backupTargetName || "default") === (openBV.backupTargetName || "default"))}
                columns={backupColumns}
                rowKey={(b) => b.name}
                initialSort={{ key: "created", desc: true }}
              />
            )}
          </Loading>
        </section>
      )}
      {pending && (
        <Confirm
          title={pending.kind === "volume" ? `Delete every backup of ${pending.bv.name}?` : pending.kind === "target" ? `Delete backup target ${pending.t.name}?` : `Delete backup ${pending.b.name}?`}
          message={
            pending.kind === "target"
              ? "Its backup volumes and backups disappear from this cluster; the data stays in the backupstore."
              : "The backup data is removed from the backup target. This cannot be undone."
          }
          confirmLabel="Delete"
          busy={busy}
          onConfirm={confirm}
          onCancel={() => setPending(null)}
        />
      )}
      {restore && <RestoreDialog backup={restore} onClose={() => setRestore(null)} />}
      {editing && <TargetDialog target={editing === "new" ? undefined : editing} onClose={() => setEditing(null)} />}
    </div>
  );
}
