"""Benchmark data nobody can memorise: homes and object-finding queries made from a seed.

`planner bench generate objects --seeds 300-309 --out DIR` writes, for each seed, a Voxeland map
of a home (`maps/home-S.json`, rooms in `maps/home-S.rooms.yaml`), its queries
(`queries/home-S.yaml`) and each query's answer (`truth/home-S.yaml`). The layout is what
`planner bench objects` reads. Homes vary in rooms, furniture, things and their number; the map's
label evidence is uncertain the way a mapper's is (a thing's own label may lose to what it looks
like, "unknown" evidence, instances seen a few times); queries use people's names for things, not
the map's labels, in varied phrasing, and a third or more have no answer in that home. The truth
is exact because the generator knows what each thing really is.

Which seeds are development data and which test data: planner.bench.seeds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from planner.bench.household import CLASSES, EXTRA_LABELS, KIND_BY_LABEL, KINDS, ROOM_KINDS, USES, Kind, RoomKind
from planner.bench.objects import write_bench_files
from planner.bench.seeds import kind_of

DEFAULT_ITEMS = 25         # furniture and things a home has, about
QUERIES_PER_TYPE = 8
NO_ANSWER_SHARE = 0.35     # of each type's queries, at least this share asks for what the home lacks
NEAR_M = 0.5               # "next to": footprints at most this far apart
ROOM_W, ROOM_D = 5.0, 4.5


@dataclass
class Thing:
    kind: Kind
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    room: str
    support: Thing | None = None     # what it stands on or is in
    inside: bool = False
    id: str = ""

    @property
    def top(self) -> float:
        return self.center[2] + self.size[2] / 2

    def area(self) -> float:
        return self.size[0] * self.size[1]

    def gap(self, other: Thing) -> float:
        dx = max(0.0, abs(self.center[0] - other.center[0]) - (self.size[0] + other.size[0]) / 2)
        dy = max(0.0, abs(self.center[1] - other.center[1]) - (self.size[1] + other.size[1]) / 2)
        return math.hypot(dx, dy)


@dataclass
class Home:
    seed: int
    rooms: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)  # name -> x0, y0, x1, y1
    room_kinds: dict[str, RoomKind] = field(default_factory=dict)
    things: list[Thing] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"home-{self.seed}"

    def of_kind(self, label: str) -> list[Thing]:
        return [t for t in self.things if t.kind.label == label]

    def using(self, use: str) -> list[Thing]:
        return [t for t in self.things if use in t.kind.uses]

    def of_class(self, group: str) -> list[Thing]:
        return [t for t in self.things if group in t.kind.classes]


# ---- homes ----------------------------------------------------------------------------------
def _jitter(rng: random.Random, size: tuple[float, float, float]) -> tuple[float, float, float]:
    return tuple(round(s * rng.uniform(0.8, 1.2), 3) for s in size)  # type: ignore[return-value]


def _place_furniture(rng: random.Random, home: Home, room: str, labels: list[str]) -> list[Thing]:
    """Furniture along the walls and in the middle, on a coarse grid so that nothing overlaps."""
    x0, y0, x1, y1 = home.rooms[room]
    slots = [(x0 + 0.6 + i * 1.3, y0 + 0.6 + j * 1.1) for i in range(int((x1 - x0 - 0.6) // 1.3))
             for j in range(int((y1 - y0 - 0.6) // 1.1))]
    rng.shuffle(slots)
    placed = []
    for label, (x, y) in zip(labels, slots):
        size = _jitter(rng, KIND_BY_LABEL[label].size)
        size = (min(size[0], 1.2), min(size[1], 1.0), size[2])  # fits its grid cell
        placed.append(Thing(KIND_BY_LABEL[label], (round(x, 2), round(y, 2), round(size[2] / 2, 3)), size, room))
    return placed


def _put(rng: random.Random, kind: Kind, support: Thing) -> Thing:
    size = _jitter(rng, kind.size)
    size = (min(size[0], support.size[0] * 0.9), min(size[1], support.size[1] * 0.9), size[2])
    dx = rng.uniform(-1, 1) * (support.size[0] - size[0]) / 2
    dy = rng.uniform(-1, 1) * (support.size[1] - size[1]) / 2
    inside = support.kind.container and (not support.kind.surface or rng.random() < 0.5)
    if inside:  # on a shelf within the box
        z = support.center[2] - support.size[2] / 2 + 0.05 + size[2] / 2
        size = (size[0], size[1], min(size[2], support.size[2] * 0.4))
    else:
        z = support.top + size[2] / 2
    center = (round(support.center[0] + dx, 3), round(support.center[1] + dy, 3), round(z, 3))
    return Thing(kind, center, size, support.room, support, inside)


def make_home(seed: int, items: int) -> Home:
    """A home of about `items` furniture and things; more rooms the more items."""
    rng = random.Random(seed)
    home = Home(seed)
    items = max(8, round(items * rng.uniform(0.6, 1.2)))
    room_count = max(1, min(len(ROOM_KINDS) * 3, round(items / rng.uniform(9, 13))))
    kinds = [rng.choice(ROOM_KINDS) for _ in range(room_count)]
    per_row = max(1, math.ceil(math.sqrt(room_count)))
    used_names: dict[str, int] = {}
    for index, room_kind in enumerate(kinds):
        base = rng.choice(room_kind.names).replace(" ", "_").replace("'", "")
        used_names[base] = used_names.get(base, 0) + 1
        name = base if used_names[base] == 1 else f"{base}_{used_names[base]}"
        x0, y0 = (index % per_row) * ROOM_W, (index // per_row) * ROOM_D
        home.rooms[name] = (x0, y0, x0 + ROOM_W, y0 + ROOM_D)
        home.room_kinds[name] = room_kind
    per_room = items / room_count
    for room, room_kind in home.room_kinds.items():
        count = max(2, round(per_room * rng.uniform(0.35, 0.5)))
        optional = list(room_kind.furniture[2:])
        rng.shuffle(optional)
        labels = [*room_kind.furniture[:2], *optional]
        labels = labels[:count]
        # Repeats: a kitchen with four chairs, a study with two desks.
        while len(labels) < count:
            labels.append(rng.choice(room_kind.furniture))
        furniture = _place_furniture(rng, home, room, labels)
        home.things += furniture
        holders = [f for f in furniture if f.kind.surface or f.kind.container]
        things = max(1, round(per_room) - len(furniture))
        for _ in range(things):
            kind = KIND_BY_LABEL[rng.choice(room_kind.objects)]
            if holders and rng.random() < 0.85:
                home.things.append(_put(rng, kind, rng.choice(holders)))
            else:  # on the floor, next to a wall
                x0, y0, x1, y1 = home.rooms[room]
                size = _jitter(rng, kind.size)
                home.things.append(Thing(kind, (round(rng.uniform(x0 + 0.3, x1 - 0.3), 2),
                                                round(rng.uniform(y0 + 0.2, y0 + 0.4), 2),
                                                round(size[2] / 2, 3)), size, room))
    for index, thing in enumerate(home.things, 1):
        thing.id = f"obj{index}"
    return home


def _evidence(rng: random.Random, kind: Kind) -> dict[str, float]:
    """Accumulated label scores as a mapper leaves them: the thing's own label usually first, but
    one in four times a look-alike's evidence is as strong or stronger, and some of it "unknown"."""
    observations_weight = rng.uniform(20, 400)
    own = rng.betavariate(5, 2) if rng.random() > 0.25 else rng.uniform(0.2, 0.5)
    confusions = [c for c in kind.confused_with if c in KIND_BY_LABEL or c in EXTRA_LABELS] or list(EXTRA_LABELS)
    rest = 1 - own
    look_alike = rest * rng.uniform(0.4, 0.9)
    scores = {kind.label: own, rng.choice(confusions): look_alike, "unknown": rest - look_alike}
    if rng.random() < 0.3:
        other = rng.choice([k.label for k in KINDS])
        scores[other] = scores.get(other, 0.0) + rest * rng.uniform(0.05, 0.2)
    return {label: round(score * observations_weight, 1) for label, score in scores.items() if score > 0}


