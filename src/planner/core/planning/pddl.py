"""LLM+P's symbolic half: a PDDL domain made from the skill library, a problem made from the scene
graph and the goals, and a classical planner (Fast Downward through unified-planning) that finds
the plan.

Nothing here is a second copy of the robot's abilities. Each skill becomes one action: its typed
parameters, its preconditions through the symbolic meaning of each named check of
planner.core.skills (CHECK_MEANINGS), its effects as the library states them, plus what those facts
imply in any home (_fact_rules: the robot is in one place at a time, a thing picked up leaves its
support). A check whose outcome does not depend on what the plan changes (a mass
within the arm's payload) becomes a static predicate whose truth the check itself computes on the
scene graph, so the plan and the skill planner can never disagree about it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import pyparsing as pp

from planner.core.calls import format_call, parse_call
from planner.core.errors import PlannerError
from planner.core.goals import Goal, goal_furniture, goal_objects, indefinite
from planner.core.htn import Condition
from planner.core.scene_graph import Entity, SceneGraph
from planner.core.skills import PRECONDITIONS, SkillLibrary, SkillPlanner, SkillSpec

DOMAIN_NAME = "household"
Engine = Literal["satisficing", "optimal"]  # Fast Downward: the first plan found, or the shortest
# The scene graph's kinds as PDDL types; a skill with a parameter of another type (SAY's text) is
# not for a classical planner and stays out of the domain.
PDDL_TYPES = {"object": "item", "furniture": "furniture", "openable": "openable", "place": "location",
              "room": "room", "person": "person", "arm": "arm"}
PREDICATES = {
    "at": [("p", "location")],                       # the robot is next to it, or in the room
    "on": [("o", "item"), ("f", "furniture")],       # on it or in it (the scene graph's support)
    "inside": [("o", "item"), ("f", "furniture")],   # behind its door or in its drawer
    "is_open": [("f", "furniture")],
    "holding": [("a", "arm"), ("o", "item")],
    "held": [("o", "item")],                          # by either arm
    "hand_empty": [("a", "arm")],
}
SUPPORT = "support"  # the hidden parameter naming what an object stands on or in
PARENT_TYPE = {"room": "location", "furniture": "location", "person": "location", "openable": "furniture",
               "location": "object", "item": "object", "arm": "object"}
TYPE_TREE = "\n".join(f"{' '.join(t for t, p in PARENT_TYPE.items() if p == parent)} - {parent}"
                      for parent in dict.fromkeys(PARENT_TYPE.values()))


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # a PDDL type


@dataclass
class ActionParts:
    """An action being assembled: the hidden parameters the rules add (where the robot comes from,
    what an object is taken off) are not the skill's and are dropped when it becomes a call."""
    params: dict[str, Param]
    hidden: dict[str, Param] = field(default_factory=dict)
    preconditions: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)

    def hide(self, name: str, pddl_type: str) -> str:
        self.hidden.setdefault(name, Param(name, pddl_type))
        return f"?{name}"

    def support_of(self, obj: str) -> str:
        """What the object stands on now, as a hidden parameter the plan binds."""
        support = self.hide(f"{SUPPORT}_{obj}", "furniture")
        self.require(f"(on ?{obj} {support})")
        return support

    def require(self, formula: str) -> None:
        if formula not in self.preconditions:
            self.preconditions.append(formula)

    def effect(self, *formulas: str) -> None:
        self.effects.extend(f for f in formulas if f not in self.effects)


class DomainError(PlannerError):
    """The skill library cannot be expressed as a PDDL domain; says which skill and why."""


