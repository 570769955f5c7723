// Dialogs of volume operations, shared by the volume list and the detail page.

import { useMemo, useState } from "react";
import { api } from "../api/client";
import { useCollection } from "../api/live";
import type { Volume } from "../api/types";
import { Dialog } from "../components/Dialog";
import { useAction } from "../components/useAction";
import { Field } from "../components/Widgets";
import { formatBytes, parseSize } from "../lib/format";
import { nodeStatus } from "../lib/nodes";

export function AttachDialog({ volumes, onClose }: { volumes: Volume[]; onClose: () => void }) {
  const nodes = useCollection("nodes");
  const ready = (nodes.data ?? []).filter((n) => nodeStatus(n) !== "down").map((n) => n.name).sort();
  const [host, setHost] = useState("");
  const [maintenance, setMaintenance] = useState(false);
  const { busy, error, run } = useAction();
  const chosen = host || ready[0] || "";
  const submit = async () => {
    for (const v of volumes) {
      const ok = await run(`Attach ${v.name}`, () => api.action("volumes", v.name, "attach", { hostId: chosen, disableFrontend: maintenance, attachedBy: "" }));
      if (ok === undefined) return;
    }
    onClose();
  };
  const names = volumes.map((v) => v.name).join(", ");
  return (
    <Dialog
      title={`Attach ${names}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || !chosen} onClick={submit}>
            {busy ? "Attaching…" : "Attach"}
          </button>
        </>
      }
    >
      <Field label="Node" htmlFor="attach-node" error={error}>
        <select id="attach-node" value={chosen} onChange={(e) => setHost(e.target.value)}>
          {ready.map((n) => (
            <option key={n}>{n}</option>
          ))}
        </select>
      </Field>
      <label className="check">
        <input type="checkbox" checked={maintenance} onChange={(e) => setMaintenance(e.target.checked)} /> Maintenance mode (no frontend; needed to revert a snapshot)
      </label>
    </Dialog>
  );
}

export function ExpandDialog({ volume, onClose }: { volume: Volume; onClose: () => void }) {
  const [size, setSize] = useState(formatBytes(volume.size).replace(" ", ""));
  const { busy, error, run } = useAction();
  const bytes = parseSize(size);
  const local = bytes === null ? "not a size: use a number with a unit such as 20Gi" : bytes <= Number(volume.size) ? `must be larger than ${formatBytes(volume.size)}` : "";
  const submit = async () => {
    if (bytes === null) return;
    const ok = await run(`Expand ${volume.name}`, () => api.action("volumes", volume.name, "expand", { size: String(bytes) }), `Expanding ${volume.name} to ${formatBytes(bytes)}`);
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={`Expand ${volume.name}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || local !== ""} onClick={submit}>
            {busy ? "Expanding…" : "Expand"}
          </button>
        </>
      }
    >
      <Field label="New size" htmlFor="expand-size" hint={`Now ${formatBytes(volume.size)}. Volumes only grow.`} error={error || local}>
        <input id="expand-size" value={size} onChange={(e) => setSize(e.target.value)} />
      </Field>
    </Dialog>
  );
}

