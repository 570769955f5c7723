// Volume detail: status and operations, replicas with their rebuild
// progress, the engine, the snapshot tree and the volume's events; all
// from the live volumes stream, so changes appear without a reload.

import { useState } from "react";
import { Link, useNavigate, useParams } from "react-router";
import { api, can } from "../api/client";
import { useCollection } from "../api/live";
import type { Replica, Volume } from "../api/types";
import { Confirm, Dialog } from "../components/Dialog";
import { useAction } from "../components/useAction";
import { Badge, Loading, Progress } from "../components/Widgets";
import { formatBytes, formatTime } from "../lib/format";
import { attachedNode, expansion, rebuilds, replicaState, volumeHealth } from "../lib/volume";
import { EventTable } from "./Events";
import { SnapshotTree } from "./SnapshotTree";
import { VolumeBackups } from "./VolumeBackups";
import { AttachDialog, ExpandDialog, ReplicaCountDialog } from "./volumeDialogs";

type Open = "attach" | "expand" | "replicas" | "salvage" | "delete" | "detach" | { removeReplica: string } | null;

export function VolumeDetail() {
  const { name = "" } = useParams();
  const volumes = useCollection("volumes");
  return (
    <div className="page">
      <p className="crumbs">
        <Link to="/volume">Volumes</Link> / {name}
      </p>
      <Loading state={volumes} what="volumes">
        {(vs) => {
          const v = vs.find((x) => x.name === name);
          if (!v) return <p className="empty">Volume {name} does not exist (or was deleted).</p>;
          return <Detail v={v} />;
        }}
      </Loading>
    </div>
  );
}

function Detail({ v }: { v: Volume }) {
  const [open, setOpen] = useState<Open>(null);
  const navigate = useNavigate();
  const events = useCollection("events");
  const { busy, run } = useAction();
  const health = volumeHealth(v);
  const exp = expansion(v);
  const close = () => setOpen(null);
  const detach = async () => {
    await run(`Detach ${v.name}`, () => api.action("volumes", v.name, "detach", {}), `Detaching ${v.name}`);
    close();
  };
  const remove = async () => {
    const ok = await run(`Delete ${v.name}`, () => api.remove("volumes", v.name), `Volume ${v.name} deleted`);
    if (ok !== undefined) navigate("/volume");
  };
  const removeReplica = async (r: string) => {
    await run(`Delete replica ${r}`, () => api.action("volumes", v.name, "replicaRemove", { name: r }), `Replica ${r} deleted`);
    close();
  };
  return (
    <>
      <div className="section-head">
        <h1>
          {v.name} <Badge value={health} />
        </h1>
        <div className="actions" role="toolbar" aria-label="Volume operations">
          <button type="button" disabled={!can(v, "attach") || v.state !== "detached"} onClick={() => setOpen("attach")}>
            Attach
          </button>
          <button type="button" disabled={busy || !can(v, "detach") || v.state === "detached"} onClick={() => setOpen("detach")}>
            Detach
          </button>
          <button type="button" disabled={!can(v, "expand")} onClick={() => setOpen("expand")}>
            Expand
          </button>
          <button type="button" disabled={!can(v, "updateReplicaCount")} onClick={() => setOpen("replicas")}>
            Update Replicas Count
          </button>
          <button type="button" disabled={!can(v, "salvage")} onClick={() => setOpen("salvage")}>
            Salvage
          </button>
          <button type="button" className="danger" onClick={() => setOpen("delete")}>
            Delete
          </button>
        </div>
      </div>
      {exp && (
        <p className={exp.error ? "form-error" : "progress-line"} role="status">
          {exp.error ? `Expansion failed: ${exp.error}` : <>Expanding from {formatBytes(exp.from)} to {formatBytes(exp.to)}… <Progress value={null} label="Expansion" /></>}
        </p>
      )}
      <VolumeInfo v={v} />
      <ReplicaTable v={v} onRemove={(r) => setOpen({ removeReplica: r })} />
      <EngineTable v={v} />
      <SnapshotTree volume={v} />
      <VolumeBackups volume={v} />
      <section aria-labelledby="ev-h">
        <h2 id="ev-h">Events</h2>
        <Loading state={events} what="events">
          {(es) => <EventTable events={es} filter={(e) => (e.event?.involvedObject?.name ?? "").startsWith(v.name)} />}
        </Loading>
      </section>
      {open === "attach" && <AttachDialog volumes={[v]} onClose={close} />}
      {open === "expand" && <ExpandDialog volume={v} onClose={close} />}
      {open === "replicas" && <ReplicaCountDialog volume={v} onClose={close} />}
      {open === "salvage" && <SalvageDialog volume={v} onClose={close} />}
      {open === "detach" && (
        <Confirm title={`Detach ${v.name}?`} message="Applications using the volume lose access to it." confirmLabel="Detach" danger={false} busy={busy} onConfirm={detach} onCancel={close} />
      )}
      {open === "delete" && (
        <Confirm title={`Delete ${v.name}?`} message={`The data of ${v.name} is removed from every replica. This cannot be undone.`} confirmLabel="Delete" busy={busy} onConfirm={remove} onCancel={close} />
      )}
      {open !== null && typeof open === "object" && (
        <Confirm
          title={`Delete replica ${open.removeReplica}?`}
          message="Longhorn rebuilds a replacement if the volume then has fewer replicas than it should."
          confirmLabel="Delete replica"
          busy={busy}
          onConfirm={() => removeReplica(open.removeReplica)}
          onCancel={close}
        />
      )}
    </>
  );
}