# ---- what each check of planner.core.skills means symbolically -------------------------------
def _reachable(parts: ActionParts, thing: str, arm: str = "") -> None:
    # The hands work on a piece of furniture's top, or inside it when it is open (a thing in or
    # on it with it): a fridge too tall for the arms still takes things on its lowest shelf.
    if parts.params[thing].type == "item":
        place = parts.support_of(thing)
        inside = f"(inside ?{thing} {place})"
    else:
        place = f"?{thing}"
        inside = f"(is_open {place})"
    parts.require(f"(at {place})")
    parts.require(f"(or (and {inside} (opening_within_workspace {place})) "
                  f"(and (not {inside}) (within_workspace {place})))")


def _handle_reachable(parts: ActionParts, thing: str) -> None:
    parts.require(f"(at ?{thing})")
    parts.require(f"(opening_within_workspace ?{thing})")


def _accessible(parts: ActionParts, obj: str) -> None:
    support = parts.support_of(obj)
    parts.require(f"(or (not (inside ?{obj} {support})) (is_open {support}))")


CHECK_MEANINGS: dict[str, Callable[..., None]] = {
    "held": lambda parts, obj: parts.require(f"(held ?{obj})"),
    "not_held": lambda parts, obj: parts.require(f"(not (held ?{obj}))"),
    "holding": lambda parts, obj, arm: parts.require(f"(holding ?{arm} ?{obj})"),
    "arm_free": lambda parts, arm: parts.require(f"(hand_empty ?{arm})"),
    "hand_free": lambda parts: parts.require("(exists (?a - arm) (hand_empty ?a))"),
    "elsewhere": lambda parts, place: parts.require(f"(not (at ?{place}))"),
    "closed": lambda parts, thing: parts.require(f"(not (is_open ?{thing}))"),
    "is_open": lambda parts, thing: parts.require(f"(is_open ?{thing})"),
    "reachable": _reachable,
    "handle_reachable": _handle_reachable,
    "accessible": _accessible,
}
# Checks the plan cannot change: a predicate of that name, true where the check passes now.
# Furniture too high or too low for the arms stays so (and what is on or in it with it): its top
# (within_workspace), and its door or drawer and inner shelf (opening_within_workspace); so does a
# thing no place beside its furniture reaches (reachable_from_beside).
STATIC_CHECKS = {"location_known": ["item"], "payload": ["item", "arm"], "person_present": ["person"],
                 "within_workspace": ["furniture"], "opening_within_workspace": ["furniture"],
                 "reachable_from_beside": ["item"]}
# What a parameter a skill fills itself must satisfy for the action to make sense.
CHOOSER_MEANINGS: dict[str, Callable[..., None]] = {
    "free_arm": lambda parts, arm: parts.require(f"(hand_empty ?{arm})"),
    "holding_arm": lambda parts, arm, obj: parts.require(f"(holding ?{arm} ?{obj})"),
}


def _fact_rules(parts: ActionParts, effect: Condition) -> None:
    """A skill effect and what it implies in any home."""
    args = [f"?{a}" for a in effect.params]
    fact = effect.fact
    if fact == "at" and not effect.negated:
        origin = parts.hide("from", "location")
        parts.require(f"(at {origin})")
        parts.require(f"(not (= {origin} {args[0]}))")
        parts.effect(f"(not (at {origin}))", f"(at {args[0]})")
    elif fact == "holding":
        arm, obj = args
        if effect.negated:
            parts.effect(f"(not (holding {arm} {obj}))", f"(not (held {obj}))", f"(hand_empty {arm})")
        else:
            support = parts.support_of(obj[1:])
            parts.effect(f"(holding {arm} {obj})", f"(held {obj})", f"(not (hand_empty {arm}))",
                         f"(not (on {obj} {support}))", f"(not (inside {obj} {support}))")
    elif fact == "on":
        obj, target = args
        # Put into furniture whose door or drawer is open, it is inside.
        parts.effect(f"(on {obj} {target})", f"(when (is_open {target}) (inside {obj} {target}))")
    elif fact == "is_open":
        parts.effect(f"(not (is_open {args[0]}))" if effect.negated else f"(is_open {args[0]})")
    else:
        raise DomainError(f"the fact {effect} has no meaning in PDDL")


