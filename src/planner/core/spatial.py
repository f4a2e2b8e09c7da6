"""A uniform grid over the floor plan for "what is near this box" at detection rate.

Objects move every time they are re-seen, so the index must update cheaply; R-tree libraries
(rtree/libspatialindex) take ~0.5 ms per delete+insert here, the grid a few microseconds.
"""

from __future__ import annotations

import math
from collections import defaultdict

Bounds = tuple[float, float, float, float]  # min x, min y, max x, max y
# Items spanning more cells than this (a whole-floor box) are kept aside and always returned.
MAX_CELLS_PER_ITEM = 400


class GridIndex:
    """Item ids (the scene graph's) by the grid cells their boxes cover."""

    def __init__(self, cell_m: float = 1.0):
        self.cell_m = cell_m
        self._cells: dict[tuple[int, int], set[str]] = defaultdict(set)
        self._item_cells: dict[str, list[tuple[int, int]]] = {}
        self._large: set[str] = set()

    def _span(self, bounds: Bounds) -> list[tuple[int, int]] | None:
        size = self.cell_m
        x0, y0 = math.floor(bounds[0] / size), math.floor(bounds[1] / size)
        x1, y1 = math.floor(bounds[2] / size) + 1, math.floor(bounds[3] / size) + 1
        if (x1 - x0) * (y1 - y0) > MAX_CELLS_PER_ITEM:
            return None
        rows = range(y0, y1)
        return [(i, j) for i in range(x0, x1) for j in rows]

    def insert(self, item: str, bounds: Bounds) -> None:
        self.remove(item)
        cells = self._span(bounds)
        if cells is None:
            self._large.add(item)
            return
        for cell in cells:
            self._cells[cell].add(item)
        self._item_cells[item] = cells

    def remove(self, item: str) -> None:
        self._large.discard(item)
        for cell in self._item_cells.pop(item, ()):
            members = self._cells[cell]
            members.discard(item)
            if not members:
                del self._cells[cell]

    def query(self, bounds: Bounds) -> set[str]:
        """Items whose cells overlap `bounds`: a superset of the items whose boxes do."""
        found = set(self._large)
        cells = self._span(bounds)
        for cell in cells if cells is not None else list(self._cells):
            members = self._cells.get(cell)
            if members:
                found |= members
        return found

    def __len__(self) -> int:
        return len(self._item_cells) + len(self._large)
