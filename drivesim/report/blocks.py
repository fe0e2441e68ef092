"""Building blocks of dashboard sections: figures, trusted markup, notes and escaped tables.

Any text that comes from inputs (file names, family names, policy descriptions, error messages)
goes through ``esc`` before it reaches HTML or a plotly label (plotly.js reads a subset of HTML
in labels and decodes entities, so escaped text displays as written and never becomes markup).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go


class Html(str):
    """Markup built by this package from escaped parts; rendered as is."""


def esc(value: object) -> str:
    """Escape any value for HTML text, attributes and plotly labels."""
    return html.escape("" if value is None else str(value), quote=True)


@dataclass
class Section:
    """One dashboard section: a title and blocks (figures, Html, or plain text to escape).

    Without any figure or markup the section shows ``empty_note`` instead (e.g. how to fill it).
    """

    title: str
    anchor: str
    blocks: list[go.Figure | Html | str] = field(default_factory=list)
    empty_note: str = "no data yet"

    @property
    def figures(self) -> list[go.Figure]:
        return [b for b in self.blocks if isinstance(b, go.Figure)]


def note(text: str) -> Html:
    """A short prose paragraph (escaped)."""
    return Html(f'<p class="note">{esc(text)}</p>')


def verdict(text: str) -> Html:
    """A highlighted conclusion in words (escaped)."""
    return Html(f'<p class="verdict">{esc(text)}</p>')


NON_BREAKING_HYPHEN = "\u2011"  # headers wrap between words, never at "off-road"'s hyphen


def table(headers: Sequence[str], rows: Iterable[Sequence[object]], caption: str = "") -> Html:
    """An HTML table with every header and cell escaped; floats shown with 4 significant
    digits; numbers right-aligned on one line, header words never broken."""
    head = "".join(f"<th>{esc(h).replace('-', NON_BREAKING_HYPHEN)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return Html(f'<table class="data">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def _cell(value: object) -> str:
    """A table cell: numbers right-aligned and never wrapped (class ``num``), text escaped."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return f'<td class="num">{esc(fmt(value))}</td>' if number else f"<td>{esc(fmt(value))}</td>"


def fmt(value: object) -> str:
    """Short human form of a cell value."""
    if value is None:
        return ""
    if isinstance(value, float):
        if value != value:
            return "n/a"
        return f"{value:.4g}"
    return str(value)


def layout(fig: go.Figure, title: str, x: str = "", y: str = "", **extra: object) -> go.Figure:
    """Apply the dashboard's common look (title, axis titles, compact margins)."""
    fig.update_layout(
        title={"text": esc(title), "x": 0.01, "font": {"size": 15}},
        template="plotly_white",
        height=extra.pop("height", 360),
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.2},
        **extra,
    )
    if x:
        fig.update_xaxes(title_text=esc(x))
    if y:
        fig.update_yaxes(title_text=esc(y))
    return fig
