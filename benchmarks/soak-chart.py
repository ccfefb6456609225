#!/usr/bin/env python3
"""Draws a soak run's CSV (benchmarks/run-soak.sh --csv) as an SVG chart, no dependencies.

Usage: benchmarks/soak-chart.py SOAK_CSV OUT_SVG [TITLE]

Top panel, MiB over minutes: the pool's requested, reserved and committed bytes, the ceiling, and the
resident memory beyond the JVM's own with its limit (committed + the margin). Bottom panel, per minute:
HTTP requests per second and network refusals. The last row (the end, after close) is left out.
"""
import csv
import sys

W, H, LEFT, RIGHT, TOP, GAP, PANEL2 = 900, 560, 70, 20, 40, 60, 140


def rows(path):
    with open(path) as f:
        data = [r for r in csv.DictReader(f) if r.get("minute") not in (None, "", "end")]
    out = []
    for r in data:
        try:
            out.append({k: float(v) for k, v in r.items() if k is not None and v not in (None, "")})
        except ValueError:
            continue  # the end row carries text
    if len(out) > 1 and out[-1].get("committed", 1) == 0:
        out.pop()  # the end row: everything released and the pool closed
    return out


def polyline(points, color, dash=""):
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    style = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<polyline fill="none" stroke="{color}" stroke-width="1.6"{style} points="{path}"/>'


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    data = rows(sys.argv[1])
    if len(data) < 2:
        sys.exit("soak-chart: fewer than two rows in " + sys.argv[1])
    title = sys.argv[3] if len(sys.argv) > 3 else "soak"
    mib = 1024 * 1024
    minutes = [r["minute"] for r in data]
    x0, x1 = min(minutes), max(minutes)
    top_h = H - TOP - GAP - PANEL2 - 30

    def x(m):
        return LEFT + (m - x0) / ((x1 - x0) or 1) * (W - LEFT - RIGHT)

    series = [("requested", "#1f77b4", ""), ("reserved", "#2ca02c", ""), ("committed", "#d62728", ""),
              ("ceiling", "#000000", "6,4"), ("rssBeyondJvm", "#9467bd", ""), ("rssLimit", "#9467bd", "3,3")]
    ymax = max(max(r.get(k, 0) for r in data) for k, _, _ in series) / mib * 1.08

    def y(v):
        return TOP + top_h - v / mib / ymax * top_h

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{LEFT}" y="22" font-size="15">{title}</text>']
    for i in range(6):
        v = ymax * i / 5
        yy = TOP + top_h - top_h * i / 5
        svg.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">{v:.0f}</text>')
    svg.append(f'<text x="14" y="{TOP + top_h / 2:.0f}" transform="rotate(-90 14 {TOP + top_h / 2:.0f})">MiB</text>')
    for name, color, dash in series:
        pts = [(x(r["minute"]), y(r[name])) for r in data if name in r and r[name] >= 0]
        svg.append(polyline(pts, color, dash))
    for i, (name, color, dash) in enumerate(series):
        lx = LEFT + 10 + i * 140
        svg.append(f'<line x1="{lx}" x2="{lx + 24}" y1="{TOP + 10}" y2="{TOP + 10}" stroke="{color}" stroke-width="2"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        svg.append(f'<text x="{lx + 28}" y="{TOP + 14}">{name}</text>')
    # bottom panel: requests/s and refusals per minute
    b_top = TOP + top_h + GAP
    rps = [r.get("requestsPerSecond", 0) for r in data]
    ref = [0.0] + [max(0.0, data[i]["refusals"] - data[i - 1]["refusals"]) for i in range(1, len(data))]
    rmax = max(max(rps), 1) * 1.1
    fmax = max(max(ref), 1) * 1.1
    svg.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{b_top + PANEL2}" y2="{b_top + PANEL2}" stroke="#999"/>')
    svg.append(polyline([(x(m), b_top + PANEL2 - v / rmax * PANEL2) for m, v in zip(minutes, rps)], "#ff7f0e"))
    svg.append(polyline([(x(m), b_top + PANEL2 - v / fmax * PANEL2) for m, v in zip(minutes, ref)], "#7f7f7f", "4,3"))
    svg.append(f'<text x="{LEFT}" y="{b_top - 8}">HTTP requests/s (solid, max {rmax / 1.1:.0f});'
               f' refusals per interval (dashed, max {fmax / 1.1:.0f})</text>')
    for i in range(6):
        m = x0 + (x1 - x0) * i / 5
        svg.append(f'<text x="{x(m):.1f}" y="{H - 8}" text-anchor="middle">{m:.0f}</text>')
    svg.append(f'<text x="{W - RIGHT}" y="{H - 8}" text-anchor="end">minutes</text>')
    svg.append("</svg>")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
