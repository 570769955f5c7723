// REST client for /v1 (Longhorn's gdapi shapes). Every URL is relative to
// the page, so the UI works behind any path prefix (an ingress, kubectl
// proxy) as long as /v1 is served next to it.

import type { Collection, Resource } from "./types";

/** An error answer of the API: {type:"error", status, code, message}. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(message: string, status: number, code = "") {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** apiURL resolves a path under v1/ against the document's base URL. */
export function apiURL(path: string): string {
  const base = typeof document !== "undefined" ? document.baseURI : "http://localhost/";
  return new URL("v1/" + path.replace(/^\/+/, ""), base).toString();
}

/** wsURL is apiURL with the ws: or wss: scheme. */
export function wsURL(path: string): string {
  return apiURL(path).replace(/^http/, "ws");
}

/** errorMessage turns an API error body (or anything thrown) into the text to show. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** parseError builds the ApiError of a failed response body. */
export function parseError(status: number, statusText: string, body: string): ApiError {
  try {
    const j = JSON.parse(body) as { type?: string; message?: string; code?: string; status?: number };
    if (j && typeof j.message === "string" && j.message !== "") {
      return new ApiError(j.message, j.status ?? status, j.code ?? "");
    }
  } catch {
    // not JSON: fall through to the plain text
  }
  const text = body.trim();
  return new ApiError(text !== "" ? `${status} ${statusText}: ${text}` : `${status} ${statusText}`, status);
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { ...init.headers, "Content-Type": "application/json" };
  }
  let res: Response;
  try {
    res = await fetch(apiURL(path), init);
  } catch (err) {
    throw new ApiError(`cannot reach the manager: ${errorMessage(err)}`, 0, "NetworkError");
  }
  const text = await res.text();
  if (!res.ok) throw parseError(res.status, res.statusText, text);
  // An empty answer (204 No Content of a DELETE) is success: {} so that
  // callers can tell it from a failure (undefined).
  if (text === "") return {} as T;
  return JSON.parse(text) as T;
}

const enc = encodeURIComponent;

/** The REST calls the UI makes. coll is a collection name such as "volumes". */
export const api = {
  list<T>(coll: string): Promise<Collection<T>> {
    return request("GET", coll);
  },
  get<T>(coll: string, id: string): Promise<T> {
    return request("GET", `${coll}/${enc(id)}`);
  },
  create<T>(coll: string, body: unknown): Promise<T> {
    return request("POST", coll, body);
  },
  update<T>(coll: string, id: string, body: unknown): Promise<T> {
    return request("PUT", `${coll}/${enc(id)}`, body);
  },
  remove(coll: string, id: string): Promise<unknown> {
    return request("DELETE", `${coll}/${enc(id)}`);
  },
  /** action POSTs <coll>/<id>?action=<name> with body ({} when none). */
  action<T>(coll: string, id: string, name: string, body: unknown = {}): Promise<T> {
    return request("POST", `${coll}/${enc(id)}?action=${enc(name)}`, body);
  },
};

/** can reports whether a resource offers an action in its current state. */
export function can(r: Resource | undefined | null, action: string): boolean {
  return !!r?.actions && Object.prototype.hasOwnProperty.call(r.actions, action);
}
