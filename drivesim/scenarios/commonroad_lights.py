"""CommonRoad traffic lights (2020a ``<trafficLight>``) -> the engine's fixed-time signal model.

A light's ``<cycle>`` lists ``<cycleElement>``s (``<duration>`` in time steps, ``<color>``
red | redYellow | yellow | green | inactive) and an optional ``<timeOffset>`` (time steps):
at time step t the light shows the element at position (t - timeOffset) mod (sum of
durations) of the cycle, as in commonroad-io. drivesim's plan has one green and the amber
after it: green starts at timeOffset + the durations before the first green element, the
amber is the yellow element right after it (0 if none), and every other colour (red,
redYellow, a second green) counts as red. A light that is not ``<active>`` or has no green
and no red is no signal. Each agent whose route passes a lanelet referencing a light stops
at that lanelet's end (drivesim.scenarios.lanes.Stop).
"""

from __future__ import annotations

from xml.etree.ElementTree import Element

import numpy as np

from drivesim.core.types import SignalPlan
from drivesim.scenarios.signal_timing import Light

COLORS = ("red", "redYellow", "yellow", "green", "inactive")


def parse_lights(root: Element, rd, file_dt: float) -> dict[str, Light | None]:
    """Every ``<trafficLight>`` of a CommonRoad root by id: its Light, or None when it is
    inactive. ``rd``: the commonroad _Reader (one-line errors naming the element)."""
    lights: dict[str, Light | None] = {}
    for elem in root.findall("trafficLight"):
        field = f"trafficLight[id={elem.get('id')}]"
        active = (elem.findtext("active") or "true").strip().lower() != "false"
        cycle: Element = rd.child(elem, "cycle", field)
        durations, colors = [], []
        for k, item in enumerate(cycle.findall("cycleElement")):
            where = f"{field}/cycle/cycleElement[{k}]"
            steps = rd.number(item.findtext("duration"), f"{where}/duration")
            if not np.isfinite(steps) or steps <= 0:
                rd.fail(f"{where}/duration", f"duration {steps:g} must be > 0 time steps")
            color = (item.findtext("color") or "").strip()
            if color not in COLORS:
                rd.fail(f"{where}/color", f"unknown colour {color!r} (known: {', '.join(COLORS)})")
            durations.append(steps * file_dt)
            colors.append(color)
        if not durations:
            rd.fail(f"{field}/cycle", "no <cycleElement>")
        offset_text = cycle.findtext("timeOffset")
        offset = 0.0 if offset_text is None else rd.number(offset_text, f"{field}/cycle/timeOffset") * file_dt
        lights[str(elem.get("id"))] = _light(durations, colors, offset) if active else None
    return lights


def _light(durations: list[float], colors: list[str], offset: float) -> Light | None:
    """The Light of one cycle [s] (None: no green and no red, i.e. never stops anyone)."""
    total = float(sum(durations))
    if "green" not in colors:
        stops = any(c in ("red", "redYellow", "yellow") for c in colors)
        return Light(total, 0.0, 0.0, 0.0) if stops else None
    g = colors.index("green")
    after = (g + 1) % len(colors)
    amber = durations[after] if colors[after] == "yellow" and after != g else 0.0
    start = offset + float(sum(durations[:g]))
    return Light(total, start % total, durations[g], amber)


def signal_plan(stops: list, lights: dict[str, Light | None], rd) -> SignalPlan | None:
    """The SignalPlan (N,) of the agents' lanes.Stop (or None) entries; None when no agent
    meets an active light. A stop whose light id is not in the file is a one-line error."""
    rows: list[tuple[float, Light] | None] = []
    for stop in stops:
        if stop is None:
            rows.append(None)
            continue
        if stop.light not in lights:
            rd.fail(f"lanelet[id={stop.lanelet}]/trafficLightRef", f"refers to no trafficLight {stop.light}")
        light = lights[stop.light]
        rows.append(None if light is None else (stop.s, light))
    if all(r is None for r in rows):
        return None
    none = dict(line_s=np.inf, cycle=1.0, offset=0.0, green=1.0, amber=0.0)
    cols = [none if r is None else dict(line_s=r[0], **r[1].fields()) for r in rows]
    return SignalPlan(**{k: np.array([c[k] for c in cols], np.float32) for k in none})
