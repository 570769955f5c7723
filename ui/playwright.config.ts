import { defineConfig } from "@playwright/test";
import { join } from "node:path";

// The browser suite runs against a real manager: test/ui (make test-ui-e2e)
// starts the cluster, serves the UI and sets these variables.
const baseURL = process.env.LONGHORN_UI_URL ?? "http://127.0.0.1:8000/";
const artifacts = process.env.LONGHORN_UI_ARTIFACTS ?? "test-results";

// Debian's chromium (playwright cannot download its own builds here) with
// nothing that calls out to the network. Playwright starts every browser
// with a fresh temporary --user-data-dir of its own (it refuses one in args).
const chromium = process.env.CHROMIUM ?? "/usr/bin/chromium";

export default defineConfig({
  testDir: "e2e",
  outputDir: join(artifacts, "results"),
  timeout: 5 * 60 * 1000,
  expect: { timeout: 60 * 1000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  // report.json is read back by test/ui to print why a test failed last.
  reporter: [
    ["list"],
    ["html", { outputFolder: join(artifacts, "report"), open: "never" }],
    ["json", { outputFile: join(artifacts, "report.json") }],
  ],
  use: {
    baseURL,
    viewport: { width: 1280, height: 800 },
    screenshot: "only-on-failure",
    trace: "retain-on-failure",
    actionTimeout: 30 * 1000,
    launchOptions: {
      executablePath: chromium,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    },
  },
});
