// Settings grouped by category with typed inputs and descriptions. Changed
// values are saved together; the API validates each one and its message
// shows next to the setting it names.

import { useMemo, useState } from "react";
import { api, errorMessage } from "../api/client";
import { useCollection } from "../api/live";
import type { Setting, SettingDefinition } from "../api/types";
import { useToasts } from "../components/Toasts";
import { Loading } from "../components/Widgets";
import { checkValue, groupSettings, perEngineValue } from "../lib/settings";

export function SettingsPage() {
  const settings = useCollection("settings");
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [saving, setSaving] = useState(false);
  const [q, setQ] = useState("");
  const toasts = useToasts();
  const groups = useMemo(() => groupSettings(settings.data ?? []), [settings.data]);
  const changed = Object.keys(draft).filter((k) => settings.data?.find((s) => s.name === k)?.value !== draft[k]);
  const save = async () => {
    setSaving(true);
    const errs: Record<string, string> = {};
    const left: Record<string, string> = {};
    for (const name of changed) {
      try {
        await api.update("settings", name, { value: draft[name] });
      } catch (err) {
        errs[name] = errorMessage(err);
        left[name] = draft[name];
      }
    }
    setErrors(errs);
    setDraft(left);
    setSaving(false);
    const n = changed.length - Object.keys(errs).length;
    if (n > 0) toasts.success(`${n} setting${n === 1 ? "" : "s"} saved`);
    if (Object.keys(errs).length > 0) toasts.error("Some settings were not saved", new Error(Object.entries(errs).map(([k, v]) => `${k}: ${v}`).join("; ")));
  };
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  const match = (s: Setting) => words.every((w) => `${s.name} ${s.definition.displayName} ${s.definition.description}`.toLowerCase().includes(w));
  return (
    <div className="page">
      <div className="section-head">
        <h1>Settings</h1>
        <div className="actions">
          <input type="search" aria-label="Filter settings" placeholder="Filter settings" value={q} onChange={(e) => setQ(e.target.value)} />
          <button type="button" onClick={() => { setDraft({}); setErrors({}); }} disabled={changed.length === 0 || saving}>
            Discard
          </button>
          <button type="button" className="primary" onClick={save} disabled={changed.length === 0 || saving}>
            {saving ? "Saving…" : changed.length ? `Save ${changed.length} change${changed.length === 1 ? "" : "s"}` : "Save"}
          </button>
        </div>
      </div>
      <Loading state={settings} what="settings">
        {() => (
          <>
            <nav className="jump" aria-label="Setting categories">
              {groups.map(([c]) => (
                <a key={c} href={`#cat-${c.replace(/\s+/g, "-")}`} onClick={(e) => { e.preventDefault(); document.getElementById(`cat-${c.replace(/\s+/g, "-")}`)?.scrollIntoView(); }}>
                  {title(c)}
                </a>
              ))}
            </nav>
            {groups.map(([cat, list]) => {
              const shown = list.filter(match);
              if (shown.length === 0) return null;
              return (
                <section key={cat} id={`cat-${cat.replace(/\s+/g, "-")}`} aria-labelledby={`h-${cat}`} className="card settings">
                  <h2 id={`h-${cat}`}>{title(cat)}</h2>
                  {shown.map((s) => (
                    <SettingRow
                      key={s.name}
                      s={s}
                      value={draft[s.name] ?? s.value}
                      error={errors[s.name] ?? ""}
                      onChange={(v) => setDraft((d) => ({ ...d, [s.name]: v }))}
                    />
                  ))}
                </section>
              );
            })}
          </>
        )}
      </Loading>
    </div>
  );
}

function title(c: string): string {
  return c.replace(/\b\w/g, (x) => x.toUpperCase());
}

function SettingRow({ s, value, error, onChange }: { s: Setting; value: string; error: string; onChange: (v: string) => void }) {
  const def = s.definition;
  const id = `setting-${s.name}`;
  const per = def.dataEngineSpecific ? perEngineValue(value) : null;
  const local = per ? Object.values(per).map((v) => checkValue(def, v)).find(Boolean) ?? "" : checkValue(def, value);
  const msg = error || local;
  return (
    <div className={msg ? "setting invalid" : "setting"} data-setting={s.name}>
      <div className="setting-label">
        <label htmlFor={id}>{def.displayName || s.name}</label>
        <code>{s.name}</code>
        {def.readOnly && <small> (read-only)</small>}
      </div>
      <div className="setting-input">
        {per ? (
          Object.entries(per).map(([eng, v]) => (
            <span key={eng} className="inline">
              <span className="eng">{eng}</span>
              <Input id={`${id}-${eng}`} label={`${def.displayName || s.name} (${eng})`} def={def} value={v} onChange={(nv) => onChange(JSON.stringify({ ...per, [eng]: nv }))} />
            </span>
          ))
        ) : (
          <Input id={id} def={def} value={value} onChange={onChange} />
        )}
        {msg && (
          <small className="error" role="alert">
            {msg}
          </small>
        )}
      </div>
      <p className="setting-desc" id={`${id}-desc`}>
        {def.description}
        {def.default !== "" && <span className="default"> Default: {def.default}.</span>}
      </p>
    </div>
  );
}

function Input({ id, label, def, value, onChange }: { id: string; label?: string; def: SettingDefinition; value: string; onChange: (v: string) => void }) {
  const common = { id, "aria-label": label, "aria-describedby": `${id.replace(/-(v1|v2)$/, "")}-desc`, disabled: def.readOnly };
  if (def.type === "bool") {
    return (
      <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (def.options && def.options.length > 0) {
    return (
      <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
        {!def.options.includes(value) && <option value={value}>{value || "(empty)"}</option>}
        {def.options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    );
  }
  if (def.type === "int" || def.type === "float") {
    return <input {...common} type="number" step={def.type === "float" ? "any" : 1} min={def.range?.minimum ?? undefined} max={def.range?.maximum ?? undefined} value={value} onChange={(e) => onChange(e.target.value)} />;
  }
  return <input {...common} type="text" value={value} onChange={(e) => onChange(e.target.value)} />;
}
