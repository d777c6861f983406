// Sign-in screen: one name field. The embedded runner's edge mints a player token for it
// (POST /dev/sign-in); the session goes to sessionStorage so a reload resumes.

import { signIn, type Session } from "./api";
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
  root.replaceChildren(
    h(
      "form",
      { class: "signin panel", onsubmit: submit },
      h("h2", {}, "Sign in"),
      h("label", {}, "Player ", input),
      h("button", { type: "submit", "data-testid": "signin-submit" }, "Sign in"),
      h("p", { class: "hint" }, "Development sign-in: a new player is funded once."),
    ),
  );
  input.focus();
  return () => {};
}
