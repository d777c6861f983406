"""The soak run of issue 18 (``make soak DURATION=60m``; docs/chaos.md "Soak run").

The four services as processes on PostgreSQL and Kafka with tournament and casino bots
playing for a bounded time; every ``interval`` a sample of each service's RSS and open file
descriptors (/proc), each store's size, event, outbox and de-duplication row counts, the
Kafka lag of the run's consumer groups, and the table service's held-tables gauges. The
samples go to CSV + JSON + a PNG, and :mod:`tools.soak.bounds` fails the run when a resource
grows beyond the documented bound.

Modules: :mod:`.probe` (one sample), :mod:`.bounds` (the bound), :mod:`.plot` (the PNG),
:mod:`.run` (load + sampling on a cluster), ``__main__`` (the command line).
"""
