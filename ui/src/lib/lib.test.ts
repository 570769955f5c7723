import { describe, expect, it } from "vitest";
import { ago, formatBytes, parseSize, parseTime } from "./format";
import { storageOf, nodeStatus } from "./nodes";
import { checkValue, groupSettings, perEngineValue } from "./settings";
import { snapshotTree, countSnapshots } from "./snapshots";
import { rebuilds, volumeHealth, countByHealth, expansion } from "./volume";
import { attached, node, setting, snap, volume } from "../test/fixtures";

describe("format", () => {
  it("formats bytes in binary units", () => {
    expect(formatBytes(0)).toBe("0 B");
    expect(formatBytes(1023)).toBe("1023 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(String(2 * 1024 ** 3))).toBe("2 GiB");
    expect(formatBytes(123.4 * 1024 ** 4)).toBe("123 TiB");
    expect(formatBytes("garbage")).toBe("-");
  });
  it("parses sizes with Kubernetes suffixes", () => {
    expect(parseSize("10")).toBe(10);
    expect(parseSize("2Gi")).toBe(2 * 1024 ** 3);
    expect(parseSize("512 MiB")).toBe(512 * 1024 ** 2);
    expect(parseSize("1.5Ti")).toBe(1.5 * 1024 ** 4);
    expect(parseSize("1G")).toBe(1e9);
    expect(parseSize("ten")).toBeNull();
    expect(parseSize("-1Gi")).toBeNull();
  });
  it("reads RFC 3339 and Go's time.Time.String() form", () => {
    const want = Date.UTC(2026, 11, 1, 18, 49, 0);
    expect(parseTime("2026-12-01T18:49:00Z")).toBe(want);
    expect(parseTime("2026-12-01 18:49:00 +0000 UTC")).toBe(want);
    expect(parseTime("2026-12-01 20:49:00.123 +0200 CEST")).toBe(want + 123);
    expect(parseTime("")).toBeNaN();
    expect(ago("2026-12-01T18:48:00Z", want)).toBe("60s".replace("60s", "1m"));
  });
});

describe("volumes", () => {
  it("combines state and robustness", () => {
    expect(volumeHealth({ state: "attached", robustness: "degraded" })).toBe("degraded");
    expect(volumeHealth({ state: "detached", robustness: "unknown" })).toBe("detached");
    expect(volumeHealth({ state: "detached", robustness: "faulted" })).toBe("faulted");
    expect(volumeHealth({ state: "attaching", robustness: "unknown" })).toBe("attaching");
    expect(countByHealth([attached("a"), volume("b"), attached("c", "node-1", { robustness: "degraded" })])).toMatchObject({ healthy: 1, detached: 1, degraded: 1 });
  });
  it("finds rebuilding replicas from rebuildStatus by address, and WO replicas without a status", () => {
    const v = attached("v");
    v.replicas[0].mode = "WO";
    v.replicas[1].mode = "WO";
    v.rebuildStatus = [{ replica: "tcp://10.0.0.1:10000", isRebuilding: true, progress: 42, state: "in_progress", error: "", fromReplica: "tcp://10.0.0.3:10000" }];
    expect(rebuilds(v)).toEqual([
      { replica: "v-r-1", progress: 42, state: "in_progress", error: "", fromReplica: "tcp://10.0.0.3:10000" },
      { replica: "v-r-2", progress: null, state: "in_progress", error: "", fromReplica: "" },
    ]);
    expect(rebuilds(attached("w"))).toEqual([]);
    const p = attached("p");
    p.replicas[0].mode = "";
    expect(rebuilds(p)).toEqual([{ replica: "p-r-1", progress: null, state: "pending", error: "", fromReplica: "" }]);
    p.state = "detached";
    expect(rebuilds(p)).toEqual([]);
  });
  it("reports an expansion from the engine", () => {
    const v = attached("v", "node-1", { size: String(4 * 1024 ** 3) });
    expect(expansion(v)).toBeNull();
    v.controllers[0].isExpanding = true;
    expect(expansion(v)).toMatchObject({ expanding: true, to: String(4 * 1024 ** 3) });
  });
});

describe("snapshots", () => {
  it("builds the chain from parents, the head last, and counts user snapshots", () => {
    const list = [snap("volume-head", "s2", { usercreated: false }), snap("s2", "s1", { created: "2026-12-01T11:00:00Z" }), snap("s1", ""), snap("s3", "s1", { created: "2026-12-01T12:00:00Z", removed: true })];
    const t = snapshotTree(list);
    expect(t.map((n) => n.snap.name)).toEqual(["s1"]);
    expect(t[0].children.map((n) => n.snap.name)).toEqual(["s2", "s3"]);
    expect(t[0].children[0].children.map((n) => n.snap.name)).toEqual(["volume-head"]);
    expect(countSnapshots(list)).toBe(2);
  });
  it("survives a cycle and unknown parents", () => {
    const t = snapshotTree([snap("a", "b"), snap("b", "a"), snap("c", "gone")]);
    const names = (ns: typeof t): string[] => ns.flatMap((n) => [n.snap.name, ...names(n.children)]);
    expect(names(t).sort()).toEqual(["a", "b", "c"]);
  });
});

describe("nodes", () => {
  it("sums storage: schedulable is available minus reserved on disks that take replicas", () => {
    const s = storageOf([node("a"), node("b", { allowScheduling: false })]);
    const G = 1024 ** 3;
    expect(s).toEqual({ total: 200 * G, used: 40 * G, reserved: 30 * G, scheduled: 12 * G, schedulable: 50 * G, disabled: 100 * G });
  });
  it("derives node status from conditions and scheduling", () => {
    expect(nodeStatus(node("a"))).toBe("schedulable");
    expect(nodeStatus(node("a", { allowScheduling: false }))).toBe("disabled");
    expect(nodeStatus(node("a", { conditions: { Ready: { status: "False" } } }))).toBe("down");
    expect(nodeStatus(node("a", { conditions: { Ready: { status: "True" }, Schedulable: { status: "False" } } }))).toBe("unschedulable");
  });
});

describe("settings", () => {
  it("checks values against type, range and options", () => {
    const int = setting("x", "1", { type: "int", range: { minimum: 1, maximum: 20 } }).definition;
    expect(checkValue(int, "0")).toBe("must be at least 1");
    expect(checkValue(int, "21")).toBe("must be at most 20");
    expect(checkValue(int, "1.5")).toBe("must be a whole number");
    expect(checkValue(int, "3")).toBe("");
    const opt = setting("y", "a", { options: ["a", "b"] }).definition;
    expect(checkValue(opt, "c")).toBe("must be one of a, b");
    expect(checkValue({ ...opt, type: "bool" }, "yes")).toBe("must be true or false");
    expect(checkValue({ ...opt, required: true }, "")).toBe("a value is required");
  });
  it("groups by category with general first and drops deprecated settings", () => {
    const g = groupSettings([setting("b", "", { category: "scheduling" }), setting("a", ""), setting("old", "", { type: "deprecated" }), setting("c", "", { category: "backup" })]);
    expect(g.map(([c, l]) => [c, l.map((s) => s.name)])).toEqual([["general", ["a"]], ["backup", ["c"]], ["scheduling", ["b"]]]);
  });
  it("reads per-data-engine values", () => {
    expect(perEngineValue('{"v1":"3","v2":"2"}')).toEqual({ v1: "3", v2: "2" });
    expect(perEngineValue("3")).toBeNull();
  });
});
