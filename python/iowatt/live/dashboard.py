"""``iowatt live``'s terminal dashboard (textual): the latency heatmap (a replay's time to first
byte or service time at a key), throughput and slow share per workload (or disk, flowop, host),
watts, fans, temperatures, the stimulus and step, and the events as they happen — in 80 × 24, so
it works over ssh.

The heatmap is the report's (:mod:`iowatt.histogram`): one column per second, one cell per
latency band, its colour the band's operations on the same log scale and palette, an empty cell
white. Two bands share a character cell (the upper half block's colour is the slower band).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, Static

from iowatt.histogram import HEAT_EDGES_NS, heat_colour
from iowatt.live.board import Snapshot
from iowatt.live.feed import EndpointGone, Source
from iowatt.live.view import ALL, LATENCY, View
from iowatt.units import format_ns, format_rate

AXIS = 8  # the heatmap's label column
HEAT_ROWS = 8  # 16 bands: four decades


def heatmap(columns: list[list[int]], width: int, rows: int = HEAT_ROWS) -> Text:
    """The last ``width - AXIS`` seconds, the slowest band on top."""
    shown = columns[-max(1, width - AXIS) :]
    used = [i for col in shown for i, n in enumerate(col) if n]
    if not used:
        return Text("no operations measured yet".center(width), style="dim")
    hi = max(used)
    lo = max(min(used), hi - 2 * rows + 1)
    hi = max(hi, lo + 1)
    busiest = max(max(col[lo : hi + 1]) for col in shown)
    text = Text()
    for r in range((hi - lo + 2) // 2):
        upper, lower = hi - 2 * r, hi - 2 * r - 1
        label = "> 100 s" if upper >= len(HEAT_EDGES_NS) else f"≤{format_ns(HEAT_EDGES_NS[upper])}"
        text.append(f"{label:>{AXIS - 1}} ", style="dim")
        for col in shown:
            top = heat_colour(col[upper], busiest)
            bottom = heat_colour(col[lower], busiest) if lower >= lo else None
            if top is None and bottom is None:
                text.append(" ")
            elif top is None:
                text.append("▄", style=f"{bottom}")
            else:
                text.append("▀", style=f"{top} on {bottom}" if bottom else top)
        text.append("\n")
    span = f"◂ {len(shown)} s"
    text.append(f"{'':{AXIS}}{span}{'now':>{max(4, len(shown) - len(span))}}", style="dim")
    return text


def table(view: View) -> Text:
    text = Text(
        f"{view.breakdown:<20} {'ops/s':>10} {'MiB/s':>9} {'>100ms':>7} {'errors':>7}\n",
        style="bold",
    )
    for row in view.rows():
        slow = "-" if row.slow_share is None else f"{100 * row.slow_share:.2f}%"
        mark = "▸" if row.name == view.group else " "
        text.append(
            f"{mark}{row.name[:19]:<19} {format_rate(row.ops_s):>10} "
            f"{row.mib_s:>9,.1f} {slow:>7} {row.errors:>7,}\n"
        )
    return text


def readings(s: Snapshot) -> Text:
    parts = [f"{name} {w:,.1f} W" for name, w in sorted(s.watts.items())]
    parts += [f"{name} {100 * d:.0f}%" for name, d in sorted(s.fan_duty.items())]
    parts += [f"{name} {rpm:,.0f} rpm" for name, rpm in sorted(s.fan_rpm.items())]
    parts += [f"{name} {c:.1f} °C" for name, c in sorted(s.celsius.items())]
    return Text("  ".join(parts) or "no power, fan or temperature readings", style="")


class Dashboard(App[None]):
    TITLE = "iowatt live"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    Screen { layout: vertical; }
    #status { height: 1; background: $boost; }
    #heat { height: 10; background: white; color: #444444; }
    #table { height: 5; }
    #readings { height: 2; }
    #events { height: 1fr; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "pause", "pause"),
        Binding("b", "breakdown", "breakdown"),
        Binding("n", "group(1)", "next"),
        Binding("p", "group(-1)", "previous"),
        Binding("h", "histogram", "histogram"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(self, source: Source, every_s: float = 1.0) -> None:
        super().__init__()
        self.source, self.every_s = source, every_s
        self.view = View()
        self.paused = False
        self.over = False
        self.gone = False

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="heat")
        yield Static(id="table")
        yield Static(id="readings")
        yield Static(id="events")
        yield Footer()

    def on_mount(self) -> None:
        self.advance()
        self.set_interval(self.every_s, self.advance)

    def advance(self) -> None:
        """Reads the next snapshot and redraws (the timer's tick; tests call it directly)."""
        if self.paused or self.over:
            return
        try:
            snapshot = self.source()
        except EndpointGone as e:
            if not self.gone:
                self.gone = True
                self.view.events.append(f"endpoint not answering ({e}); retrying")
            self.draw()
            return
        self.gone = False
        if snapshot is None:
            self.over = True
            self.view.events.append("end of the stored run")
        else:
            self.view.add(snapshot)
        self.draw()

    def draw(self) -> None:
        s = self.view.last
        width = self.size.width or 80
        self.query_one("#status", Static).update(self._status())
        self.query_one("#heat", Static).update(heatmap(self.view.columns(), width))
        self.query_one("#table", Static).update(table(self.view))
        if s is not None:
            self.query_one("#readings", Static).update(readings(s))
        self.query_one("#events", Static).update("\n".join(list(self.view.events)[-4:]))

    def _status(self) -> Text:
        s = self.view.last
        if s is None:
            return Text("waiting for the first scrape")
        # The run id names its kind (20261126-171924-sweep-235a81); 80 columns are few.
        parts = [s.run.get("run_id", "?"), f"{s.elapsed_s:,.0f} s"]
        if s.step is not None:
            parts.append(f"step {s.step[0]}/{s.step[1]}")
        parts += [f"{kind} {v:g}" for kind, v in s.stimulus.items()]
        heat = "heatmap" if self.view.histogram == LATENCY else f"{self.view.histogram} heatmap"
        if self.view.group != ALL:
            heat += f" of {self.view.group}"
        if heat != "heatmap":
            parts.append(heat)
        if self.paused:
            parts.append("PAUSED")
        elif s.ended:
            parts.append("ended")
        return Text(" · ".join(parts))

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.draw()

    def action_breakdown(self) -> None:
        self.view.next_breakdown()
        self.draw()

    def action_group(self, step: int) -> None:
        self.view.next_group(step)
        self.draw()

    def action_histogram(self) -> None:
        self.view.next_histogram()
        self.draw()
