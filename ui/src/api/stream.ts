// Live collections over the manager's WebSocket streams (/v1/ws/1s/<name>):
// the server sends the whole collection on connect and after every change
// (at most once a second). A lost socket reconnects with exponential
// backoff; until a new message arrives the data is kept and marked stale.
// Nothing here polls: the only HTTP request is one probe after a failed
// handshake, to tell "this manager has no such collection" (a gdapi 404)
// from "the manager cannot be reached".

import { apiURL, parseError, wsURL } from "./client";
import type { Collection } from "./types";

export type StreamStatus = "connecting" | "live" | "stale" | "unavailable";

export interface StreamState<T> {
  status: StreamStatus;
  /** The last collection received; null until the first message. */
  data: T[] | null;
  /** When the last message arrived (ms since the epoch), 0 before any. */
  updatedAt: number;
  /** Failed connection attempts since the last successful one. */
  attempts: number;
  /** When the next reconnect is due (ms since the epoch), 0 when none is scheduled. */
  retryAt: number;
  /** Why the stream is stale or unavailable. */
  error: string;
}

/** The stream period the UI asks for (Longhorn's UI uses 1s as well). */
export const STREAM_PERIOD = "1s";
/** First reconnect delay and its cap (ms). */
export const BACKOFF_BASE = 500;
export const BACKOFF_MAX = 15000;
/** Retry delay for a collection the manager does not serve (ms). */
export const UNAVAILABLE_RETRY = 30000;
/** How long a socket stays open after its last subscriber left (ms). */
export const LINGER = 10000;

/**
 * backoffDelay is the wait before reconnect attempt n (1-based):
 * 500 ms doubling per attempt up to 15 s, with +-20 % jitter so that many
 * tabs do not reconnect in step. rand returns a number in [0, 1).
 */
export function backoffDelay(attempt: number, rand: () => number = Math.random): number {
  const n = Math.max(1, attempt);
  const d = Math.min(BACKOFF_MAX, BACKOFF_BASE * 2 ** (n - 1));
  return Math.round(d * (0.8 + 0.4 * rand()));
}

/** The environment a LiveCollection runs in; tests replace it. */
export interface StreamEnv {
  newSocket(url: string): WebSocket;
  /** probe GETs the collection once and reports a gdapi 404 message, or "" for anything else. */
  probe(name: string): Promise<string>;
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(t: unknown): void;
  random(): number;
}

async function probe(name: string): Promise<string> {
  try {
    const res = await fetch(apiURL(name), { headers: { Accept: "application/json" } });
    if (res.status === 404) return parseError(res.status, res.statusText, await res.text()).message;
  } catch {
    // unreachable: the socket's own retry covers it
  }
  return "";
}

export const browserEnv: StreamEnv = {
  newSocket: (url) => new WebSocket(url),
  probe,
  now: () => Date.now(),
  setTimeout: (fn, ms) => window.setTimeout(fn, ms),
  clearTimeout: (t) => window.clearTimeout(t as number),
  random: Math.random,
};

type Listener = () => void;

/** LiveCollection keeps one collection in sync over one WebSocket. */
export class LiveCollection<T> {
  readonly name: string;
  private env: StreamEnv;
  private state: StreamState<T> = { status: "connecting", data: null, updatedAt: 0, attempts: 0, retryAt: 0, error: "" };
  private listeners = new Set<Listener>();
  private watchers = new Set<Listener>();
  private socket: WebSocket | null = null;
  private timer: unknown = null;
  private lingerTimer: unknown = null;
  private gotMessage = false;

  constructor(name: string, env: StreamEnv) {
    this.name = name;
    this.env = env;
  }

  getSnapshot = (): StreamState<T> => this.state;

  /** subscribe opens the socket for the first listener; the last one leaving closes it after LINGER. */
  subscribe = (l: Listener): (() => void) => {
    this.listeners.add(l);
    if (this.lingerTimer !== null) {
      this.env.clearTimeout(this.lingerTimer);
      this.lingerTimer = null;
    }
    if (this.socket === null && this.timer === null) this.connect();
    return () => {
      this.listeners.delete(l);
      if (this.listeners.size === 0 && this.lingerTimer === null) {
        this.lingerTimer = this.env.setTimeout(() => {
          this.lingerTimer = null;
          if (this.listeners.size === 0) this.close();
        }, LINGER);
      }
    };
  };

  /** watch notifies l of every change without keeping the socket open (status displays). */
  watch = (l: Listener): (() => void) => {
    this.watchers.add(l);
    return () => this.watchers.delete(l);
  };

  /** active reports whether anything subscribes to the collection now. */
  get active(): boolean {
    return this.listeners.size > 0;
  }

  /** reconnectNow drops a pending backoff and connects at once (the "Reconnect" button). */
  reconnectNow(): void {
    if (this.socket !== null) return;
    if (this.timer !== null) this.env.clearTimeout(this.timer);
    this.timer = null;
    this.connect();
  }

  private set(patch: Partial<StreamState<T>>): void {
    this.state = { ...this.state, ...patch };
    for (const l of [...this.listeners, ...this.watchers]) l();
  }

  private connect(): void {
    this.gotMessage = false;
    let ws: WebSocket;
    try {
      ws = this.env.newSocket(wsURL(`ws/${STREAM_PERIOD}/${this.name}`));
    } catch (err) {
      this.failed(String(err));
      return;
    }
    this.socket = ws;
    ws.onmessage = (ev: MessageEvent) => this.message(ev.data);
    ws.onclose = () => {
      if (this.socket !== ws) return;
      this.socket = null;
      this.failed(this.gotMessage ? "the connection to the manager was lost" : "cannot connect to the manager");
    };
    ws.onerror = () => {
      // onclose follows and handles it
    };
  }

  private message(raw: unknown): void {
    let coll: Collection<T>;
    try {
      coll = JSON.parse(String(raw)) as Collection<T>;
    } catch {
      return;
    }
    if (!coll || !Array.isArray(coll.data)) return;
    this.gotMessage = true;
    this.set({ status: "live", data: coll.data, updatedAt: this.env.now(), attempts: 0, retryAt: 0, error: "" });
  }

  private failed(reason: string): void {
    const attempts = this.state.attempts + 1;
    const handshake = !this.gotMessage;
    this.schedule(attempts, backoffDelay(attempts, this.env.random), reason);
    if (handshake) {
      void this.env.probe(this.name).then((msg) => {
        if (msg === "" || this.socket !== null || this.listeners.size === 0) return;
        this.env.clearTimeout(this.timer);
        this.schedule(attempts, UNAVAILABLE_RETRY, msg, "unavailable");
      });
    }
  }

  private schedule(attempts: number, delay: number, error: string, status: StreamStatus = "stale"): void {
    if (this.listeners.size === 0) {
      this.set({ status, attempts, retryAt: 0, error });
      return;
    }
    this.timer = this.env.setTimeout(() => {
      this.timer = null;
      this.connect();
    }, delay);
    this.set({ status, attempts, retryAt: this.env.now() + delay, error });
  }

  private close(): void {
    if (this.timer !== null) this.env.clearTimeout(this.timer);
    this.timer = null;
    const ws = this.socket;
    this.socket = null;
    if (ws) {
      ws.onclose = null;
      ws.onmessage = null;
      ws.close();
    }
    // Keep the data for the next subscriber but say it is not live.
    if (this.state.status === "live") this.set({ status: "stale", error: "not subscribed" });
  }
}
