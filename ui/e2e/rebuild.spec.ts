// A replica killed by the test: the open volume page shows the volume
// degraded, then the replica rebuilding with its progress, then healthy,
// from the WebSocket stream alone (no reload, no navigation).
//
// The killed replica comes back at once and its data is intact, so its
// rebuild alone takes less than the stream's one-second pace. The test holds
// the rebuild (concurrent-replica-rebuild-per-node-limit 0) while 128 MiB
// more are written to the degraded volume, then lets it run at the volume's
// replicaRebuildingBandwidthLimit of 32 MB/s: about 4 s of rebuilding.

import { test, expect, loaded, uniqueName, deleteVolume } from "./fixtures";

test("a killed replica shows degraded, rebuilding, healthy without a reload", async ({ page, problems, control, api, shot }) => {
  void problems;
  const name = uniqueName("ui-rebuild");
  const created = await api.post("volumes", { data: { name, size: String(1 << 30), numberOfReplicas: 3, frontend: "nbd" } });
  expect(created.ok(), await created.text()).toBe(true);
  const limit = "concurrent-replica-rebuild-per-node-limit";
  const setLimit = async (value: string) => {
    const res = await api.put(`settings/${limit}`, { data: { value } });
    expect(res.ok(), await res.text()).toBe(true);
  };
  const oldLimit = ((await (await api.get(`settings/${limit}`)).json()) as { value: string }).value;
  try {
    await expect.poll(async () => ((await (await api.get(`volumes/${name}`)).json()) as { state: string }).state, { timeout: 120_000 }).toBe("detached");
    const paced = await api.post(`volumes/${name}?action=updateReplicaRebuildingBandwidthLimit`, { data: { replicaRebuildingBandwidthLimit: 32 } });
    expect(paced.ok(), await paced.text()).toBe(true);
    const att = await api.post(`volumes/${name}?action=attach`, { data: { hostId: "node-1" } });
    expect(att.ok(), await att.text()).toBe(true);

    let navigations = 0;
    // What the page hears on its volumes stream: each message's robustness
    // and replica modes, for the report when a state is not seen.
    const heard: string[] = [];
    const t0page = Date.now();
    page.on("websocket", (ws) => {
      if (!ws.url().endsWith("/volumes")) return;
      ws.on("framereceived", (f) => {
        try {
          const v = (JSON.parse(String(f.payload)) as { data: { name: string; robustness: string; replicas: { name: string; mode: string; running: boolean }[] }[] }).data.find((x) => x.name === name);
          if (v) heard.push(`+${Date.now() - t0page}ms ${v.robustness} ${v.replicas.map((r) => `${r.name.slice(-4)}:${r.mode || "-"}:${r.running ? "up" : "down"}`).join(" ")}`);
        } catch {
          heard.push("unreadable frame");
        }
      });
    });
    await page.goto(`#/volume/${name}`);
    page.on("framenavigated", (f) => {
      if (f === page.mainFrame()) navigations++;
    });
    await loaded(page);
    const h1 = page.getByRole("heading", { level: 1 });
    await expect(h1.getByText("healthy")).toBeVisible({ timeout: 180_000 });
    await control("/write", { volume: name, offset: 0, size: 256 << 20, seed: 11 });

    await setLimit("0");
    const t0 = Date.now();
    heard.push(`+${t0 - t0page}ms kill`);
    const killed = await control("/kill-replica", { volume: name });
    const replica = String(killed.replica);
    const times: Record<string, number> = {};
    await expect(h1.getByText("degraded")).toBeVisible({ timeout: 60_000 });
    times.degraded = Date.now() - t0;
    await shot("rebuild-degraded");
    await control("/write", { volume: name, offset: 256 << 20, size: 128 << 20, seed: 12 });
    await setLimit(oldLimit);
    const row = page.getByRole("table", { name: "replicas" }).locator(`tr[data-replica="${replica}"]`);
    // waitFor checks on every animation frame: a rebuild can take only a second or two.
    try {
      await row.getByRole("progressbar", { name: `Rebuilding ${replica}` }).waitFor({ state: "visible", timeout: 120_000 });
    } finally {
      test.info().annotations.push({ type: "volumes stream", description: heard.join("\n") });
      console.log(`volumes stream of ${name}:\n  ${heard.join("\n  ")}`);
    }
    times.rebuilding = Date.now() - t0;
    await shot("rebuild-progress", page.getByRole("heading", { name: "Replicas" }));
    await expect(h1.getByText("healthy")).toBeVisible({ timeout: 180_000 });
    times.healthy = Date.now() - t0;
    await expect(row.getByText("healthy")).toBeVisible();
    await shot("rebuild-healthy");
    expect(navigations, "the page was not reloaded or navigated").toBe(0);
    test.info().annotations.push({ type: "timeline (ms after kill)", description: JSON.stringify({ replica, ...times }) });
    console.log(`rebuild on screen: replica ${replica} degraded +${times.degraded} ms, rebuilding +${times.rebuilding} ms, healthy +${times.healthy} ms`);
    await control("/verify", { volume: name, offset: 0, size: 256 << 20, seed: 11 });
    await control("/verify", { volume: name, offset: 256 << 20, size: 128 << 20, seed: 12 });
  } finally {
    await api.put(`settings/${limit}`, { data: { value: oldLimit } });
    await deleteVolume(api, name);
  }
});
