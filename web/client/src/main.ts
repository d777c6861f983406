// Entry point and router. The address (location.hash) names the screen, so a reload shows
// the same screen again; with a session but no address, resume() finds where the player
// was: an unfinished casino round, a running tournament, or a UTH seat.
//
//   #/signin            sign-in            #/table/<id>   Electric Poker table
//   #/lobby             lobby              #/thb[/<round>] Texas Hold'em Bonus
//   #/uth/<table>       live Ultimate Texas Hold'em

import { casinoLobby, casinoTable, clearSession, loadSession, registration, setUnauthenticatedHandler, type Session } from "./api";
import { mountLobby, startBalance } from "./lobby";
import { startMyTables } from "./mytables";
import { mountSignIn } from "./signin";
import { mountTable } from "./table";
import { mountThb } from "./thb";
import { mountUth } from "./uth";
import { attempt, h, info } from "./ui";
import { CasinoGameCode } from "./gen/electric/registration/v1/casino_events_pb";
import { MyTablesFilter, TableStatus } from "./gen/electric/registration/v1/registration_pb";

const view = document.getElementById("view") as HTMLElement;
const whoami = document.querySelector<HTMLElement>("[data-testid=whoami]") as HTMLElement;
const balanceSlot = document.getElementById("balance-slot") as HTMLElement;
const barSlot = document.getElementById("mytables-slot") as HTMLElement;
const signOutBtn = document.getElementById("signout") as HTMLButtonElement;

let session: Session | null = loadSession();
let unmount: () => void = () => {};
let stopChrome: (() => void) | null = null;

/** Header parts that live as long as the session: who I am, balance, My Tables bar. */
function startChrome(s: Session): void {
  stopChrome?.();
  whoami.textContent = s.player;
  whoami.dataset.player = s.player;
  signOutBtn.hidden = false;
  const stopBalance = startBalance(balanceSlot);
  const stopBar = startMyTables(barSlot);
  stopChrome = () => {
    stopBalance();
    stopBar();
    balanceSlot.replaceChildren();
    barSlot.replaceChildren();
    whoami.textContent = "";
    delete whoami.dataset.player;
    signOutBtn.hidden = true;
  };
}

function signOut(message: string): void {
  clearSession();
  session = null;
  stopChrome?.();
  stopChrome = null;
  location.hash = "#/signin";
  route();
  info(message);
}

setUnauthenticatedHandler(() => {
  if (session) signOut("Session expired or rejected: please sign in again.");
});
signOutBtn.addEventListener("click", () => signOut("Signed out."));

function route(): void {
  unmount();
  unmount = () => {};
  const hash = location.hash;
  if (!session) {
    if (hash !== "#/signin") history.replaceState(null, "", "#/signin");
    unmount = mountSignIn(view, (s) => {
      session = s;
      startChrome(s);
      info(`Signed in as ${s.player}.`);
      void resume();
    });
    return;
  }
  const m = hash.match(/^#\/(\w+)(?:\/(.+))?$/);
  const arg = m?.[2] ? decodeURIComponent(m[2]) : undefined;
  switch (m?.[1]) {
    case "lobby":
      unmount = mountLobby(view);
      break;
    case "table":
      if (arg) unmount = mountTable(view, arg, session.player);
      break;
    case "thb":
      unmount = mountThb(view, arg);
      break;
    case "uth":
      if (arg) unmount = mountUth(view, arg);
      break;
    default:
      view.replaceChildren(h("p", { class: "hint" }, "Resuming…"));
      void resume();
  }
}

/**
 * Where was I? An unfinished casino round first (its bets are at stake), then a running
 * tournament (my turn first), then a UTH seat; else the lobby.
 */
async function resume(): Promise<void> {
  const go = (hash: string) => {
    if (location.hash === hash) route();
    else location.hash = hash; // hashchange → route()
  };
  const rounds = await attempt("ListUnfinishedRounds", () => casinoTable.listUnfinishedRounds({}));
  const thb = rounds?.rounds.find((r) => r.game === "thb");
  if (thb) return go(`#/thb/${encodeURIComponent(thb.roundId)}`);
  const uthRound = rounds?.rounds.find((r) => r.game === "uth");
  if (uthRound) return go(`#/uth/${encodeURIComponent(uthRound.tableId)}`);

  const mine = await attempt("ListMyTables", () => registration.listMyTables({ statusFilter: MyTablesFilter.ACTIVE }));
  const running = mine?.tables.filter((t) => t.status === TableStatus.RUNNING && !t.eliminated) ?? [];
  const pick = running.find((t) => t.myTurn) ?? running[0];
  if (pick) return go(`#/table/${encodeURIComponent(pick.tableId)}`);

  const lobby = await attempt("ListCasinoLobby", () => casinoLobby.listCasinoLobby({}));
  const seat = lobby?.mySessions.find((s) => s.game === CasinoGameCode.UTH);
  if (seat) return go(`#/uth/${encodeURIComponent(seat.tableId)}`);
  go("#/lobby");
}

window.addEventListener("hashchange", route);
if (session) startChrome(session);
route();
