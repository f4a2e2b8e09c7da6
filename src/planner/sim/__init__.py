"""The built-in simulator: a simulated world, its faults, and the whole robot run in process on
simulated time. It imports the core only."""
