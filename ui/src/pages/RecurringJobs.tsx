// Recurring jobs: snapshot, backup, cleanup and filesystem-trim jobs on a cron schedule,
// applied to volumes by group or by volume label.

import { useState } from "react";
import { api } from "../api/client";
import { useCollection } from "../api/live";
import type { RecurringJob } from "../api/types";
import { Confirm, Dialog } from "../components/Dialog";
import { Table, type Column } from "../components/Table";
import { useAction } from "../components/useAction";
import { Field, Loading } from "../components/Widgets";

// system-backup is left out: the webhook refuses it as not supported yet.
export const TASKS = ["snapshot", "snapshot-force-create", "snapshot-cleanup", "snapshot-delete", "backup", "backup-force-create", "filesystem-trim"];

// keepsNothing: tasks that leave no snapshot or backup behind, whose retain
// the webhook sets to 0 (Longhorn's mutation); the dialog sends 0 and greys
// the field out.
export function keepsNothing(task: string): boolean {
  return task === "filesystem-trim";
}

export function RecurringJobsPage() {
  const jobs = useCollection("recurringjobs");
  const [editing, setEditing] = useState<RecurringJob | "new" | null>(null);
  const [deleting, setDeleting] = useState<RecurringJob | null>(null);
  const { busy, run } = useAction();
  const columns: Column<RecurringJob>[] = [
    { key: "name", header: "Name", render: (j) => j.name, sortValue: (j) => j.name },
    { key: "task", header: "Task", render: (j) => j.task, sortValue: (j) => j.task },
    { key: "cron", header: "Schedule", render: (j) => <code>{j.cron}</code>, sortValue: (j) => j.cron },
    { key: "retain", header: "Retain", render: (j) => j.retain, sortValue: (j) => j.retain, className: "num" },
    { key: "concurrency", header: "Concurrency", render: (j) => j.concurrency, sortValue: (j) => j.concurrency, className: "num" },
    { key: "groups", header: "Groups", render: (j) => (j.groups ?? []).join(", ") || "-", filterText: (j) => (j.groups ?? []).join(" ") },
    {
      key: "labels",
      header: "Labels",
      render: (j) =>
        Object.entries(j.labels ?? {})
          .map(([k, v]) => `${k}=${v}`)
          .join(", ") || "-",
    },
    {
      key: "ops",
      header: "Operation",
      render: (j) => (
        <span className="actions">
          <button type="button" className="small" onClick={() => setEditing(j)} aria-label={`Edit recurring job ${j.name}`}>
            Edit
          </button>
          <button type="button" className="small danger" onClick={() => setDeleting(j)} aria-label={`Delete recurring job ${j.name}`}>
            Delete
          </button>
        </span>
      ),
    },
  ];
  const remove = async () => {
    if (!deleting) return;
    await run(`Delete recurring job ${deleting.name}`, () => api.remove("recurringjobs", deleting.name), `Recurring job ${deleting.name} deleted`);
    setDeleting(null);
  };
  return (
    <div className="page">
      <h1>Recurring Jobs</h1>
      <Loading state={jobs} what="recurring jobs">
        {(list) => (
          <Table
            label="recurring jobs"
            rows={list}
            columns={columns}
            rowKey={(j) => j.name}
            initialSort={{ key: "name" }}
            empty="No recurring jobs."
            toolbar={
              <button type="button" className="primary" onClick={() => setEditing("new")}>
                Create Recurring Job
              </button>
            }
          />
        )}
      </Loading>
      {editing && <JobDialog job={editing === "new" ? null : editing} onClose={() => setEditing(null)} />}
      {deleting && <Confirm title={`Delete recurring job ${deleting.name}?`} message="Volumes stop running this job. Snapshots and backups it made stay." confirmLabel="Delete" busy={busy} onConfirm={remove} onCancel={() => setDeleting(null)} />}
    </div>
  );
}

function JobDialog({ job, onClose }: { job: RecurringJob | null; onClose: () => void }) {
  const [name, setName] = useState(job?.name ?? "");
  const [task, setTask] = useState(job?.task ?? "snapshot");
  const [cron, setCron] = useState(job?.cron ?? "0 * * * *");
  const [retain, setRetain] = useState(String(job?.retain ?? 1));
  const [concurrency, setConcurrency] = useState(String(job?.concurrency ?? 1));
  const [groups, setGroups] = useState((job?.groups ?? ["default"]).join(", "));
  const { busy, error, run } = useAction();
  const submit = async () => {
    const body = {
      name,
      task,
      cron,
      retain: keepsNothing(task) ? 0 : Number(retain),
      concurrency: Number(concurrency),
      groups: groups.split(/[,\s]+/).filter(Boolean),
      labels: job?.labels ?? {},
    };
    const ok = await run(
      job ? `Update recurring job ${name}` : `Create recurring job ${name}`,
      () => (job ? api.update("recurringjobs", name, body) : api.create("recurringjobs", body)),
      `Recurring job ${name} saved`,
    );
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title={job ? `Edit recurring job ${job.name}` : "Create Recurring Job"}
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || name === ""} onClick={submit}>
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
      <Field label="Name" htmlFor="rj-name">
        <input id="rj-name" value={name} disabled={!!job} onChange={(e) => setName(e.target.value)} />
      </Field>
      <Field label="Task" htmlFor="rj-task">
        <select id="rj-task" value={task} onChange={(e) => setTask(e.target.value)}>
          {TASKS.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
      </Field>
      <Field label="Cron schedule" htmlFor="rj-cron" hint="Five fields: minute hour day-of-month month day-of-week.">
        <input id="rj-cron" value={cron} onChange={(e) => setCron(e.target.value)} />
      </Field>
      <Field label="Retain" htmlFor="rj-retain" hint={keepsNothing(task) ? "A filesystem trim keeps nothing: retain is 0." : "How many snapshots or backups to keep."}>
        <input id="rj-retain" type="number" min={0} value={keepsNothing(task) ? "0" : retain} disabled={keepsNothing(task)} onChange={(e) => setRetain(e.target.value)} />
      </Field>
      <Field label="Concurrency" htmlFor="rj-conc" hint="Volumes processed at once.">
        <input id="rj-conc" type="number" min={1} value={concurrency} onChange={(e) => setConcurrency(e.target.value)} />
      </Field>
      <Field label="Groups" htmlFor="rj-groups" hint="Volumes in these groups run the job; 'default' covers volumes with no job of their own.">
        <input id="rj-groups" value={groups} onChange={(e) => setGroups(e.target.value)} />
      </Field>
    </Dialog>
  );
}
