// Test doubles: WebSocket streams the test feeds by hand, a fetch that
// records calls and answers from a table, and a virtual clock.

import { vi } from "vitest";
import { setStreamEnv } from "../api/live";
import type { StreamEnv } from "../api/stream";

export class FakeSocket {
  url: string;
  onmessage: ((ev: MessageEvent) => void) | null = null;
  onclose: (() => void) | null = null;
  onerror: (() => void) | null = null;
  closed = false;
  constructor(url: string) {
    this.url = url;
  }
  send(): void {}
  close(): void {
    this.closed = true;
  }
  /** push delivers a collection message. */
  push(data: unknown[]): void {
    this.onmessage?.({ data: JSON.stringify({ type: "collection", resourceType: "x", data }) } as MessageEvent);
  }
  /** drop simulates the server or network closing the socket. */
  drop(): void {
    this.closed = true;
    this.onclose?.();
  }
}

export interface FakeStreams {
  env: StreamEnv;
  sockets: FakeSocket[];
  /** latest returns the newest socket of a collection. */
  latest(name: string): FakeSocket;
  /** feed pushes data to the newest socket of a collection. */
  feed(name: string, data: unknown[]): void;
  probes: string[];
  probeAnswer: Record<string, string>;
}

/** installStreams makes every LiveCollection from now on use fake sockets and real timers. */
export function installStreams(): FakeStreams {
  const sockets: FakeSocket[] = [];
  const probes: string[] = [];
  const probeAnswer: Record<string, string> = {};
  const env: StreamEnv = {
    newSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s as unknown as WebSocket;
    },
    probe: async (name) => {
      probes.push(name);
      return probeAnswer[name] ?? "";
    },
    now: () => Date.now(),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
    random: () => 0.5,
  };
  setStreamEnv(env);
  const latest = (name: string) => {
    const s = [...sockets].reverse().find((x) => x.url.endsWith(`/${name}`));
    if (!s) throw new Error(`no socket for ${name}; have ${sockets.map((x) => x.url).join(", ")}`);
    return s;
  };
  return { env, sockets, latest, feed: (name, data) => latest(name).push(data), probes, probeAnswer };
}

export interface Call {
  method: string;
  url: string;
  body: unknown;
}

/**
 * installFetch replaces fetch: answer(method, path) returns [status, body]
 * for a path under /v1/ (query included); calls are recorded.
 */
export function installFetch(answer: (method: string, path: string, body: unknown) => [number, unknown]): Call[] {
  const calls: Call[] = [];
  vi.stubGlobal("fetch", async (input: string, init?: RequestInit) => {
    const url = new URL(input);
    const path = url.pathname.replace(/^.*\/v1\//, "") + url.search;
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    const method = init?.method ?? "GET";
    calls.push({ method, url: path, body });
    const [status, out] = answer(method, path, body);
    return new Response(out === undefined ? "" : JSON.stringify(out), { status, statusText: status === 200 ? "OK" : "Error" });
  });
  return calls;
}