def plannable(spec: SkillSpec) -> bool:
    return all(p.type in PDDL_TYPES for p in spec.params)


def _action(name: str, spec: SkillSpec) -> tuple[str, ActionParts]:
    where = f"skills.{name}"
    parts = ActionParts({p.name: Param(p.name, PDDL_TYPES[p.type]) for p in spec.params})
    for chosen, chooser in spec.choose.items():
        chooser_name, chooser_args = parse_call(chooser if "(" in chooser else f"{chooser}()")
        meaning = CHOOSER_MEANINGS.get(chooser_name)
        if meaning is None:
            raise DomainError(f"{where}.choose.{chosen}: the choice {chooser_name!r} has no PDDL meaning")
        parts.params[chosen] = Param(chosen, "arm")
        meaning(parts, chosen, *chooser_args)
    for index, pre in enumerate(spec.preconditions):
        if pre.check in STATIC_CHECKS:
            if len(pre.args) != len(STATIC_CHECKS[pre.check]):
                raise DomainError(f"{where}.preconditions[{index}]: {pre.check} takes "
                                  f"{len(STATIC_CHECKS[pre.check])} argument(s)")
            parts.require(f"({pre.check} {' '.join(f'?{a}' for a in pre.args)})")
        elif pre.check in CHECK_MEANINGS:
            try:
                CHECK_MEANINGS[pre.check](parts, *pre.args)
            except TypeError:
                raise DomainError(f"{where}.preconditions[{index}]: {pre.check} does not take "
                                  f"{len(pre.args)} argument(s)") from None
        else:
            raise DomainError(f"{where}.preconditions[{index}]: the check {pre.check!r} has no PDDL meaning")
    for index, text in enumerate(spec.effects):
        effect = Condition.parse(text)
        try:
            _fact_rules(parts, effect)
        except DomainError as error:
            raise DomainError(f"{where}.effects[{index}]: {error}") from None
        except KeyError as missing:
            raise DomainError(f"{where}.effects[{index}]: {missing} is no parameter of {name}") from None
    for param in (*parts.params.values(), *parts.hidden.values()):
        if param.name in PREDICATES or param.name == "a":
            raise DomainError(f"{where}: the parameter name {param.name!r} is taken by the domain")
    return action_name(name), parts


def avoid_predicate(action: str) -> str:
    return f"avoid_{action}"


def action_name(skill: str) -> str:
    """PDDL is case-insensitive and a type may be called like a skill (PLACE, a place)."""
    return f"do_{skill.lower()}"


def _typed(params) -> str:
    return " ".join(f"?{p.name} - {p.type}" for p in params)


@dataclass
class Domain:
    """The domain text and, per action, how to turn a grounded action back into a skill call."""
    text: str
    skills: dict[str, str]                  # action name -> skill name
    call_params: dict[str, list[str]]       # action name -> its parameters, in order
    skill_params: dict[str, list[str]]      # skill name -> the parameters a call gives
    left_out: list[str]                     # skills a classical planner cannot use


