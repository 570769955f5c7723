// Formatting and parsing helpers: sizes in binary units, times, conditions.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** formatBytes shows a byte count in binary units with up to 3 significant digits ("1.5 GiB"). */
export function formatBytes(n: number | string | undefined | null): string {
  const v = typeof n === "string" ? Number(n) : (n ?? 0);
  if (!Number.isFinite(v) || v < 0) return "-";
  if (v < 1024) return `${v} B`;
  let i = 0;
  let x = v;
  while (x >= 1024 && i < UNITS.length - 1) {
    x /= 1024;
    i++;
  }
  const digits = x >= 100 ? 0 : x >= 10 ? 1 : 2;
  return `${Number(x.toFixed(digits))} ${UNITS[i]}`;
}

const SIZE_RE = /^\s*(\d+(?:\.\d+)?)\s*(b|ki|mi|gi|ti|pi|k|m|g|t|p)?(?:b|i?b)?\s*$/i;
const MULT: Record<string, number> = {
  b: 1, ki: 1024, mi: 1024 ** 2, gi: 1024 ** 3, ti: 1024 ** 4, pi: 1024 ** 5,
  k: 1000, m: 1000 ** 2, g: 1000 ** 3, t: 1000 ** 4, p: 1000 ** 5,
};

/**
 * parseSize reads "10", "10Gi", "512 MiB" or "1.5Ti" as bytes (Kubernetes
 * quantity suffixes; a bare number is bytes). Returns null when the text is
 * not a size.
 */
export function parseSize(s: string): number | null {
  const m = SIZE_RE.exec(s);
  if (!m) return null;
  const mult = MULT[(m[2] ?? "b").toLowerCase()];
  const v = Number(m[1]) * mult;
  return Number.isFinite(v) ? Math.round(v) : null;
}

/**
 * parseTime reads an API timestamp: RFC 3339 or Go's time.Time.String()
 * form ("2026-12-01 18:49:00 +0000 UTC", which Longhorn's API sends).
 * Returns NaN when unreadable.
 */
export function parseTime(s: string | undefined | null): number {
  if (!s) return NaN;
  const t = Date.parse(s);
  if (!Number.isNaN(t)) return t;
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d+)? ([+-])(\d{2})(\d{2})/.exec(s);
  if (!m) return NaN;
  return Date.parse(`${m[1]}T${m[2]}${m[3] ?? ""}${m[4]}${m[5]}:${m[6]}`);
}

/** formatTime shows a timestamp in the browser's locale, "-" when unset. */
export function formatTime(s: string | undefined | null): string {
  const t = parseTime(s);
  return Number.isNaN(t) ? (s ? s : "-") : new Date(t).toLocaleString();
}

/** ago is a short relative age: "5s", "3m", "2h", "4d". */
export function ago(s: string | undefined | null, now: number = Date.now()): string {
  const t = parseTime(s);
  if (Number.isNaN(t)) return "-";
  const d = Math.max(0, Math.round((now - t) / 1000));
  if (d < 60) return `${d}s`;
  if (d < 3600) return `${Math.floor(d / 60)}m`;
  if (d < 86400) return `${Math.floor(d / 3600)}h`;
  return `${Math.floor(d / 86400)}d`;
}

/** conditionTrue reports a condition map entry with status True. */
export function conditionTrue(conds: Record<string, { status: string }> | undefined | null, type: string): boolean {
  return conds?.[type]?.status === "True";
}

/** percent of part in whole, clamped to [0, 100]; 0 when whole is 0. */
export function percent(part: number, whole: number): number {
  if (!whole || whole <= 0) return 0;
  return Math.min(100, Math.max(0, (part / whole) * 100));
}