def voxeland(home: Home) -> dict:
    rng = random.Random(home.seed * 7919 + 1)
    instances = {}
    for thing in home.things:
        instances[thing.id] = {"bbox": {"center": list(thing.center), "size": list(thing.size)},
                               "n_observations": rng.randint(3, 120), "results": _evidence(rng, thing.kind)}
    x1 = max(r[2] for r in home.rooms.values())
    y1 = max(r[3] for r in home.rooms.values())
    # Walls and floor come out of a mapper as one large instance of no label.
    instances["structure"] = {"bbox": {"center": [x1 / 2, y1 / 2, 1.3], "size": [x1, y1, 2.6]},
                              "n_observations": 5000, "results": {"unknown": 9000.0, "wall": 800.0}}
    return {"instances": instances}


# ---- queries --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    type: str
    text: str
    answer: tuple[str, ...]
    sentence: bool = False     # a whole sentence ("my feet hurt"), not a phrase to wrap in "where is ...?"


def misspell(rng: random.Random, text: str) -> str:
    """One typo in a longer word, as people type on a phone."""
    words = text.split(" ")
    long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
    if not long:
        return text
    i = rng.choice(long)
    word = words[i]
    j = rng.randrange(1, len(word) - 2)
    words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2:]
    return " ".join(words)