def make_domain(library: SkillLibrary) -> Domain:
    """The PDDL domain of a skill library; DomainError names the skill that cannot be expressed."""
    actions, skills, call_params, skill_params, left_out, avoided = [], {}, {}, {}, [], []
    for skill, spec in library.skills.items():
        if not plannable(spec):
            left_out.append(skill)
            continue
        name, parts = _action(skill, spec)
        own = [parts.params[p.name] for p in spec.params]
        # A call that kept failing (one gripper slipping on one thing) is not planned again.
        parts.require(f"(not ({avoid_predicate(name)} {' '.join(f'?{p.name}' for p in own)}))")
        avoided.append(f"({avoid_predicate(name)} {_typed(own)})")
        ordered = [*parts.params.values(), *parts.hidden.values()]
        precondition = " ".join(parts.preconditions)
        effect = " ".join(parts.effects)
        actions.append(f" (:action {name}\n  :parameters ({_typed(ordered)})\n"
                       f"  :precondition (and {precondition})\n  :effect (and {effect}))")
        skills[name] = skill
        call_params[name] = [p.name for p in ordered]
        skill_params[skill] = [p.name for p in spec.params]
    predicates = [f"({name} {_typed(Param(n, t) for n, t in params)})" for name, params in PREDICATES.items()]
    predicates += [f"({check} {' '.join(f'?x{i} - {t}' for i, t in enumerate(types))})"
                   for check, types in STATIC_CHECKS.items()]
    predicates += avoided
    note = f"; left out (not for a classical planner): {', '.join(left_out)}\n" if left_out else ""
    text = (f"; made from the skill library by planner.core.planning.pddl\n{note}"
            f"(define (domain {DOMAIN_NAME})\n"
            " (:requirements :typing :negative-preconditions :disjunctive-preconditions :equality\n"
            "  :existential-preconditions :conditional-effects)\n"
            f" (:types {TYPE_TREE})\n (:predicates\n  " + "\n  ".join(predicates) + ")\n"
            + "\n".join(actions) + ")\n")
    return Domain(text, skills, call_params, skill_params, left_out)


# ---- the problem: the scene graph now, and the goals ------------------------------------------
_UNSAFE = re.compile(r"[^a-z0-9_-]")


class Names:
    """Scene ids as PDDL names (letters, digits, _ and -, starting with a letter, unlike any word
    of the domain), and back."""

    def __init__(self, reserved: set[str]):
        self.pddl: dict[str, str] = {}
        self.scene: dict[str, str] = {}
        self._reserved = reserved

    def add(self, scene_id: str) -> str:
        if scene_id in self.pddl:
            return self.pddl[scene_id]
        base = _UNSAFE.sub("_", scene_id.lower())
        if not base[:1].isalpha():
            base = f"n{base}"
        name, number = base, 1
        while name in self.scene or name in self._reserved:
            number += 1
            name = f"{base}-{number}"
        self.pddl[scene_id], self.scene[name] = name, scene_id
        return name


@dataclass
class Problem:
    text: str
    names: Names
    types: dict[str, str]  # PDDL name -> type, of every object in the problem


class Unmeetable(Exception):
    """A goal nothing in the map can meet: no object of its label, or no furniture for it."""


def goal_formula(goal: Goal, scene: SceneGraph, names: Names, arms: list[str]) -> str:
    """A goal as PDDL over the map's ids: any object of its label (or the one the user chose), any
    furniture of its target label in its room."""
    def any_of(formulas: list[str]) -> str:
        if not formulas:
            raise Unmeetable(f"nothing in the map can meet the goal: {goal}")
        return formulas[0] if len(formulas) == 1 else f"(or {' '.join(formulas)})"
    objects = [names.pddl[o] for o in goal_objects(goal, scene) if o in names.pddl]
    furniture = [names.pddl[f] for f in goal_furniture(scene, goal) if f in names.pddl]
    in_room = [names.pddl[p] for p in [goal.room, *(f.id for f in scene.furniture(goal.room))]
               if p in names.pddl] if goal.room else []
    if goal.kind in ("object_on", "object_in"):
        fact = "on" if goal.kind == "object_on" else "inside"
        return any_of([f"({fact} {o} {f})" for o in objects for f in furniture])
    if goal.kind == "holding":
        return any_of([f"(held {o})" for o in objects])
    if goal.kind == "bring_to_user":
        held = any_of([f"(held {o})" for o in objects])
        return f"(and {held} {any_of([f'(at {p})' for p in in_room])})" if goal.room else held
    if goal.kind == "robot_in_room":
        return any_of([f"(at {p})" for p in in_room])
    if goal.kind == "is_open":
        return any_of([f"(is_open {f})" for f in furniture])
    if goal.kind == "is_closed":
        return any_of([f"(not (is_open {f}))" for f in furniture])
    # clear: nothing left on it and the hands empty
    any_of(furniture)
    cleared = [f"(not (on {names.pddl[o]} {f}))" for o in goal_objects(goal, scene) if o in names.pddl
               for f in furniture]
    return f"(and {' '.join(cleared + [f'(hand_empty {names.pddl[a]})' for a in arms])})"