function VolumeInfo({ v }: { v: Volume }) {
  const endpoint = v.controllers?.find((c) => c.endpoint)?.endpoint ?? "";
  const rows: [string, React.ReactNode][] = [
    ["State", v.state],
    ["Robustness", v.robustness],
    ["Size", formatBytes(v.size)],
    ["Actual size", formatBytes(v.actualSize)],
    ["Attached to", attachedNode(v) || "-"],
    ["Frontend", v.disableFrontend ? `${v.frontend} (maintenance: disabled)` : v.frontend],
    ["Endpoint", endpoint ? <code>{endpoint}</code> : "-"],
    ["Replicas", v.numberOfReplicas],
    ["Data locality", v.dataLocality],
    ["Access mode", v.accessMode],
    ["Data engine", v.dataEngine],
    ["Engine image", v.currentImage || v.image || "-"],
    ["Created", formatTime(v.created)],
    ["Node tags", (v.nodeSelector ?? []).join(", ") || "-"],
    ["Disk tags", (v.diskSelector ?? []).join(", ") || "-"],
    ["PV / PVC", [v.kubernetesStatus?.pvName, v.kubernetesStatus?.namespace && `${v.kubernetesStatus.namespace}/${v.kubernetesStatus.pvcName}`].filter(Boolean).join(" · ") || "-"],
  ];
  const conds = Object.entries(v.conditions ?? {});
  return (
    <section aria-label="Volume details" className="cards">
      <dl className="card info">
        {rows.map(([k, val]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{val}</dd>
          </div>
        ))}
      </dl>
      <div className="card">
        <h3>Conditions</h3>
        <ul className="conditions">
          {conds.map(([t, c]) => (
            <li key={t} title={c.message || c.reason}>
              <Badge value={conditionTone(t, c.status)} label={t} /> <small>{c.status}</small> {c.reason} {c.message}
            </li>
          ))}
          {conds.length === 0 && <li>-</li>}
        </ul>
      </div>
    </section>
  );
}

/** conditionTone: True is good for most conditions, bad for the ones that report a problem. */
function conditionTone(type: string, status: string): string {
  const problem = ["TooManySnapshots", "Restore", "OfflineRebuilding"].includes(type);
  if (status === "True") return problem ? "warning" : "true";
  if (status === "False") return problem ? "unknown" : "false";
  return "unknown";
}

