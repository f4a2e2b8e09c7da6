"""The second source of object-finding data, built apart from planner.bench.generate: larger homes
(100–300 items) laid out by splitting a floor plan, labelled as an indoor scan's annotation and a
mapper leave them (one category under several spellings, generic labels, several labels per
instance with their probabilities), and queries in other styles (elliptic, polite, spoken, needs
said indirectly, several clauses, typos of another kind). Its vocabulary is its own
(planner.bench.scan_vocabulary); only the file layout is shared with the first source, so that
`planner bench objects` reads both.

`planner bench generate objects --source scan --seeds 0-9 --out DIR` writes maps/scan-S.json (and
.rooms.yaml), queries/scan-S.yaml and truth/scan-S.yaml for each seed."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from planner.bench.objects import write_bench_files
from planner.bench.scan_vocabulary import BY_NAME, CATEGORIES, GROUPS, NEEDS, ROOM_TYPES, Category
from planner.bench.seeds import kind_of

ITEMS = (100, 300)            # items a home has, at random between
ROOM_AREA_M2 = (14.0, 24.0)   # floor area a room gets, at random between
QUERIES_PER_TYPE = 8
EMPTY_PER_TYPE = 3            # of each type's queries, this many ask for what the home lacks
MAX_ANSWERS = 6               # a query with an answer names at most this many items
# Typical size order of room types, largest first: larger rooms of a plan go to the first.
BY_SIZE = ("living room", "kitchen", "bedroom", "dining room", "office", "laundry room", "bathroom", "hallway")
ALWAYS = ("living room", "kitchen", "bedroom", "bathroom")


@dataclass
class Item:
    category: Category
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    room: str
    holder: Item | None = None
    inside: bool = False
    id: str = ""

    def footprint(self) -> tuple[float, float, float, float]:
        return (self.center[0] - self.size[0] / 2, self.center[1] - self.size[1] / 2,
                self.center[0] + self.size[0] / 2, self.center[1] + self.size[1] / 2)


@dataclass
class ScanHome:
    seed: int
    rooms: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    room_types: dict[str, str] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"scan-{self.seed}"

    def named(self, category: str) -> list[Item]:
        """What a person asking for `category` by its name would accept: its items, and those
        annotated with its name though they are something more specific (an office chair is a chair)."""
        return [i for i in self.items if i.category.name == category or category in i.category.raw]


# ---- the home ------------------------------------------------------------------------------
def _floor_plan(rng: random.Random, rooms: int) -> list[tuple[float, float, float, float]]:
    """`rooms` rectangles tiling one outline, the largest split across its longer side each time."""
    area = sum(rng.uniform(*ROOM_AREA_M2) for _ in range(rooms))
    aspect = rng.uniform(1.0, 1.8)
    width = math.sqrt(area * aspect)
    plan = [(0.0, 0.0, round(width, 2), round(area / width, 2))]
    while len(plan) < rooms:
        plan.sort(key=lambda r: (r[2] - r[0]) * (r[3] - r[1]))
        x0, y0, x1, y1 = plan.pop()
        cut = rng.uniform(0.35, 0.65)
        if x1 - x0 >= y1 - y0:
            x = round(x0 + (x1 - x0) * cut, 2)
            plan += [(x0, y0, x, y1), (x, y0, x1, y1)]
        else:
            y = round(y0 + (y1 - y0) * cut, 2)
            plan += [(x0, y0, x1, y), (x0, y, x1, y1)]
    return sorted(plan, key=lambda r: -(r[2] - r[0]) * (r[3] - r[1]))


def _sized(rng: random.Random, category: Category) -> tuple[float, float, float]:
    w, d, h = (round(s * rng.uniform(0.75, 1.25), 3) for s in category.size)
    return (d, w, h) if rng.random() < 0.5 else (w, d, h)   # turned a quarter or not


def _overlaps(box: tuple[float, float, float, float], taken: list[tuple[float, float, float, float]]) -> bool:
    return any(box[0] < o[2] + 0.1 and o[0] < box[2] + 0.1 and box[1] < o[3] + 0.1 and o[1] < box[3] + 0.1
               for o in taken)


def _stand(rng: random.Random, category: Category, room: str, bounds, taken: list) -> Item | None:
    """On the floor of the room, clear of what stands there already; None when it does not fit."""
    x0, y0, x1, y1 = bounds
    size = _sized(rng, category)
    for _ in range(40):
        x = rng.uniform(x0 + 0.2 + size[0] / 2, x1 - 0.2 - size[0] / 2) if x1 - x0 > size[0] + 0.4 else None
        y = rng.uniform(y0 + 0.2 + size[1] / 2, y1 - 0.2 - size[1] / 2) if y1 - y0 > size[1] + 0.4 else None
        if x is None or y is None:
            return None
        item = Item(category, (round(x, 3), round(y, 3), round(size[2] / 2, 3)), size, room)
        if not _overlaps(item.footprint(), taken):
            taken.append(item.footprint())
            return item
    return None


def _put(rng: random.Random, category: Category, holder: Item) -> Item:
    size = _sized(rng, category)
    size = (min(size[0], holder.size[0] * 0.8), min(size[1], holder.size[1] * 0.8), size[2])
    inside = holder.category.holds == "in"
    x = holder.center[0] + rng.uniform(-1, 1) * (holder.size[0] - size[0]) / 2
    y = holder.center[1] + rng.uniform(-1, 1) * (holder.size[1] - size[1]) / 2
    if inside:
        size = (size[0], size[1], min(size[2], holder.size[2] * 0.5))
        z = holder.center[2] - holder.size[2] / 2 + 0.04 + size[2] / 2
    else:
        z = holder.center[2] + holder.size[2] / 2 + size[2] / 2
    return Item(category, (round(x, 3), round(y, 3), round(z, 3)), size, holder.room, holder, inside)


def make_scan_home(seed: int, items: int | None = None) -> ScanHome:
    rng = random.Random(f"scan-{seed}")
    home = ScanHome(seed)
    target = items or rng.randint(*ITEMS)
    room_count = max(len(ALWAYS), min(16, round(target / rng.uniform(14, 20))))
    types = [*ALWAYS, *(rng.choice(list(ROOM_TYPES)) for _ in range(room_count - len(ALWAYS)))]
    types.sort(key=BY_SIZE.index)
    counts: dict[str, int] = {}
    for room_type, bounds in zip(types, _floor_plan(rng, room_count)):
        base = rng.choice(ROOM_TYPES[room_type][0])
        counts[base] = counts.get(base, 0) + 1
        name = base if counts[base] == 1 else f"{base} {counts[base]}"
        home.rooms[name], home.room_types[name] = bounds, room_type
    per_room = target / room_count
    for room, room_type in home.room_types.items():
        _, furniture, things = ROOM_TYPES[room_type]
        taken: list = []
        wanted = [furniture[0], *rng.sample(furniture[1:], min(len(furniture) - 1, round(per_room * 0.3)))]
        wanted += [rng.choice(("chair", "stool")) for _ in range(rng.randint(0, 3)) if "chair" in furniture]
        placed = [item for name in wanted if (item := _stand(rng, BY_NAME[name], room, home.rooms[room], taken))]
        home.items += placed
        holders = [item for item in placed if item.category.holds]
        for _ in range(max(2, round(per_room) - len(placed))):
            category = BY_NAME[rng.choice(things)]
            if holders and rng.random() < 0.85:
                home.items.append(_put(rng, category, rng.choice(holders)))
            elif item := _stand(rng, category, room, home.rooms[room], taken):
                home.items.append(item)
    for number, item in enumerate(home.items, 1):
        item.id = f"inst{number:03d}"
    return home


def _labels(rng: random.Random, item: Item) -> dict[str, float]:
    """The label scores a mapper accumulated over the instance's views: mostly one of its
    category's spellings, some for the coarse label, now and then a look-alike or "unknown"
    winning (one instance in five)."""
    category = item.category
    views = rng.uniform(15, 300)
    raw = rng.choices(category.raw, weights=[4, *([1] * (len(category.raw) - 1))])[0]
    look_alikes = [c for c in CATEGORIES if c is not category and c.furniture == category.furniture
                   and ((c.generic == category.generic != "object") or set(c.groups) & set(category.groups))]
    scores = {raw: rng.uniform(0.45, 0.9), category.generic: rng.uniform(0.02, 0.25)}
    if look_alikes and rng.random() < 0.5:
        other = rng.choice(look_alikes).raw[0]
        scores[other] = scores.get(other, 0.0) + rng.uniform(0.05, 0.35)
    if rng.random() < 0.35:
        scores["unknown"] = rng.uniform(0.05, 0.3)
    if rng.random() < 0.2:   # the mapper got it wrong: something else has the most evidence
        wrong = max(scores, key=lambda label: 0 if label == raw else scores[label])
        scores[wrong] = scores[raw] * rng.uniform(1.05, 1.5)
    return {label: round(score * views, 1) for label, score in scores.items()}


def voxeland(home: ScanHome) -> dict:
    rng = random.Random(f"scan-labels-{home.seed}")
    instances = {item.id: {"bbox": {"center": list(item.center), "size": list(item.size)},
                           "n_observations": rng.randint(2, 90), "results": _labels(rng, item)}
                 for item in home.items}
    x1 = max(r[2] for r in home.rooms.values())
    y1 = max(r[3] for r in home.rooms.values())
    instances["walls_and_floor"] = {"bbox": {"center": [x1 / 2, y1 / 2, 1.25], "size": [x1, y1, 2.5]},
                                    "n_observations": 4000, "results": {"wall": 5000.0, "floor": 3000.0}}
    return {"instances": instances}


# ---- queries -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Asked:
    type: str
    text: str
    answer: tuple[str, ...]


def _ids(items) -> tuple[str, ...]:
    return tuple(item.id for item in items)


def _a(phrase: str) -> str:
    return ("an " if phrase[0] in "aeiou" else "a ") + phrase


NAME_STYLES = ("{n}?", "the {n}", "would you mind showing me the {n}", "um, where'd the {n} go", "need the {n}",
               "any idea where {a} is", "{a}, please")
ROOM_STYLES = ("the {n} in the {r}", "{n} in the {r}?", "which {n} is in the {r}", "the {r} {n}")
HOLDER_STYLES = ("the {n} {on} the {h}", "{a} sitting {on} the {h}", "the {n} that's {on} the {h}")
CLAUSE_STYLES = ("the {n}, the one {on} the {h} over in the {r}", "in the {r} there's {a} {on} the {h}, that one")


def _descriptive(home: ScanHome, rng: random.Random) -> list[Asked]:
    asked = []
    present = sorted({item.category.name for item in home.items})
    absent = [c.name for c in CATEGORIES if c.name not in present]
    for name in [*present, *rng.sample(absent, min(len(absent), 6))]:
        said = rng.choice(BY_NAME[name].said)
        asked.append(Asked("descriptive", rng.choice(NAME_STYLES).format(n=said, a=_a(said)), _ids(home.named(name))))
        room = rng.choice(list(home.rooms))
        asked.append(Asked("descriptive", rng.choice(ROOM_STYLES).format(n=said, r=room),
                           _ids(i for i in home.named(name) if i.room == room)))
    small = [item for item in home.items if not item.category.furniture]
    holders = [item for item in home.items if item.category.furniture and item.category.holds]
    for item in rng.sample(small, min(len(small), 30)):
        holder = item.holder if item.holder is not None else rng.choice(holders or [item])
        if holder is item:
            continue
        on = "in" if holder.category.holds == "in" else "on"
        said, holder_said = rng.choice(item.category.said), rng.choice(holder.category.said)
        answer = [i for i in home.named(item.category.name) if i.holder is not None
                  and i.holder.category.name == holder.category.name]
        asked.append(Asked("descriptive", rng.choice(HOLDER_STYLES).format(n=said, a=_a(said), on=on, h=holder_said),
                           _ids(answer)))
        answer = [i for i in answer if i.room == holder.room]
        asked.append(Asked("descriptive", rng.choice(CLAUSE_STYLES).format(n=said, a=_a(said), on=on, h=holder_said,
                                                                          r=holder.room), _ids(answer)))
    for group, words in GROUPS.items():
        members = [i for i in home.items if group in i.category.groups]
        biggest = [max(members, key=lambda i: i.size[0] * i.size[1] * i.size[2])] if members else []
        asked.append(Asked("descriptive", f"the biggest {rng.choice(words)} in the place", _ids(biggest)))
    return asked


def _affordance(home: ScanHome, rng: random.Random) -> list[Asked]:
    asked = []
    for categories, phrasings in NEEDS.values():
        answer = [i for i in home.items if i.category.name in categories]
        for phrasing in phrasings:
            text = phrasing if rng.random() < 0.7 else f"sorry to bother you, {phrasing}"
            asked.append(Asked("affordance", text, _ids(answer)))
    return asked


def _negation(home: ScanHome, rng: random.Random) -> list[Asked]:
    asked = []
    for group, words in GROUPS.items():
        kinds = sorted({c.name for c in CATEGORIES if group in c.groups})
        for name in rng.sample(kinds, min(len(kinds), 3)):
            said = rng.choice(BY_NAME[name].said)
            answer = [i for i in home.items if group in i.category.groups and i.category.name != name]
            style = rng.choice(("any {g} other than the {n}", "{g}, just not {a}", "a {g}, but not the {n}, thanks"))
            asked.append(Asked("negation", style.format(g=rng.choice(words), n=said, a=_a(said)), _ids(answer)))
    for categories, phrasings in NEEDS.values():
        if len(categories) >= 2:
            left_out = rng.choice(categories)
            said = rng.choice(BY_NAME[left_out].said)
            answer = [i for i in home.items if i.category.name in categories and i.category.name != left_out]
            asked.append(Asked("negation", f"{rng.choice(phrasings)} (not the {said} though)", _ids(answer)))
    for name in sorted({i.category.name for i in home.items if i.category.holds == "on"}):
        bare = [i for i in home.items if i.category.name == name and not any(o.holder is i for o in home.items)]
        said = rng.choice(BY_NAME[name].said)
        style = rng.choice(("{a} with nothing on it", "the {n} with nothing on top", "a bare {n}"))
        asked.append(Asked("negation", style.format(a=_a(said), n=said), _ids(bare)))
    return asked


def typo(rng: random.Random, text: str) -> str:
    """A letter dropped or doubled in a longer word, as a hurried typist leaves it."""
    words = text.split(" ")
    long = [i for i, word in enumerate(words) if len(word) >= 5 and word.isalpha()]
    if not long:
        return text
    index = rng.choice(long)
    word = words[index]
    at = rng.randrange(1, len(word) - 1)
    words[index] = word[:at] + word[at + 1:] if rng.random() < 0.5 else word[:at] + word[at] + word[at:]
    return " ".join(words)


def make_queries(home: ScanHome) -> list[dict]:
    """QUERIES_PER_TYPE of each type, EMPTY_PER_TYPE of them with no answer in this home."""
    rng = random.Random(f"scan-queries-{home.seed}")
    candidates = [*_descriptive(home, rng), *_affordance(home, rng), *_negation(home, rng)]
    queries, seen = [], set()
    for query_type in ("descriptive", "affordance", "negation"):
        of_type = [c for c in candidates if c.type == query_type]
        empty = [c for c in of_type if not c.answer]
        answered = [c for c in of_type if 0 < len(c.answer) <= MAX_ANSWERS]
        rng.shuffle(empty)
        rng.shuffle(answered)
        picked = empty[:EMPTY_PER_TYPE] + answered[:QUERIES_PER_TYPE - min(EMPTY_PER_TYPE, len(empty))]
        for candidate in picked:
            if candidate.text in seen:
                continue
            seen.add(candidate.text)
            text = typo(rng, candidate.text) if rng.random() < 0.15 else candidate.text
            queries.append({"id": f"{query_type[:3]}-{len(queries) + 1}", "type": query_type, "text": text,
                            "answer": list(candidate.answer)})
    return queries


def write_scan_home(home: ScanHome, out: Path) -> dict:
    """The map, rooms, queries and truth of one home, in `planner bench objects`' layout; counts."""
    queries = make_queries(home)
    header = (f"# Generated by planner bench generate objects --source scan (seed {home.seed}, {kind_of(home.seed)} "
              f"data). Do not edit.\n")
    write_bench_files(out, home.name, voxeland(home), home.rooms, queries, header)
    return {"items": len(home.items), "rooms": len(home.rooms), "queries": len(queries),
            "no_answer": sum(not q["answer"] for q in queries)}