def relevant_ids(scene: SceneGraph, goals: list[Goal] | str, place: str) -> set[str]:
    """The part of the map a plan for the goals can need: their objects and what the robot holds,
    what those stand on or in, the furniture and rooms the goals name, where the robot is, and the
    people. The rest of a 300-object home only slows the planner down."""
    held = {o for o in scene.known_robot.held.values() if o}
    if isinstance(goals, str):  # a PDDL goal: the map ids it names
        named = {token for token in re.findall(r"[^\s()]+", goals) if scene.has(token)}
        objects = {i for i in named if scene.entity(i).kind == "object"} | held
        places = named - objects
    else:
        objects = {o for g in goals for o in goal_objects(g, scene)} | held
        places = set()
        for goal in goals:
            places |= set(goal_furniture(scene, goal)) if goal.target else set()
            if goal.room:
                places |= {goal.room, *(f.id for f in scene.furniture(goal.room))}
    places |= {s[1] for o in objects if (s := scene.furniture_support(o))} | {place}
    return objects | places | {p.id for p in scene.people()}


def make_problem(domain: Domain, planner: SkillPlanner, scene: SceneGraph, goals: list[Goal] | str,
                 relevant_only: bool = True, avoid: tuple[str, ...] = (), name: str = "request") -> Problem:
    """The scene graph as the initial state (only the part the goals need, unless told otherwise),
    the goals (or a PDDL goal over the map's ids) as the goal, and the skill calls in `avoid` (that
    kept failing) not to be planned; Unmeetable when a goal has nothing in the map that could meet it."""
    reserved = {*PREDICATES, *STATIC_CHECKS, *domain.skills, *PDDL_TYPES.values(), "object", DOMAIN_NAME}
    names = Names(reserved)
    arms = planner.robot.arm_names
    place = planner.beside(scene) or scene.known_robot.room  # as the domain's at()
    keep = relevant_ids(scene, goals, place) if relevant_only else None

    def kept(entities):
        return [e for e in entities if keep is None or e.id in keep]
    rooms = [r for r in scene.rooms() if keep is None or r in keep]
    furniture, people, objects = kept(scene.furniture()), kept(scene.people()), kept(scene.objects())
    typed: dict[str, list[str]] = {"room": [names.add(r) for r in rooms],
                                   "furniture": [names.add(f.id) for f in furniture if not f.state],
                                   "openable": [names.add(f.id) for f in furniture if f.state],
                                   "person": [names.add(p.id) for p in people],
                                   "item": [names.add(o.id) for o in objects],
                                   "arm": [names.add(a) for a in arms]}
    n = names.pddl
    init = [f"({' '.join([fact[0], *(n[a] for a in fact[1:])])})"
            for fact in state_facts(scene, arms, place, objects, furniture) if all(a in n for a in fact[1:])]
    init += _static_facts(planner, scene, typed, names)
    init += _avoided(domain, avoid, names)
    listed = "\n  ".join(f"{' '.join(ids)} - {kind}" for kind, ids in typed.items() if ids)
    goal = goals if isinstance(goals, str) else " ".join(goal_formula(g, scene, names, arms) for g in goals)
    text = (f"(define (problem {name}) (:domain {DOMAIN_NAME})\n (:objects\n  {listed})\n"
            f" (:init\n  " + "\n  ".join(init) + f")\n (:goal (and {goal})))\n")
    return Problem(text, names, {name: kind for kind, ids in typed.items() for name in ids})


