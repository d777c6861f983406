"""``python -m electric_registration``: the registration service as its own process.

``ELECTRIC_REGISTRATION_TRACEMALLOC=<dir>``: memory reports (:mod:`electric_platform.memtrace`).
"""

from electric_platform import main
from electric_platform.memtrace import start_from_env

from electric_registration.app import SERVICE, setup

if __name__ == "__main__":
    start_from_env(SERVICE)
    main(SERVICE, setup)
