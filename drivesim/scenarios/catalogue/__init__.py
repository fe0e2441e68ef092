"""Critical-scenario catalogue: parametrized logical scenarios with scripted adversaries.

Each family is a function of named parameters returning a ScenarioRecord: the ego (slot 0,
``ego_index`` 0, driven by the campaign's policy) in lane 0 of a straight two-lane road along
+x, plus adversaries that replay a log built analytically at the simulation dt (0.1 s) over
``steps + 1`` entries (``LogTrajectory.replay`` True). The engine is unchanged: leaders and
collisions of replayed agents go through the same exact search as everything else.

Run one as a source: ``catalogue:FAMILY?NAME=START:STOP:COUNT,NAME=VALUE`` (grid syntax in
:mod:`drivesim.scenarios.catalogue.params`; unnamed parameters keep their defaults), or
sample it: ``catalogue:FAMILY?NAME=LO:HI,...&samples=N`` (N uniform points drawn from the
campaign seed and the position, :mod:`drivesim.scenarios.catalogue.sampling`). A grid is
refined near its failure boundary by :mod:`drivesim.scenarios.catalogue.refine` (rounds of
explicit points, ``catalogue:FAMILY?POINT;...&round=R&first=F``).

Families, parameters ``name [unit] range (default)``:

lead_brake -- a lead vehicle in the ego lane brakes to a standstill (NHTSA pre-crash typology
"lead vehicle decelerating"; defaults from Euro NCAP AEB C2C CCRb: both at 50 km/h, 12 m
gap, 6 m/s^2 [the protocol's other points: 40 m gap, 2 m/s^2]).
    gap [m] 2..150 (12): initial bumper gap; speed [m/s] 1..40 (13.89): initial speed of
    both; decel [m/s^2] 0.5..10 (6): lead deceleration; t_brake [s] 0..10 (1): braking start.

cut_in -- a vehicle in the left lane moves into the ego lane ahead (NHTSA "changing lanes /
same direction"; UN R157 ALKS cut-in parameters: gap, relative speed, lateral duration).
    gap [m] 0.5..100 (10): bumper gap ego -> adversary when the cut-in completes, with the ego
    at constant speed; dv [m/s] -30..15 (-5): adversary minus ego speed, constant, and
    speed + dv >= 0; lateral [s] 0.5..6 (2): duration of the lateral move, which starts at 1 s
    (quintic profile); speed [m/s] 1..40 (20): ego initial speed.

cut_out -- the ego's leader changes to the left lane and reveals a stopped car (UN R157 ALKS
cut-out; NHTSA "lead vehicle stopped").
    gap [m] 8..200 (30): bumper gap ego -> stopped car when the leader's centre crosses the
    lane edge (3 s), ego at constant speed; speed [m/s] 1..40 (20): ego and leader speed;
    lateral [s] 0.5..4 (2): the leader's lane-change duration. The leader drives
    min(1 s * speed, gap - 6.5 m) ahead of the ego, so it clears the stopped car by 2 m.

crossing_pedestrian -- a 0.5 m x 0.5 m pedestrian (a PEDESTRIAN agent) waits on the right kerb (0.5 m outside
the ego lane), then crosses both lanes (Euro NCAP AEB VRU CPNA, nearside adult; 5 km/h).
    tta [s] -4..10 (0): the ego's (constant-speed) arrival at the crossing point minus the
    pedestrian's arrival there (the ego lane's centre line); 0 is the protocol's 50% impact
    timing, > 0 the pedestrian is ahead of the ego; ped_speed [m/s] 0.5..3 (1.39);
    speed [m/s] 1..30 (11.11): ego speed (40 km/h).

occluded_pedestrian -- a pedestrian steps out in front of a car parked 0.5 m right of the ego
lane, hidden behind it until then (Euro NCAP AEB VRU CPNCO, nearside child obstructed; 5 km/h).
    tta [s] -2..8 (1.5): the ego's (constant-speed) arrival at the crossing point minus the time
    the pedestrian's centre passes the parked car's road-side face (it starts walking at 0 s,
    or later so that the ego arrives at 0.5 s or later); the constant ego hits it iff
    1.1 / ped_speed - 4.75 / speed < tta < 3.4 / ped_speed + 0.25 / speed; ped_speed [m/s]
    0.5..3 (1.39); speed [m/s] 1..30 (11.11); ped_gap [m] 0.5..10 (1): the parked car's front
    bumper to the pedestrian's centre. The car hides the pedestrian from the ego's observation
    under SimConfig.occlusion (drivesim.core.occlusion).

cyclist_ahead -- a cyclist (1.8 m x 0.6 m, a CYCLIST agent) rides ahead in the ego lane at
constant speed (Euro NCAP AEB VRU CBLA, bicyclist longitudinal adult; 15 km/h).
    gap [m] 2..150 (20): initial bumper gap ego -> cyclist; cyc_speed [m/s] 0..12 (4.17);
    lat_offset [m] -1.5..1.5 (0): the cyclist's centre right of the ego lane centre; the
    constant-speed ego hits it iff |lat_offset| < (1.8 + 0.6) / 2 = 1.2 m and it closes the gap in
    time; speed [m/s] 1..30 (13.89): ego speed.

red_light_runner -- at an intersection, a car from the right runs its red light across the
ego's path (NHTSA pre-crash typology "running red light" / "straight crossing paths"; the
crossing road has two 3.5 m lanes, drivable for every agent).
    tta [s] -6..10 (0): the time the ego's centre reaches the runner's path minus the time
    the runner's centre reaches the ego lane's centre line, both at constant speed (the
    runner arrives at 3 s, or later so that the ego arrives at 0.5 s or later); the boxes
    meet iff |tta| < (L/2 + W/2) / speed + (L/2 + W/2) / adv_speed (cars L 4.5 m, W 1.8 m);
    adv_speed [m/s] 3..25 (13.89): the runner's constant speed; speed [m/s] 1..30 (13.89).
    A two-phase fixed-time signal (drivesim.scenarios.signal_timing: 90 s cycle, ITE amber,
    1.5 s all-red) is green for the ego (since 2 s before the start, about 38 s) and red for
    the runner, which is replayed and so runs it.

amber_light -- the ego's light turns amber at 2 s as it approaches a signalled intersection
(ITE dilemma zone). dist [m] 0..100 (30): the ego's front bumper to its stop line at the
    amber onset, at constant speed; speed [m/s] 1..30 (13.89); amber [s] 3..6 (3.28, the ITE
    yellow at 50 km/h): then red. A constant-speed ego runs the red iff dist / speed > amber
    (to within one step); the IDM ego stops iff v^2 / (2 b) <= its gap to the line.

unprotected_left_turn -- the ego turns left (a quarter circle of 12 m radius) across the lane
of an oncoming car that goes straight (NHTSA "left turn across path / opposite direction";
Euro NCAP CCFtap); the ego yields at the turn's start (its ``stop_s``, a conflict zone around
the conflict point), so an IDM ego waits for a gap (:mod:`drivesim.scenarios.catalogue.left_turn`).
    gap [s] -6..8 (0): the oncoming car's arrival at the conflict point minus the ego's (centres,
    constant speeds); adv_speed [m/s] 3..25 (13.89); speed [m/s] 3..8 (6): the ego's speed
    through the turn (lateral acceleration speed^2 / 12 m). Give episodes of 10 s or more.

Times are from the start of the episode: use episodes of 8 s (80 steps) or more so that each
event and its consequence fit. Bad parameters raise CatalogueError (a ValueError) of one line
naming the family and the parameter.
"""

from __future__ import annotations

from drivesim.scenarios.catalogue.families import FAMILIES, Family, family
from drivesim.scenarios.catalogue.params import CatalogueError, Grid, Param, parse_grid
from drivesim.scenarios.catalogue.refine import Points, next_points, point_key
from drivesim.scenarios.catalogue.sampling import Sampling, parse_points
from drivesim.scenarios.catalogue.source import CatalogueSource, make_record, param_sql, point_name

__all__ = [
    "FAMILIES",
    "CatalogueError",
    "CatalogueSource",
    "Family",
    "Grid",
    "Param",
    "Points",
    "Sampling",
    "family",
    "make_record",
    "next_points",
    "param_sql",
    "parse_grid",
    "parse_points",
    "point_key",
    "point_name",
]
