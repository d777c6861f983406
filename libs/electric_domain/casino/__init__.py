"""House-banked casino games (issue 12): Texas Hold'em Bonus (``thb``) and live Ultimate
Texas Hold'em (``uth``), as pure event-sourced round aggregates; ``common`` holds money,
configuration, game numbers and the void rule shared by both."""
