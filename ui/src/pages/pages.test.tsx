import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { installFetch, installStreams, type FakeStreams } from "../test/fakes";
import { attached, node, setting, snap, volume } from "../test/fixtures";
import { renderAt } from "../test/render";

let streams: FakeStreams;
beforeEach(() => {
  streams = installStreams();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

function rowOf(name: string): HTMLElement {
  return screen.getByRole("link", { name }).closest("tr") as HTMLElement;
}

describe("Volumes page", () => {
  it("lists volumes from the stream and updates live", async () => {
    renderAt("/volume");
    expect(screen.getByText(/Loading volumes/)).toBeInTheDocument();
    act(() => streams.feed("volumes", [volume("vol-b"), attached("vol-a")]));
    expect(within(rowOf("vol-a")).getByText("healthy")).toBeInTheDocument();
    expect(within(rowOf("vol-a")).getByText("3 / 3")).toBeInTheDocument();
    expect(within(rowOf("vol-b")).getByText("detached")).toBeInTheDocument();
    act(() => streams.feed("volumes", [volume("vol-b"), attached("vol-a", "node-1", { robustness: "degraded" })]));
    expect(within(rowOf("vol-a")).getByText("degraded")).toBeInTheDocument();
  });

  it("sorts by a column and filters by text", async () => {
    const user = userEvent.setup();
    renderAt("/volume");
    act(() => streams.feed("volumes", [volume("aaa", { size: String(5 * 1024 ** 3) }), volume("bbb", { size: String(1024 ** 3) }), attached("ccc")]));
    const names = () => screen.getAllByRole("link").map((a) => a.textContent).filter((t) => ["aaa", "bbb", "ccc"].includes(t ?? ""));
    expect(names()).toEqual(["aaa", "bbb", "ccc"]);
    await user.click(screen.getByRole("button", { name: /^Size/ }));
    expect(names()).toEqual(["bbb", "aaa", "ccc"].sort((a, b) => ({ bbb: 1, aaa: 5, ccc: 2 })[a]! - ({ bbb: 1, aaa: 5, ccc: 2 })[b]!));
    await user.click(screen.getByRole("button", { name: /^Size/ }));
    expect(names()).toEqual(["aaa", "ccc", "bbb"]);
    await user.type(screen.getByRole("searchbox", { name: "Filter volumes" }), "healthy");
    expect(names()).toEqual(["ccc"]);
  });

  it("asks before deleting the selected volumes and sends DELETE for each", async () => {
    const user = userEvent.setup();
    const calls = installFetch(() => [200, {}]);
    renderAt("/volume");
    act(() => streams.feed("volumes", [volume("v1"), volume("v2"), volume("v3")]));
    await user.click(screen.getByRole("checkbox", { name: "Select v1" }));
    await user.click(screen.getByRole("checkbox", { name: "Select v3" }));
    await user.click(screen.getByRole("button", { name: "Delete" }));
    const dialog = screen.getByRole("dialog", { name: "Delete 2 volumes?" });
    expect(calls).toHaveLength(0);
    await user.click(within(dialog).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual(["DELETE volumes/v1", "DELETE volumes/v3"]));
  });

  it("creates a volume with defaults from settings and shows the API's validation message", async () => {
    const user = userEvent.setup();
    const calls = installFetch(() => [422, { type: "error", status: 422, code: "InvalidInput", message: "numberOfReplicas: must be between 1 and 20, got 0" }]);
    renderAt("/volume");
    act(() => streams.feed("volumes", []));
    await user.click(screen.getByRole("button", { name: "Create Volume" }));
    act(() => {
      streams.feed("settings", [setting("default-replica-count", '{"v1":"2"}'), setting("default-data-locality", "best-effort")]);
      streams.feed("nodes", [node("node-1", { tags: ["fast"] })]);
    });
    const dialog = screen.getByRole("dialog", { name: "Create Volume" });
    expect(within(dialog).getByLabelText("Number of replicas")).toHaveValue(2);
    expect(within(dialog).getByLabelText("Data locality")).toHaveValue("best-effort");
    await user.type(within(dialog).getByLabelText("Name"), "Bad_Name");
    expect(within(dialog).getByText(/lowercase letters/)).toBeInTheDocument();
    expect(within(dialog).getByRole("button", { name: "Create" })).toBeDisabled();
    await user.clear(within(dialog).getByLabelText("Name"));
    await user.type(within(dialog).getByLabelText("Name"), "good");
    await user.selectOptions(within(dialog).getByLabelText("Node tags"), "fast");
    await user.click(within(dialog).getByRole("button", { name: "Create" }));
    expect(await within(dialog).findByText(/must be between 1 and 20/)).toBeInTheDocument();
    expect(calls[0]).toMatchObject({ method: "POST", url: "volumes", body: { name: "good", size: String(2 * 1024 ** 3), numberOfReplicas: 2, dataLocality: "best-effort", nodeSelector: ["fast"] } });
  });
});

describe("Volume detail", () => {
  it("shows replicas, rebuild progress and the snapshot tree, and takes a snapshot", async () => {
    const user = userEvent.setup();
    let snaps = [snap("s1", ""), snap("volume-head", "s1", { usercreated: false })];
    const calls = installFetch((method, path) => {
      if (path.includes("action=snapshotList")) return [200, { type: "collection", data: snaps }];
      if (path.includes("action=snapshotCreate")) {
        snaps = [snap("s1", ""), snap("s2", "s1", { created: "2026-12-01T11:00:00Z" }), snap("volume-head", "s2", { usercreated: false })];
        return [200, snaps[1]];
      }
      return [404, { type: "error", status: 404, message: `no ${method} ${path}` }];
    });
    renderAt("/volume/vol");
    const v = attached("vol");
    v.replicas[2].mode = "WO";
    v.rebuildStatus = [{ replica: v.replicas[2].address, isRebuilding: true, progress: 37, state: "in_progress", error: "", fromReplica: "" }];
    act(() => streams.feed("volumes", [v]));
    act(() => streams.feed("events", []));
    expect(screen.getByRole("heading", { level: 1 })).toHaveTextContent("vol");
    const bar = screen.getByRole("progressbar", { name: "Rebuilding vol-r-3" });
    expect(bar).toHaveAttribute("aria-valuenow", "37");
    const tree = await screen.findByRole("tree", { name: "Snapshots of vol" });
    expect(within(tree).getByRole("treeitem", { name: "s1" })).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Take Snapshot" }));
    expect(await within(tree).findByRole("treeitem", { name: "s2" })).toBeInTheDocument();
    const s1 = within(tree).getByRole("treeitem", { name: "s1" });
    expect(within(s1).getByRole("treeitem", { name: "s2" })).toBeInTheDocument();
    expect(calls.map((c) => c.url)).toContain("volumes/vol?action=snapshotCreate");
    // Revert needs maintenance mode: the button is disabled and the hint says why.
    expect(within(tree).getByRole("button", { name: "Revert to s1" })).toBeDisabled();
    expect(screen.getByText(/maintenance mode/)).toBeInTheDocument();
  });

  it("confirms a snapshot delete and shows the API error message", async () => {
    const user = userEvent.setup();
    installFetch((_m, path) => {
      if (path.includes("action=snapshotList")) return [200, { type: "collection", data: [snap("s1", ""), snap("volume-head", "s1")] }];
      return [409, { type: "error", status: 409, code: "InvalidState", message: "volume vol is detaching" }];
    });
    renderAt("/volume/vol");
    act(() => streams.feed("volumes", [attached("vol")]));
    act(() => streams.feed("events", []));
    const tree = await screen.findByRole("tree");
    await user.click(within(tree).getByRole("button", { name: "Delete snapshot s1" }));
    await user.click(within(screen.getByRole("dialog", { name: "Delete snapshot s1?" })).getByRole("button", { name: "Delete" }));
    expect(await screen.findByText(/Delete snapshot s1: volume vol is detaching/)).toBeInTheDocument();
  });

  it("says when the volume does not exist", () => {
    renderAt("/volume/gone");
    act(() => streams.feed("volumes", [volume("other")]));
    expect(screen.getByText(/Volume gone does not exist/)).toBeInTheDocument();
  });
});

describe("Settings page", () => {
  it("groups by category, uses typed inputs and shows the API's message next to the setting", async () => {
    const user = userEvent.setup();
    const calls = installFetch((_m, path) =>
      path === "settings/backup-target" ? [400, { type: "error", status: 400, message: "backup-target with invalid value x: unsupported scheme" }] : [200, {}],
    );
    renderAt("/setting");
    act(() =>
      streams.feed("settings", [
        setting("backup-target", "", { category: "backup", displayName: "Backup Target" }),
        setting("replica-soft-anti-affinity", "false", { category: "scheduling", type: "bool", displayName: "Replica Node Level Soft Anti-Affinity" }),
        setting("default-replica-count", '{"v1":"3"}', { type: "int", range: { minimum: 1, maximum: 20 }, dataEngineSpecific: true, displayName: "Default Replica Count" }),
      ]),
    );
    expect(screen.getAllByRole("heading", { level: 2 }).map((h) => h.textContent)).toEqual(["General", "Backup", "Scheduling"]);
    expect(screen.getByLabelText("Replica Node Level Soft Anti-Affinity").tagName).toBe("SELECT");
    const count = screen.getByLabelText("Default Replica Count (v1)");
    await user.clear(count);
    await user.type(count, "25");
    expect(screen.getByText("must be at most 20")).toBeInTheDocument();
    await user.clear(count);
    await user.type(count, "2");
    await user.type(screen.getByLabelText("Backup Target"), "x");
    await user.click(screen.getByRole("button", { name: "Save 2 changes" }));
    expect(await screen.findByText(/unsupported scheme/, { selector: ".setting .error" })).toBeInTheDocument();
    expect(calls.find((c) => c.url === "settings/default-replica-count")?.body).toEqual({ value: '{"v1":"2"}' });
  });
});

describe("Nodes page", () => {
  it("lists nodes with status and storage and saves node edits with PUT", async () => {
    const user = userEvent.setup();
    const calls = installFetch(() => [200, {}]);
    renderAt("/node");
    act(() => streams.feed("nodes", [node("node-1"), node("node-2", { conditions: { Ready: { status: "False" } } })]));
    const table = screen.getByRole("table", { name: "nodes" });
    expect(within(table).getAllByText("down")).toHaveLength(2);
    expect(within(table).getAllByText("schedulable")).toHaveLength(1);
    await user.click(screen.getByRole("button", { name: "Edit node node-1" }));
    const dialog = screen.getByRole("dialog", { name: "Edit node node-1" });
    await user.click(within(dialog).getByLabelText(/Scheduling enabled/));
    await user.type(within(dialog).getByLabelText("Node tags"), "ssd, fast");
    await user.click(within(dialog).getByRole("button", { name: "Save" }));
    await waitFor(() => expect(calls[0]).toMatchObject({ method: "PUT", url: "nodes/node-1", body: { allowScheduling: false, evictionRequested: false, tags: ["ssd", "fast"] } }));
  });
});

describe("Dashboard and connection state", () => {
  it("shows counts and a stale banner when the stream drops, then clears it on reconnect", async () => {
    renderAt("/dashboard");
    act(() => {
      streams.feed("volumes", [attached("a"), attached("b", "node-1", { robustness: "degraded" }), volume("c")]);
      streams.feed("nodes", [node("node-1")]);
      streams.feed("events", []);
    });
    expect(screen.getByRole("img", { name: /Volumes: Healthy 1, Degraded 1, In progress 0, Fault 0, Detached 1/ })).toBeInTheDocument();
    expect(screen.getByTestId("live-status")).toHaveTextContent("Live");
    act(() => streams.latest("volumes").drop());
    expect(await screen.findByTestId("stale-banner")).toHaveTextContent(/Live updates stopped/);
    expect(screen.getByTestId("live-status")).toHaveTextContent("Stale");
    // The data stays on screen while stale.
    expect(screen.getByRole("img", { name: /Healthy 1/ })).toBeInTheDocument();
    await waitFor(() => expect(streams.sockets.filter((s) => s.url.endsWith("/volumes")).length).toBe(2), { timeout: 2000 });
    act(() => streams.feed("volumes", [attached("a")]));
    await waitFor(() => expect(screen.queryByTestId("stale-banner")).toBeNull());
  });

  it("names a collection the manager does not serve instead of failing", async () => {
    streams.probeAnswer.recurringjobs = "no stream for \"recurringjobs\"";
    renderAt("/recurringjob");
    act(() => streams.latest("recurringjobs").drop());
    expect(await screen.findByRole("note")).toHaveTextContent(/does not serve recurring jobs: no stream/);
  });
});
