"""What :func:`~polyopt.schedules.auto.auto_schedule` may do (``AutoOptions``, its
keyword arguments) and what it reports (``AutoReport``): a module of their own, so that
the scheduler's parts read them without importing the scheduler.

>>> AutoOptions().fusion, AutoOptions(tile=False).tile
('max', False)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..machine import TargetInfo
from .auto_jam import ROWS


@dataclass(frozen=True)
class AutoOptions:
    """What :func:`auto_schedule` may do (keyword arguments of the same names)."""

    tile: bool = True
    tile_sizes: int | tuple | None = None   # None: from the cache model
    fusion: str = "max"                     # max | min | smart (isl's fusion strategies)
    parallel: bool = True
    vectorize: bool = True
    unroll_jam: int | None = None           # rows of a register tile (0 or 1: none;
                                            # None: the host's, TargetInfo.register_tile)
    register_columns: int | None = None     # its columns; None: the host's register tile
                                            # (vectors x lanes); 0: the whole tile row
    max_operations: int = 2_000_000         # isl's effort bound for the scheduler
    scheduler_seconds: float = 1.5          # and its bound in CPU time
    cache_bytes: int | None = None          # None: the L2 size of this machine
    distribute: bool = True                 # statements get their own innermost loop
    skewed_keeps_source: bool = False       # an untiled skewed schedule: the source order
    expand_scalars: bool = True             # scalar temporaries into their stored elements
    transpose_copies: bool = True           # column reads of an input: a transposed copy
    lines: bool = True                      # independent lines of a recurrence side by side
    stencil_tiling: str = "auto"            # auto | diamond | skewed (auto_stencil)
    exact_updates: bool = True              # max/min updates of a table swept by rows
    stream_untiled: bool = True             # a band using each matrix element once:
                                            # untiled (auto_distribute.touched_once)
    split_pivots: bool = True               # loops split where a pivot row/column is
                                            # written (auto_pivots, Floyd-Warshall)
    stencil_jam: int | None = None          # rows jammed in a stencil's time tiles
                                            # (None: auto_stencil_jam.JAM_ROWS; 0: none)
    pack_panels: bool = False               # a contraction's B[k, j]: a copy packed in
                                            # register-tile-wide panels (auto_panels)
    point_order: int = 0                    # the loops of a tile above its innermost one:
                                            # the n-th permutation of them (0: source
                                            # order; auto_band.permuted)
    jam_rows: int = ROWS                    # matrix-vector work: rows side by side
                                            # (auto_jam; 0 or 1: none)
    target: TargetInfo | str | None = None  # the machine scheduled for: a TargetInfo,
                                            # "llvm -mcpu=.. -mattr=.."; None: the host


@dataclass
class AutoReport:
    """What :func:`auto_schedule` chose and why, line by line."""

    lines: list = field(default_factory=list)
    fell_back: bool = False
    seconds: float = 0.0
    scalar_band: bool = False  # a band whose innermost loop carries a dependence
    groups: list = field(default_factory=list)  # statements per loop nest of a kernel
    diamond: bool = False      # diamond tiles were chosen (auto_stencil)

    def add(self, text: str) -> None:
        self.lines.append(text)

    def __str__(self) -> str:
        head = f"auto_schedule ({self.seconds * 1e3:.0f} ms)"
        return "\n".join([head] + [f"  - {line}" for line in self.lines])
