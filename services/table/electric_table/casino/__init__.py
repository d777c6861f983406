"""Casino rounds (house-banked games) hosted by the table service: THB (`thb/`) and live UTH
(`uth/`), each a folder of its own; what they share is here: the CasinoTableService servicer
(`api`), the rows (`repo`), the wallet adapter (`money`), the seat consumer (`consumers`),
the metrics and the wiring.

See docs/casino-services.md: streams ``casino-<round_id>``, wallet reservations per bet,
settlement calls owed to the wallet, resumable rounds and voids.
"""
