// Tiny DOM helpers shared by every screen: an element builder and the status line. No
// framework: each screen owns a root element and redraws parts of it from API state.

import { errorText } from "./api";

type Attrs = Record<string, string | number | boolean | undefined | ((ev: Event) => void)>;
type Child = Node | string | null | undefined | false;

/**
 * h("button", { "data-testid": "x", onclick: fn }, "Label"). Keys starting with `on` are
 * event listeners; `data-*`, `class` and the rest are attributes (false/undefined skip it).
 */
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value" && el instanceof HTMLInputElement) el.value = String(v);
    else if (k === "checked" && el instanceof HTMLInputElement) el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

const statusEl = () => document.querySelector<HTMLElement>("[data-testid=status]");

/** Shows an informational message in the status line. */
export function info(msg: string): void {
  const el = statusEl();
  if (!el) return;
  el.textContent = msg;
  el.className = "status info";
  el.dataset.kind = "info";
  delete el.dataset.code;
}

/**
 * Shows an error (Connect code + message) in the status line. Every catch in the client
 * ends here, so a failed call is visible but never breaks the screen.
 */
export function fail(context: string, err: unknown): void {
  const el = statusEl();
  const { code, text } = errorText(err);
  console.warn(context, err);
  if (!el) return;
  el.textContent = `${context}: ${text}`;
  el.className = "status error";
  el.dataset.kind = "error";
  el.dataset.code = code;
}

/** Runs an async UI action, reporting its failure in the status line. */
export async function attempt<T>(context: string, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    fail(context, err);
    return undefined;
  }
}
