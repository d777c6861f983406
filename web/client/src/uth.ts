// Live Ultimate Texas Hold'em at a shared table (`uth-<n>`). WatchCasinoTable sends the
// caller's whole view in every message (called again, with no cursor, whenever it ends). The
// round's clock is the server's: the traffic light is green while bets are taken, yellow
// shortly before betting closes, red after; decision windows have their own deadline.
// Betting is one PlaceBets call per action (each a wallet reservation): chips clicked onto a
// spot are staged locally and sent by Place; Undo takes back a staged chip, or else the last
// placed bet on the server. Decisions: 4x/3x (or check) pre-flop, 2x (or check) on the flop,
// 1x or fold at the river.

import { casinoLobby, casinoTable, requestId } from "./api";
import { cardElement, cardIdText, clock, money } from "./format";
import { watch } from "./streams";
import { attempt, h, info } from "./ui";
import { refreshBalance } from "./lobby";
import { CasinoGameCode } from "./gen/electric/registration/v1/casino_events_pb";
import { CasinoBetAction, CasinoDecision, type CasinoTableView } from "./gen/electric/table/v1/casino_pb";

/** View `legal` decision → Decide enum and the test id suffix. */
const DECISIONS: [legal: string, decision: CasinoDecision, testid: string, label: string][] = [
  ["play_4x", CasinoDecision.PLAY_4X, "4x", "Play 4x"],
  ["play_3x", CasinoDecision.PLAY_3X, "3x", "Play 3x"],
  ["play_2x", CasinoDecision.PLAY_2X, "2x", "Play 2x"],
  ["play_1x", CasinoDecision.PLAY_1X, "1x", "Play 1x"],
  ["check", CasinoDecision.CHECK, "check", "Check"],
  ["fold", CasinoDecision.FOLD, "fold", "Fold"],
];

/** Standard chip denominations (cents); those within the table's limits are offered. */
const DENOMINATIONS = [100n, 500n, 2500n, 10000n, 50000n, 100000n];

type Spot = "ante" | "trips";
const AUTO_KEY = "electric.uth.auto";

