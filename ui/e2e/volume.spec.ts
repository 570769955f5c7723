// A volume's life by clicking: create, attach, write data through its
// frontend (the test's control server runs qemu-img on the node), take a
// snapshot and see it in the tree, detach, delete.

import { test, expect, loaded, uniqueName, deleteVolume } from "./fixtures";

test("create, attach, write, snapshot, detach, delete by clicking", async ({ page, problems, control, api, shot }) => {
  const name = uniqueName("ui-life");
  try {
    await page.goto("#/volume");
    await loaded(page);
    await page.getByRole("button", { name: "Create Volume" }).click();
    const create = page.getByRole("dialog", { name: "Create Volume" });
    await create.getByLabel("Name").fill(name);
    await create.getByLabel("Size", { exact: true }).fill("1");
    await create.getByLabel("Number of replicas").fill("3");
    await create.getByLabel("Frontend").selectOption("nbd");
    await shot("create-volume-dialog");
    await create.getByRole("button", { name: "Create" }).click();

    await expect(page).toHaveURL(new RegExp(`#/volume/${name}$`));
    const h1 = page.getByRole("heading", { level: 1 });
    await expect(h1).toContainText(name);
    await expect(h1.getByText("detached")).toBeVisible({ timeout: 120_000 });
    await page.getByRole("button", { name: "Attach", exact: true }).click();
    const attach = page.getByRole("dialog", { name: `Attach ${name}` });
    await attach.getByLabel("Node").selectOption("node-1");
    await attach.getByRole("button", { name: "Attach" }).click();
    await expect(h1.getByText("healthy")).toBeVisible({ timeout: 180_000 });
    await expect(page.getByRole("table", { name: "replicas" }).getByText("healthy")).toHaveCount(3);
    await expect(page.getByText(/^nbd\+unix:|^nbd:/).first()).toBeVisible();
    await shot("volume-attached");

    const w = await control("/write", { volume: name, offset: 0, size: 16 << 20, seed: 7 });
    test.info().annotations.push({ type: "write", description: JSON.stringify(w) });

    // The list shows it attached with its replicas; its link leads back.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Volumes" }).click();
    const row = page.getByRole("link", { name, exact: true }).locator("xpath=ancestor::tr");
    await expect(row).toContainText("healthy");
    await expect(row).toContainText("3 / 3");
    await expect(row).toContainText("node-1");
    await shot("volumes-list");
    await page.getByRole("link", { name, exact: true }).click();
    await expect(h1.getByText("healthy")).toBeVisible();

    const tree = page.getByRole("tree", { name: `Snapshots of ${name}` });
    await expect(tree.getByRole("treeitem", { name: "Volume Head" })).toBeVisible();
    const before = await tree.getByRole("treeitem").count();
    await page.getByRole("button", { name: "Take Snapshot" }).click();
    await expect(tree.getByRole("treeitem")).toHaveCount(before + 1);
    const snap = tree.locator('li[data-snapshot]:not([data-snapshot="volume-head"])').first();
    await expect(snap).toContainText("user");
    // The head hangs below the new snapshot.
    await expect(snap.getByRole("treeitem", { name: "Volume Head" })).toBeVisible();
    await shot("volume-snapshot-tree", page.getByRole("heading", { name: "Replicas" }));
    await control("/verify", { volume: name, offset: 0, size: 16 << 20, seed: 7 });

    // The snapshot tree re-lists on each change of the volume; a list sent
    // while the volume still reads attached can reach the engine as it
    // stops, and Longhorn's snapshotList needs a running engine too (409).
    // That one answer is expected from the detach click on; nothing else is.
    problems.allow(/409.*action=snapshotList/);
    await page.getByRole("button", { name: "Detach" }).click();
    await page.getByRole("dialog", { name: `Detach ${name}?` }).getByRole("button", { name: "Detach" }).click();
    await expect(h1.getByText("detached")).toBeVisible({ timeout: 120_000 });
    await expect(page.getByText("Snapshots are shown while the volume is attached.")).toBeVisible();
    await shot("volume-detached");

    await page.getByRole("button", { name: "Delete" }).first().click();
    await page.getByRole("dialog", { name: `Delete ${name}?` }).getByRole("button", { name: "Delete" }).click();
    await expect(page).toHaveURL(/#\/volume$/);
    await expect(page.getByRole("link", { name, exact: true })).toHaveCount(0, { timeout: 120_000 });
    await shot("volume-deleted");
  } finally {
    if ((await api.get(`volumes/${name}`)).ok()) await deleteVolume(api, name);
  }
});
