/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// LONGHORN_API points the dev server's /v1 proxy at a manager
// (`npm run dev` with LONGHORN_API=http://127.0.0.1:9500).
const api = process.env.LONGHORN_API ?? "http://127.0.0.1:9500";

export default defineConfig({
  plugins: [react()],
  base: "./",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // Reproducible output: content-hashed names, no source maps, no
    // build-time stamps, so `make verify-ui` can compare with the commit.
    sourcemap: false,
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: { "/v1": { target: api, ws: true, changeOrigin: true } },
  },
  test: {
    environment: "jsdom",
    globals: true,
    setupFiles: ["src/test/setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
    // Typing through userEvent on a loaded 2-core machine takes seconds;
    // Vitest's 5 s default timed a correct test out.
    testTimeout: 30000,
  },
});
