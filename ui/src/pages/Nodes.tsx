// Nodes and disks: status, storage bars, tags; edit a node's scheduling,
// eviction and tags; add, edit, disable and remove disks.

import { Fragment, useState } from "react";
import { api } from "../api/client";
import { useCollection } from "../api/live";
import type { Disk, LonghornNode } from "../api/types";
import { Confirm, Dialog } from "../components/Dialog";
import { Table, type Column } from "../components/Table";
import { useAction } from "../components/useAction";
import { Badge, Field, Loading, StorageBar } from "../components/Widgets";
import { conditionTrue, formatBytes, parseSize } from "../lib/format";
import { diskStatus, nodeStatus, storageOf } from "../lib/nodes";

function replicaCount(n: LonghornNode): number {
  return Object.values(n.disks ?? {}).reduce((a, d) => a + Object.keys(d.scheduledReplica ?? {}).length, 0);
}

function tagList(tags: string[] | undefined) {
  return (tags ?? []).length ? (
    <span className="tags">
      {(tags ?? []).map((t) => (
        <span key={t} className="tag">
          {t}
        </span>
      ))}
    </span>
  ) : (
    "-"
  );
}

export function NodesPage() {
  const nodes = useCollection("nodes");
  const [editNode, setEditNode] = useState<LonghornNode | null>(null);
  const [editDisks, setEditDisks] = useState<LonghornNode | null>(null);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const toggle = (n: string) => {
    const s = new Set(expanded);
    if (s.has(n)) s.delete(n);
    else s.add(n);
    setExpanded(s);
  };
  const columns: Column<LonghornNode>[] = [
    { key: "status", header: "Status", render: (n) => <Badge value={nodeStatus(n)} />, sortValue: (n) => nodeStatus(n) },
    {
      key: "name",
      header: "Name",
      render: (n) => (
        <button type="button" className="link" aria-expanded={expanded.has(n.name)} onClick={() => toggle(n.name)}>
          {expanded.has(n.name) ? "▾" : "▸"} {n.name}
        </button>
      ),
      sortValue: (n) => n.name,
    },
    { key: "ready", header: "Readiness", render: (n) => <Badge value={conditionTrue(n.conditions, "Ready") ? "ready" : "down"} />, sortValue: (n) => String(conditionTrue(n.conditions, "Ready")) },
    { key: "address", header: "Address", render: (n) => n.address || "-", sortValue: (n) => n.address },
    { key: "zone", header: "Zone", render: (n) => [n.region, n.zone].filter(Boolean).join(" / ") || "-", sortValue: (n) => `${n.region}/${n.zone}` },
    { key: "replicas", header: "Replicas", render: replicaCount, sortValue: replicaCount, className: "num" },
    {
      key: "storage",
      header: "Storage (used / reserved / size)",
      render: (n) => {
        const s = storageOf([{ ...n, allowScheduling: true, conditions: { ...n.conditions, Ready: { status: "True" } } }]);
        return (
          <span className="stack">
            <StorageBar used={s.used} reserved={s.reserved} scheduled={s.scheduled} max={s.total} />
            <small>
              {formatBytes(s.used)} / {formatBytes(s.reserved)} / {formatBytes(s.total)}
            </small>
          </span>
        );
      },
      sortValue: (n) => storageOf([n]).total,
    },
    { key: "tags", header: "Tags", render: (n) => tagList(n.tags), filterText: (n) => (n.tags ?? []).join(" ") },
    {
      key: "ops",
      header: "Operation",
      render: (n) => (
        <span className="actions">
          <button type="button" className="small" onClick={() => setEditNode(n)} aria-label={`Edit node ${n.name}`}>
            Edit node
          </button>
          <button type="button" className="small" onClick={() => setEditDisks(n)} aria-label={`Edit disks of ${n.name}`}>
            Edit disks
          </button>
        </span>
      ),
    },
  ];
  const current = (n: LonghornNode | null) => (n ? (nodes.data ?? []).find((x) => x.name === n.name) ?? n : null);
  return (
    <div className="page">
      <h1>Nodes</h1>
      <Loading state={nodes} what="nodes">
        {(ns) => (
          <>
            <Table label="nodes" rows={ns} columns={columns} rowKey={(n) => n.name} initialSort={{ key: "name" }} empty="No Longhorn nodes." />
            {ns
              .filter((n) => expanded.has(n.name))
              .map((n) => (
                <DiskTable key={n.name} node={n} />
              ))}
          </>
        )}
      </Loading>
      {editNode && <EditNodeDialog node={current(editNode)!} onClose={() => setEditNode(null)} />}
      {editDisks && <EditDisksDialog node={current(editDisks)!} onClose={() => setEditDisks(null)} />}
    </div>
  );
}

