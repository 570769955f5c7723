// Settings grouped by category, and a client-side check of a value
// against its definition (the API validates again and has the last word).

import type { Setting, SettingDefinition } from "../api/types";

/** groupSettings orders categories as Longhorn's UI does (General first) and settings by display name. */
export function groupSettings(settings: Setting[]): [string, Setting[]][] {
  const groups = new Map<string, Setting[]>();
  for (const s of settings) {
    if (s.definition?.type === "deprecated") continue;
    const c = s.definition?.category || "general";
    const list = groups.get(c) ?? [];
    list.push(s);
    groups.set(c, list);
  }
  const order = ["general", "backup", "scheduling", "danger zone", "snapshot", "orphan", "v2 data engine"];
  const rank = (c: string) => {
    const i = order.indexOf(c.toLowerCase());
    return i < 0 ? order.length : i;
  };
  return [...groups.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([c, list]) => [c, list.sort((x, y) => (x.definition.displayName || x.name).localeCompare(y.definition.displayName || y.name))]);
}

/** isPerEngine reports a value in the per-data-engine JSON form {"v1":"3"}. */
export function perEngineValue(value: string): Record<string, string> | null {
  if (!value.trim().startsWith("{")) return null;
  try {
    const j = JSON.parse(value) as unknown;
    if (j && typeof j === "object" && !Array.isArray(j)) {
      const out: Record<string, string> = {};
      for (const [k, v] of Object.entries(j as Record<string, unknown>)) out[k] = String(v);
      return out;
    }
  } catch {
    // not JSON
  }
  return null;
}

/**
 * checkValue returns a message when v cannot be right for def (empty but
 * required, not a number, outside the range, not one of the options),
 * "" otherwise.
 */
export function checkValue(def: SettingDefinition, v: string): string {
  if (v === "") return def.required ? "a value is required" : "";
  switch (def.type) {
    case "bool":
      return v === "true" || v === "false" ? "" : "must be true or false";
    case "int": {
      if (!/^-?\d+$/.test(v.trim())) return "must be a whole number";
      const n = Number(v);
      if (def.range?.minimum !== undefined && def.range.minimum !== null && n < def.range.minimum) return `must be at least ${def.range.minimum}`;
      if (def.range?.maximum !== undefined && def.range.maximum !== null && n > def.range.maximum) return `must be at most ${def.range.maximum}`;
      return "";
    }
    case "float":
      return Number.isFinite(Number(v)) ? "" : "must be a number";
    default:
      if (def.options && def.options.length > 0 && !def.options.includes(v)) return `must be one of ${def.options.join(", ")}`;
      return "";
  }
}
