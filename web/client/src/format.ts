// Formatting of the API's units for display. Money is always integer cents (int64, which
// protobuf-es v2 gives as bigint): we never convert it to a float, so $0.10 + $0.20 stays
// exact. Chips are plain integers (also int64 → bigint).

import type { Card } from "./gen/electric/common/v1/cards_pb";
import type { Duration, Timestamp } from "@bufbuild/protobuf/wkt";

/** Cents as `$1,234.56` (negative: `-$1.50`). Accepts bigint or number (cents). */
export function money(cents: bigint | number | undefined): string {
  const c = BigInt(cents ?? 0);
  const neg = c < 0n;
  const abs = neg ? -c : c;
  const dollars = (abs / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const rest = (abs % 100n).toString().padStart(2, "0");
  return `${neg ? "-" : ""}$${dollars}.${rest}`;
}

/** Chips with thousands separators: `1,500`. */
export function chips(n: bigint | number | undefined): string {
  return BigInt(n ?? 0).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

const RANKS = "23456789TJQKA";
const SUITS = "cdhs";
const SUIT_SYMBOL: Record<string, string> = { c: "♣", d: "♦", h: "♥", s: "♠" };

/**
 * Text form (`Ah`) of a table-service Card. The enums are authoritative (`text` is
 * informative), so we build it from rank/suit and fall back to `text`.
 */
export function cardText(c: Card): string {
  // Rank enum values are the rank itself (2..14); suit 1..4 is clubs, diamonds, hearts, spades.
  if (c.rank >= 2 && c.rank <= 14 && c.suit >= 1 && c.suit <= 4) {
    return RANKS[c.rank - 2] + SUITS[c.suit - 1];
  }
  return c.text;
}

/**
 * Text form of a casino card id. The casino protos carry cards as ints 0..51 =
 * rank * 4 + suit (rank 0 = deuce … 12 = ace; suit c d h s), the evaluator's numbering.
 */
export function cardIdText(id: number): string {
  if (id < 0 || id > 51) return "??";
  return RANKS[Math.floor(id / 4)] + SUITS[id % 4];
}

/** A card (text form `Ah`) as a small DOM element with the suit symbol and colour class. */
export function cardElement(text: string): HTMLElement {
  const span = document.createElement("span");
  const suit = text.slice(-1);
  span.className = `card suit-${suit}`;
  span.textContent = text.slice(0, -1).replace("T", "10") + (SUIT_SYMBOL[suit] ?? "?");
  span.dataset.card = text;
  return span;
}

/** Milliseconds of a protobuf Timestamp (0 when absent). */
export function tsMs(t: Timestamp | undefined): number {
  return t ? Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6) : 0;
}

/** Milliseconds of a protobuf Duration (0 when absent). */
export function durMs(d: Duration | undefined): number {
  return d ? Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6) : 0;
}

/** `m:ss` (or `s.s` under ten seconds) of a non-negative number of milliseconds. */
export function clock(ms: number): string {
  const v = Math.max(0, ms);
  if (v < 10_000) return `${(v / 1000).toFixed(1)}s`;
  const s = Math.ceil(v / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** `ACTION_TYPE_ALL_IN`-style enum name of a value → `all_in` (strips the prefix). */
export function enumName(names: Record<number, string>, value: number, prefix: string): string {
  const n = names[value] ?? String(value);
  return n.startsWith(prefix) ? n.slice(prefix.length).toLowerCase() : n.toLowerCase();
}
