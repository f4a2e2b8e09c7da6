"""Plans written from a scene the robot has only a description or a picture of: by one agent given
everything, or by a team of three (Brienza et al., `shared/papers/multi-agent-vlm-pg2s.txt`), each a
conversation of its own with a small, focused context:
- the scene miner lists the things the task needs and how they relate (a small graph, checked);
- the place describer says where each of those things is and what is around it;
- the planner writes the steps from the task, the graph and the descriptions, not the scene.
The scene is a table (the robot's scene graph, or any table of objects) or an image, which needs a
vision-capable model behind an OpenAI-compatible endpoint. Plans are plain-language steps, scored
against reference plans with PG2S (planner.core.plan_score)."""

from __future__ import annotations

import base64
import mimetypes
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from planner.core.asking import CountingPolicy, LLMUsage, ask_validated
from planner.core.calls import parse_call
from planner.core.errors import InputError
from planner.core.files import StrictModel, load_jsonl
from planner.core.plan_score import readable_step
from planner.core.ports import Policy
from planner.core.scene_graph import SceneGraph

Agents = Literal["single", "multi"]
SceneKind = Literal["table", "image"]
Cell = str | int | float | bool
MAX_STEPS = 30
NOT_NAMES = {"kind", "state"}  # scene table columns whose values are not things or places


class SceneTask(StrictModel):
    """One task of a plans file (JSONL): the request, the scene as a table and/or an image, and
    the reference plan it is scored against."""

    id: str = Field(min_length=1)
    task: str = Field(min_length=1)
    scene_table: list[dict[str, Cell]] | None = Field(default=None, description="one row per thing; any columns")
    image: str | None = Field(default=None, description="an image file, relative to the tasks file, or a data: URL")
    reference_steps: list[str] = Field(default_factory=list)
    split: str = Field(default="", description="generated tasks: development or test, by the seed of their home")

    @model_validator(mode="after")
    def _has_a_scene(self) -> SceneTask:
        if not self.scene_table and not self.image:
            raise ValueError("give scene_table or image (or both)")
        if self.scene_table and any("name" not in row for row in self.scene_table):
            raise ValueError("every scene_table row needs a name")
        return self


def load_tasks(path: str | Path) -> list[SceneTask]:
    return load_jsonl(path, SceneTask, unique="id")


class Relation(StrictModel):
    subject: str
    relation: str
    object: str


class SceneMinerReply(StrictModel):
    objects: list[str] = Field(min_length=1)
    relations: list[Relation] = Field(default_factory=list)

    def checked(self, names: set[str]) -> SceneMinerReply:
        """The graph with only what the scene has, by the names it gives (a picture gives none to
        check): a thing the scene lacks (the request's word for it, often) is dropped with its
        relations, as no step can use it, and the graph is refused when nothing is left. A
        relation's end the list left out is listed (the model often relates a thing to its place by
        the place's id without listing the place)."""
        def in_scene(name: str) -> bool:
            return not names or readable_step(name).lower() in names

        objects = [o for o in self.objects if in_scene(o)]
        if not objects:
            raise ValueError(f"{', '.join(self.objects)} not in the scene; use the names the scene gives")
        listed = {o.lower() for o in objects}
        relations = [r for r in self.relations if in_scene(r.subject) and in_scene(r.object)]
        for end in (end for relation in relations for end in (relation.subject, relation.object)):
            if end.lower() not in listed:
                listed.add(end.lower())
                objects.append(end)
        return self.model_copy(update={"objects": objects, "relations": relations})


class Description(StrictModel):
    object: str
    description: str = Field(min_length=1)


class DescriberReply(StrictModel):
    descriptions: list[Description] = Field(min_length=1)


class PlanReply(StrictModel):
    steps: list[str] = Field(min_length=1, max_length=MAX_STEPS)

    @model_validator(mode="after")
    def _no_empty_steps(self) -> PlanReply:
        if any(not step.strip() for step in self.steps):
            raise ValueError("a step is empty")
        return self


SCENE_MINER_SCHEMA = {"type": "object", "properties": {
    "objects": {"type": "array", "items": {"type": "string"}},
    "relations": {"type": "array", "items": {"type": "object", "properties": {
        "subject": {"type": "string"}, "relation": {"type": "string"}, "object": {"type": "string"}},
        "required": ["subject", "relation", "object"]}}}, "required": ["objects", "relations"]}
