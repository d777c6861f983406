// Sign-in screen: one name field. The embedded runner's edge mints a player token for it
// (POST /dev/sign-in); where there is no development sign-in (docker compose), a token minted
// elsewhere is pasted instead. The session goes to sessionStorage so a reload resumes.

import { signIn, useToken, type Session } from "./api";
import { attempt, h, info } from "./ui";

export function mountSignIn(root: HTMLElement, onSignedIn: (s: Session) => void): () => void {
  const input = h("input", {
    "data-testid": "signin-player",
    placeholder: "player name, e.g. alice",
    autocomplete: "username",
    maxlength: 24,
  }) as HTMLInputElement;
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const name = input.value.trim();
    if (!name) return info("Enter a player name.");
    const s = await attempt("sign-in", () => signIn(name));
    if (s) onSignedIn(s);
  };
  const pasted = h("input", { "data-testid": "signin-token", placeholder: "eyJ…", autocomplete: "off" }) as HTMLInputElement;
  const submitToken = async (ev: Event) => {
    ev.preventDefault();
    const s = await attempt("token", async () => useToken(pasted.value.trim()));
    if (s) onSignedIn(s);
  };
  root.replaceChildren(
    h(
      "form",
      { class: "signin panel", onsubmit: submit },
      h("h2", {}, "Sign in"),
      h("label", {}, "Player ", input),
      h("button", { type: "submit", "data-testid": "signin-submit" }, "Sign in"),
      h("p", { class: "hint" }, "Development sign-in: a new player is funded once."),
    ),
    h(
      "form",
      { class: "signin panel", onsubmit: submitToken },
      h("label", {}, "or a player token ", pasted),
      h("button", { type: "submit", "data-testid": "signin-token-submit" }, "Use token"),
    ),
  );
  input.focus();
  return () => {};
}
