"""Small hand-written CommonRoad XML documents for the bad-input tests."""

from __future__ import annotations

LANELET = """
  <lanelet id="1">
    <leftBound><point><x>0</x><y>1.75</y></point><point><x>200</x><y>1.75</y></point></leftBound>
    <rightBound><point><x>0</x><y>-1.75</y></point><point><x>200</x><y>-1.75</y></point></rightBound>
  </lanelet>"""

PROBLEM = """
  <planningProblem id="99">
    <initialState>
      <position><point><x>10</x><y>0</y></point></position>
      <orientation><exact>0</exact></orientation>
      <time><exact>0</exact></time>
      <velocity><exact>10</exact></velocity>
    </initialState>
  </planningProblem>"""


def state(t: int, x: str, tag: str = "state") -> str:
    return (
        f"<{tag}><position><point><x>{x}</x><y>0</y></point></position>"
        f"<orientation><exact>0</exact></orientation><time><exact>{t}</exact></time>"
        f"<velocity><intervalStart>9</intervalStart><intervalEnd>11</intervalEnd></velocity></{tag}>"
    )


def obstacle(oid: int, x0: float = 40.0, x_text: str | None = None, layout: str = "2020a") -> str:
    states = "".join(state(t, x_text if (x_text and t == 2) else f"{x0 + t:.1f}") for t in range(1, 6))
    body = (
        f"<type>car</type><shape><rectangle><length>4.5</length><width>1.8</width></rectangle></shape>"
        f"{state(0, f'{x0:.1f}', 'initialState')}<trajectory>{states}</trajectory>"
    )
    if layout == "2018b":
        return f'<obstacle id="{oid}"><role>dynamic</role>{body}</obstacle>'
    return f'<dynamicObstacle id="{oid}">{body}</dynamicObstacle>'


def document(obstacles: str, version: str = "2020a", dt: str = "0.1", root: str = "commonRoad") -> str:
    return (
        f'<?xml version="1.0"?>\n<{root} commonRoadVersion="{version}" timeStepSize="{dt}" '
        f'benchmarkID="TEST-1">{LANELET}{obstacles}{PROBLEM}</{root}>'
    )


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<commonRoad commonRoadVersion="2020a" timeStepSize="0.1">&lol3;</commonRoad>"""
