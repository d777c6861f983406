"""``python -m electric_table``: the table service as its own process."""

from electric_platform import main

from electric_table.app import SERVICE, setup

if __name__ == "__main__":
    main(SERVICE, setup)
