"""The ReAct loop's action space: every action valid now, grounded in the map and the skill
library, narrowed to what the goals are about, and the JSON schema that lets the model pick only
one of them."""

from __future__ import annotations

import itertools

from planner.core.goals import PLACING_KINDS, Goal, goal_furniture, goal_met, goal_objects
from planner.core.perception_actions import ANSWERS
from planner.core.scene_graph import SceneGraph
from planner.core.skills import SkillCall, SkillPlanner

GIVE_UP = "GIVE_UP()"
ASK_USER = "ASK_USER()"
SEARCH_MAP = "search_map()"
PERCEPTION_ACTIONS = tuple(ANSWERS)
ASKED_OBJECTS = 3   # get_object is offered for this many of a goal's candidates, the nearest


def allowed_actions(scene: SceneGraph, known: set[str], withdrawn: set[str], skills: SkillPlanner,
                    goals: list[Goal], explored: set[str]) -> list[str]:
    """Every action valid now: each skill of the library grounded in what the robot has perceived
    (objects, furniture, rooms, arms) whose preconditions hold in the map, then the perception
    calls about rooms and about what the goals name. The robot state is in every prompt, so
    get_robot_state is not offered; few, relevant choices are what a small model handles well."""
    rooms = scene.rooms()
    furniture = [f.id for f in scene.furniture() if f.id in known]
    objects = [o.id for o in scene.objects() if o.id in known]
    goal_labels = sorted({g.object for g in goals if g.object})
    # When the goals name objects, only those are worth handling, and only put where a goal wants
    # them; an object whose goal is met already stays where it is.
    about_objects = [g for g in goals if g.object or g.kind == "clear"]
    wanted = {obj for g in about_objects if not goal_met(g, scene) for obj in goal_objects(g, scene)}
    relevant = [obj for obj in objects if obj in wanted] if about_objects else objects

    def aimed_at(kinds: tuple[str, ...]) -> list[str]:
        """The perceived furniture that goals of these kinds name."""
        named = {f for g in goals if g.kind in kinds for f in goal_furniture(scene, g)}
        return [f for f in furniture if f in named]
    targets = aimed_at(PLACING_KINDS)
    cleared = set(aimed_at(("clear",)))
    if cleared and not targets:  # what is cleared away may go anywhere else
        targets = [f for f in furniture if f not in cleared]
    actions = []
    openable = [f for f in furniture if scene.entity(f).state]
    # Where the goals' objects are, where they go and what must open or close: while every goal
    # object is where the map says, driving anywhere else, or into rooms not seen yet, is wandering.
    switched = [f for f in aimed_at(("is_open", "is_closed")) if f in openable]
    receiving = [f for f in aimed_at(("object_in",)) if f in openable]
    # Put on a closed one, a thing would end on top of it, not inside.
    on_top = set(aimed_at(("object_on",)))
    shut = {f for f in receiving if scene.entity(f).state == "closed" and f not in on_top}
    supports = {s[1] for obj in relevant if (s := scene.support(obj))}
    enclosing = {s[1] for obj in relevant if (s := scene.support(obj)) and s[0] == "in"}
    lost = any(scene.entity(obj).status == "missing" for obj in relevant)
    worth_going = [f for f in furniture if f in supports or f in targets or f in cleared or f in switched]
    held = any(scene.entity(obj).status == "held" for obj in relevant)
    searching = lost or not (worth_going or held)
    # Opening what holds no goal object and receives none is a detour (and what is put into an
    # open nightstand ends inside it, not on it).
    to_open = [f for f in openable if searching or f in switched or f in receiving or f in supports]
    opening_helps = {f for f in [*receiving, *enclosing] if scene.entity(f).state == "closed"}
    goal_rooms = {g.room for g in goals if g.kind in ("robot_in_room", "bring_to_user")}
    worth_entering = [r for r in rooms if r in goal_rooms or (searching and r not in explored)]
    candidates = {"object": relevant, "furniture": targets or furniture,
                  "place": [*(furniture if searching else worth_going), *worth_entering],
                  "openable": to_open, "arm": scene.robot.arms if scene.robot else [],
                  # Looking around helps where a goal object was not seen where the map had it;
                  # handing over, when something is to be brought to someone.
                  "room": [scene.robot.room] if lost and scene.robot and scene.robot.room else [],
                  "person": [p.id for p in scene.people()] if "bring_to_user" in {g.kind for g in goals} else [],
                  "text": []}
    # Opening takes a free hand: while something must still be opened, the last one is not filled.
    free_arms = [arm for arm in candidates["arm"] if not scene.known_robot.held.get(arm)]
    keep_free = free_arms if opening_helps and len(free_arms) == 1 else []
    moves, handling = [], []
    for name, spec in skills.library.skills.items():
        moving = any(p.type == "place" for p in spec.params)
        fills_arm = any(pre.check == "arm_free" for pre in spec.preconditions)
        for args in itertools.product(*(candidates[p.type] for p in spec.params)):
            call = SkillCall(name, tuple(args))
            put_on = [a for p, a in zip(spec.params, args) if p.type == "furniture"]
            arms_taken = [a for p, a in zip(spec.params, args) if fills_arm and p.type == "arm"]
            if str(call) in withdrawn or set(put_on) & shut or set(arms_taken) & set(keep_free) \
                    or not skills.check_preconditions(call, scene).ok:
                continue
            actions.append(str(call))
            if moving:
                moves.append(str(call))
            elif about_objects and set(args) & set(relevant) and all(f in targets for f in put_on):
                handling.append(str(call))
            elif set(args) & opening_helps:  # while it is closed, the valid call on it opens it
                handling.append(str(call))
    # With every skill ruled out while goals remain (both hands full at a closed fridge), the
    # narrowing has gone too far: every skill valid here is offered.
    if not actions and goals:
        return allowed_actions(scene, known, withdrawn, skills, [], explored)
    # A goal object can be taken, or put where a goal wants it, here and now: driving off first helps nothing.
    if handling:
        actions = [a for a in actions if a not in moves]
    actions += ["get_rooms()", *(f"get_objects_in_room({room})" for room in rooms)]
    actions += [f"find_objects({label})" for label in goal_labels]
    if searching and objects:  # a goal object is lost or nowhere to be seen: the map may hold another that fits
        actions.append(SEARCH_MAP)
    if about_objects:  # the nearest few: asking about each of fifty cups helps nobody
        actions += [f"get_object({obj})" for obj in scene.nearest_to_robot(relevant)[:ASKED_OBJECTS]]
    actions += [ASK_USER, GIVE_UP]
    return [a for a in actions if a not in withdrawn]


def action_schema(actions: list[str]) -> dict:
    """Thought first, then one of the valid actions (ReAct)."""
    properties = {"thought": {"type": "string", "maxLength": 160}, "action": {"enum": actions}}
    if ASK_USER in actions:
        properties["question"] = {"type": "string", "maxLength": 160}
    if SEARCH_MAP in actions:
        properties["query"] = {"type": "string", "maxLength": 120}
    return {"type": "object", "properties": properties, "required": ["thought", "action"]}

