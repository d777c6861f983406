"""Player profile and settings (seed 000's settings list): the display name and the six
switches a client stores server-side. Registration owns them; the table service consumes the
muck switches from ``PlayerSettingsChanged`` to decide what a showdown reveals.

Rules (docs/registration.md "Player settings"):

- A display name is 1 to :data:`DISPLAY_NAME_MAX` characters of ASCII letters, digits,
  space, ``_``, ``-`` and ``.``; it neither starts nor ends with a space and has no two
  spaces in a row. ASCII only, so two names cannot look alike through look-alike letters.
  Names need not be unique (seats are told apart by seat number).
- A player who never chose a name gets a default derived from the player id: the id itself
  when it is a valid display name, else ``Player-`` and 8 hex digits of its SHA-256.
- An update changes only the fields it names; an empty display name restores the default.
  ``version`` starts at 0 (never changed) and grows by one per change; an update that
  changes nothing is not a change (no event, same version). An update naming
  ``expected_version`` applies only at that version.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from electric_domain.lobby.errors import InvalidDisplayName, SettingsVersionConflict

DISPLAY_NAME_MAX = 24
_NAME = re.compile(r"[A-Za-z0-9_.\-]+( [A-Za-z0-9_.\-]+)*")
#: Player ids (the wallet's rule): 1..100 characters of ``[A-Za-z0-9._@+=-]``.
_PLAYER_ID = re.compile(r"[A-Za-z0-9._@+=\-]{1,100}")


def valid_player_id(player_id: str) -> bool:
    """Whether ``player_id`` is a well-formed player id (the wallet's rule)."""
    return _PLAYER_ID.fullmatch(player_id) is not None


#: The switches of the settings list, in the seed's order of the proto fields.
SWITCHES = (
    "muck_winning_hands",
    "muck_losing_hands",
    "four_color_deck",
    "alert_sounds",
    "sound_fx",
    "show_details",
)


def display_name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid display name, or None when it is."""
    if not name:
        return "must not be empty"
    if len(name) > DISPLAY_NAME_MAX:
        return f"must be at most {DISPLAY_NAME_MAX} characters"
    if not _NAME.fullmatch(name):
        return (
            "may only contain ASCII letters, digits, '_', '-', '.' and single spaces between words"
        )
    return None


def default_display_name(player_id: str) -> str:
    """The display name of a player who never chose one (see module doc)."""
    if display_name_problem(player_id) is None:
        return player_id
    return "Player-" + hashlib.sha256(player_id.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class PlayerSettings:
    """A player's settings; ``display_name`` empty means the default."""

    player_id: str
    display_name: str = ""
    muck_winning_hands: bool = False
    muck_losing_hands: bool = False
    four_color_deck: bool = False
    alert_sounds: bool = True
    sound_fx: bool = True
    show_details: bool = False
    version: int = 0

    @property
    def shown_name(self) -> str:
        """The name other players see."""
        return self.display_name or default_display_name(self.player_id)

    @property
    def name_is_default(self) -> bool:
        return not self.display_name


@dataclass(frozen=True)
class SettingsUpdate:
    """Fields to change (None = keep)."""

    display_name: str | None = None
    muck_winning_hands: bool | None = None
    muck_losing_hands: bool | None = None
    four_color_deck: bool | None = None
    alert_sounds: bool | None = None
    sound_fx: bool | None = None
    show_details: bool | None = None
    expected_version: int = 0


def apply_update(current: PlayerSettings, update: SettingsUpdate) -> tuple[PlayerSettings, bool]:
    """The settings after ``update`` and whether anything changed (module doc)."""
    if update.expected_version and update.expected_version != current.version:
        raise SettingsVersionConflict(current.player_id, update.expected_version, current.version)
    changes: dict[str, object] = {}
    if update.display_name is not None:
        name = update.display_name
        if name:
            problem = display_name_problem(name)
            if problem is not None:
                raise InvalidDisplayName(problem)
        if name == default_display_name(current.player_id):
            name = ""  # choosing the default is the default
        changes["display_name"] = name
    for switch in SWITCHES:
        value = getattr(update, switch)
        if value is not None:
            changes[switch] = value
    changed = {k: v for k, v in changes.items() if getattr(current, k) != v}
    if not changed:
        return current, False
    return replace(current, version=current.version + 1, **changed), True  # type: ignore[arg-type]
