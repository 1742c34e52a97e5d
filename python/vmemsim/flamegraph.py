"""Flame graphs from folded stacks (``a;b;c weight`` lines, the format ``flamegraph.pl`` and
inferno read), written as a self-contained SVG.

The layout is Brendan Gregg's: each frame a box as wide as the weight of the stacks under
it, children above their parent, siblings sorted by name; a box's title gives its weight and
share. Weights of the VM layer's KVM profile are simulated ns.
"""

from __future__ import annotations

import hashlib
from typing import Dict, List, Tuple
from xml.sax.saxutils import escape

from ._native import VmemsimError


class _Node:
    __slots__ = ("name", "self_w", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.self_w = 0
        self.children: Dict[str, "_Node"] = {}

    def total(self) -> int:
        return self.self_w + sum(c.total() for c in self.children.values())


def parse_folded(text: str) -> _Node:
    """The tree of ``text``; a malformed line is an error naming it."""
    root = _Node("all")
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, w = line.rpartition(" ")
        try:
            weight = int(w)
        except ValueError:
            raise VmemsimError(f"folded stacks, line {i}: expected 'a;b;c WEIGHT', got {line!r}")
        if weight < 0 or not stack:
            raise VmemsimError(f"folded stacks, line {i}: expected 'a;b;c WEIGHT', got {line!r}")
        node = root
        for frame in stack.split(";"):
            node = node.children.setdefault(frame, _Node(frame))
        node.self_w += weight
    return root


def _color(name: str) -> str:
    h = hashlib.sha1(name.encode()).digest()
    return f"rgb({205 + h[0] % 50},{80 + h[1] % 120},{h[2] % 60})"


def render_svg(text: str, title: str = "Flame graph", unit: str = "ns",
               width: int = 1200) -> str:
    """The SVG of the folded stacks ``text``."""
    root = parse_folded(text)
    total = root.total()
    row_h, pad_top = 17, 32
    boxes: List[Tuple[float, int, float, _Node, int]] = []

    def place(node: _Node, x: float, depth: int) -> None:
        w = node.total()
        if w <= 0:
            return
        boxes.append((x, depth, w, node, w))
        cx = x
        for name in sorted(node.children):
            child = node.children[name]
            place(child, cx, depth + 1)
            cx += child.total()

    place(root, 0.0, 0)
    depth = max((b[1] for b in boxes), default=0) + 1
    height = pad_top + depth * row_h + 10
    scale = (width - 20) / total if total else 0.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="Verdana, sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="#f8f8f8"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="15">'
           f'{escape(title)}</text>']
    for x, d, w, node, _ in boxes:
        px, pw = 10 + x * scale, w * scale
        y = height - 10 - (d + 1) * row_h
        share = 100.0 * w / total if total else 0.0
        label = f"{node.name} ({w:,} {unit}, {share:.2f}%)"
        out.append(f'<g><title>{escape(label)}</title>'
                   f'<rect x="{px:.2f}" y="{y}" width="{max(pw, 0.5):.2f}" height="{row_h - 1}" '
                   f'fill="{"#cccccc" if d == 0 else _color(node.name)}" rx="2"/>')
        chars = int(pw / 7)
        if chars >= 3:
            shown = node.name if len(node.name) <= chars else node.name[:chars - 2] + ".."
            out.append(f'<text x="{px + 3:.2f}" y="{y + row_h - 5}">{escape(shown)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def write_svg(text: str, path: str, title: str = "Flame graph", unit: str = "ns") -> None:
    """Write the flame graph of the folded stacks ``text`` to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_svg(text, title=title, unit=unit))
