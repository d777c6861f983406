"""Casino rounds (house-banked games) hosted by the table service: THB now, UTH next.

See docs/casino-services.md: streams ``casino-<round_id>``, wallet reservations per bet,
settlement calls owed to the wallet, resumable rounds and voids.
"""