function DiskTable({ node }: { node: LonghornNode }) {
  const disks = Object.entries(node.disks ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return (
    <section aria-label={`Disks of ${node.name}`} className="card">
      <h2>Disks of {node.name}</h2>
      <div className="scroll-x">
        <table aria-label={`disks of ${node.name}`}>
          <thead>
            <tr>
              <th>Name</th>
              <th>Status</th>
              <th>Path</th>
              <th>Storage</th>
              <th>Scheduled</th>
              <th>Reserved</th>
              <th>Replicas</th>
              <th>Tags</th>
            </tr>
          </thead>
          <tbody>
            {disks.map(([name, d]) => (
              <Fragment key={name}>
                <tr>
                  <td data-label="Name">{name}</td>
                  <td data-label="Status">
                    <Badge value={diskStatus(d)} /> {d.evictionRequested && <Badge value="warning" label="evicting" />}
                  </td>
                  <td data-label="Path">
                    <code>{d.path}</code>
                  </td>
                  <td data-label="Storage">
                    <span className="stack">
                      <StorageBar used={d.storageMaximum - d.storageAvailable} reserved={d.storageReserved} scheduled={d.storageScheduled} max={d.storageMaximum} />
                      <small>
                        {formatBytes(d.storageAvailable)} free of {formatBytes(d.storageMaximum)}
                      </small>
                    </span>
                  </td>
                  <td data-label="Scheduled">{formatBytes(d.storageScheduled)}</td>
                  <td data-label="Reserved">{formatBytes(d.storageReserved)}</td>
                  <td data-label="Replicas">{Object.keys(d.scheduledReplica ?? {}).length}</td>
                  <td data-label="Tags">{tagList(d.tags)}</td>
                </tr>
              </Fragment>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function parseTags(s: string): string[] {
  return s
    .split(/[,\s]+/)
    .map((t) => t.trim())
    .filter(Boolean);
}

function EditNodeDialog({ node, onClose }: { node: LonghornNode; onClose: () => void }) {
  const [sched, setSched] = useState(node.allowScheduling);
  const [evict, setEvict] = useState(node.evictionRequested);
  const [tags, setTags] = useState((node.tags ?? []).join(", "));
  const { busy, error, run } = useAction();
  const submit = async () => {
    const ok = await run(`Update node ${node.name}`, () => api.update("nodes", node.name, { allowScheduling: sched, evictionRequested: evict, tags: parseTags(tags) }), `Node ${node.name} updated`);
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={`Edit node ${node.name}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy} onClick={submit}>
            Save
          </button>
        </>
      }
    >
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <label className="check">
        <input type="checkbox" checked={sched} onChange={(e) => setSched(e.target.checked)} /> Scheduling enabled (new replicas may be placed on this node)
      </label>
      <label className="check">
        <input type="checkbox" checked={evict} onChange={(e) => setEvict(e.target.checked)} /> Eviction requested (move this node's replicas elsewhere)
      </label>
      <Field label="Node tags" htmlFor="node-tags" hint="Separate tags with commas.">
        <input id="node-tags" value={tags} onChange={(e) => setTags(e.target.value)} />
      </Field>
    </Dialog>
  );
}

interface DiskDraft {
  key: string;
  name: string;
  path: string;
  reserved: string;
  sched: boolean;
  evict: boolean;
  tags: string;
  diskType: string;
  isNew: boolean;
}

function draftOf(name: string, d: Disk): DiskDraft {
  return { key: name, name, path: d.path, reserved: formatBytes(d.storageReserved).replace(" ", ""), sched: d.allowScheduling, evict: d.evictionRequested, tags: (d.tags ?? []).join(", "), diskType: d.diskType || "filesystem", isNew: false };
}

/** diskUpdateBody builds the diskUpdate action's complete map of disks, or the first problem found. */
export function diskUpdateBody(drafts: DiskDraft[]): { disks: Record<string, unknown> } | string {
  const disks: Record<string, unknown> = {};
  for (const d of drafts) {
    if (!d.name) return "every disk needs a name";
    if (!d.path) return `disk ${d.name}: a path is required`;
    const reserved = parseSize(d.reserved || "0");
    if (reserved === null) return `disk ${d.name}: reserved "${d.reserved}" is not a size`;
    if (disks[d.name]) return `disk name ${d.name} is used twice`;
    disks[d.name] = { path: d.path, allowScheduling: d.sched, evictionRequested: d.evict, storageReserved: reserved, tags: parseTags(d.tags), diskType: d.diskType };
  }
  return { disks };
}

function EditDisksDialog({ node, onClose }: { node: LonghornNode; onClose: () => void }) {
  const [drafts, setDrafts] = useState<DiskDraft[]>(() => Object.entries(node.disks ?? {}).sort(([a], [b]) => a.localeCompare(b)).map(([n, d]) => draftOf(n, d)));
  const [removing, setRemoving] = useState<string | null>(null);
  const { busy, error, run } = useAction();
  const set = (key: string, patch: Partial<DiskDraft>) => setDrafts((ds) => ds.map((d) => (d.key === key ? { ...d, ...patch } : d)));
  const body = diskUpdateBody(drafts);
  const add = () =>
    setDrafts((ds) => [...ds, { key: `new-${ds.length}-${Date.now()}`, name: `disk-${ds.length + 1}`, path: "", reserved: "0", sched: true, evict: false, tags: "", diskType: "filesystem", isNew: true }]);
  const submit = async () => {
    if (typeof body === "string") return;
    const ok = await run(`Update disks of ${node.name}`, () => api.action("nodes", node.name, "diskUpdate", body), `Disks of ${node.name} updated`);
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      wide
      title={`Disks of ${node.name}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={add}>
            Add disk
          </button>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || typeof body === "string"} onClick={submit}>
            Save
          </button>
        </>
      }
    >
      {(error || typeof body === "string") && (
        <p className="form-error" role="alert">
          {error || (body as string)}
        </p>
      )}
      {drafts.map((d) => (
        <fieldset key={d.key} className="disk">
          <legend>{d.name || "new disk"}</legend>
          <div className="grid3">
            <Field label="Name" htmlFor={`dn-${d.key}`}>
              <input id={`dn-${d.key}`} value={d.name} disabled={!d.isNew} onChange={(e) => set(d.key, { name: e.target.value })} />
            </Field>
            <Field label="Path" htmlFor={`dp-${d.key}`}>
              <input id={`dp-${d.key}`} value={d.path} disabled={!d.isNew} onChange={(e) => set(d.key, { path: e.target.value })} />
            </Field>
            <Field label="Storage reserved" htmlFor={`dr-${d.key}`} hint="e.g. 10Gi">
              <input id={`dr-${d.key}`} value={d.reserved} onChange={(e) => set(d.key, { reserved: e.target.value })} />
            </Field>
            <Field label="Tags" htmlFor={`dt-${d.key}`}>
              <input id={`dt-${d.key}`} value={d.tags} onChange={(e) => set(d.key, { tags: e.target.value })} />
            </Field>
          </div>
          <label className="check">
            <input type="checkbox" checked={d.sched} onChange={(e) => set(d.key, { sched: e.target.checked })} /> Scheduling enabled
          </label>
          <label className="check">
            <input type="checkbox" checked={d.evict} onChange={(e) => set(d.key, { evict: e.target.checked })} /> Eviction requested
          </label>
          <button type="button" className="small danger" onClick={() => (d.isNew ? setDrafts((ds) => ds.filter((x) => x.key !== d.key)) : setRemoving(d.key))}>
            Remove disk
          </button>
        </fieldset>
      ))}
      {removing && (
        <Confirm
          title={`Remove disk ${removing}?`}
          message="Longhorn refuses to remove a disk that takes replicas: disable its scheduling and evict its replicas first. The change applies when you save."
          confirmLabel="Remove"
          onConfirm={() => {
            setDrafts((ds) => ds.filter((x) => x.key !== removing));
            setRemoving(null);
          }}
          onCancel={() => setRemoving(null)}
        />
      )}
    </Dialog>
  );
}
