// The one place that knows how the browser reaches the platform: the Connect transport to the
// browser edge (same origin), the bearer-token interceptor, the typed clients of the four
// services, the dev sign-in, and how errors are turned into text.

import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { RegistrationService } from "./gen/electric/registration/v1/registration_pb";
import { CasinoLobbyService } from "./gen/electric/registration/v1/casino_pb";
import { TableService } from "./gen/electric/table/v1/table_pb";
import { CasinoTableService } from "./gen/electric/table/v1/casino_pb";
import { WalletService } from "./gen/electric/wallet/v1/wallet_pb";
import { InsufficientFundsSchema, StaleCommandSchema } from "./gen/electric/common/v1/errors_pb";
import { money } from "./format";

/** What /dev/sign-in answers, kept in sessionStorage so a reload resumes the session. */
export interface Session {
  token: string;
  player: string;
  /** Unix seconds. */
  expiresAt: number;
}

const SESSION_KEY = "electric.session";

/** The stored session, or null when absent or expired (tokens live at most 24 h). */
export function loadSession(): Session | null {
  const raw = sessionStorage.getItem(SESSION_KEY);
  if (!raw) return null;
  try {
    const s = JSON.parse(raw) as Session;
    if (!s.token || s.expiresAt * 1000 <= Date.now()) return null;
    return s;
  } catch {
    return null;
  }
}

export function clearSession(): void {
  sessionStorage.removeItem(SESSION_KEY);
}

/**
 * Development sign-in served by the embedded runner's edge: it mints a player token with the
 * run's keys (and funds a new player once). Production would use a real identity provider;
 * everything after this call only needs the bearer token.
 */
export async function signIn(player: string): Promise<Session> {
  const res = await fetch(new URL("/dev/sign-in", location.origin), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ player }),
  });
  if (!res.ok) {
    // The sign-in endpoint answers {"error": "..."}: 400 for a bad name, 503 when the wallet
    // could not fund the player.
    const text = await res.text();
    let why = text;
    try {
      why = (JSON.parse(text) as { error?: string }).error ?? text;
    } catch {
      /* not JSON: show it as it is */
    }
    const code = res.status === 400 ? Code.InvalidArgument : res.status === 503 ? Code.Unavailable : Code.Unknown;
    throw new ConnectError(`HTTP ${res.status}: ${why}`, code);
  }
  const body = (await res.json()) as { token: string; player: string; expires_at: number };
  const s: Session = { token: body.token, player: body.player, expiresAt: body.expires_at };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
  return s;
}

/**
 * Sign in with a token minted elsewhere (an identity provider, or the token CLI where there
 * is no development sign-in, as with docker compose). Only its claims are read here, to name
 * the player and know when it expires: the services verify it on every call.
 */
export function useToken(token: string): Session {
  const part = token.split(".")[1] ?? "";
  let claims: { sub?: string; exp?: number } = {};
  try {
    claims = JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/"))) as typeof claims;
  } catch {
    throw new ConnectError("not a token (expected a JWT: header.payload.signature)", Code.InvalidArgument);
  }
  if (!claims.sub || !claims.exp) throw new ConnectError("the token names no player or expiry", Code.InvalidArgument);
  if (claims.exp * 1000 <= Date.now()) throw new ConnectError("the token has expired", Code.Unauthenticated);
  const s: Session = { token, player: claims.sub, expiresAt: claims.exp };
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
  return s;
}

/** Called when the server says the token is no longer good (main.ts goes to sign-in). */
let onUnauthenticated: () => void = () => {};
/** A stream that ended unauthenticated says so here (its error reaches no interceptor). */
export function signalUnauthenticated(): void {
  onUnauthenticated();
}
export function setUnauthenticatedHandler(fn: () => void): void {
  onUnauthenticated = fn;
}

/**
 * Adds `authorization: Bearer <token>` to every call, reading the token at call time so a
 * new sign-in takes effect without rebuilding the clients.
 */
const auth: Interceptor = (next) => async (req) => {
  const s = loadSession();
  if (s) req.header.set("authorization", `Bearer ${s.token}`);
  try {
    return await next(req);
  } catch (err) {
    if (ConnectError.from(err).code === Code.Unauthenticated) onUnauthenticated();
    throw err;
  }
};

// The edge serves this page and the API at the same origin. Binary protobuf is smaller and
// keeps int64 exact; the Connect protocol works with plain fetch (server streams included).
const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [auth],
});

export const registration: Client<typeof RegistrationService> = createClient(RegistrationService, transport);
export const casinoLobby: Client<typeof CasinoLobbyService> = createClient(CasinoLobbyService, transport);
export const table: Client<typeof TableService> = createClient(TableService, transport);
export const casinoTable: Client<typeof CasinoTableService> = createClient(CasinoTableService, transport);
export const wallet: Client<typeof WalletService> = createClient(WalletService, transport);

/**
 * A fresh idempotency key for a command. Every command RPC takes one; retrying the *same*
 * command must reuse its key (the server then answers instead of applying it twice).
 */
export function requestId(): string {
  return crypto.randomUUID();
}

/** Connect code name in the protocol's spelling, e.g. `failed_precondition`. */
export function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * `code: message`, plus what the typed error details add (insufficient funds, stale command),
 * for the status line.
 */
export function errorText(err: unknown): { code: string; text: string } {
  const e = ConnectError.from(err);
  const code = codeName(e.code);
  let text = `${code}: ${e.rawMessage}`;
  for (const d of e.findDetails(InsufficientFundsSchema)) {
    text += ` (available ${money(d.available?.cents)}, required ${money(d.required?.cents)})`;
  }
  for (const d of e.findDetails(StaleCommandSchema)) {
    text += ` (stale: table is at hand ${d.currentHandNumber} action ${d.currentActionSeq})`;
  }
  return { code, text };
}

/** True when err is our own cancellation (a screen closed its stream). */
export function isCanceled(err: unknown): boolean {
  return ConnectError.from(err).code === Code.Canceled;
}

export { Code, ConnectError };
