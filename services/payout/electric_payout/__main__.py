"""``python -m electric_payout``: the payout service as its own process."""

from electric_platform import main

from electric_payout.app import SERVICE, setup

if __name__ == "__main__":
    main(SERVICE, setup)
