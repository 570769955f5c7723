// Messages from actions: errors show the API's message; an aria-live
// region lets screen readers announce them.

import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from "react";
import { errorMessage } from "../api/client";

export interface Toast {
  id: number;
  kind: "error" | "success" | "info";
  text: string;
}

interface ToastAPI {
  error(prefix: string, err: unknown): void;
  success(text: string): void;
}

const Ctx = createContext<ToastAPI>({ error: () => {}, success: () => {} });

export function useToasts(): ToastAPI {
  return useContext(Ctx);
}

let nextID = 1;

export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const dismiss = useCallback((id: number) => setToasts((ts) => ts.filter((t) => t.id !== id)), []);
  const push = useCallback(
    (kind: Toast["kind"], text: string) => {
      const id = nextID++;
      setToasts((ts) => [...ts.slice(-4), { id, kind, text }]);
      if (kind !== "error") window.setTimeout(() => dismiss(id), 5000);
    },
    [dismiss],
  );
  const api = useMemo<ToastAPI>(
    () => ({
      error: (prefix, err) => push("error", `${prefix}: ${errorMessage(err)}`),
      success: (text) => push("success", text),
    }),
    [push],
  );
  return (
    <Ctx.Provider value={api}>
      {children}
      <div className="toasts" role="status" aria-live="polite">
        {toasts.map((t) => (
          <div key={t.id} className={`toast toast-${t.kind}`} role={t.kind === "error" ? "alert" : undefined}>
            <span>{t.text}</span>
            <button type="button" className="link" aria-label="Dismiss message" onClick={() => dismiss(t.id)}>
              ×
            </button>
          </div>
        ))}
      </div>
    </Ctx.Provider>
  );
}
