"""A simulated VTA-class accelerator: its configuration, instructions and simulator."""
