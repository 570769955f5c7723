// React bindings of the live collections: one LiveCollection per name for
// the whole page, shared by every component that shows it.

import { useSyncExternalStore } from "react";
import { browserEnv, LiveCollection, type StreamEnv, type StreamState } from "./stream";
import type { CollectionName, Collections } from "./types";

const registry = new Map<string, LiveCollection<unknown>>();
const registryListeners = new Set<() => void>();
let env: StreamEnv = browserEnv;

/** setStreamEnv replaces the environment of collections made from now on (tests). */
export function setStreamEnv(e: StreamEnv): void {
  env = e;
  registry.clear();
}

export function liveCollection<N extends CollectionName>(name: N): LiveCollection<Collections[N]> {
  let c = registry.get(name);
  if (!c) {
    c = new LiveCollection<unknown>(name, env);
    registry.set(name, c);
    for (const l of registryListeners) l();
  }
  return c as LiveCollection<Collections[N]>;
}

/** useCollection subscribes the component to /v1/ws/1s/<name>. */
export function useCollection<N extends CollectionName>(name: N): StreamState<Collections[N]> {
  const c = liveCollection(name);
  return useSyncExternalStore(c.subscribe, c.getSnapshot);
}

/** allCollections lists the collections opened so far (for the connection banner). */
export function allCollections(): LiveCollection<unknown>[] {
  return [...registry.values()];
}

export function onRegistryChange(l: () => void): () => void {
  registryListeners.add(l);
  return () => registryListeners.delete(l);
}