def state_facts(scene: SceneGraph, arms: list[str], place: str, objects: list[Entity], furniture: list[Entity]
                ) -> list[tuple[str, ...]]:
    """The domain's facts that hold in the scene graph, as (predicate, scene id, ...): where the
    robot is (`place`), what its arms hold, where the objects are and which furniture is open."""
    facts: list[tuple[str, ...]] = [("at", place)]
    held = scene.known_robot.held
    facts += [("holding", arm, held[arm]) if held.get(arm) else ("hand_empty", arm) for arm in arms]
    for entity in objects:
        if entity.status == "held":
            facts.append(("held", entity.id))
            continue
        support = scene.furniture_support(entity.id)
        if support and entity.status == "seen":
            facts.append(("on", entity.id, support[1]))
            if support[0] == "in":
                facts.append(("inside", entity.id, support[1]))
    return facts + [("is_open", f.id) for f in furniture if f.state == "open"]


def _avoided(domain: Domain, calls: tuple[str, ...], names: Names) -> list[str]:
    by_skill = {skill: action for action, skill in domain.skills.items()}
    facts = []
    for call in calls:
        skill, args = parse_call(call)
        if skill in by_skill and all(a in names.pddl for a in args):
            facts.append(f"({avoid_predicate(by_skill[skill])} {' '.join(names.pddl[a] for a in args)})")
    return facts


def _static_facts(planner: SkillPlanner, scene: SceneGraph, typed: dict[str, list[str]], names: Names) -> list[str]:
    """Each static check, computed by the check itself for every grounding of its types."""
    subtypes = {"item": ["item"], "person": ["person"], "arm": ["arm"], "furniture": ["furniture", "openable"]}
    facts = []
    for check, types in STATIC_CHECKS.items():
        groundings: list[list[str]] = [[]]
        for pddl_type in types:
            groundings = [[*g, v] for g in groundings for t in subtypes[pddl_type] for v in typed[t]]
        for grounding in groundings:
            if PRECONDITIONS[check](planner, scene, *(names.scene[v] for v in grounding)).ok:
                facts.append(f"({check} {' '.join(grounding)})")
    return facts


def skill_call(domain: Domain, names: Names, action: str, args: list[str]) -> str:
    """A grounded action of the plan as the skill call the skill planner takes."""
    skill = domain.skills[action]
    bound = dict(zip(domain.call_params[action], args))
    return format_call(skill, [names.scene[bound[p]] for p in domain.skill_params[skill]])


# ---- goals written as PDDL --------------------------------------------------------------------
CONNECTIVES = {"and", "or", "not", "imply", "forall", "exists"}


def is_a(pddl_type: str, wanted: str) -> bool:
    while pddl_type != wanted and pddl_type in PARENT_TYPE:
        pddl_type = PARENT_TYPE[pddl_type]
    return pddl_type == wanted


def without_surplus_closing(text: str) -> str:
    """A formula without the ')' at its end that close nothing ("(and (on a b)))"): a small model
    writes one too many and, told so, often writes it again; what it meant is not in doubt."""
    text = text.strip()
    surplus = text.count(")") - text.count("(")
    while surplus > 0 and text.endswith(")"):
        text, surplus = text[:-1].rstrip(), surplus - 1
    return text


def goal_errors(text: str, objects: dict[str, str]) -> list[str]:
    """What is wrong with a goal formula over the domain's predicates and the map's ids (`objects`:
    PDDL name -> type), each error saying where; [] when it can be planned for. Written for a model
    to read and mend: the names it may use are listed where it used another."""
    try:
        parsed = pp.nested_expr().parse_string(text, parse_all=True).as_list()[0]
    except pp.ParseException as error:
        opened, closed = text.count("("), text.count(")")
        # A small model mends a count it is told far more often than "expected end of text".
        what = f"it has {opened} '(' and {closed} ')'" if opened != closed else f"{error.msg} at character {error.loc}"
        return [f"the goal is not one balanced (…) formula: {what}"]
    errors: list[str] = []
    _check_formula(parsed, objects, {}, errors)
    return errors


