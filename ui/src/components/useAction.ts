// useAction runs an API call with a busy flag; a failure shows the API's
// message as an error toast and is also returned for inline display.

import { useCallback, useState } from "react";
import { errorMessage } from "../api/client";
import { useToasts } from "./Toasts";

export function useAction() {
  const toasts = useToasts();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const run = useCallback(
    async <T,>(what: string, fn: () => Promise<T>, done?: string): Promise<T | undefined> => {
      setBusy(true);
      setError("");
      try {
        const out = await fn();
        if (done) toasts.success(done);
        return out;
      } catch (err) {
        setError(errorMessage(err));
        toasts.error(what, err);
        return undefined;
      } finally {
        setBusy(false);
      }
    },
    [toasts],
  );
  return { busy, error, run, clearError: () => setError("") };
}
