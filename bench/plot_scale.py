#!/usr/bin/env python3
"""Plots bench/scale.sh's worker rows as an SVG (standard library only).

    bash bench/scale.sh build | tee scale.txt
    python3 bench/plot_scale.py scale.txt [more.txt ...] > bench/scale.svg
    chromium --headless --window-size=960,400 --screenshot=bench/scale.png bench/scale.svg

Left: seconds to scale 0 -> N and N -> 0 against N workers. Right: the mean reconcile pass (ms)
against N, one line per count of pending jobs. Rows with the same (pending, workers) from later
files replace earlier ones.
"""
import sys

WIDTH, HEIGHT = 960, 400
PANEL_W, PANEL_H = 380, 280
MARGIN_L, MARGIN_T = 70, 50
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def read_rows(paths):
    """(pending, workers) -> dict of the row's numbers, from every worker table in `paths`."""
    rows = {}
    for path in paths:
        in_workers = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                cols = line.split()
                if cols[:2] == ["pending", "workers"]:
                    in_workers = True
                    continue
                if not cols or cols[:2] == ["pending", "nodesets"]:
                    in_workers = False
                    continue
                if not in_workers or len(cols) != 10:
                    continue
                try:
                    pending, workers = int(cols[0]), int(cols[1])
                    rows[(pending, workers)] = {
                        "up": float(cols[2]), "mean": float(cols[5]), "down": float(cols[9])}
                except ValueError:
                    continue  # a log line between the rows, not a row
    if not rows:
        sys.exit("plot_scale: no worker rows found (expected scale.sh's output)")
    return rows


def nice_max(v):
    """The smallest 1, 2, 2.5 or 5 times a power of ten that is at least v."""
    for exp in range(-1, 7):
        for step in (1, 2, 2.5, 5):
            top = step * 10 ** exp
            if top >= v:
                return top
    return v


def panel(x0, title, xlabel, ylabel, series, xmax, ymax):
    """One line chart at x offset `x0`; series: [(label, [(x, y), ...])]."""
    out = [f'<g transform="translate({x0},{MARGIN_T})">',
           f'<text x="{PANEL_W / 2}" y="-20" text-anchor="middle" font-weight="bold">{title}</text>',
           f'<rect width="{PANEL_W}" height="{PANEL_H}" fill="none" stroke="#888"/>']
    sx = lambda x: x / xmax * PANEL_W
    sy = lambda y: PANEL_H - y / ymax * PANEL_H
    for i in range(6):
        xv, yv = xmax * i / 5, ymax * i / 5
        out.append(f'<line x1="{sx(xv)}" y1="{PANEL_H}" x2="{sx(xv)}" y2="{PANEL_H + 5}" stroke="#888"/>')
        out.append(f'<text x="{sx(xv)}" y="{PANEL_H + 18}" text-anchor="middle">{xv:g}</text>')
        out.append(f'<line x1="0" y1="{sy(yv)}" x2="{PANEL_W}" y2="{sy(yv)}" stroke="#eee"/>')
        out.append(f'<text x="-6" y="{sy(yv) + 4}" text-anchor="end">{yv:g}</text>')
    out.append(f'<text x="{PANEL_W / 2}" y="{PANEL_H + 38}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text transform="translate(-48,{PANEL_H / 2}) rotate(-90)" text-anchor="middle">{ylabel}</text>')
    for n, (label, points) in enumerate(series):
        color = COLORS[n % len(COLORS)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>')
        # Legend in the lower right corner, where the curves (rising from the left) are not.
        y = PANEL_H - 10 - 16 * (len(series) - 1 - n)
        out.append(f'<text x="{PANEL_W - 10}" y="{y}" text-anchor="end" fill="{color}">{label}</text>')
    out.append("</g>")
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = read_rows(sys.argv[1:])
    pendings = sorted({p for p, _ in rows})
    xmax = nice_max(max(w for _, w in rows))
    # Scaling is measured with an empty queue where there is one (the queue only adds a pass).
    base = min(pendings)
    scaling = sorted((w, r) for (p, w), r in rows.items() if p == base)
    up = [(w, r["up"]) for w, r in scaling]
    down = [(w, r["down"]) for w, r in scaling]
    passes = [(f"mean pass, {p:,} pending jobs", sorted((w, r["mean"]) for (q, w), r in rows.items() if q == p))
              for p in pendings]
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
    svg += panel(MARGIN_L, f"Time to scale ({base:,} pending jobs)", "workers", "seconds",
                 [("0 -> N", up), ("N -> 0", down)], xmax, nice_max(max(y for _, y in up + down)))
    svg += panel(MARGIN_L + PANEL_W + 110, "One reconcile pass", "workers", "ms",
                 passes, xmax, nice_max(max(y for _, pts in passes for _, y in pts)))
    svg.append("</svg>")
    print("\n".join(svg))


if __name__ == "__main__":
    main()
