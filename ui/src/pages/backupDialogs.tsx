// Dialogs of the Backups page: create or edit a backup target, restore a
// backup to a new volume.

import { useState } from "react";
import { api } from "../api/client";
import type { Backup, BackupTarget } from "../api/types";
import { Dialog } from "../components/Dialog";
import { useAction } from "../components/useAction";
import { Field } from "../components/Widgets";

/** pollSeconds turns the API's "5m0s" into whole seconds for the form ("300"). */
export function pollSeconds(d: string): string {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$/.exec(d.trim());
  if (!m || d.trim() === "") return d === "" ? "300" : d;
  return String(Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Math.round(Number(m[3] ?? 0)));
}

/** TargetDialog creates a backup target (target undefined) or edits one (backupTargetUpdate). */
export function TargetDialog({ target, onClose }: { target?: BackupTarget; onClose: () => void }) {
  const [name, setName] = useState(target?.name ?? "");
  const [url, setURL] = useState(target?.backupTargetURL ?? "");
  const [secret, setSecret] = useState(target?.credentialSecret ?? "");
  const [poll, setPoll] = useState(target ? pollSeconds(target.pollInterval) : "300");
  const { busy, error, run } = useAction();
  const badPoll = !/^\d+$/.test(poll.trim());
  const submit = async () => {
    const body = { name, backupTargetURL: url.trim(), credentialSecret: secret.trim(), pollInterval: poll.trim() };
    const ok = target
      ? await run(`Update backup target ${name}`, () => api.action("backuptargets", name, "backupTargetUpdate", body), `Backup target ${name} updated`)
      : await run(`Create backup target ${name}`, () => api.create("backuptargets", body), `Backup target ${name} created`);
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={target ? `Edit backup target ${target.name}` : "Create backup target"}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || name === "" || badPoll} onClick={submit}>
            {target ? "Save" : "Create"}
          </button>
        </>
      }
    >
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <Field label="Name" htmlFor="bt-name">
        <input id="bt-name" value={name} disabled={!!target} onChange={(e) => setName(e.target.value)} />
      </Field>
      <Field label="URL" htmlFor="bt-url" hint="s3://bucket@region/path, nfs://server:/export or vfs:///dir; empty disables the target">
        <input id="bt-url" value={url} onChange={(e) => setURL(e.target.value)} placeholder="s3://backups@us-east-1/" />
      </Field>
      <Field label="Credential secret" htmlFor="bt-secret" hint="Secret in the longhorn-system namespace (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINTS)">
        <input id="bt-secret" value={secret} onChange={(e) => setSecret(e.target.value)} />
      </Field>
      <Field label="Poll interval (seconds)" htmlFor="bt-poll" error={badPoll ? "whole seconds, 0 disables polling" : undefined}>
        <input id="bt-poll" inputMode="numeric" value={poll} onChange={(e) => setPoll(e.target.value)} />
      </Field>
    </Dialog>
  );
}

/** RestoreDialog creates a volume from a completed backup (fromBackup = its URL). */
export function RestoreDialog({ backup, onClose }: { backup: Backup; onClose: () => void }) {
  const [name, setName] = useState(`${backup.volumeName}-restore`);
  const [replicas, setReplicas] = useState("3");
  const [standby, setStandby] = useState(false);
  const { busy, error, run } = useAction();
  const submit = async () => {
    const body = { name, size: backup.volumeSize, numberOfReplicas: Number(replicas), fromBackup: backup.url, dataEngine: "v1" };
    const ok = await run(
      `Restore ${backup.name}`,
      () => api.create("volumes", standby ? { ...body, standby: true, frontend: "" } : { ...body, frontend: "blockdev" }),
      standby ? `Creating disaster recovery volume ${name}` : `Restoring ${backup.name} to ${name}`,
    );
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={`Restore backup ${backup.name}`}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || name === ""} onClick={submit}>
            Restore
          </button>
        </>
      }
    >
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <Field label="New volume name" htmlFor="rs-name">
        <input id="rs-name" value={name} onChange={(e) => setName(e.target.value)} />
      </Field>
      <Field label="Number of replicas" htmlFor="rs-rep">
        <input id="rs-rep" type="number" min={1} value={replicas} onChange={(e) => setReplicas(e.target.value)} />
      </Field>
      <label className="check">
        <input type="checkbox" checked={standby} onChange={(e) => setStandby(e.target.checked)} /> Disaster recovery volume (standby: follows new backups until activated)
      </label>
    </Dialog>
  );
}
