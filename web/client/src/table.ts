// The Electric Poker table, drawn ONLY from the WatchTable stream. The stream's snapshots
// (TableView) carry the whole state, so the screen redraws from the last snapshot; the
// events in between feed the hand log and the final places. A stream that ends for any
// reason is called again with `from_sequence` = the last sequence processed (no gap, no
// repeat). Commands (Act, SetPreAction, ClearPreAction) quote the hand number and action
// sequence of the snapshot, so a click on an outdated screen is refused as stale, never
// applied to the wrong decision.

import { Code, ConnectError, isCanceled, requestId, table as tableApi } from "./api";
import { cardElement, cardText, chips, clock, durMs, enumName, money, tsMs } from "./format";
import { watch } from "./streams";
import { attempt, fail, h } from "./ui";
import { refreshBalance } from "./lobby";
import { myTablesSnapshot } from "./mytables";
import {
  ActionOrigin,
  ActionType,
  ForcedBetType,
  PreActionType,
  Street,
  TableStatus,
  TimerKind,
  type LegalAction,
  type PlaceResult,
  type SeatView,
  type TableEvent,
  type TableView,
  type WatchTableResponse,
} from "./gen/electric/table/v1/table_pb";

const LOG_LINES = 14;

export function mountTable(root: HTMLElement, tableId: string, me: string): () => void {
  // ---- state ----
  let view: TableView | undefined;
  let lastSeq = 0n; // cursor for resuming the stream
  let clockOffsetMs = 0; // server clock − local clock, from TableView.server_time
  let places: PlaceResult[] | undefined; // from TournamentEndEvent
  let placesLookup = false;
  let actionsKey = "";
  let preKey = "";
  let amount = 0n;
  let seenMultiplier = false;
  const log: string[] = [];

  // ---- skeleton ----
  const el = h("section", { "data-testid": "table", "data-table-id": tableId, class: "table" });
  const header = h("div", { class: "table-header" });
  const multiplierEl = h("div", { class: "multiplier-slot" });
  const seatsEl = h("div", { class: "seats" });
  const potEl = h("div", { "data-testid": "pot", class: "pot", "data-total": "0" });
  const sidePotsEl = h("div", { class: "side-pots" });
  const boardEl = h("div", { "data-testid": "board", class: "board", "data-cards": "" });
  const awardsEl = h("div", { class: "awards" });
  const holeEl = h("div", { "data-testid": "hole-cards", class: "hole-cards", "data-cards": "" });
  const timerEl = h("div", { "data-testid": "timer", class: "timer", "data-deadline-ms": "0" });
  const bankEl = h("div", { "data-testid": "time-bank", class: "time-bank" });
  const actionsEl = h("div", { class: "actions" });
  const preEl = h("div", { class: "preactions" });
  const finishEl = h("div", { class: "finish-slot" });
  const logEl = h("ol", { class: "log" });
  const electricClock = h("span", { class: "electric-clock" });
  let electricAtMs = 0; // server-clock ms when Electric Mode starts
  el.append(
    header,
    multiplierEl,
    seatsEl,
    h("div", { class: "felt" }, potEl, sidePotsEl, boardEl, awardsEl),
    h("div", { class: "me" }, holeEl, timerEl, bankEl),
    actionsEl,
    preEl,
    finishEl,
    h("details", { class: "log-box", open: true }, h("summary", {}, "Hand log"), logEl),
  );
  root.replaceChildren(el);

  // ---- the stream ----
  const w = watch<WatchTableResponse>({
    name: `WatchTable ${tableId}`,
    open: (signal) => tableApi.watchTable({ tableId, fromSequence: lastSeq }, { signal }),
    onMessage: (msg) => {
      const prev = lastSeq;
      if (msg.sequence > lastSeq) lastSeq = msg.sequence;
      if (msg.event) onEvent(msg.event);
      // A resumed stream may open with a read-model snapshot at a sequence already seen
      // (state, not news, and possibly without the hand): keep the newer view we have.
      if (msg.table && (!view || msg.sequence >= prev)) {
        view = msg.table;
        clockOffsetMs = tsMs(view.serverTime) - Date.now();
        el.dataset.version = msg.sequence.toString();
        draw();
      }
    },
    onEnd: async (seen) => {
      // The stream ends when the tournament is over (or the server stops). Resumed at the
      // end of a finished tournament it ends at once: GetTable tells which (we only read its
      // status; the screen stays drawn from the stream).
      if (view?.status === TableStatus.FINISHED) return false;
      if (seen === 0) {
        const res = await attempt("GetTable", () => tableApi.getTable({ tableId }));
        if (res?.table?.status === TableStatus.FINISHED) return false;
      }
      return true;
    },
    // NOT_FOUND is final (a table that never started); anything else: call again.
    onError: (e) => e.code !== Code.NotFound,
  });

  // ---- countdowns: drawn locally between messages, against the server's clock ----
  const tick = setInterval(() => {
    const now = Date.now() + clockOffsetMs;
    const deadline = Number(timerEl.dataset.deadlineMs);
    const timerText = timerEl.querySelector(".left");
    if (timerText) timerText.textContent = deadline > 0 ? clock(deadline - now) : "–";
    const bankText = bankEl.querySelector(".left");
    if (bankText && bankEl.dataset.inUse === "true") bankText.textContent = clock(deadline - now);
    electricClock.textContent = clock(electricAtMs - now);
  }, 100);

  // ---- events: the log, the final places ----
  function onEvent(ev: TableEvent): void {
    const line = describe(ev);
    if (line) {
      log.push(line);
      if (log.length > LOG_LINES) log.shift();
      logEl.replaceChildren(...log.map((l) => h("li", {}, l)));
    }
    if (ev.kind.case === "tournamentFinished") {
      places = ev.kind.value.places;
      void refreshBalance();
    }
  }

  function seatName(seat: number): string {
    const s = view?.seats.find((x) => x.seat === seat);
    return s ? s.displayName || s.playerId : `seat ${seat}`;
  }

  function describe(ev: TableEvent): string | undefined {
    const k = ev.kind;
    switch (k.case) {
      case "handStarted":
        return `— Hand #${k.value.handNumber} — blinds ${k.value.level?.smallBlind}/${k.value.level?.bigBlind}${k.value.electric ? " ⚡ Electric" : ""}`;
      case "forcedBet":
        return `${seatName(k.value.seat)} posts ${enumName(ForcedBetType, k.value.type, "FORCED_BET_TYPE_")} ${k.value.amount}`;
      case "action": {
        const a = k.value;
        const what = enumName(ActionType, a.action, "ACTION_TYPE_");
        const amt = a.amountAdded > 0n ? ` ${a.amountAdded} (to ${a.streetBet})` : "";
        const origin = a.origin !== ActionOrigin.PLAYER ? ` [${enumName(ActionOrigin, a.origin, "ACTION_ORIGIN_")}]` : "";
        return `${seatName(a.seat)} ${what}${amt}${a.allIn ? " all-in" : ""}${origin}`;
      }
      case "uncalledBetReturned":
        return `${k.value.amount} returned to ${seatName(k.value.seat)}`;
      case "streetDealt":
        return `*** ${enumName(Street, k.value.street, "STREET_")} *** ${k.value.board.map(cardText).join(" ")}`;
      case "showdown":
        return `${seatName(k.value.seat)} ${k.value.cards.length ? `shows ${k.value.cards.map(cardText).join(" ")} ${k.value.handDescription}` : "mucks"}`;
      case "potAwarded":
        return k.value.winners
          .map((w) => `${seatName(w.seat)} wins ${w.amount} from ${k.value.potIndex === 0 ? "the main pot" : `side pot ${k.value.potIndex}`}${w.handDescription ? ` with ${w.handDescription}` : ""}`)
          .join("; ");
      case "eliminated":
        return `${seatName(k.value.seat)} is eliminated in place ${k.value.finishingPlace}`;
      case "tournamentFinished":
        return `Tournament over after ${k.value.handsPlayed} hands`;
      case "levelAdvanced":
        return `Blinds up: ${k.value.level?.smallBlind}/${k.value.level?.bigBlind}${k.value.level?.ante ? ` ante ${k.value.level.ante}` : ""}`;
      case "electricMode":
        return k.value.clockExpired ? "⚡ 0:00 — ALL IN: Electric Mode from the next hand" : "⚡ Electric Mode hand";
      case "seatStatus":
        return `${seatName(k.value.seat)} ${k.value.sittingOut ? "sits out" : "is back"}`;
      case "timer":
        return `${seatName(k.value.seat)}: ${k.value.kind === TimerKind.TIME_BANK_STARTED ? "time bank started" : "timed out"}`;
      default:
        return undefined;
    }
  }

  // ---- drawing ----
  function draw(): void {
    const v = view;
    if (!v) return;
    const hand = v.hand;
    el.dataset.handNo = v.handNumber.toString();
    el.dataset.status = enumName(TableStatus, v.status, "TABLE_STATUS_");
    el.dataset.yourSeat = String(v.yourSeat);

    header.replaceChildren(
      h("h2", {}, v.tableName || v.tableId),
      h(
        "div",
        { class: "facts" },
        `buy-in ${money(v.buyIn?.cents)} · prize pool ${money(v.prizePool?.cents)} · level ${v.level?.level ?? "-"} blinds ${v.level?.smallBlind ?? 0}/${v.level?.bigBlind ?? 0}` +
          `${v.level?.ante ? ` ante ${v.level.ante}` : ""} · hand #${v.handNumber} · ${el.dataset.status}`,
        // The tournament clock (to Electric Mode) counts down locally from the snapshot.
        v.electricMode || v.status === TableStatus.FINISHED ? "" : h("span", {}, " · Electric Mode in ", electricClock),
      ),
    );
    electricAtMs = tsMs(v.serverTime) + durMs(v.clockRemaining);

    // The multiplier is drawn when the table fills; reveal it once, with an animation.
    if (v.multiplier > 0n) {
      multiplierEl.replaceChildren(
        h(
          "div",
          { "data-testid": "multiplier", "data-multiplier": v.multiplier.toString(), class: `multiplier${seenMultiplier ? "" : " reveal"}` },
          `Prize Pool Multiplier ×${v.multiplier} — ${money(v.prizePool?.cents)}`,
        ),
      );
      seenMultiplier = true;
    }
    if (v.electricMode || hand?.electric) {
      if (!el.querySelector("[data-testid=electric-mode]")) {
        multiplierEl.append(h("div", { "data-testid": "electric-mode", class: "electric" }, "⚡ ELECTRIC MODE — everyone all-in"));
      }
    }

    seatsEl.replaceChildren(...v.seats.map((s) => seatEl(v, s)));

    const pots = hand?.pots ?? [];
    potEl.dataset.total = (hand?.potTotal ?? 0n).toString();
    potEl.textContent = `Pot ${chips(hand?.potTotal)}`;
    sidePotsEl.replaceChildren(
      ...pots
        .filter((p) => p.index > 0)
        .map((p) =>
          h("span", { "data-testid": "side-pot", "data-amount": p.amount.toString(), "data-index": p.index, class: "side-pot" },
            `side pot ${p.index}: ${chips(p.amount)} (seats ${p.eligibleSeats.join(",")})`),
        ),
    );
    const main = pots.find((p) => p.index === 0);
    if (main) potEl.append(h("span", { class: "main-pot", "data-amount": main.amount.toString() }, ` (main ${chips(main.amount)})`));

    const board = (hand?.board ?? []).map(cardText);
    boardEl.dataset.cards = board.join(" ");
    boardEl.replaceChildren(...board.map(cardElement));
    awardsEl.replaceChildren(
      ...(hand && !hand.inProgress ? hand.awards : []).flatMap((a) =>
        a.winners.map((w) => h("div", { class: "award" }, `${seatName(w.seat)} wins ${chips(w.amount)}${w.handDescription ? ` — ${w.handDescription}` : ""}`)),
      ),
    );

    const mine = v.seats.find((s) => s.seat === v.yourSeat);
    const hole = (mine?.holeCards ?? []).map(cardText);
    holeEl.dataset.cards = hole.join(" ");
    holeEl.replaceChildren(h("span", { class: "label" }, "Your cards "), ...hole.map(cardElement));

    // Timer ring of the seat to act: deadline in server-clock ms.
    const tt = hand?.inProgress ? hand.turnTimer : undefined;
    const deadline = tt ? tsMs(tt.deadline) : 0;
    timerEl.dataset.deadlineMs = String(deadline);
    timerEl.dataset.seat = String(tt?.seat ?? 0);
    timerEl.replaceChildren(
      h("span", { class: "label" }, tt ? `${seatName(tt.seat)} to act${tt.timeBankInUse ? " (time bank)" : ""}: ` : "Timer: "),
      h("span", { class: "left" }, "–"),
    );
    const myBankInUse = Boolean(tt && tt.seat === v.yourSeat && tt.timeBankInUse);
    bankEl.dataset.ms = String(durMs(v.yourTimeBank));
    bankEl.dataset.inUse = String(myBankInUse);
    bankEl.replaceChildren(h("span", { class: "label" }, "Time bank "), h("span", { class: "left" }, clock(durMs(v.yourTimeBank))));

    drawActions(v);
    drawPreActions(v);
    drawFinish(v);
  }

  function seatEl(v: TableView, s: SeatView): HTMLElement {
    const hand = v.hand;
    const live = Boolean(hand?.inProgress);
    const toAct = live && hand?.toActSeat === s.seat;
    const marks = [
      hand?.buttonSeat === s.seat ? "D" : "",
      live && hand?.smallBlindSeat === s.seat ? "SB" : "",
      live && hand?.bigBlindSeat === s.seat ? "BB" : "",
    ].filter(Boolean);
    const flags = [s.folded && "folded", s.allIn && "all-in", s.sittingOut && "sitting out", s.eliminated && `out (place ${s.finishingPlace})`].filter(Boolean);
    const last = s.lastAction ? `${enumName(ActionType, s.lastAction, "ACTION_TYPE_")}${s.lastActionAmount > 0n ? ` ${s.lastActionAmount}` : ""}` : "";
    const shown = s.seat !== v.yourSeat ? s.holeCards.map(cardText) : [];
    return h(
      "div",
      {
        "data-testid": "seat",
        "data-seat": s.seat,
        "data-player": s.playerId,
        "data-stack": s.stack.toString(),
        "data-street-bet": s.streetBet.toString(),
        "data-button": String(hand?.buttonSeat === s.seat),
        "data-to-act": String(toAct),
        class: `seat${toAct ? " to-act" : ""}${s.seat === v.yourSeat ? " mine" : ""}${s.folded || s.eliminated ? " out" : ""}`,
      },
      h("div", { class: "name" }, `${s.displayName || s.playerId}${s.playerId === me ? " (you)" : ""}`, ...marks.map((m) => h("span", { class: `mark mark-${m}` }, m))),
      h("div", { class: "stack" }, `${chips(s.stack)} chips`),
      s.streetBet > 0n ? h("div", { class: "bet" }, `bet ${chips(s.streetBet)}`) : null,
      last ? h("div", { class: "last" }, last) : null,
      flags.length ? h("div", { class: "flags" }, flags.join(", ")) : null,
      shown.length ? h("div", { class: "shown" }, ...shown.map(cardElement)) : null,
      h("div", { class: "bank" }, `bank ${clock(durMs(s.timeBank))}`),
    );
  }

  // Legal actions: redrawn only when the decision changes, so the amount being typed stays.
  function drawActions(v: TableView): void {
    const key = `${v.handNumber}/${v.actionSeq}/${v.legalActions.map((a) => `${a.type}:${a.minAmount}-${a.maxAmount}`).join(",")}`;
    if (key === actionsKey) return;
    actionsKey = key;
    const legal = v.legalActions;
    if (legal.length === 0) {
      actionsEl.replaceChildren();
      return;
    }
    const sizing = legal.find((a) => a.type === ActionType.BET || a.type === ActionType.RAISE);
    amount = sizing?.minAmount ?? 0n;
    const input = h("input", {
      "data-testid": "amount",
      type: "number",
      min: sizing?.minAmount.toString(),
      max: sizing?.maxAmount.toString(),
      step: 1,
      value: amount.toString(),
      disabled: !sizing,
    }) as HTMLInputElement;
    const buttons = legal.map((a) => actionButton(v, a));
    input.addEventListener("input", () => {
      // Keep the bet/raise amount within the legal bounds; the buttons show what they send.
      const n = clampAmount(input.value, sizing);
      amount = n;
      for (const b of buttons) if (b.dataset.sized === "true") b.dataset.amount = n.toString();
      for (const b of buttons) if (b.dataset.sized === "true") b.textContent = `${b.dataset.label} ${n}`;
    });
    actionsEl.replaceChildren(h("div", { class: "buttons" }, ...buttons), sizing ? h("label", { class: "amount" }, "Amount ", input, ` (${sizing.minAmount}–${sizing.maxAmount})`) : "");
  }

  function actionButton(v: TableView, a: LegalAction): HTMLElement {
    const name = enumName(ActionType, a.type, "ACTION_TYPE_"); // fold, check, call, bet, raise, all_in
    const testid = `action-${name === "all_in" ? "allin" : name}`;
    const sized = a.type === ActionType.BET || a.type === ActionType.RAISE;
    const label = { fold: "Fold", check: "Check", call: "Call", bet: "Bet", raise: "Raise to", all_in: "All-in" }[name] ?? name;
    const shownAmount = sized ? amount : a.maxAmount;
    const b = h(
      "button",
      {
        "data-testid": testid,
        "data-amount": a.type === ActionType.FOLD || a.type === ActionType.CHECK ? undefined : shownAmount.toString(),
        "data-min": a.minAmount.toString(),
        "data-max": a.maxAmount.toString(),
        "data-sized": String(sized),
        "data-label": label,
        class: `action action-${name}`,
      },
      a.type === ActionType.FOLD || a.type === ActionType.CHECK ? label : `${label} ${shownAmount}`,
    );
    b.addEventListener("click", async () => {
      const amt = sized ? amount : a.maxAmount;
      for (const x of actionsEl.querySelectorAll("button")) (x as HTMLButtonElement).disabled = true;
      const ok = await attempt(`Act ${name}`, () =>
        tableApi.act({ requestId: requestId(), tableId: v.tableId, handNumber: v.handNumber, actionSeq: v.actionSeq, action: a.type, amount: amt }),
      );
      // The stream brings the new state; on a refusal re-enable the buttons of this decision.
      if (!ok) for (const x of actionsEl.querySelectorAll("button")) (x as HTMLButtonElement).disabled = false;
    });
    return b;
  }

  // Pre-actions: one checkbox per pre-action offered now (and the selected one).
  function drawPreActions(v: TableView): void {
    const offered = [...v.preActionsOffered];
    if (v.yourPreAction && !offered.includes(v.yourPreAction)) offered.push(v.yourPreAction);
    const key = `${v.handNumber}/${offered.join(",")}/${v.yourPreAction}`;
    if (key === preKey) return;
    preKey = key;
    preEl.replaceChildren(
      ...offered.map((p) => {
        const name = enumName(PreActionType, p, "PRE_ACTION_TYPE_");
        const box = h("input", { type: "checkbox", "data-testid": `preaction-${name}`, checked: v.yourPreAction === p }) as HTMLInputElement;
        box.addEventListener("change", async () => {
          const want = box.checked;
          const send = () => {
            const cur = view ?? v;
            return want
              ? tableApi.setPreAction({ requestId: requestId(), tableId: cur.tableId, handNumber: cur.handNumber, actionSeq: cur.actionSeq, preAction: p })
              : tableApi.clearPreAction({ requestId: requestId(), tableId: cur.tableId, handNumber: cur.handNumber });
          };
          const ok = await attempt(`pre-action ${name}`, async (): Promise<unknown> => {
            try {
              return await send();
            } catch (err) {
              // Someone acted between our snapshot and the click (stale action_seq): if the
              // newest snapshot still offers it, select again against that one, once.
              if (ConnectError.from(err).code !== Code.FailedPrecondition || !view?.preActionsOffered.includes(p)) throw err;
              return await send();
            }
          });
          // Refused: show the server's selection again, not the click.
          if (!ok) box.checked = view?.yourPreAction === p;
        });
        return h("label", { class: "preaction" }, box, ` ${name.replace("_", " ")}`);
      }),
    );
  }

  function drawFinish(v: TableView): void {
    if (v.status !== TableStatus.FINISHED) return;
    if (!places && !placesLookup) {
      placesLookup = true;
      void lookupPlaces(v.version);
    }
    // Places from the TournamentEndEvent when seen; else the seats' places and my prize
    // from My Tables (joined after the end).
    const mineFromBar = myTablesSnapshot().find((t) => t.tableId === tableId);
    const rows = places
      ? places.map((p) => ({ place: p.place, player: p.playerId, prize: p.prize?.cents ?? 0n }))
      : v.seats
          .filter((s) => s.finishingPlace > 0)
          .map((s) => ({ place: s.finishingPlace, player: s.playerId, prize: s.playerId === me ? (mineFromBar?.prize?.cents ?? 0n) : -1n }))
          .sort((a, b) => a.place - b.place);
    const my = rows.find((r) => r.player === me);
    finishEl.replaceChildren(
      h(
        "div",
        { "data-testid": "finish", "data-place": my?.place ?? 0, "data-prize-cents": (my && my.prize >= 0n ? my.prize : 0n).toString(), class: "finish panel" },
        h("h3", {}, my ? `You finished ${ordinal(my.place)}${my.prize > 0n ? ` and won ${money(my.prize)}` : ""}` : "Tournament over"),
        h("ol", {}, ...rows.map((r) => h("li", { "data-place": r.place, "data-player": r.player, "data-prize-cents": r.prize >= 0n ? r.prize.toString() : undefined },
          `${ordinal(r.place)} ${r.player}${r.prize >= 0n ? ` — ${money(r.prize)}` : ""}`))),
        h("a", { href: "#/lobby", class: "button" }, "Back to the lobby"),
      ),
    );
  }

  // Opened after the end: read the last events again (a short second stream) to find the
  // TournamentEndEvent with every place and prize.
  async function lookupPlaces(version: bigint): Promise<void> {
    const ctl = new AbortController();
    try {
      const from = version > 40n ? version - 40n : 0n;
      for await (const m of tableApi.watchTable({ tableId, fromSequence: from }, { signal: ctl.signal })) {
        if (m.event?.kind.case === "tournamentFinished") {
          places = m.event.kind.value.places;
          if (view) drawFinish(view);
          break;
        }
      }
    } catch (err) {
      if (!isCanceled(err)) fail("final places", err);
    } finally {
      ctl.abort();
    }
  }

  return () => {
    w.stop();
    clearInterval(tick);
  };
}

function clampAmount(raw: string, a: LegalAction | undefined): bigint {
  if (!a) return 0n;
  let n: bigint;
  try {
    n = BigInt(raw.trim() === "" ? "0" : raw.split(".")[0]);
  } catch {
    n = a.minAmount;
  }
  return n < a.minAmount ? a.minAmount : n > a.maxAmount ? a.maxAmount : n;
}

function ordinal(n: number): string {
  const s = n % 100 >= 11 && n % 100 <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${s}`;
}
