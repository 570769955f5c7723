// Volumes: every volume with state, robustness, size, actual size, node
// and replicas; sort, filter, select for bulk attach, detach, delete.

import { useMemo, useState } from "react";
import { Link, useNavigate } from "react-router";
import { api, can } from "../api/client";
import { useCollection } from "../api/live";
import type { Volume } from "../api/types";
import { Confirm } from "../components/Dialog";
import { Table, type Column } from "../components/Table";
import { useAction } from "../components/useAction";
import { Badge, Loading, Progress } from "../components/Widgets";
import { ago, formatBytes, formatTime, parseTime } from "../lib/format";
import { attachedNode, rebuilds, volumeHealth, type Health } from "../lib/volume";
import { AttachDialog, CreateVolumeDialog } from "./volumeDialogs";

const HEALTHS: Health[] = ["healthy", "degraded", "faulted", "detached", "attaching", "detaching", "creating", "deleting", "unknown"];

function healthyReplicas(v: Volume): number {
  return (v.replicas ?? []).filter((r) => r.running && r.mode === "RW").length;
}

export function volumeColumns(): Column<Volume>[] {
  return [
    {
      key: "state",
      header: "State",
      render: (v) => {
        const rb = rebuilds(v);
        return (
          <span className="stack">
            <Badge value={volumeHealth(v)} label={volumeHealth(v)} />
            {rb.length > 0 && <Progress value={rb[0].progress} label={`Rebuilding ${rb[0].replica}`} />}
          </span>
        );
      },
      sortValue: (v) => HEALTHS.indexOf(volumeHealth(v)),
      filterText: (v) => `${volumeHealth(v)} ${v.state} ${v.robustness}`,
    },
    { key: "name", header: "Name", render: (v) => <Link to={`/volume/${encodeURIComponent(v.name)}`}>{v.name}</Link>, sortValue: (v) => v.name },
    { key: "size", header: "Size", render: (v) => formatBytes(v.size), sortValue: (v) => Number(v.size), className: "num" },
    { key: "actual", header: "Actual Size", render: (v) => formatBytes(v.actualSize), sortValue: (v) => Number(v.actualSize), className: "num" },
    { key: "replicas", header: "Replicas", render: (v) => `${healthyReplicas(v)} / ${v.numberOfReplicas}`, sortValue: (v) => v.numberOfReplicas, className: "num" },
    { key: "node", header: "Attached To", render: (v) => attachedNode(v) || "-", sortValue: (v) => attachedNode(v) },
    { key: "frontend", header: "Frontend", render: (v) => (v.disableFrontend ? "maintenance" : v.frontend || "-"), sortValue: (v) => v.frontend },
    {
      key: "pv",
      header: "PV/PVC",
      render: (v) => [v.kubernetesStatus?.pvName, v.kubernetesStatus?.pvcName].filter(Boolean).join(" / ") || "-",
      sortValue: (v) => v.kubernetesStatus?.pvName ?? "",
    },
    { key: "created", header: "Created", render: (v) => <time title={formatTime(v.created)}>{ago(v.created)} ago</time>, sortValue: (v) => parseTime(v.created) || 0 },
  ];
}

export function VolumesPage() {
  const volumes = useCollection("volumes");
  const navigate = useNavigate();
  const [creating, setCreating] = useState(false);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [health, setHealth] = useState<string>("");
  const [dialog, setDialog] = useState<"attach" | "delete" | null>(null);
  const { busy, run } = useAction();
  const columns = useMemo(volumeColumns, []);
  const all = volumes.data ?? [];
  const chosen = all.filter((v) => selected.has(v.name));
  const rows = health ? all.filter((v) => volumeHealth(v) === health) : all;
  const detach = async () => {
    for (const v of chosen) await run(`Detach ${v.name}`, () => api.action("volumes", v.name, "detach", {}));
    setSelected(new Set());
  };
  const remove = async () => {
    for (const v of chosen) await run(`Delete ${v.name}`, () => api.remove("volumes", v.name), `Volume ${v.name} deleted`);
    setSelected(new Set());
    setDialog(null);
  };
  const toolbar = (
    <>
      <button type="button" className="primary" onClick={() => setCreating(true)}>
        Create Volume
      </button>
      <button type="button" disabled={chosen.length === 0 || !chosen.every((v) => can(v, "attach") && v.state === "detached")} onClick={() => setDialog("attach")}>
        Attach
      </button>
      <button type="button" disabled={busy || chosen.length === 0 || !chosen.every((v) => can(v, "detach") && v.state !== "detached")} onClick={detach}>
        Detach
      </button>
      <button type="button" className="danger" disabled={chosen.length === 0} onClick={() => setDialog("delete")}>
        Delete
      </button>
      <label className="inline">
        <span className="sr-only">State</span>
        <select aria-label="Filter by state" value={health} onChange={(e) => setHealth(e.target.value)}>
          <option value="">All states</option>
          {HEALTHS.map((h) => (
            <option key={h} value={h}>
              {h}
            </option>
          ))}
        </select>
      </label>
    </>
  );
  return (
    <div className="page">
      <h1>Volumes</h1>
      <Loading state={volumes} what="volumes">
        {() => (
          <Table
            label="volumes"
            rows={rows}
            columns={columns}
            rowKey={(v) => v.name}
            initialSort={{ key: "name" }}
            selected={selected}
            onSelect={setSelected}
            toolbar={toolbar}
            filterPlaceholder="Filter by name, state, node…"
            empty="No volumes yet. Create one to start."
          />
        )}
      </Loading>
      {creating && (
        <CreateVolumeDialog
          onClose={() => setCreating(false)}
          onCreated={(name) => {
            setCreating(false);
            navigate(`/volume/${encodeURIComponent(name)}`);
          }}
        />
      )}
      {dialog === "attach" && <AttachDialog volumes={chosen} onClose={() => { setDialog(null); setSelected(new Set()); }} />}
      {dialog === "delete" && (
        <Confirm
          title={`Delete ${chosen.length === 1 ? chosen[0].name : `${chosen.length} volumes`}?`}
          message={
            <>
              <p>The data of {chosen.map((v) => v.name).join(", ")} is removed from every replica. This cannot be undone.</p>
            </>
          }
          confirmLabel="Delete"
          busy={busy}
          onConfirm={remove}
          onCancel={() => setDialog(null)}
        />
      )}
    </div>
  );
}
