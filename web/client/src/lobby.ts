// Lobby: the Electric Poker buy-in tiers (ListLobby, polled), Register / Unregister, the
// wallet balance with its breakdown (GetBalance, polled in the header on every screen) and
// the entries into the casino games (ListCasinoLobby, JoinCasinoTable).

import { casinoLobby, registration, requestId, wallet } from "./api";
import { money } from "./format";
import { attempt, h, info } from "./ui";
import { CasinoGameCode } from "./gen/electric/registration/v1/casino_events_pb";
import { TableStatus, type LobbyTier } from "./gen/electric/registration/v1/registration_pb";
import type { ListCasinoLobbyResponse } from "./gen/electric/registration/v1/casino_pb";
import { myTablesSnapshot, onMyTables } from "./mytables";

const LOBBY_POLL_MS = 3000;
// While no table is being played (a platform just started), the lobby asks every second, so
// the first running table shows as soon as it starts.
const LOBBY_QUICK_POLL_MS = 1000;
const BALANCE_POLL_MS = 3000;

// ---------------------------------------------------------------------------- balance

let balanceEl: HTMLElement | null = null;

/**
 * Draws the balance into `slot` and keeps it fresh. Each breakdown field of wallet.Balance
 * becomes a raw data attribute (cents) so tests can compare it with the ledger:
 * balance (what can be wagered now) is `data-available-cents`.
 */
export function startBalance(slot: HTMLElement): () => void {
  balanceEl = h("div", { "data-testid": "balance", class: "balance" }, "…");
  slot.replaceChildren(balanceEl);
  void refreshBalance();
  const t = setInterval(() => void refreshBalance(), BALANCE_POLL_MS);
  return () => clearInterval(t);
}

/** Re-reads the balance now (after a bet, a buy-in, a result). */
export async function refreshBalance(): Promise<void> {
  const el = balanceEl;
  if (!el) return;
  const res = await attempt("balance", () => wallet.getBalance({}));
  const b = res?.balance;
  if (!b || el !== balanceEl) return;
  el.dataset.availableCents = b.balance.toString();
  el.dataset.cashCents = b.cash.toString();
  el.dataset.playableBonusCents = b.playableBonus.toString();
  el.dataset.pendingBonusCents = b.pendingBonus.toString();
  el.dataset.reservedCents = b.reserved.toString();
  el.replaceChildren(
    h("strong", { title: "available to wager: cash + playable bonus" }, money(b.balance)),
    h(
      "span",
      { class: "breakdown" },
      `cash ${money(b.cash)} · bonus ${money(b.playableBonus)} · pending bonus ${money(b.pendingBonus)} · reserved ${money(b.reserved)}`,
    ),
  );
}

// ---------------------------------------------------------------------------- lobby screen

export function mountLobby(root: HTMLElement): () => void {
  const tiersEl = h("div", { class: "tiers" });
  const casinoEl = h("div", { class: "casino" });
  root.replaceChildren(
    h(
      "section",
      { "data-testid": "lobby", class: "lobby" },
      h("h2", {}, "Electric Poker — 3-handed sit & go"),
      tiersEl,
      h("h2", {}, "Casino"),
      casinoEl,
    ),
  );

  let stopped = false;
  let tiers: LobbyTier[] = [];
  let drawnTiers = "";
  let drawnCasino = "";
  const load = async () => {
    const [lobby, casino] = await Promise.all([
      attempt("ListLobby", () => registration.listLobby({})),
      attempt("ListCasinoLobby", () => casinoLobby.listCasinoLobby({})),
    ]);
    if (stopped) return;
    if (lobby) tiers = lobby.tiers;
    // Redrawn only when what the rows show changed: a Register button replaced under the
    // pointer loses the click.
    const shown = tiers
      .map((t) => [t.tierId, t.playersWaiting, t.tablesFilling, t.openTables, ...t.runningTables.map((r) => `${r.tableId}:${r.currentHandNumber}`)].join(","))
      .join("|");
    if (lobby && shown !== drawnTiers) {
      drawnTiers = shown;
      tiersEl.replaceChildren(...tiers.map(tierRow));
    }
    const casinoShown = casino ? JSON.stringify(casino, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) : "";
    if (casino && casinoShown !== drawnCasino) {
      drawnCasino = casinoShown;
      casinoEl.replaceChildren(...casinoRows(casino));
    }
  };
  let t: ReturnType<typeof setTimeout> | undefined;
  const poll = async () => {
    await load();
    if (stopped) return;
    const playing = tiers.some((tier) => tier.runningTables.length > 0);
    t = setTimeout(() => void poll(), playing ? LOBBY_POLL_MS : LOBBY_QUICK_POLL_MS);
  };
  void poll();
  // Unregister depends on my entries: redraw the tiers when My Tables changes.
  // (My Tables changes on every action at my tables: redraw only when the entries change.)
  let entriesKey = "";
  const off = onMyTables((mine) => {
    const key = mine.filter((m) => m.status === TableStatus.REGISTERING).map((m) => m.tableId).join(",");
    if (key === entriesKey) return;
    entriesKey = key;
    tiersEl.replaceChildren(...tiers.map(tierRow));
  });
  return () => {
    stopped = true;
    clearTimeout(t);
    off();
  };
}

