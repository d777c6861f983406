// The My Tables bar (Multi-Table Bar): WatchMyTables sends the whole list in every message,
// so a stream that ended is simply called again (no cursor). Each table shows its status
// text, my stack and whether it is my turn; a click opens the table.

import { registration } from "./api";
import { clock, money, tsMs } from "./format";
import { watch, type Watch } from "./streams";
import { h } from "./ui";
import { TableStatus, type MyTable } from "./gen/electric/registration/v1/registration_pb";

let latest: MyTable[] = [];
const listeners = new Set<(tables: MyTable[]) => void>();

/** The last snapshot received (empty before the first). */
export function myTablesSnapshot(): MyTable[] {
  return latest;
}

/** Calls fn on every new snapshot; returns the unsubscribe function. */
export function onMyTables(fn: (tables: MyTable[]) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function statusName(s: TableStatus): string {
  return (TableStatus[s] ?? "unspecified").toLowerCase();
}

/** Starts the bar in `slot`; the returned stop() ends the stream (on sign-out). */
export function startMyTables(slot: HTMLElement): () => void {
  const bar = h("nav", { "data-testid": "mytables", class: "mytables" }, h("span", { class: "hint" }, "My Tables: none"));
  slot.replaceChildren(bar);
  const w: Watch = watch({
    name: "WatchMyTables",
    open: (signal) => registration.watchMyTables({}, { signal }),
    onMessage: (msg) => {
      latest = msg.tables;
      draw(bar);
      for (const fn of listeners) fn(latest);
    },
  });
  // The my-turn deadline counts down locally between snapshots.
  const tick = setInterval(() => {
    for (const el of bar.querySelectorAll<HTMLElement>("[data-deadline-ms]")) {
      const left = Number(el.dataset.deadlineMs) - Date.now();
      el.textContent = clock(left);
    }
  }, 250);
  return () => {
    w.stop();
    clearInterval(tick);
    latest = [];
  };
}

function draw(bar: HTMLElement): void {
  if (latest.length === 0) {
    bar.replaceChildren(h("span", { class: "hint" }, "My Tables: none"));
    return;
  }
  const current = decodeURIComponent(location.hash.match(/^#\/table\/(.+)$/)?.[1] ?? "");
  bar.replaceChildren(
    h("span", { class: "hint" }, "My Tables"),
    ...latest.map((t) => {
      const deadline = t.myTurn ? tsMs(t.myTurnDeadline) : 0;
      const result =
        t.finishingPlace > 0 ? ` · place ${t.finishingPlace}${t.prize && t.prize.cents > 0n ? ` · won ${money(t.prize.cents)}` : ""}` : "";
      return h(
        "a",
        {
          href: `#/table/${encodeURIComponent(t.tableId)}`,
          "data-testid": "mytable",
          "data-table-id": t.tableId,
          "data-my-turn": String(t.myTurn),
          "data-status": statusName(t.status),
          "data-hand-no": t.currentHandNumber.toString(),
          "data-my-stack": t.myStack.toString(),
          class: `mytable${t.myTurn ? " my-turn" : ""}${t.tableId === current ? " current" : ""}`,
        },
        h("strong", {}, t.tableName || t.tableId),
        h("span", {}, ` ${t.statusText}`),
        t.myStack > 0n ? h("span", {}, ` · ${t.myStack} chips`) : null,
        t.myTurn ? h("span", { class: "turn" }, " · YOUR TURN ", h("span", { "data-deadline-ms": deadline }, "")) : null,
        result ? h("span", {}, result) : null,
      );
    }),
  );
}