export function ReplicaCountDialog({ volume, onClose }: { volume: Volume; onClose: () => void }) {
  const [count, setCount] = useState(String(volume.numberOfReplicas));
  const { busy, error, run } = useAction();
  const submit = async () => {
    const ok = await run(`Update replica count of ${volume.name}`, () => api.action("volumes", volume.name, "updateReplicaCount", { replicaCount: Number(count) }));
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={`Replica count of ${volume.name}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy} onClick={submit}>
            {busy ? "Saving…" : "Save"}
          </button>
        </>
      }
    >
      <Field label="Number of replicas" htmlFor="replica-count" error={error}>
        <input id="replica-count" type="number" min={1} max={20} value={count} onChange={(e) => setCount(e.target.value)} />
      </Field>
    </Dialog>
  );
}

/** defaultFrom reads a setting value, taking the v1 entry of a per-data-engine value. */
export function settingValue(value: string | undefined, fallback: string): string {
  if (!value) return fallback;
  if (value.trim().startsWith("{")) {
    try {
      const j = JSON.parse(value) as Record<string, unknown>;
      if (j.v1 !== undefined) return String(j.v1);
    } catch {
      return fallback;
    }
  }
  return value;
}

export function CreateVolumeDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (name: string) => void }) {
  const settings = useCollection("settings");
  const nodes = useCollection("nodes");
  const byName = useMemo(() => new Map((settings.data ?? []).map((s) => [s.name, s.value])), [settings.data]);
  const defReplicas = settingValue(byName.get("default-replica-count"), "3");
  const defLocality = settingValue(byName.get("default-data-locality"), "disabled");
  const [name, setName] = useState("");
  const [size, setSize] = useState("2");
  const [unit, setUnit] = useState("Gi");
  const [replicas, setReplicas] = useState<string | null>(null);
  const [frontend, setFrontend] = useState("blockdev");
  const [locality, setLocality] = useState<string | null>(null);
  const [accessMode, setAccessMode] = useState("rwo");
  const [encrypted, setEncrypted] = useState(false);
  const [diskSel, setDiskSel] = useState<string[]>([]);
  const [nodeSel, setNodeSel] = useState<string[]>([]);
  const { busy, error, run } = useAction();
  const diskTags = useMemo(() => [...new Set((nodes.data ?? []).flatMap((n) => Object.values(n.disks ?? {}).flatMap((d) => d.tags ?? [])))].sort(), [nodes.data]);
  const nodeTags = useMemo(() => [...new Set((nodes.data ?? []).flatMap((n) => n.tags ?? []))].sort(), [nodes.data]);
  const nameErr = name === "" ? "" : /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) ? "" : "lowercase letters, digits, '-' and '.'; starts and ends with a letter or digit";
  const bytes = parseSize(size + unit);
  const sizeErr = bytes === null || bytes <= 0 ? "a positive number" : "";
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    const body = {
      name,
      size: String(bytes),
      numberOfReplicas: Number(replicas ?? defReplicas),
      frontend,
      dataLocality: locality ?? defLocality,
      accessMode,
      encrypted,
      dataEngine: "v1",
      diskSelector: diskSel,
      nodeSelector: nodeSel,
    };
    const ok = await run(`Create volume ${name}`, () => api.create("volumes", body), `Volume ${name} created`);
    if (ok !== undefined) onCreated(name);
  };
  const multi = (set: (v: string[]) => void) => (e: React.ChangeEvent<HTMLSelectElement>) => set([...e.target.selectedOptions].map((o) => o.value));
  return (
    <Dialog title="Create Volume" onClose={onClose} wide>
      <form onSubmit={submit} noValidate>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        <div className="grid2">
          <Field label="Name" htmlFor="cv-name" error={nameErr}>
            <input id="cv-name" required value={name} onChange={(e) => setName(e.target.value)} autoFocus />
          </Field>
          <Field label="Size" htmlFor="cv-size" error={sizeErr}>
            <span className="inline">
              <input id="cv-size" inputMode="decimal" value={size} onChange={(e) => setSize(e.target.value)} />
              <select aria-label="Size unit" value={unit} onChange={(e) => setUnit(e.target.value)}>
                <option value="Mi">MiB</option>
                <option value="Gi">GiB</option>
                <option value="Ti">TiB</option>
              </select>
            </span>
          </Field>
          <Field label="Number of replicas" htmlFor="cv-replicas" hint={`Default from setting default-replica-count: ${defReplicas}`}>
            <input id="cv-replicas" type="number" min={1} max={20} value={replicas ?? defReplicas} onChange={(e) => setReplicas(e.target.value)} />
          </Field>
          <Field label="Frontend" htmlFor="cv-frontend" hint="blockdev: a block device on the node; iscsi and nbd: a network endpoint.">
            <select id="cv-frontend" value={frontend} onChange={(e) => setFrontend(e.target.value)}>
              <option value="blockdev">Block device</option>
              <option value="iscsi">iSCSI</option>
              <option value="nbd">NBD</option>
            </select>
          </Field>
          <Field label="Data locality" htmlFor="cv-locality" hint={`Default from setting default-data-locality: ${defLocality}`}>
            <select id="cv-locality" value={locality ?? defLocality} onChange={(e) => setLocality(e.target.value)}>
              <option>disabled</option>
              <option>best-effort</option>
              <option>strict-local</option>
            </select>
          </Field>
          <Field label="Access mode" htmlFor="cv-access">
            <select id="cv-access" value={accessMode} onChange={(e) => setAccessMode(e.target.value)}>
              <option value="rwo">ReadWriteOnce</option>
              <option value="rwop">ReadWriteOncePod</option>
              <option value="rwx">ReadWriteMany</option>
            </select>
          </Field>
          <Field label="Disk tags" htmlFor="cv-disktags" hint={diskTags.length ? "Replicas only on disks with all of these tags." : "No disk has a tag."}>
            <select id="cv-disktags" multiple value={diskSel} onChange={multi(setDiskSel)} disabled={diskTags.length === 0}>
              {diskTags.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </Field>
          <Field label="Node tags" htmlFor="cv-nodetags" hint={nodeTags.length ? "Replicas only on nodes with all of these tags." : "No node has a tag."}>
            <select id="cv-nodetags" multiple value={nodeSel} onChange={multi(setNodeSel)} disabled={nodeTags.length === 0}>
              {nodeTags.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </Field>
        </div>
        <label className="check">
          <input type="checkbox" checked={encrypted} onChange={(e) => setEncrypted(e.target.checked)} /> Encrypted
        </label>
        <footer>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="primary" disabled={busy || name === "" || nameErr !== "" || sizeErr !== ""}>
            {busy ? "Creating…" : "Create"}
          </button>
        </footer>
      </form>
    </Dialog>
  );
}