function tierRow(t: LobbyTier): HTMLElement {
  // The tables where I hold an entry that can still be withdrawn (registering), from the
  // My Tables stream: Unregister names the table (a player holds one entry per table).
  const mine = myTablesSnapshot().filter((m) => m.tierId === t.tierId && m.status === TableStatus.REGISTERING);
  const register = async () => {
    const res = await attempt("Register", () =>
      registration.register({ requestId: requestId(), tierId: t.tierId, entries: 1 }),
    );
    if (res) info(`Registered: ${res.entries.map((e) => `${e.tableId} seat ${e.seat}`).join(", ")}`);
    void refreshBalance();
  };
  const unregister = async () => {
    const target = mine[0];
    if (!target) return info(`No withdrawable entry in ${t.name}.`);
    const res = await attempt("Unregister", () =>
      registration.unregister({ requestId: requestId(), tableId: target.tableId }),
    );
    if (res) info(`Unregistered from ${res.entry?.tableId ?? target.tableId}.`);
    void refreshBalance();
  };
  return h(
    "div",
    {
      "data-testid": "tier",
      "data-tier-id": t.tierId,
      "data-buy-in-cents": (t.buyIn?.cents ?? 0n).toString(),
      class: "tier panel",
    },
    h("div", { class: "tier-name" }, t.name),
    h(
      "div",
      { class: "tier-facts" },
      `buy-in ${money(t.buyIn?.cents)} (rake ${money(t.rake?.cents)}) · prize pool ${money(t.minPrizePool?.cents)}–${money(t.maxPrizePool?.cents)} · ` +
        `${t.playersWaiting} waiting at ${t.tablesFilling}/${t.openTables} tables · ${t.startingStack} chips`,
    ),
    h(
      "div",
      { class: "tier-actions" },
      h("button", { "data-testid": "register", onclick: register }, "Register"),
      h(
        "button",
        { "data-testid": "unregister", onclick: unregister, disabled: mine.length === 0 },
        mine.length ? `Unregister (${mine.length})` : "Unregister",
      ),
    ),
    runningTables(t),
  );
}

// The tier's tables being played now (LobbyTier.running_tables): anyone may watch one, and
// WatchTable shows a spectator every seat but no hole cards until they are shown.
function runningTables(t: LobbyTier): HTMLElement | null {
  if (t.runningTables.length === 0) return null;
  return h(
    "ul",
    { class: "running-tables" },
    ...t.runningTables.map((r) =>
      h(
        "li",
        {},
        h(
          "a",
          {
            "data-testid": "running-table",
            "data-table-id": r.tableId,
            "data-hand-no": r.currentHandNumber.toString(),
            href: `#/table/${encodeURIComponent(r.tableId)}`,
          },
          `Watch ${r.tableName}`,
        ),
        ` · ${r.multiplier}x · prize pool ${money(r.prizePool?.cents)} · hand ${r.currentHandNumber}`,
      ),
    ),
  );
}

function casinoRows(c: ListCasinoLobbyResponse): HTMLElement[] {
  const rows: HTMLElement[] = [];
  for (const g of c.games) {
    const limits = g.limits.map((l) => `${l.spot} ${money(l.min?.cents)}–${money(l.max?.cents)}`).join(" · ");
    if (g.game === CasinoGameCode.THB) {
      // THB: a private table per player, created on demand by JoinCasinoTable.
      rows.push(
        h(
          "div",
          { class: "casino-game panel" },
          h("div", { class: "tier-name" }, "Texas Hold'em Bonus"),
          h("div", { class: "tier-facts" }, limits),
          h("a", { href: "#/thb", "data-testid": "casino-thb", class: "button" }, "Play THB"),
        ),
      );
    } else if (g.game === CasinoGameCode.UTH) {
      // UTH: shared live tables, one link per table.
      rows.push(
        h(
          "div",
          { class: "casino-game panel" },
          h("div", { class: "tier-name" }, "Live Ultimate Texas Hold'em"),
          h("div", { class: "tier-facts" }, `${limits} · ${g.seated} seated`),
          ...g.tables.map((t) =>
            h(
              "a",
              { href: `#/uth/${encodeURIComponent(t.tableId)}`, "data-testid": "casino-uth", "data-table-id": t.tableId, class: "button" },
              `${t.tableId} (${t.seated} seated)`,
            ),
          ),
        ),
      );
    }
  }
  return rows;
}
