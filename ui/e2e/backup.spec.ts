// A backup by clicking, against the suite's S3 backup target (versitygw on
// the cluster bridge, started by test/ui): point the default backup target
// at it, take a snapshot of an attached volume with data, back it up from
// the snapshot tree, see it complete on the volume and on the Backups
// page, delete it.

import { test, expect, loaded, uniqueName, deleteVolume } from "./fixtures";

const S3_URL = process.env.LONGHORN_UI_S3_URL ?? "";
const S3_SECRET = process.env.LONGHORN_UI_S3_SECRET ?? "";

test("back up a snapshot by clicking and delete the backup", async ({ page, problems, control, api, shot }) => {
  test.skip(S3_URL === "", "no S3 backup target (versitygw not found)");
  void problems;
  test.setTimeout(8 * 60_000);
  const name = uniqueName("ui-bak");
  try {
    await page.goto("#/backup");
    await loaded(page);
    await page.getByRole("button", { name: "Edit backup target default" }).click();
    const edit = page.getByRole("dialog", { name: "Edit backup target default" });
    await edit.getByLabel("URL").fill(S3_URL);
    await edit.getByLabel("Credential secret").fill(S3_SECRET);
    await edit.getByLabel("Poll interval (seconds)").fill("30");
    await edit.getByRole("button", { name: "Save" }).click();
    const target = page.getByRole("table", { name: "backup targets" }).getByRole("row").filter({ hasText: S3_URL });
    await expect(target.getByText(/^available$/)).toBeVisible({ timeout: 120_000 });

    // Set-up that is not what this test is about: a volume attached on node-1, with data.
    expect((await api.post("volumes", { data: { name, size: String(256 << 20), numberOfReplicas: 3, frontend: "nbd" } })).ok()).toBe(true);
    await expect.poll(async () => ((await (await api.get(`volumes/${name}`)).json()) as { state?: string }).state, { timeout: 120_000 }).toBe("detached");
    expect((await api.post(`volumes/${name}?action=attach`, { data: { hostId: "node-1" } })).ok()).toBe(true);
    await page.goto(`#/volume/${name}`);
    const h1 = page.getByRole("heading", { level: 1 });
    await expect(h1.getByText("healthy")).toBeVisible({ timeout: 180_000 });
    await control("/write", { volume: name, offset: 0, size: 8 << 20, seed: 11 });

    const tree = page.getByRole("tree", { name: `Snapshots of ${name}` });
    await expect(tree.getByRole("treeitem", { name: "Volume Head" })).toBeVisible();
    await page.getByRole("button", { name: "Take Snapshot" }).click();
    const snap = tree.locator('li[data-snapshot]:not([data-snapshot="volume-head"])').first();
    await expect(snap).toContainText("user");
    const snapName = (await snap.getAttribute("data-snapshot")) ?? "";
    await page.getByRole("button", { name: `Back up snapshot ${snapName}` }).click();
    await page.getByRole("dialog", { name: `Back up snapshot ${snapName}?` }).getByRole("button", { name: "Create Backup" }).click();
    const mine = page.getByRole("table", { name: `Backups of ${name}` });
    await expect(mine.getByText("Completed")).toBeVisible({ timeout: 240_000 });
    await expect(mine).toContainText(snapName);
    await shot("volume-backups", page.getByRole("heading", { name: "Backups" }));

    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Backups" }).click();
    // The completed backup made the backup volume re-read the store: its size and last backup show.
    const bvRow = page.getByRole("table", { name: "backup volumes" }).getByRole("row").filter({ hasText: name });
    await expect(bvRow).toContainText("256 MiB", { timeout: 60_000 });
    await expect(bvRow.getByRole("cell").nth(2)).not.toHaveText("-"); // Last backup
    await page.getByRole("button", { name: new RegExp(name), expanded: false }).click({ timeout: 120_000 });
    const list = page.getByRole("table", { name: `backups of ${name}` });
    await expect(list.getByText("Completed")).toBeVisible();
    await expect(list).toContainText(snapName);
    await shot("backups");
    await list.getByRole("button", { name: /^Delete backup / }).first().click();
    await page.getByRole("dialog", { name: /^Delete backup / }).getByRole("button", { name: "Delete" }).click();
    await expect(list.getByText("Completed")).toHaveCount(0, { timeout: 120_000 });
  } finally {
    if ((await api.get(`volumes/${name}`)).ok()) await deleteVolume(api, name);
    await api.delete(`backupvolumes/${name}`);
    await api.post("backuptargets/default?action=backupTargetUpdate", { data: { backupTargetURL: "", credentialSecret: "", pollInterval: "300" } });
  }
});