DESCRIBER_SCHEMA = {"type": "object", "properties": {"descriptions": {"type": "array", "items": {
    "type": "object", "properties": {"object": {"type": "string"}, "description": {"type": "string"}},
    "required": ["object", "description"]}}}, "required": ["descriptions"]}
PLAN_SCHEMA = {"type": "object", "properties": {"steps": {"type": "array", "items": {"type": "string"}}}, "required": ["steps"]}

STEPS_RULES = ("Write the plan as short steps in plain English, one action each, in the order a robot with two arms "
               "would do them (for example: go somewhere, pick something up, open or close something, put "
               "something somewhere). Use only things the scene has.")
SINGLE_PROMPT = """You plan household tasks for a robot.
Task: {task}
The scene:
{scene}
{rules}
Reply with JSON: {{"steps": ["...", "..."]}}"""
SCENE_MINER_PROMPT = """You look at a scene for a household robot and pick out what a task needs.
Task: {task}
The scene:
{scene}
List the things in the scene the task involves (by their names in the scene), with the places they are on
or in, and the relations between them as (subject, relation, object), e.g. (cup, on, shelf).
Reply with JSON: {{"objects": ["..."], "relations": [{{"subject": "...", "relation": "...", "object": "..."}}]}}"""
DESCRIBER_PROMPT = """You describe where things are for a household robot.
Task: {task}
The scene:
{scene}
For each of these things, one sentence on where it is, what is around it and its state (open, closed, ...): {objects}
Reply with JSON: {{"descriptions": [{{"object": "...", "description": "..."}}]}}"""
PLANNER_PROMPT = """You plan household tasks for a robot.
Task: {task}
What the task involves, as (subject, relation, object):
{relations}
Where those things are:
{descriptions}
{rules}
Reply with JSON: {{"steps": ["...", "..."]}}"""


@dataclass
class GeneratedPlan:
    steps: list[str]
    usage: LLMUsage = field(default_factory=LLMUsage)
    seconds: float = 0.0
    error: str = ""  # why there is no plan, when the model's replies stayed invalid
    agents: dict = field(default_factory=dict)  # what the scene miner and the describer said


def table_text(rows: list[dict[str, Cell]]) -> str:
    """A table as lines of `column: value` pairs, the name first."""
    return "\n".join("- " + "; ".join(f"{key}: {value}" for key, value in sorted(row.items(), key=lambda kv: kv[0] != "name")
                                      if value not in ("", None)) for row in rows)


def scene_table(scene: SceneGraph) -> list[dict[str, Cell]]:
    """The robot's scene graph as a table: each piece of furniture and each object with its room,
    what it stands on or is inside, and its state."""
    rows: list[dict[str, Cell]] = []
    for item in scene.furniture():
        row: dict[str, Cell] = {"name": item.label.replace("_", " "), "id": item.id, "kind": "furniture", "room": item.room}
        if item.state:
            row["state"] = item.state
        rows.append(row)
    for thing in scene.objects():
        row = {"name": thing.label.replace("_", " "), "id": thing.id, "kind": "object", "room": thing.room}
        support = scene.furniture_support(thing.id)
        if support:
            row[support[0]] = support[1]
        rows.append(row)
    return rows


# How a person would write the skills of the library as plan steps; a skill not listed here is
# written as its name and arguments.
STEP_WORDS = {"GOTO": "Go to {0}.", "PICK": "Pick up {0}.", "PLACE": "Put {0} {on} {1}.", "OPEN": "Open {0}.",
              "CLOSE": "Close {0}.", "HANDOVER": "Hand {0} to {1}.", "LOOK_AROUND": "Look around {0}.", "SAY": "Say: {0}"}


def call_sentence(call: str, scene: SceneGraph) -> str:
    """A skill call as a plan step in words: "PLACE(mug_1, cabinet_2, left)" -> "Put the mug in the cabinet."."""
    name, args = parse_call(call)

    def words(arg: str) -> str:
        return f"the {scene.entity(arg).label.replace('_', ' ')}" if scene.has(arg) else arg

    things = [words(arg) for arg in args]
    template = STEP_WORDS.get(name)
    if template is None:
        return f"{name.lower().replace('_', ' ')} {', '.join(things)}".strip() + "."
    # Furniture with a door or a drawer is put into, the rest onto.
    inside = name == "PLACE" and len(args) > 1 and scene.has(args[1]) and bool(scene.entity(args[1]).state)
    return template.format(*things, "", "", on="in" if inside else "on")