def _check_formula(node, objects: dict[str, str], bound: dict[str, str], errors: list[str]) -> None:
    if not isinstance(node, list) or not node or not isinstance(node[0], str):
        errors.append(f"{_show(node)}: expected (predicate arg …) or (and|or|not|imply|forall|exists …)")
        return
    head, args = node[0].lower(), node[1:]
    if head in ("and", "or"):
        for part in args:
            _check_formula(part, objects, bound, errors)
    elif head == "not":
        if len(args) != 1:
            errors.append(f"{_show(node)}: not takes one formula")
        else:
            _check_formula(args[0], objects, bound, errors)
    elif head == "imply":
        if len(args) != 2:
            errors.append(f"{_show(node)}: imply takes two formulas")
        for part in args:
            _check_formula(part, objects, bound, errors)
    elif head in ("forall", "exists"):
        variables = _variables(args[0] if args else None)
        if variables is None or len(args) != 2:
            errors.append(f"{_show(node)}: {head} takes ((?var - type) …) and one formula")
            return
        unknown = [t for t in variables.values() if t not in PARENT_TYPE and t != "object"]
        if unknown:
            errors.append(f"{_show(node)}: unknown type {unknown[0]!r}; types: {', '.join(sorted(PARENT_TYPE))}")
            return
        _check_formula(args[1], objects, {**bound, **variables}, errors)
    elif head == "=":
        if len(args) != 2:
            errors.append(f"{_show(node)}: = takes two arguments")
    else:
        _check_atom(node, objects, bound, errors)


def _check_atom(node: list, objects: dict[str, str], bound: dict[str, str], errors: list[str]) -> None:
    name, args = node[0].lower(), node[1:]
    params = PREDICATES.get(name) or [("x", t) for t in STATIC_CHECKS.get(name, [])]
    if not params:
        errors.append(f"{_show(node)}: unknown predicate {name!r}; predicates: "
                      f"{', '.join([*PREDICATES, *STATIC_CHECKS])}")
        return
    if len(args) != len(params):
        errors.append(f"{_show(node)}: {name} takes {len(params)} argument(s) "
                      f"({' '.join(t for _, t in params)}), got {len(args)}")
        return
    for arg, (_, wanted) in zip(args, params):
        if not isinstance(arg, str):
            errors.append(f"{_show(node)}: {_show(arg)} is a formula where an id or ?variable goes")
            continue
        actual = bound.get(arg) if arg.startswith("?") else objects.get(arg)
        if actual is None:
            what = "variable not bound by forall/exists" if arg.startswith("?") else "id not in the map"
            errors.append(f"{_show(node)}: unknown {what}: {arg}")
        elif not is_a(actual, wanted) and not is_a(wanted, actual):
            # A variable of a wider type may still range over the right things (?x - location at furniture).
            errors.append(f"{_show(node)}: {arg} is {indefinite(actual)}, and {name} wants {indefinite(wanted)} there")


def _variables(node) -> dict[str, str] | None:
    """((?a ?b - type ?c - other)) as {?a: type, ?b: type, ?c: other}; None if malformed."""
    if not isinstance(node, list) or not all(isinstance(t, str) for t in node):
        return None
    variables: dict[str, str] = {}
    waiting: list[str] = []
    tokens = iter(node)
    for token in tokens:
        if token == "-":
            pddl_type = next(tokens, None)
            if pddl_type is None or not waiting:
                return None
            variables.update(dict.fromkeys(waiting, pddl_type.lower()))
            waiting = []
        elif token.startswith("?"):
            waiting.append(token)
        else:
            return None
    variables.update(dict.fromkeys(waiting, "object"))
    return variables


def _show(node) -> str:
    if isinstance(node, list):
        return "(" + " ".join(_show(part) for part in node) + ")"
    return str(node)
