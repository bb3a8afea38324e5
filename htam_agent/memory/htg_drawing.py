"""Drawing of the Hierarchical Transition Graph: directions on a circle, the start in the middle, edges whose width
grows with the number of recorded transitions and whose colour is the mean reward (red: failed or slowed down,
green: gained). Uses matplotlib's Figure directly (no pyplot): works headless and leaves a notebook's backend alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from .htam import EdgeRow
from .schema import START, Direction


def draw_htg(directions: Sequence[Direction], edges: Sequence[EdgeRow], out: str | Path, *, title: str = "",
             max_labels: int = 14) -> Path:
    """Write the graph to ``out`` (format from the suffix: .png, .svg, .pdf) and return the path."""
    import matplotlib
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch

    n = len(directions)
    pos = {d.id: (math.cos(math.pi / 2 - 2 * math.pi * i / n), math.sin(math.pi / 2 - 2 * math.pi * i / n))
           for i, d in enumerate(directions)}
    pos[START] = (0.0, 0.0)
    names = {d.id: d.name for d in directions} | {START: "start"}

    fig = Figure(figsize=(11, 11))
    ax = fig.subplots()
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.6, 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    cmap = matplotlib.colormaps["RdYlGn"]
    norm = Normalize(vmin=-0.5, vmax=0.5)
    max_n = max((e.stats.n for e in edges), default=1) or 1
    labelled = {(e.source, e.target) for e in sorted(edges, key=lambda e: -e.stats.n)[:max_labels]}

    for e in edges:
        if e.source not in pos or e.target not in pos:
            continue
        st = e.stats
        mean_reward = st.sum_reward / st.n if st.n else 0.0
        color = cmap(norm(mean_reward))
        width = 0.8 + 6.0 * math.log1p(st.n) / math.log1p(max_n)
        (x0, y0), (x1, y1) = pos[e.source], pos[e.target]
        if e.source == e.target:  # the same direction twice in a row: a loop outside the circle
            r = math.hypot(x0, y0) or 1.0
            cx, cy = x0 * (1 + 0.13 / r), y0 * (1 + 0.13 / r)
            ax.add_patch(Circle((cx, cy), 0.1, fill=False, color=color, lw=width, alpha=0.85))
            lx, ly = x0 * (1 + 0.3 / r), y0 * (1 + 0.3 / r)
        else:
            ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), connectionstyle="arc3,rad=0.15", arrowstyle="-|>",
                                         mutation_scale=12 + width * 2, lw=width, color=color, alpha=0.85,
                                         shrinkA=28, shrinkB=28))
            mx, my = (x0 + x1) / 2, (y0 + y1) / 2
            lx, ly = mx + 0.15 * (y1 - y0) / 2, my - 0.15 * (x1 - x0) / 2
        if (e.source, e.target) in labelled:
            gain = f", x{math.exp(st.mean_gain):.2f}" if st.mean_gain is not None else ""
            ax.text(lx, ly, f"n={st.n:g}, {st.success_rate:.0%}{gain}", fontsize=7, ha="center", va="center",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})

    for node, (x, y) in pos.items():
        ax.add_patch(Circle((x, y), 0.12, color="#dbe9f6" if node != START else "#eeeeee", ec="#3b6ea5",
                                lw=1.5, zorder=3))
        ax.text(x, y, names[node].replace(" and ", "\n& ").replace(" ", "\n", 1), ha="center", va="center",
                fontsize=7.5, zorder=4)
    sm = ScalarMappable(cmap=cmap, norm=norm)
    cb = fig.colorbar(sm, ax=ax, fraction=0.03, pad=0.01)
    cb.set_label("mean reward (clipped log speedup; -0.5 per rejected candidate)")
    ax.set_title(title or f"HTAM transition graph: {sum(e.stats.n for e in edges):g} transitions")
    ax.text(0.0, -1.5, "edge width: number of transitions; label: n, share improved, mean speedup of accepted "
            "candidates (top edges)", ha="center", fontsize=8, color="#555555")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    return out
