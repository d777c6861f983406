"""``python -m electric_registration``: the registration service as its own process."""

from electric_platform import main

from electric_registration.app import SERVICE, setup

if __name__ == "__main__":
    main(SERVICE, setup)