function ReplicaTable({ v, onRemove }: { v: Volume; onRemove: (name: string) => void }) {
  const rb = new Map(rebuilds(v).map((r) => [r.replica, r]));
  const rows = [...(v.replicas ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section aria-labelledby="rep-h">
      <h2 id="rep-h">Replicas</h2>
      <div className="scroll-x">
        <table aria-label="replicas">
          <thead>
            <tr>
              <th>Name</th>
              <th>Status</th>
              <th>Node</th>
              <th>Disk</th>
              <th>Address</th>
              <th>Rebuild</th>
              <th>Operation</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r: Replica) => {
              const b = rb.get(r.name);
              return (
                <tr key={r.name} data-replica={r.name}>
                  <td data-label="Name">{r.name}</td>
                  <td data-label="Status">
                    <Badge value={replicaState(r, v.state === "attached")} /> {r.mode && <small>{r.mode}</small>}
                  </td>
                  <td data-label="Node">{r.hostId || "-"}</td>
                  <td data-label="Disk" title={r.diskID}>
                    {r.diskPath || "-"}
                  </td>
                  <td data-label="Address">{r.address || "-"}</td>
                  <td data-label="Rebuild">{b ? b.error ? <span className="error">{b.error}</span> : <span className="stack"><Progress value={b.progress} label={`Rebuilding ${r.name}`} />{b.state === "pending" && <small>adding to the engine</small>}</span> : "-"}</td>
                  <td data-label="Operation">
                    <button type="button" className="small danger" disabled={!can(v, "replicaRemove")} onClick={() => onRemove(r.name)} aria-label={`Delete replica ${r.name}`}>
                      Delete
                    </button>
                  </td>
                </tr>
              );
            })}
            {rows.length === 0 && (
              <tr>
                <td colSpan={7} className="empty">
                  No replicas.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function EngineTable({ v }: { v: Volume }) {
  return (
    <section aria-labelledby="eng-h">
      <h2 id="eng-h">Engine</h2>
      <div className="scroll-x">
        <table aria-label="engines">
          <thead>
            <tr>
              <th>Name</th>
              <th>Status</th>
              <th>Node</th>
              <th>Endpoint</th>
              <th>Size</th>
              <th>Instance manager</th>
            </tr>
          </thead>
          <tbody>
            {(v.controllers ?? []).map((c) => (
              <tr key={c.name}>
                <td data-label="Name">{c.name}</td>
                <td data-label="Status">
                  <Badge value={c.running ? "running" : "stopped"} /> {c.isExpanding && <Badge value="rebuilding" label="expanding" />}
                </td>
                <td data-label="Node">{c.hostId || "-"}</td>
                <td data-label="Endpoint">{c.endpoint ? <code>{c.endpoint}</code> : "-"}</td>
                <td data-label="Size">{formatBytes(c.size)}</td>
                <td data-label="Instance manager">{c.instanceManagerName || "-"}</td>
              </tr>
            ))}
            {(v.controllers ?? []).length === 0 && (
              <tr>
                <td colSpan={6} className="empty">
                  No engine (the volume is detached).
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function SalvageDialog({ volume, onClose }: { volume: Volume; onClose: () => void }) {
  const [names, setNames] = useState<Set<string>>(new Set(volume.replicas.filter((r) => r.failedAt).map((r) => r.name)));
  const { busy, error, run } = useAction();
  const submit = async () => {
    const ok = await run(`Salvage ${volume.name}`, () => api.action("volumes", volume.name, "salvage", { names: [...names] }), `Salvaging ${volume.name}`);
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={`Salvage ${volume.name}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || names.size === 0} onClick={submit}>
            Salvage
          </button>
        </>
      }
    >
      <p>Choose the failed replicas to bring back; Longhorn uses the one with the newest data.</p>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {volume.replicas.map((r) => (
        <label key={r.name} className="check">
          <input
            type="checkbox"
            checked={names.has(r.name)}
            onChange={(e) => {
              const s = new Set(names);
              if (e.target.checked) s.add(r.name);
              else s.delete(r.name);
              setNames(s);
            }}
          />{" "}
          {r.name} on {r.hostId || "?"} {r.failedAt && `(failed ${formatTime(r.failedAt)})`}
        </label>
      ))}
    </Dialog>
  );
}
