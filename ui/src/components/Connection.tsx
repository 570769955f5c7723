// The connection banner: shown while any live collection is stale, with
// the age of the data on screen and when the next reconnect is due.

import { useEffect, useState, useSyncExternalStore } from "react";
import { allCollections, onRegistryChange } from "../api/live";
import type { StreamState } from "../api/stream";

function subscribeAll(l: () => void): () => void {
  let unsubs = allCollections().map((c) => c.watch(l));
  const off = onRegistryChange(() => {
    unsubs.forEach((u) => u());
    unsubs = allCollections().map((c) => c.watch(l));
    l();
  });
  return () => {
    off();
    unsubs.forEach((u) => u());
  };
}

let last = "";
type Entry = { name: string; active: boolean; state: StreamState<unknown> };
let lastValue: Entry[] = [];
function snapshotAll() {
  const v: Entry[] = allCollections().map((c) => ({ name: c.name, active: c.active, state: c.getSnapshot() }));
  const key = v.map((x) => `${x.name}:${x.active}:${x.state.status}:${x.state.updatedAt}:${x.state.retryAt}`).join(",");
  if (key !== last) {
    last = key;
    lastValue = v;
  }
  return lastValue;
}

/** summary decides what the banner says; null when every stream is live or connecting. */
export function summary(states: Entry[], now: number): { text: string; retryIn: number } | null {
  const stale = states.filter((s) => s.active && s.state.status === "stale");
  if (stale.length === 0) return null;
  const updated = Math.max(...stale.map((s) => s.state.updatedAt));
  const retry = Math.min(...stale.map((s) => s.state.retryAt || Infinity));
  const retryIn = Number.isFinite(retry) ? Math.max(0, Math.ceil((retry - now) / 1000)) : -1;
  const age = updated > 0 ? `Data shown is from ${new Date(updated).toLocaleTimeString()}.` : "No data received yet.";
  const why = stale[0].state.error || "connection lost";
  return { text: `Live updates stopped (${why}). ${age}`, retryIn };
}

export function ConnectionBanner() {
  const states = useSyncExternalStore(subscribeAll, snapshotAll);
  const [now, setNow] = useState(Date.now());
  const s = summary(states, now);
  useEffect(() => {
    if (!s) return;
    const t = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, [s !== null]); // eslint-disable-line react-hooks/exhaustive-deps
  if (!s) return null;
  return (
    <div className="banner stale" role="alert" data-testid="stale-banner">
      <span>
        {s.text} {s.retryIn >= 0 ? `Reconnecting in ${s.retryIn}s…` : "Reconnecting…"}
      </span>
      <button
        type="button"
        onClick={() => {
          for (const c of allCollections()) c.reconnectNow();
        }}
      >
        Reconnect now
      </button>
    </div>
  );
}

/** LiveDot: the header's indicator of the streams' health. */
export function LiveDot() {
  const states = useSyncExternalStore(subscribeAll, snapshotAll);
  const active = states.filter((s) => s.active);
  const stale = active.some((s) => s.state.status === "stale");
  const connecting = active.some((s) => s.state.status === "connecting");
  const label = stale ? "Stale" : connecting ? "Connecting" : "Live";
  return (
    <span className={`live live-${label.toLowerCase()}`} aria-label={`Live updates: ${label}`} data-testid="live-status">
      <i /> {label}
    </span>
  );
}
