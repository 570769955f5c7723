// The suite's fixtures: every page is watched for console errors, page
// errors, failed requests and HTTP errors, and a test fails on any that it
// did not expect. `control` reaches the test's control server (writes
// through a volume's frontend, kills replicas); `api` calls /v1 directly
// for set-up and clean-up that is not what a test is about.

import { test as base, expect, type APIRequestContext, type Page } from "@playwright/test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

export const ARTIFACTS = process.env.LONGHORN_UI_ARTIFACTS ?? "test-results";
const CONTROL = process.env.LONGHORN_UI_CONTROL ?? "";

export interface Problems {
  list: string[];
  /** allow ignores problems whose text matches re (for known, reported gaps). */
  allow(re: RegExp): void;
}

/** Every collection the UI streams (src/api/types.ts Collections). */
export const COLLECTIONS = ["volumes", "nodes", "settings", "engineimages", "instancemanagers", "volumeattachments", "recurringjobs", "events", "backuptargets", "backupvolumes", "backups"];

interface WorkerFixtures {
  /** gaps are the collections the manager does not serve (GET /v1/<name> is not 2xx). */
  gaps: string[];
}

interface Fixtures {
  problems: Problems;
  control: (path: string, body: unknown) => Promise<Record<string, unknown>>;
  api: APIRequestContext;
  /** shot saves a screenshot of the viewport, first scrolling `at` into view when given. */
  shot: (name: string, at?: import("@playwright/test").Locator) => Promise<void>;
}

export const test = base.extend<Fixtures, WorkerFixtures>({
  gaps: [
    async ({ playwright }, use) => {
      const base = process.env.LONGHORN_UI_URL ?? "http://127.0.0.1:8000/";
      const ctx = await playwright.request.newContext({ baseURL: new URL("v1/", base).toString() });
      const gaps: string[] = [];
      for (const c of COLLECTIONS) if (!(await ctx.get(c)).ok()) gaps.push(c);
      await ctx.dispose();
      if (gaps.length) console.log(`API gaps: the manager does not serve ${gaps.map((g) => `/v1/${g}`).join(", ")}; their 404s and WebSocket errors are allowed, and the UI must say so`);
      await use(gaps);
    },
    { scope: "worker" },
  ],
  problems: async ({ page, gaps }, use) => {
    const list: string[] = [];
    // A collection the manager lacks fails its WebSocket handshake and its
    // one probe; nothing else may fail.
    const allowed: RegExp[] = gaps.map((g) => new RegExp(`/v1/(ws/1s/)?${g}(\\b|$)`));
    const add = (s: string) => {
      if (!allowed.some((re) => re.test(s))) list.push(s);
    };
    page.on("console", (m) => {
      if (m.type() === "error") add(`console error: ${m.text()} (${m.location().url})`);
    });
    page.on("pageerror", (e) => add(`page error: ${e.message}`));
    page.on("requestfailed", (r) => {
      // A navigation away cancels pending requests; that is not a failure.
      if (r.failure()?.errorText === "net::ERR_ABORTED") return;
      add(`request failed: ${r.method()} ${r.url}: ${r.failure()?.errorText}`);
    });
    page.on("response", (r) => {
      if (r.status() >= 400) add(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
    });
    const p: Problems = { list, allow: (re) => allowed.push(re) };
    await use(p);
    expect(list, "console errors and failed requests").toEqual([]);
  },
  control: async ({ playwright }, use) => {
    const ctx = await playwright.request.newContext({ baseURL: CONTROL, timeout: 180_000 });
    await use(async (path, body) => {
      const r = await ctx.post(path, { data: body });
      const j = (await r.json()) as Record<string, unknown>;
      if (!r.ok()) throw new Error(`control ${path}: ${j.error ?? r.status()}`);
      return j;
    });
    await ctx.dispose();
  },
  api: async ({ playwright, baseURL }, use) => {
    const ctx = await playwright.request.newContext({ baseURL: new URL("v1/", baseURL).toString() });
    await use(ctx);
    await ctx.dispose();
  },
  shot: async ({ page }, use, info) => {
    const dir = join(ARTIFACTS, "screenshots");
    mkdirSync(dir, { recursive: true });
    await use(async (name, at) => {
      if (at) await at.evaluate((el) => el.scrollIntoView({ block: "start" }));
      await page.screenshot({ path: join(dir, `${name}.png`), fullPage: false });
      await info.attach(name, { path: join(dir, `${name}.png`), contentType: "image/png" });
    });
  },
});

export { expect };

/** loaded waits until the page shows no "Loading" placeholder and every stream is live. */
export async function loaded(page: Page): Promise<void> {
  await expect(page.locator("main")).not.toContainText(/Loading [a-z ]+…/);
  await expect(page.getByTestId("live-status")).toHaveText(/Live/);
}

/** uniqueName makes a volume name no other run uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}`;
}

/** deleteVolume removes a volume through the API and waits until it is gone. */
export async function deleteVolume(api: APIRequestContext, name: string): Promise<void> {
  await api.post(`volumes/${name}?action=detach`, { data: { forceDetach: true } });
  await api.delete(`volumes/${name}`);
  await expect.poll(async () => (await api.get(`volumes/${name}`)).status(), { timeout: 120_000 }).toBe(404);
}