def image_part(image: str, base_dir: Path) -> dict:
    """An OpenAI chat content part for an image file (sent inline as a data: URL) or a data: URL."""
    if image.startswith("data:"):
        return {"type": "image_url", "image_url": {"url": image}}
    path = Path(image) if Path(image).is_absolute() else base_dir / image
    kind = mimetypes.guess_type(path.name)[0]
    if kind is None or not kind.startswith("image/"):
        raise InputError(f"{path}: not an image file (by its name)")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot be read: {error}") from None
    return {"type": "image_url", "image_url": {"url": f"data:{kind};base64,{base64.b64encode(data).decode()}"}}


def _message(text: str, image: dict | None) -> list[dict]:
    if image is None:
        return [{"role": "user", "content": text}]
    return [{"role": "user", "content": [{"type": "text", "text": text}, image]}]


class ScenePlanner:
    """Writes a plan for a task in a scene, with one agent or three."""

    def __init__(self, policy: Policy, retries: int = 2):
        self.policy = policy
        self.retries = retries

    def plan(self, task: SceneTask, agents: Agents, scene: SceneKind, base_dir: Path = Path(".")) -> GeneratedPlan:
        if scene == "table" and not task.scene_table:
            raise InputError(f"task {task.id}: no scene_table")
        if scene == "image" and not task.image:
            raise InputError(f"task {task.id}: no image")
        image = image_part(task.image, base_dir) if scene == "image" and task.image else None
        text = table_text(task.scene_table) if scene == "table" and task.scene_table else "(in the image)"
        counting = CountingPolicy(self.policy)
        started = time.monotonic()
        result = self._single(task, text, image, counting) if agents == "single" else self._multi(task, text, image, counting)
        result.usage = counting.usage
        result.seconds = time.monotonic() - started
        return result

    def _ask(self, policy: CountingPolicy, prompt: str, image: dict | None, schema: dict, parse):
        return ask_validated(policy.asking(schema), _message(prompt, image), parse, self.retries)

    def _steps(self, policy: CountingPolicy, prompt: str, image: dict | None) -> GeneratedPlan:
        reply = self._ask(policy, prompt, image, PLAN_SCHEMA, PlanReply.model_validate_json)
        if reply is None:
            return GeneratedPlan([], error="the plan stayed invalid after the retries")
        return GeneratedPlan([step.strip() for step in reply.steps])

    def _single(self, task: SceneTask, scene: str, image: dict | None, policy: CountingPolicy) -> GeneratedPlan:
        return self._steps(policy, SINGLE_PROMPT.format(task=task.task, scene=scene, rules=STEPS_RULES), image)

    def _multi(self, task: SceneTask, scene: str, image: dict | None, policy: CountingPolicy) -> GeneratedPlan:
        # Every name the table gives, as words — of things, ids, rooms and what things stand on (a
        # relation may end at a room: "cup in kitchen"); an image gives none to check against.
        names = {readable_step(value).lower() for row in task.scene_table or [] for key, value in row.items()
                 if isinstance(value, str) and key not in NOT_NAMES} if image is None else set()

        def mined(text: str) -> SceneMinerReply:
            return SceneMinerReply.model_validate_json(text).checked(names)

        graph = self._ask(policy, SCENE_MINER_PROMPT.format(task=task.task, scene=scene), image, SCENE_MINER_SCHEMA, mined)
        if graph is None:
            return GeneratedPlan([], error="the scene miner's graph stayed invalid after the retries")
        described = self._ask(policy, DESCRIBER_PROMPT.format(task=task.task, scene=scene, objects=", ".join(graph.objects)),
                              image, DESCRIBER_SCHEMA, DescriberReply.model_validate_json)
        if described is None:
            return GeneratedPlan([], error="the descriptions stayed invalid after the retries")
        relations = "\n".join(f"({r.subject}, {r.relation}, {r.object})" for r in graph.relations) or "(none)"
        descriptions = "\n".join(f"- {d.object}: {d.description}" for d in described.descriptions)
        # The planner sees what the miners found, not the scene: a small context is the point.
        result = self._steps(policy, PLANNER_PROMPT.format(task=task.task, relations=relations, descriptions=descriptions,
                                                           rules=STEPS_RULES), None)
        result.agents = {"objects": graph.objects, "relations": [r.model_dump() for r in graph.relations],
                         "descriptions": [d.model_dump() for d in described.descriptions]}
        return result
