// Every page loads from the real manager with no console error and no
// failed request, at 1280x800 and on a narrow (phone-sized) window, and a
// screenshot of each is kept. A collection the manager does not serve yet
// (an API gap) must show the UI's "does not serve" note; its own 404 and
// WebSocket error are then the only problems allowed, and are listed.

import { test, expect, loaded } from "./fixtures";

// streams: the collections the page shows at once (a missing one must show
// the note); backups shows only after a backup volume is opened.
const PAGES: { path: string; name: string; heading: string; streams: string[] }[] = [
  { path: "#/dashboard", name: "dashboard", heading: "Dashboard", streams: ["volumes", "nodes", "events"] },
  { path: "#/volume", name: "volumes", heading: "Volumes", streams: ["volumes"] },
  { path: "#/node", name: "nodes", heading: "Nodes", streams: ["nodes"] },
  { path: "#/backup", name: "backups", heading: "Backups", streams: ["backuptargets", "backupvolumes"] },
  { path: "#/recurringjob", name: "recurring-jobs", heading: "Recurring Jobs", streams: ["recurringjobs"] },
  { path: "#/engineimage", name: "engine-images", heading: "Engine Images", streams: ["engineimages"] },
  { path: "#/instancemanager", name: "instance-managers", heading: "Instance Managers", streams: ["instancemanagers"] },
  { path: "#/event", name: "events", heading: "Events", streams: ["events"] },
  { path: "#/setting", name: "settings", heading: "Settings", streams: ["settings"] },
];

for (const p of PAGES) {
  test(`${p.heading} page loads`, async ({ page, problems, gaps, shot }) => {
    void problems;
    const missing = p.streams.filter((s) => gaps.includes(s));
    if (missing.length) test.info().annotations.push({ type: "API gap", description: missing.map((m) => `/v1/${m}`).join(", ") });
    await page.goto(p.path);
    await expect(page.getByRole("heading", { level: 1, name: p.heading })).toBeVisible();
    await loaded(page);
    if (missing.length) await expect(page.getByRole("note").first()).toContainText("does not serve");
    await shot(`page-${p.name}`);
    await page.setViewportSize({ width: 390, height: 844 });
    await expect(page.getByRole("button", { name: "Menu" })).toBeVisible();
    await shot(`page-${p.name}-narrow`);
  });
}

test("the narrow window's menu opens and navigates", async ({ page, problems, shot }) => {
  void problems;
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("#/dashboard");
  await loaded(page);
  await page.getByRole("button", { name: "Menu" }).click();
  await shot("narrow-menu");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Nodes" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Nodes" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Main" })).toBeHidden();
});
