"""A Hilbert-like walk over any rectangle of tiles (a generalized Hilbert curve), for the order in
which a persistent GEMM visits its output tiles.

    order = walk(width, height)      # [(x, y), ...]: every cell once

Guarantees: every cell of the width x height grid appears exactly once; consecutive cells are
neighbours (one step along x or y) except for at most a few diagonal steps that odd side lengths
force; the walk starts at (0, 0). Any window of consecutive cells covers a compact, nearly square
patch, so the tiles in flight at one moment share A rows and B columns in L2 (what the grouped
order gets only along one axis).

Does not: work in O(1) per cell on the device. Families render the walk as a table at render time
(the render is for one shape anyway, and contract v2 has no host code to compute it at launch).
"""

from __future__ import annotations


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


def _fill(out: list, x: int, y: int, ax: int, ay: int, bx: int, by: int) -> None:
    """Walk the rectangle spanned from (x, y) by the major axis (ax, ay) and the minor axis
    (bx, by) (each along x or y, either direction), appending cells: split the longer side in two
    halves, or cut the rectangle into three (minor half, the long strip, minor half back), keeping
    the halves even where possible so the pieces join end to start."""
    w, h = abs(ax + ay), abs(bx + by)
    dax, day, dbx, dby = _sign(ax), _sign(ay), _sign(bx), _sign(by)
    if h == 1:
        out.extend((x + dax * i, y + day * i) for i in range(w))
        return
    if w == 1:
        out.extend((x + dbx * i, y + dby * i) for i in range(h))
        return
    ax2, ay2, bx2, by2 = ax // 2, ay // 2, bx // 2, by // 2
    w2, h2 = abs(ax2 + ay2), abs(bx2 + by2)
    if 2 * w > 3 * h:        # long and thin: two halves along the major axis
        if w2 % 2 and w > 2:
            ax2, ay2 = ax2 + dax, ay2 + day
        _fill(out, x, y, ax2, ay2, bx, by)
        _fill(out, x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by)
        return
    if h2 % 2 and h > 2:
        bx2, by2 = bx2 + dbx, by2 + dby
    _fill(out, x, y, bx2, by2, ax2, ay2)                                  # up the first half of the minor side
    _fill(out, x + bx2, y + by2, ax, ay, bx - bx2, by - by2)              # across the whole major side
    _fill(out, x + (ax - dax) + (bx2 - dbx), y + (ay - day) + (by2 - dby),  # back down, to end at the far corner
          -bx2, -by2, -(ax - ax2), -(ay - ay2))


def walk(width: int, height: int) -> list[tuple[int, int]]:
    """Every (x, y) with 0 <= x < width and 0 <= y < height, in Hilbert-like order from (0, 0)."""
    if width < 1 or height < 1:
        raise ValueError(f"a walk needs a non-empty grid, got {width} x {height}")
    out: list[tuple[int, int]] = []
    if width >= height:
        _fill(out, 0, 0, width, 0, 0, height)
    else:
        _fill(out, 0, 0, 0, height, width, 0)
    return out