export function mountUth(root: HTMLElement, tableId: string): () => void {
  let view: CasinoTableView | undefined;
  let clockOffsetMs = 0;
  let chipValues: bigint[] = DENOMINATIONS.slice(0, 4);
  let selected = chipValues[0];
  let staged: { spot: Spot; cents: bigint }[] = [];
  const auto = loadAuto();
  const autoSent = new Set<string>(); // round/phase already auto-decided
  const acked = new Set<string>(); // rounds whose result we acknowledged
  let lastResult: HTMLElement | null = null;
  let lastResultRound = "";

  const el = h("section", { "data-testid": "uth", "data-table-id": tableId, "data-game-no": "", class: "uth" });
  root.replaceChildren(el);
  const head = h("div", { class: "uth-head" });
  const light = h("div", { "data-testid": "uth-light", class: "light", "data-state": "red" });
  const countdown = h("div", { "data-testid": "uth-countdown", class: "countdown", "data-deadline-ms": "0" }, "–");
  const cardsEl = h("div", { class: "uth-cards" });
  const chipsEl = h("div", { class: "chips" });
  const spotsEl = h("div", { class: "spots" });
  const betButtons = h("div", { class: "buttons" });
  const decideEl = h("div", { class: "buttons decisions" });
  const autoEl = h("div", { class: "auto" });
  const resultEl = h("div", { class: "result-slot" });
  el.append(head, h("div", { class: "light-row" }, light, countdown), cardsEl, chipsEl, spotsEl, betButtons, decideEl, autoEl, resultEl);

  // Limits → chips (so every chip is a legal amount on its own).
  void (async () => {
    await attempt("JoinCasinoTable", () => casinoLobby.joinCasinoTable({ game: CasinoGameCode.UTH, tableId }));
    const lobby = await attempt("ListCasinoLobby", () => casinoLobby.listCasinoLobby({}));
    const ante = lobby?.games.find((g) => g.game === CasinoGameCode.UTH)?.limits.find((l) => l.spot === "ante");
    if (ante?.min && ante.max) {
      const lo = ante.min.cents;
      const hi = ante.max.cents;
      const within = DENOMINATIONS.filter((d) => d >= lo && d <= hi);
      chipValues = within.length && within[0] === lo ? within : [lo, ...within.filter((d) => d > lo)];
      selected = chipValues[0];
      drawChips();
    }
  })();

  const w = watch({
    name: `WatchCasinoTable ${tableId}`,
    open: (signal) => casinoTable.watchCasinoTable({ tableId }, { signal }),
    onMessage: (msg) => {
      if (!msg.view) return;
      const prev = view;
      view = msg.view;
      clockOffsetMs = Number(view.serverTimeMs) - Date.now();
      if (prev && prev.roundId !== view.roundId) {
        staged = [];
        void refreshBalance();
      }
      draw();
      autoDecide(view);
      acknowledge(view);
    },
  });

  const tick = setInterval(() => {
    const d = Number(countdown.dataset.deadlineMs);
    countdown.textContent = d > 0 ? clock(d - (Date.now() + clockOffsetMs)) : "–";
  }, 100);

  function draw(): void {
    const v = view;
    if (!v) return;
    el.dataset.gameNo = v.gameNumber;
    el.dataset.roundId = v.roundId;
    el.dataset.phase = v.phase;
    el.dataset.seat = String(v.seat);
    head.replaceChildren(h("h2", {}, `Live Ultimate Texas Hold'em — ${v.tableId} · game ${v.gameNumber}`), h("div", { class: "facts" }, `${v.phase} · ${v.seated} seated · ${v.seatsInPlay} in play`));

    light.dataset.state = v.light;
    light.className = `light light-${v.light}`;
    light.textContent = { green: "Place your bets", yellow: "Betting closes…", red: "No more bets" }[v.light] ?? v.light;
    // Betting open: count to the close; in a decision window: to its deadline.
    const deadline = v.light !== "red" ? Number(v.bettingClosesAtMs) : Number(v.decisionDeadlineMs);
    countdown.dataset.deadlineMs = String(deadline);

    const cards = (label: string, ids: number[], testid: string, extra = "") =>
      h("div", { class: "cards-row", "data-testid": testid, "data-cards": ids.map(cardIdText).join(" ") }, h("span", { class: "label" }, label), ...ids.map((c) => cardElement(cardIdText(c))), extra ? h("span", { class: "hint" }, ` ${extra}`) : null);
    cardsEl.replaceChildren(
      cards("Dealer ", v.dealerCards, "uth-dealer-cards", v.dealerHand ? `${v.dealerHand}${v.dealerQualifies ? "" : " (does not qualify)"}` : ""),
      cards("Board ", v.board, "uth-board"),
      cards("Player ", v.playerCards, "uth-player-cards", v.playerHand),
    );
    // The clickable parts are redrawn only when what they show changed: at a busy table a
    // view arrives several times a second, and a button replaced under the pointer loses
    // the click (press on one element, release on its replacement).
    const legal = v.legal.join(",");
    const stagedKey = staged.map((x) => `${x.spot}:${x.cents}`).join(",");
    keyed(chipsEl, String(selected), drawChips);
    keyed(spotsEl, [v.roundId, v.light, legal, v.anteCents, v.tripsCents, v.playCents, stagedKey].join("|"), () => drawSpots(v));
    keyed(betButtons, [v.roundId, v.light, legal, stagedKey].join("|"), () => drawBetButtons(v));
    const made = v.decisions.map((d) => `${d.street}:${d.action}:${d.timedOut}`).join(",");
    keyed(decideEl, [v.roundId, v.phase, legal, made].join("|"), () => drawDecisions(v));
    keyed(autoEl, `${auto.check}|${auto.fold}`, drawAuto);
    drawResult(v);
  }

  /** Calls `draw` unless `el` was last drawn (through here) for the same `key`. */
  function keyed(el: HTMLElement, key: string, draw: () => void): void {
    if (el.dataset.drawnFor === key) return;
    el.dataset.drawnFor = key;
    draw();
  }

  function drawChips(): void {
    chipsEl.replaceChildren(
      ...chipValues.map((c) =>
        h("button", { "data-testid": "uth-chip", "data-cents": c.toString(), class: `chip${c === selected ? " selected" : ""}`, onclick: () => ((selected = c), drawChips()) }, money(c).replace(".00", "")),
      ),
    );
  }

  function drawSpots(v: CasinoTableView): void {
    const pending = (s: Spot) => staged.filter((x) => x.spot === s).reduce((a, x) => a + x.cents, 0n);
    const spot = (s: Spot | "blind" | "play", label: string, cents: bigint, clickable: boolean) => {
      const p = s === "ante" || s === "trips" ? pending(s) : s === "blind" ? pending("ante") : 0n;
      return h(
        "button",
        {
          "data-testid": `uth-spot-${s}`,
          "data-cents": cents.toString(),
          "data-pending-cents": p.toString(),
          class: `spot spot-${s}`,
          disabled: !clickable,
          onclick: () => {
            if (s !== "ante" && s !== "trips") return;
            staged.push({ spot: s, cents: selected });
            drawSpots(v);
          },
        },
        h("span", { class: "label" }, label),
        h("span", {}, money(cents)),
        p > 0n ? h("span", { class: "pending" }, ` +${money(p)}`) : null,
      );
    };
    const open = v.light !== "red";
    spotsEl.replaceChildren(
      spot("ante", "Ante", v.anteCents, open && v.legal.includes("ante")),
      spot("blind", "Blind (= Ante)", v.anteCents, false),
      spot("trips", "Trips", v.tripsCents, open && (v.legal.includes("trips") || v.legal.includes("ante"))),
      spot("play", "Play", v.playCents, false),
    );
  }

  function drawBetButtons(v: CasinoTableView): void {
    const can = (a: string) => v.light !== "red" && v.legal.includes(a);
    const send = (label: string, action: CasinoBetAction, amountCents = 0n) =>
      attempt(`PlaceBets ${label}`, () => casinoTable.placeBets({ requestId: requestId(), tableId, action, amountCents })).then((res) => {
        if (res?.view) {
          view = res.view;
          draw();
        }
        void refreshBalance();
        return res;
      });
    const place = async () => {
      // Ante first: Trips needs an Ante. One call per spot with the staged total.
      const batch = staged;
      staged = [];
      for (const s of ["ante", "trips"] as Spot[]) {
        const cents = batch.filter((x) => x.spot === s).reduce((a, x) => a + x.cents, 0n);
        if (cents > 0n) {
          const ok = await send(s, s === "ante" ? CasinoBetAction.ANTE : CasinoBetAction.TRIPS, cents);
          if (!ok) return;
        }
      }
      if (view) drawSpots(view);
    };
    const undo = () => {
      if (staged.length) {
        staged.pop();
        drawSpots(v);
      } else void send("undo", CasinoBetAction.UNDO);
    };
    betButtons.replaceChildren(
      h("button", { "data-testid": "uth-place", disabled: v.light === "red", onclick: place }, "Place"),
      h("button", { "data-testid": "uth-undo", disabled: !(staged.length || can("undo")), onclick: undo }, "Undo"),
      h("button", { "data-testid": "uth-double", disabled: !can("double"), onclick: () => void send("double", CasinoBetAction.DOUBLE) }, "Double"),
      h("button", { "data-testid": "uth-repeat", disabled: !can("repeat"), onclick: () => void send("repeat", CasinoBetAction.REPEAT) }, "Repeat"),
      h("button", { "data-testid": "uth-clear", disabled: !(staged.length || can("clear")), onclick: () => ((staged = []), can("clear") ? void send("clear", CasinoBetAction.CLEAR) : drawSpots(v)) }, "Clear"),
    );
  }

  function decide(v: CasinoTableView, decision: CasinoDecision, label: string) {
    return attempt(`Decide ${label}`, () => casinoTable.decide({ requestId: requestId(), roundId: v.roundId, decision })).then(() => refreshBalance());
  }

  function drawDecisions(v: CasinoTableView): void {
    decideEl.replaceChildren(
      ...DECISIONS.filter(([legal]) => v.legal.includes(legal)).map(([, d, id, label]) =>
        h("button", { "data-testid": `uth-decide-${id}`, class: "decide", onclick: () => void decide(v, d, label) }, label),
      ),
      ...v.decisions.map((d) => h("span", { class: "hint" }, ` ${d.street}: ${d.action}${d.timedOut ? " (auto)" : ""}`)),
    );
  }

  function drawAuto(): void {
    const toggle = (key: "check" | "fold", label: string) => {
      const box = h("input", { type: "checkbox", "data-testid": `uth-auto-${key}`, checked: auto[key] }) as HTMLInputElement;
      box.addEventListener("change", () => {
        auto[key] = box.checked;
        sessionStorage.setItem(AUTO_KEY, JSON.stringify(auto));
        if (view) autoDecide(view);
      });
      return h("label", {}, box, ` ${label}`);
    };
    autoEl.replaceChildren(toggle("check", "Auto-check (pre-flop, flop)"), toggle("fold", "Auto-fold (river)"));
  }

  // Client-side toggles: the table checks/folds on its own at the deadline; these answer at
  // once when the window opens, once per round and street.
  function autoDecide(v: CasinoTableView): void {
    const key = `${v.roundId}/${v.phase}`;
    if (autoSent.has(key)) return;
    if (auto.check && v.legal.includes("check")) {
      autoSent.add(key);
      void decide(v, CasinoDecision.CHECK, "auto-check");
    } else if (auto.fold && v.legal.includes("fold") && !v.legal.includes("check")) {
      autoSent.add(key);
      void decide(v, CasinoDecision.FOLD, "auto-fold");
    }
  }

  function drawResult(v: CasinoTableView): void {
    if (v.status !== "open" && v.results.length > 0 && lastResultRound !== `${v.roundId}/${v.version}`) {
      lastResultRound = `${v.roundId}/${v.version}`;
      const payout = v.results.reduce((a, r) => a + r.returnedCents, 0n);
      lastResult = h(
        "div",
        { "data-testid": "uth-result", "data-game-no": v.gameNumber, "data-round-id": v.roundId, "data-net-cents": v.netCents.toString(), "data-payout-cents": payout.toString(), class: `result panel ${v.netCents > 0n ? "win" : v.netCents < 0n ? "lose" : "push"}` },
        h("h3", {}, `Game ${v.gameNumber}: ${v.status === "voided" ? `voided (${v.voidReason})` : `net ${money(v.netCents)}, returned ${money(payout)}`}`),
        h("ul", {}, ...v.results.map((r) => h("li", { "data-spot": r.spot, "data-outcome": r.outcome }, `${r.spot}: ${r.outcome} stake ${money(r.stakeCents)} win ${money(r.winCents)}`))),
      );
    }
    // The last result stays up while the next round takes bets.
    resultEl.replaceChildren(...(lastResult ? [lastResult] : []));
  }

  // Seeing the result is acknowledging it: the round then leaves ListUnfinishedRounds.
  function acknowledge(v: CasinoTableView): void {
    if (v.status === "open" || v.results.length === 0 || acked.has(v.roundId)) return;
    acked.add(v.roundId);
    void attempt("AckResult", () => casinoTable.ackResult({ roundId: v.roundId })).then((r) => r && info(`Game ${v.gameNumber} settled.`));
  }

  return () => {
    w.stop();
    clearInterval(tick);
  };
}

function loadAuto(): { check: boolean; fold: boolean } {
  try {
    return { check: false, fold: false, ...JSON.parse(sessionStorage.getItem(AUTO_KEY) ?? "{}") };
  } catch {
    return { check: false, fold: false };
  }
}
