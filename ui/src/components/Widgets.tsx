// Small presentational pieces: status badges, progress bars, storage bars,
// a donut chart, loading and empty states.

import type { ReactNode } from "react";
import type { StreamState } from "../api/stream";
import { formatBytes, percent } from "../lib/format";

const TONE: Record<string, string> = {
  healthy: "ok", schedulable: "ok", running: "ok", ready: "ok", true: "ok", rw: "ok", deployed: "ok", completed: "ok", available: "ok", normal: "ok",
  degraded: "warn", attaching: "info", detaching: "info", creating: "info", rebuilding: "warn", wo: "warn", starting: "info", unschedulable: "warn", warning: "warn", pending: "info", in_progress: "info", inprogress: "info",
  faulted: "bad", down: "bad", error: "bad", err: "bad", failed: "bad", stopped: "muted", false: "bad", unknown: "muted",
  detached: "muted", disabled: "muted", deleting: "info", unavailable: "muted",
};

export function Badge({ value, label }: { value: string; label?: string }) {
  const tone = TONE[value.toLowerCase()] ?? "muted";
  return <span className={`badge badge-${tone}`}>{label ?? (value || "-")}</span>;
}

export function Progress({ value, label }: { value: number | null; label: string }) {
  if (value === null) {
    return (
      <span className="progress indeterminate" role="progressbar" aria-label={label}>
        <span />
      </span>
    );
  }
  const v = Math.round(Math.max(0, Math.min(100, value)));
  return (
    <span className="progress" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={100} aria-valuenow={v}>
      <span style={{ width: `${v}%` }} />
      <em>{v}%</em>
    </span>
  );
}

/** StorageBar: used and reserved parts of a disk or a node. */
export function StorageBar({ used, reserved, scheduled, max }: { used: number; reserved: number; scheduled?: number; max: number }) {
  const u = percent(used, max);
  const r = percent(reserved, max);
  const title = `used ${formatBytes(used)}, reserved ${formatBytes(reserved)}${scheduled !== undefined ? `, scheduled ${formatBytes(scheduled)}` : ""} of ${formatBytes(max)}`;
  return (
    <span className="storagebar" title={title} role="img" aria-label={title}>
      <span className="used" style={{ width: `${u}%` }} />
      <span className="reserved" style={{ width: `${Math.min(r, 100 - u)}%` }} />
    </span>
  );
}

export interface Slice {
  label: string;
  value: number;
  tone: string;
  /** display replaces the count in the legend (e.g. a size already in the label); "" shows nothing. */
  display?: string;
}

/** Donut: an SVG ring with one arc per slice and a legend; the total in the middle. */
export function Donut({ title, slices, center }: { title: string; slices: Slice[]; center: string }) {
  const total = slices.reduce((a, s) => a + s.value, 0);
  const r = 42;
  const c = 2 * Math.PI * r;
  let offset = 0;
  return (
    <figure className="donut">
      <figcaption>{title}</figcaption>
      <svg viewBox="0 0 100 100" role="img" aria-label={`${title}: ${slices.map((s) => `${s.label} ${s.value}`).join(", ")}`}>
        <circle cx="50" cy="50" r={r} className="ring" />
        {total > 0 &&
          slices
            .filter((s) => s.value > 0)
            .map((s) => {
              const len = (s.value / total) * c;
              const el = <circle key={s.label} cx="50" cy="50" r={r} className={`arc tone-${s.tone}`} strokeDasharray={`${len} ${c - len}`} strokeDashoffset={-offset} />;
              offset += len;
              return el;
            })}
        <text x="50" y="54" textAnchor="middle">
          {center}
        </text>
      </svg>
      <ul className="legend">
        {slices.map((s) => (
          <li key={s.label}>
            <i className={`dot tone-${s.tone}`} /> {s.label} <b>{s.display ?? s.value}</b>
          </li>
        ))}
      </ul>
    </figure>
  );
}

/** Loading renders children once the stream has data, else its status. */
export function Loading<T>({ state, what, children }: { state: StreamState<T>; what: string; children: (data: T[]) => ReactNode }) {
  if (state.data !== null) return <>{children(state.data)}</>;
  if (state.status === "unavailable") {
    return (
      <p className="empty" role="note">
        This manager does not serve {what}: {state.error}
      </p>
    );
  }
  if (state.status === "stale") {
    return <p className="empty">Cannot load {what}: {state.error}. Retrying…</p>;
  }
  return <p className="empty">Loading {what}…</p>;
}

/** Field: a labelled form row with an optional hint and error. */
export function Field({ label, htmlFor, hint, error, children }: { label: string; htmlFor: string; hint?: ReactNode; error?: string; children: ReactNode }) {
  return (
    <div className={error ? "field invalid" : "field"}>
      <label htmlFor={htmlFor}>{label}</label>
      {children}
      {hint && <small className="hint">{hint}</small>}
      {error && (
        <small className="error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}
