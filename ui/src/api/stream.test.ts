import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { BACKOFF_MAX, backoffDelay, LiveCollection, LINGER, UNAVAILABLE_RETRY, type StreamEnv } from "./stream";
import { FakeSocket } from "../test/fakes";

function env(sockets: FakeSocket[], probe = ""): StreamEnv {
  return {
    newSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s as unknown as WebSocket;
    },
    probe: async () => probe,
    now: () => Date.now(),
    setTimeout: (fn, ms) => setTimeout(fn, ms),
    clearTimeout: (t) => clearTimeout(t as ReturnType<typeof setTimeout>),
    random: () => 0.5,
  };
}

describe("backoffDelay", () => {
  it("doubles from 500 ms and stops at 15 s", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 10].map((n) => backoffDelay(n, () => 0.5))).toEqual([500, 1000, 2000, 4000, 8000, 15000, 15000, 15000]);
  });
  it("jitters by at most 20 %", () => {
    expect(backoffDelay(3, () => 0)).toBe(1600);
    expect(backoffDelay(3, () => 0.999999)).toBe(2400);
    expect(backoffDelay(50, () => 0.999999)).toBeLessThanOrEqual(BACKOFF_MAX * 1.2);
  });
});

describe("LiveCollection", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("opens one socket on /v1/ws/1s/<name> for the first subscriber and goes live on the first message", () => {
    const sockets: FakeSocket[] = [];
    const c = new LiveCollection<{ id: string }>("volumes", env(sockets));
    const l = vi.fn();
    c.subscribe(l);
    c.subscribe(() => {});
    expect(sockets).toHaveLength(1);
    expect(sockets[0].url).toMatch(/\/v1\/ws\/1s\/volumes$/);
    expect(c.getSnapshot().status).toBe("connecting");
    sockets[0].push([{ id: "a" }]);
    expect(c.getSnapshot()).toMatchObject({ status: "live", data: [{ id: "a" }], attempts: 0 });
    expect(l).toHaveBeenCalled();
  });

  it("keeps the data, marks it stale and reconnects with growing backoff when the socket drops", () => {
    const sockets: FakeSocket[] = [];
    const c = new LiveCollection<{ id: string }>("nodes", env(sockets));
    c.subscribe(() => {});
    sockets[0].push([{ id: "n1" }]);
    sockets[0].drop();
    let s = c.getSnapshot();
    expect(s.status).toBe("stale");
    expect(s.data).toEqual([{ id: "n1" }]);
    expect(s.error).toMatch(/lost/);
    expect(s.retryAt - Date.now()).toBe(500);
    vi.advanceTimersByTime(499);
    expect(sockets).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(sockets).toHaveLength(2);
    sockets[1].drop(); // second failure, before any message
    s = c.getSnapshot();
    expect(s.attempts).toBe(2);
    expect(s.retryAt - Date.now()).toBe(1000);
    vi.advanceTimersByTime(1000);
    sockets[2].push([{ id: "n2" }]);
    expect(c.getSnapshot()).toMatchObject({ status: "live", data: [{ id: "n2" }], attempts: 0, error: "" });
  });

  it("reports a collection the manager does not serve as unavailable and retries slowly", async () => {
    const sockets: FakeSocket[] = [];
    const c = new LiveCollection("backups", env(sockets, "no stream for \"backups\""));
    c.subscribe(() => {});
    sockets[0].drop();
    await vi.advanceTimersByTimeAsync(0);
    const s = c.getSnapshot();
    expect(s.status).toBe("unavailable");
    expect(s.error).toContain("no stream");
    expect(s.retryAt - Date.now()).toBe(UNAVAILABLE_RETRY);
    await vi.advanceTimersByTimeAsync(1000);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(UNAVAILABLE_RETRY);
    expect(sockets).toHaveLength(2);
  });

  it("closes the socket LINGER after the last subscriber leaves, not before", () => {
    const sockets: FakeSocket[] = [];
    const c = new LiveCollection("settings", env(sockets));
    const off = c.subscribe(() => {});
    sockets[0].push([]);
    off();
    vi.advanceTimersByTime(LINGER - 1);
    expect(sockets[0].closed).toBe(false);
    const off2 = c.subscribe(() => {});
    vi.advanceTimersByTime(LINGER * 2);
    expect(sockets[0].closed).toBe(false);
    off2();
    vi.advanceTimersByTime(LINGER);
    expect(sockets[0].closed).toBe(true);
    expect(sockets).toHaveLength(1);
  });

  it("ignores messages that are not collections", () => {
    const sockets: FakeSocket[] = [];
    const c = new LiveCollection("events", env(sockets));
    c.subscribe(() => {});
    sockets[0].onmessage?.({ data: "not json" } as MessageEvent);
    sockets[0].onmessage?.({ data: JSON.stringify({ type: "error", message: "x" }) } as MessageEvent);
    expect(c.getSnapshot().status).toBe("connecting");
  });

  it("reconnects at once on reconnectNow", () => {
    const sockets: FakeSocket[] = [];
    const c = new LiveCollection("volumes", env(sockets));
    c.subscribe(() => {});
    sockets[0].drop();
    sockets[1]?.drop();
    expect(sockets).toHaveLength(1);
    c.reconnectNow();
    expect(sockets).toHaveLength(2);
  });
});
