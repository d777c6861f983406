// Texas Hold'em Bonus: one player against the dealer at a private table (`thb-<n>`, created
// by JoinCasinoTable). Deal places the Ante (reserved in the wallet first) and deals; Decide
// answers the open decision (the round's `legal` buttons); when the round is over the
// result is shown until AckResult records that the player saw it. A round left open (or an
// unseen result) comes back from ListUnfinishedRounds after a reload.

import { casinoLobby, casinoTable, requestId } from "./api";
import { cardElement, cardIdText, money } from "./format";
import { attempt, h, info } from "./ui";
import { refreshBalance } from "./lobby";
import { CasinoGameCode } from "./gen/electric/registration/v1/casino_events_pb";
import { CasinoDecision, type CasinoRoundView } from "./gen/electric/table/v1/casino_pb";

/** THB `legal` button → the Decide decision it sends. */
const DECISIONS: Record<string, CasinoDecision> = {
  fold: CasinoDecision.FOLD,
  call_flop: CasinoDecision.CALL_FLOP,
  check: CasinoDecision.CHECK,
  bet_turn: CasinoDecision.BET,
  bet_river: CasinoDecision.BET,
};

export function mountThb(root: HTMLElement, roundId?: string): () => void {
  let tableId = "";
  let round: CasinoRoundView | undefined;
  let lastAnte = 0n;
  let minAnte = 100n;
  let maxAnte = 0n;
  let stopped = false;

  const el = h("section", { "data-testid": "thb", "data-round-id": "", "data-phase": "none", class: "thb" });
  root.replaceChildren(el);

  const show = (r: CasinoRoundView | undefined) => {
    round = r;
    if (r) {
      lastAnte = r.bets.find((b) => b.spot === "ante")?.amountCents ?? lastAnte;
      // Keep the round in the address so a reload comes back to it.
      history.replaceState(null, "", `#/thb/${encodeURIComponent(r.roundId)}`);
    }
    draw();
  };

  const start = async () => {
    // The player's private table: created on demand, the same seat when joined again.
    const [joined, lobby] = await Promise.all([
      attempt("JoinCasinoTable", () => casinoLobby.joinCasinoTable({ game: CasinoGameCode.THB })),
      attempt("ListCasinoLobby", () => casinoLobby.listCasinoLobby({})),
    ]);
    const limit = lobby?.games.find((g) => g.game === CasinoGameCode.THB)?.limits.find((l) => l.spot === "ante");
    if (limit) {
      minAnte = limit.min?.cents ?? minAnte;
      maxAnte = limit.max?.cents ?? 0n;
    }
    tableId = joined?.session?.tableId ?? "";
    // Resume: the round named in the address, else the oldest unfinished THB round.
    let r: CasinoRoundView | undefined;
    if (roundId) r = (await attempt("GetRound", () => casinoTable.getRound({ roundId })))?.round;
    if (!r) {
      const open = await attempt("ListUnfinishedRounds", () => casinoTable.listUnfinishedRounds({}));
      r = open?.rounds.find((x) => x.game === "thb");
    }
    if (!stopped) show(r);
  };
  void start();

  function draw(): void {
    const r = round;
    el.dataset.roundId = r?.roundId ?? "";
    el.dataset.phase = r?.phase ?? "none";
    el.dataset.tableId = tableId;
    const parts: (HTMLElement | null)[] = [h("h2", {}, `Texas Hold'em Bonus${tableId ? ` — ${tableId}` : ""}${r ? ` · game ${r.gameNumber}` : ""}`)];
    if (r) parts.push(roundEl(r));
    const open = r && r.phase !== "over" && r.status === "open";
    if (!open) parts.push(dealEl(r));
    el.replaceChildren(...parts.filter((p): p is HTMLElement => p !== null));
  }

  function roundEl(r: CasinoRoundView): HTMLElement {
    const cards = (label: string, ids: number[], testid: string) =>
      h("div", { class: "cards-row", "data-testid": testid, "data-cards": ids.map(cardIdText).join(" ") }, h("span", { class: "label" }, label), ...ids.map((c) => cardElement(cardIdText(c))));
    const bets = r.bets.map((b) => h("span", { class: "bet", "data-spot": b.spot, "data-cents": b.amountCents.toString() }, `${b.spot} ${money(b.amountCents)}`));
    const decisions = r.legal
      .filter((l) => l in DECISIONS)
      .map((l) => {
        const d = DECISIONS[l];
        const option = (CasinoDecision[d] ?? "").toLowerCase(); // fold, call_flop, check, bet
        return h(
          "button",
          {
            "data-testid": `thb-decide-${option}`,
            "data-legal": l,
            onclick: async () => {
              const res = await attempt(`Decide ${l}`, () => casinoTable.decide({ requestId: requestId(), roundId: r.roundId, decision: d }));
              if (res?.round) show(res.round);
              void refreshBalance();
            },
          },
          l.replace("_", " "),
        );
      });
    return h(
      "div",
      { class: "round panel" },
      cards("Dealer ", r.dealerCards, "thb-dealer-cards"),
      cards("Board ", r.board, "thb-board"),
      cards(`You${r.nickname ? ` (${r.nickname})` : ""} `, r.playerCards, "thb-player-cards"),
      h("div", { class: "bets" }, ...bets),
      decisions.length ? h("div", { class: "buttons" }, ...decisions) : null,
      r.phase === "over" || r.status !== "open" ? resultEl(r) : null,
    );
  }

  function resultEl(r: CasinoRoundView): HTMLElement {
    const staked = r.results.reduce((s, x) => s + x.stakeCents, 0n);
    const payout = r.results.reduce((s, x) => s + x.returnedCents, 0n);
    const net = payout - staked;
    const outcome = r.status === "voided" ? "void" : net > 0n ? "win" : net < 0n ? "lose" : "push";
    return h(
      "div",
      { "data-testid": "thb-result", "data-payout-cents": payout.toString(), "data-net-cents": net.toString(), "data-outcome": outcome, class: `result ${outcome}` },
      h("h3", {}, r.status === "voided" ? `Round voided: ${r.voidReason}` : `${outcome.toUpperCase()} — returned ${money(payout)}, net ${money(net)}`),
      h("ul", {}, ...r.results.map((x) => h("li", { "data-spot": x.spot, "data-outcome": x.outcome }, `${x.spot}: ${x.outcome} stake ${money(x.stakeCents)} win ${money(x.winCents)} returned ${money(x.returnedCents)}`))),
      r.acknowledged
        ? h("span", { class: "hint" }, "acknowledged")
        : h(
            "button",
            {
              "data-testid": "thb-ack",
              onclick: async () => {
                const res = await attempt("AckResult", () => casinoTable.ackResult({ roundId: r.roundId }));
                if (res?.round) show(res.round);
              },
            },
            "OK",
          ),
    );
  }

  // New game (any Ante) or Repeat (the last Ante): both are Deal.
  function dealEl(prev: CasinoRoundView | undefined): HTMLElement {
    const input = h("input", {
      "data-testid": "thb-ante",
      type: "number",
      min: minAnte.toString(),
      max: maxAnte > 0n ? maxAnte.toString() : undefined,
      step: 1,
      value: (lastAnte || minAnte).toString(),
    }) as HTMLInputElement;
    const deal = async (ante: bigint) => {
      if (!tableId) return info("No THB table yet (JoinCasinoTable failed).");
      const res = await attempt("Deal", () => casinoTable.deal({ requestId: requestId(), tableId, anteCents: ante }));
      if (res?.round) show(res.round);
      void refreshBalance();
    };
    const parse = (): bigint => {
      try {
        return BigInt(input.value.trim() || "0");
      } catch {
        return 0n;
      }
    };
    return h(
      "div",
      { class: "deal panel" },
      h("label", {}, "Ante (cents) ", input, ` min ${money(minAnte)}${maxAnte > 0n ? ` max ${money(maxAnte)}` : ""}`),
      h("button", { "data-testid": "thb-deal", onclick: () => void deal(parse()) }, "Deal"),
      prev && lastAnte > 0n ? h("button", { "data-testid": "thb-repeat", onclick: () => void deal(lastAnte) }, `Repeat ${money(lastAnte)}`) : null,
    );
  }

  return () => {
    stopped = true;
  };
}