WRAPPERS = ("{q}", "{q}", "{q}", "could you find {q}?", "I'm looking for {q}", "where is {q}?", "{q}, please",
            "show me {q}", "can you point me to {q}?")


def _name(rng: random.Random, kind: Kind) -> str:
    return rng.choice(kind.names)


def _article(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


def _ids(things: list[Thing]) -> tuple[str, ...]:
    return tuple(t.id for t in things)


def _descriptive(home: Home, rng: random.Random) -> list[Candidate]:
    """By name, by room, by what a thing is on or in, by the furniture beside it, by size."""
    out = []
    for kind in KINDS:
        name = _name(rng, kind)
        out.append(Candidate("descriptive", rng.choice(("the {n}", "a {n}", "my {n}")).format(n=name),
                             _ids(home.of_kind(kind.label))))
        for room, room_kind in home.room_kinds.items():
            if kind.label in room_kind.objects or kind.label in room_kind.furniture:
                out.append(Candidate("descriptive", f"the {name} in the {room.replace('_', ' ')}",
                                     _ids([t for t in home.of_kind(kind.label) if t.room == room])))
    placements = {(t.kind.label, t.support.kind.label, t.inside) for t in home.things if t.support is not None}
    for _ in range(len(placements) // 2 + 1):  # and as many that this home may not have
        holder = rng.choice([k for k in KINDS if k.surface or k.container])
        placements.add((rng.choice([k.label for k in KINDS if not k.furniture]), holder.label,
                        holder.container and not holder.surface))
    for label, holder_label, inside in sorted(placements):
        answer = [t for t in home.of_kind(label) if t.support is not None and t.support.kind.label == holder_label
                  and t.inside == inside]
        out.append(Candidate("descriptive", f"the {_name(rng, KIND_BY_LABEL[label])} {'in' if inside else 'on'} "
                                            f"the {_name(rng, KIND_BY_LABEL[holder_label])}", _ids(answer)))
    furniture_kinds = [k.label for k in KINDS if k.furniture]
    for thing in [t for t in home.things if t.kind.furniture]:
        others = {o.kind.label for o in home.things if o.kind.furniture and o is not thing}
        for other_label in sorted(others | {rng.choice(furniture_kinds)}):  # a set's order changes between runs
            answer = [t for t in home.of_kind(thing.kind.label)
                      if any(t.gap(o) <= NEAR_M for o in home.of_kind(other_label) if o is not t)]
            out.append(Candidate("descriptive", f"{_article(_name(rng, thing.kind))} next to the "
                                                f"{_name(rng, KIND_BY_LABEL[other_label])}", _ids(answer)))
    for group, names in CLASSES.items():
        members = home.of_class(group)
        for word, pick in (("biggest", max), ("smallest", min)):
            chosen = [pick(members, key=lambda t: t.size[0] * t.size[1] * t.size[2])] if members else []
            out.append(Candidate("descriptive", f"the {word} {rng.choice(names)}", _ids(chosen)))
    return out


def _affordance(home: Home, rng: random.Random) -> list[Candidate]:
    """What a thing is for, asked for as such or as a need."""
    out = []
    for use, (phrases, needs) in USES.items():
        answer = _ids(home.using(use))
        out.append(Candidate("affordance", rng.choice(phrases), answer))
        out.append(Candidate("affordance", rng.choice(needs), answer, sentence=True))
    return out


def _negation(home: Home, rng: random.Random) -> list[Candidate]:
    """For a use but not one kind, or not two; of a class but not one kind; furniture with nothing on it."""
    out = []
    for use, (phrases, _) in USES.items():
        kinds = sorted({k.label for k in KINDS if use in k.uses})
        for label in sorted({t.kind.label for t in home.using(use)} | {rng.choice(kinds)}):
            answer = [t for t in home.using(use) if t.kind.label != label]
            out.append(Candidate("negation", f"{rng.choice(phrases)} that is not "
                                             f"{_article(_name(rng, KIND_BY_LABEL[label]))}", _ids(answer)))
        if len(kinds) >= 2:
            excluded = rng.sample(kinds, 2)
            answer = [t for t in home.using(use) if t.kind.label not in excluded]
            out.append(Candidate("negation", f"{rng.choice(phrases)}, but no {_name(rng, KIND_BY_LABEL[excluded[0]])}"
                                             f" or {_name(rng, KIND_BY_LABEL[excluded[1]])}", _ids(answer)))
    for group, names in CLASSES.items():
        for label in sorted({k.label for k in KINDS if group in k.classes}):
            answer = [t for t in home.of_class(group) if t.kind.label != label]
            out.append(Candidate("negation", f"any {rng.choice(names)} except "
                                             f"{_article(_name(rng, KIND_BY_LABEL[label]))}", _ids(answer)))
    for label in sorted({t.kind.label for t in home.things if t.kind.surface}):
        kind = KIND_BY_LABEL[label]
        answer = [t for t in home.of_kind(label) if not any(o.support is t and not o.inside for o in home.things)]
        phrase = rng.choice(("{a} with nothing on it", "an empty {n}", "{a} that is not covered in things"))
        out.append(Candidate("negation", phrase.format(a=_article(_name(rng, kind)), n=_name(rng, kind)), _ids(answer)))
    return out


def candidate_queries(home: Home, rng: random.Random) -> list[Candidate]:
    """Every query the templates make over the whole vocabulary, each with its answer in this home
    (empty when the home has nothing that meets it)."""
    return [*_descriptive(home, rng), *_affordance(home, rng), *_negation(home, rng)]


def make_queries(home: Home, per_type: int = QUERIES_PER_TYPE) -> list[dict]:
    """`per_type` queries of each type, at least NO_ANSWER_SHARE of them with no answer in this
    home, the rest with one; none asks for more than 5 things; phrasing varied and sometimes
    misspelt."""
    rng = random.Random(home.seed * 104729 + 3)
    candidates = candidate_queries(home, rng)
    chosen: list[dict] = []
    seen: set[str] = set()
    for query_type in ("descriptive", "affordance", "negation"):
        of_type = [c for c in candidates if c.type == query_type and c.text not in seen]
        empty = [c for c in of_type if not c.answer]
        answered = [c for c in of_type if c.answer and len(c.answer) <= 5]
        rng.shuffle(empty)
        rng.shuffle(answered)
        want_empty = math.ceil(per_type * NO_ANSWER_SHARE)
        picked = empty[:want_empty] + answered[:per_type - min(want_empty, len(empty))]
        for number, candidate in enumerate(picked, 1):
            text = candidate.text if candidate.sentence else rng.choice(WRAPPERS).format(q=candidate.text)
            if rng.random() < 0.15:
                text = misspell(rng, text)
            seen.add(candidate.text)
            chosen.append({"id": f"{query_type[:4]}{number}", "type": query_type, "text": text[0].upper() + text[1:],
                           "answer": list(candidate.answer)})
    return chosen


# ---- files ----------------------------------------------------------------------------------
def write_home(home: Home, out: Path) -> dict:
    """The map, rooms, queries and truth of one home; returns counts for the progress line."""
    queries = make_queries(home)
    header = f"# Generated by planner bench generate objects (seed {home.seed}, {kind_of(home.seed)} data). Do not edit.\n"
    write_bench_files(out, home.name, voxeland(home), home.rooms, queries, header)
    return {"items": len(home.things), "rooms": len(home.rooms), "queries": len(queries),
            "no_answer": sum(not q["answer"] for q in queries)}
