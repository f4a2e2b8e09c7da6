"""`planner bench checks`: how well the goal step's narrow yes/no checks tell right from wrong, on
needs and names worded for this benchmark. The need check asks whether bringing a thing meets what
a request states ("I'm cold": a blanket); the name check whether a word is another name for a label
("jumper": sweater). Both are the planner's own questions to the model the config gives the goal
step, so a larger model's gain shows here before any task runs.

For a need, what matters is a home that has a right thing (does that thing pass?) and one that
lacks every right thing (does the likeliest wrong thing pass, told as done?). For a name, an other
name should pass for its label and a near miss (a thing no label is) for none. Each word is also
grounded as the planner grounds a request, "Could you bring me the <word>?": what it is read as
before any check (close embeddings, a name WordNet usually means), and the label WordNet gives it
only in a rare sense, which the name check must accept.

Rooms are read as the planner reads a place where only a room can be ("Could you go to the
<word>?"): the model chooses among a home's rooms ("none of these" allowed) and the name check must
give its choice the configured probability. An other name of a room should be read as that room,
and a room the home lacks as none."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from pydantic import Field, model_validator

from planner.core.asking import LABELS_OFFERED, choose_one, room_options
from planner.core.errors import PolicyError
from planner.core.files import StrictModel, load_model
from planner.core.planning.goal_reading import name_question, need_question
from planner.core.planning.grounding import Grounder
from planner.core.ports import Policy, judged, yes_probability_of

THRESHOLDS = [round(0.3 + 0.05 * step, 2) for step in range(9)]  # 0.30 ... 0.70


class NeedCase(StrictModel):
    request: str = Field(min_length=1)
    right: list[str] = Field(min_length=1, description="labels that meet the need")
    also: list[str] = Field(default=[], description="labels that may or may not: neither right nor wrong")


class NameCase(StrictModel):
    word: str = Field(min_length=1)
    label: str = Field(min_length=1)


class RoomNameCase(StrictModel):
    word: str = Field(min_length=1)
    room: str = Field(min_length=1)


class ChecksData(StrictModel):
    labels: list[str] = Field(min_length=2)
    needs: list[NeedCase] = []
    names: list[NameCase] = []
    near_misses: list[str] = []
    rooms: list[str] = Field(default=[], description="the rooms of a home a room's other name is read among")
    room_furniture: dict[str, list[str]] = Field(default={}, description="furniture of each room, the most telling "
                                                 "first, shown with it as the planner shows a map's rooms")
    room_names: list[RoomNameCase] = []
    absent_rooms: list[str] = Field(default=[], description="rooms that home lacks")

    @model_validator(mode="after")
    def _labels_known(self) -> ChecksData:
        known = set(self.labels)
        unknown = sorted({label for need in self.needs for label in [*need.right, *need.also]} - known
                         | {name.label for name in self.names} - known)
        if unknown:
            raise ValueError(f"labels not in `labels`: {', '.join(unknown)}")
        if unknown_rooms := sorted(({name.room for name in self.room_names} | set(self.room_furniture)) - set(self.rooms)):
            raise ValueError(f"rooms not in `rooms`: {', '.join(unknown_rooms)}")
        return self


def load_checks(path: str | Path) -> ChecksData:
    """The data file, or InputError saying what is wrong and where."""
    return load_model(path, ChecksData)


def _p_yes(policy: Policy, question: str) -> float | None:
    """The model's probability of yes, None when it gives no answer (counted, left out of the scores)."""
    try:
        return round(yes_probability_of(judged(policy, [{"role": "user", "content": question}])), 3)
    except (PolicyError, ValueError):
        return None


def _asked_need(policy: Policy, request: str, labels: list[str]) -> dict[str, float | None]:
    return {label: _p_yes(policy, need_question(request, label)) for label in labels}


def run(data: ChecksData, policy: Policy, grounder: Grounder, wrong: int, seed: int,
        progress: Callable[[str], None]) -> dict:
    """Each need asked about its right things and `wrong` others drawn (by `seed`) from the labels
    neither right nor `also`; each name and near miss about the labels most like it (and its own)."""
    rng = random.Random(seed)
    total = len(data.needs) + len(data.names) + len(data.near_misses) + len(data.room_names) + len(data.absent_rooms)
    done = 0
    needs, names = [], []
    for need in data.needs:
        others = sorted(set(data.labels) - set(need.right) - set(need.also))
        drawn = rng.sample(others, min(wrong, len(others)))
        needs.append({"request": need.request, "right": _asked_need(policy, need.request, need.right),
                      "wrong": _asked_need(policy, need.request, drawn)})
        done += 1
        progress(f"[{done}/{total}] need: {need.request}")
    for word, label in [*((name.word, name.label) for name in data.names), *((miss, None) for miss in data.near_misses)]:
        grounded, rare_sense = _grounded(grounder, word, data.labels)
        asked = [match.label for match in grounder.nearest(word, data.labels, LABELS_OFFERED)]
        asked += [other for other in dict.fromkeys([label, rare_sense]) if other is not None and other not in asked]
        names.append({"word": word, "label": label, "grounded": grounded, "rare_sense": rare_sense,
                      "asked": {other: _p_yes(policy, name_question(word, other)) for other in asked}})
        done += 1
        progress(f"[{done}/{total}] name: {word}")
    rooms = []
    for word, room in [*((name.word, name.room) for name in data.room_names), *((absent, None) for absent in data.absent_rooms)]:
        rooms.append({"word": word, "room": room, **_room_read(
            policy, word, {room: data.room_furniture.get(room, []) for room in data.rooms})})
        done += 1
        progress(f"[{done}/{total}] room: {word}")
    return {"needs": needs, "names": names, "rooms": rooms}


def _room_read(policy: Policy, word: str, rooms: dict[str, list[str]]) -> dict:
    """The room the model chooses for a place where only a room can be among the `rooms` (each with
    its furniture), and the name check's probability of yes for it (both None when it chose none or
    gave no valid answer)."""
    try:
        chosen = choose_one(policy.complete, f"Could you go to the {word}?", word, room_options(rooms), max_repairs=2)
    except PolicyError:
        chosen = None
    if chosen not in rooms:
        return {"chosen": None, "p_yes": None}
    return {"chosen": chosen, "p_yes": _p_yes(policy, name_question(word, chosen))}


def _grounded(grounder: Grounder, word: str, labels: list[str]) -> tuple[str | None, str | None]:
    """The label a request for the word is read as before any check, and the one the lexicon gives
    it only in a rare sense (a candidate for the name check), each None when there is none."""
    request = f"Could you bring me the {word}?"
    before = next((match.label for match in grounder.ground(request, labels).matches if match.phrase == word), None)
    rare = grounder.ground(request, labels, accept=lambda match: match.rare_sense).matches
    return before, next((match.label for match in rare if match.phrase == word and match.rare_sense), None)


def _answered(scores: dict[str, float | None]) -> dict[str, float]:
    return {label: p for label, p in scores.items() if p is not None}


def _pairs_ranked(right: list[float], wrong: list[float]) -> float | None:
    """How often a right score is above a wrong one (ties half): the area under the ROC curve."""
    if not right or not wrong:
        return None
    return sum(1.0 if r > w else 0.5 if r == w else 0.0 for r in right for w in wrong) / (len(right) * len(wrong))


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 3) if kept else None


def share(flags: list[bool]) -> float | None:
    """The percentage of the flags set (None when there are none)."""
    return round(100 * sum(flags) / len(flags), 1) if flags else None


def summarize(records: dict, need_threshold: float, name_threshold: float, name_margin: float,
              rename_threshold: float, room_threshold: float) -> dict:
    """Per check: how well it ranks right above wrong, and what passes at each threshold: the need
    check's, the name check's (a thing the request calls otherwise confirmed) and the one from which
    the request is read again in the map's words (`rename_threshold`)."""
    needs = [(list(_answered(n["right"]).values()), list(_answered(n["wrong"]).values())) for n in records["needs"]]
    needs = [(right, wrong) for right, wrong in needs if right and wrong]
    rights = [p for right, _ in needs for p in right]
    likeliest_wrong = [max(wrong) for _, wrong in needs]

    def need_row(t: float) -> dict:
        return {"right_pass": share([p >= t for p in rights]),
                "likeliest_wrong_pass": share([p >= t for p in likeliest_wrong])}

    others, misses, others_singled, others_wrongly, misses_singled = [], [], [], [], []
    aucs = []
    for name in records["names"]:
        asked = _answered(name["asked"])
        if not asked:
            continue
        best = max(asked, key=lambda label: asked[label])
        runner_up = max((p for label, p in asked.items() if label != best), default=0.0)
        singled = asked[best] >= name_threshold and asked[best] - runner_up >= name_margin
        if name["label"] is None:
            misses.append(max(asked.values()))
            misses_singled.append(singled)
        elif name["label"] in asked:
            own = asked[name["label"]]
            others.append(own)
            others_singled.append(singled and best == name["label"])
            others_wrongly.append(singled and best != name["label"])
            aucs.append(_pairs_ranked([own], [p for label, p in asked.items() if label != name["label"]]))

    grounding = _grounding_summary(records["names"], name_threshold)

    def name_row(t: float) -> dict:
        return {"other_names_pass": share([p >= t for p in others]),
                "near_misses_pass": share([p >= t for p in misses])}

    unanswered = sum(p is None for n in records["needs"] for p in [*n["right"].values(), *n["wrong"].values()]) \
        + sum(p is None for n in records["names"] for p in n["asked"].values())
    return {
        "unanswered": unanswered,
        "need": {"needs": len(needs), "auc": _mean([_pairs_ranked(right, wrong) for right, wrong in needs]),
                 "right_first": share([max(right) > max(wrong) for right, wrong in needs]),
                 "threshold": need_threshold, "at_threshold": need_row(need_threshold),
                 "sweep": {str(t): need_row(t) for t in THRESHOLDS}},
        "name": {"other_names": len(others), "near_misses": len(misses), "auc": _mean(aucs),
                 "threshold": name_threshold, "margin": name_margin, "at_threshold": name_row(name_threshold),
                 "rename_threshold": rename_threshold, "at_rename_threshold": name_row(rename_threshold),
                 "singled_out": {"other_names_right": share(others_singled),
                                 "other_names_wrong": share(others_wrongly),
                                 "near_misses": share(misses_singled)},
                 "sweep": {str(t): name_row(t) for t in THRESHOLDS}},
        "grounding": grounding,
        "room": _rooms_summary(records.get("rooms", []), room_threshold),
    }


def _rooms_summary(rooms: list[dict], threshold: float) -> dict:
    """How often a room's other name is chosen right, and what is read at each threshold: the right
    room, a wrong one, and a room for one the home lacks."""
    others = [room for room in rooms if room["room"] is not None]
    absent = [room for room in rooms if room["room"] is None]
    return {"other_names": len(others), "absent": len(absent), "threshold": threshold,
            "chosen_right": share([r["chosen"] == r["room"] for r in others]),
            "absent_chosen": share([r["chosen"] is not None for r in absent]),
            "at_threshold": rooms_read(rooms, threshold),
            "sweep": {str(t): rooms_read(rooms, t) for t in THRESHOLDS}}


def rooms_read(rooms: list[dict], threshold: float) -> dict:
    """At `threshold`, the shares of rooms' other names read as their room and as another, and of
    rooms the home lacks read as one of its rooms."""
    others = [room for room in rooms if room["room"] is not None]
    absent = [room for room in rooms if room["room"] is None]

    def read(room: dict) -> bool:
        return room["chosen"] is not None and room["p_yes"] is not None and room["p_yes"] >= threshold
    return {"right": share([read(r) and r["chosen"] == r["room"] for r in others]),
            "wrong": share([read(r) and r["chosen"] != r["room"] for r in others]),
            "absent_read": share([read(r) for r in absent])}


def answered_best(asked: dict[str, float | None]) -> float:
    """The highest probability of yes among the labels asked that got an answer (0 when none did)."""
    return max(_answered(asked).values(), default=0.0)


def _grounding_summary(names: list[dict], name_threshold: float) -> dict:
    """How other names and near misses are read before any check, and what a rare sense adds where
    the name check accepts it (at `name_threshold`), as the planner reads a request again."""
    others = [name for name in names if name["label"] is not None]
    misses = [name for name in names if name["label"] is None]

    def accepted(name: dict) -> str | None:
        p_yes = name["asked"].get(name["rare_sense"]) if name["rare_sense"] else None
        return name["rare_sense"] if p_yes is not None and p_yes >= name_threshold else None

    def read(name: dict) -> str | None:
        return name["grounded"] or accepted(name)
    return {
        "before_check": {"other_names_right": share([n["grounded"] == n["label"] for n in others]),
                         "other_names_wrong": share([n["grounded"] not in (None, n["label"]) for n in others]),
                         "near_misses": share([n["grounded"] is not None for n in misses])},
        "rare_sense": {"other_names_right": sum(n["rare_sense"] == n["label"] for n in others),
                       "other_names_wrong": sum(n["rare_sense"] not in (None, n["label"]) for n in others),
                       "near_misses": sum(n["rare_sense"] is not None for n in misses),
                       "accepted_right": sum(accepted(n) == n["label"] for n in others),
                       "accepted_wrong": sum(accepted(n) not in (None, n["label"]) for n in others),
                       "accepted_near_misses": sum(accepted(n) is not None for n in misses)},
        "with_rare_sense": {"other_names_right": share([read(n) == n["label"] for n in others]),
                            "other_names_wrong": share([read(n) not in (None, n["label"]) for n in others]),
                            "near_misses": share([read(n) is not None for n in misses])},
    }


def report(results: dict) -> str:
    summary, llm = results["summary"], results["llm"]
    need, name = summary["need"], summary["name"]
    lines = [f"# The goal step's yes/no checks: {llm['backend']} {llm['model']}", "",
             f"Command: `{results['command']}`  ",
             f"Machine: {results['machine']['cpu']}, {results['machine']['cores']} cores; source {results['machine']['source']}; "
             f"{summary['unanswered']} questions unanswered", "",
             f"## Need check ({need['needs']} needs, each against its right things and {results['wrong']} wrong ones)", "",
             f"Right things ranked above wrong ones (AUC): {need['auc']}; a right thing likeliest for "
             f"{need['right_first']}% of needs. At the configured threshold {need['threshold']}: right things pass "
             f"{need['at_threshold']['right_pass']}%, the likeliest wrong thing (a home without a right one) passes "
             f"{need['at_threshold']['likeliest_wrong_pass']}%.", "",
             "| threshold | right things pass % | likeliest wrong thing passes % |", "|---|---|---|"]
    lines += [f"| {t} | {row['right_pass']} | {row['likeliest_wrong_pass']} |" for t, row in need["sweep"].items()]
    singled = name["singled_out"]
    lines += ["", f"## Name check ({name['other_names']} other names, {name['near_misses']} near misses, each against "
              "the labels most like it)", "",
              f"An other name's label ranked above the others asked (AUC): {name['auc']}. At the configured threshold "
              f"{name['threshold']}: other names pass {name['at_threshold']['other_names_pass']}%, near misses "
              f"(their likeliest label) {name['at_threshold']['near_misses_pass']}%. Singled out (at the threshold and "
              f"{name['margin']} above the next): the right label for {singled['other_names_right']}% of other names, "
              f"a wrong one for {singled['other_names_wrong']}%, some label for {singled['near_misses']}% of near misses. "
              f"At {name['rename_threshold']}, from which a request is read again in the map's words: other names pass "
              f"{name['at_rename_threshold']['other_names_pass']}%, near misses "
              f"{name['at_rename_threshold']['near_misses_pass']}%.",
              "", "| threshold | other names pass % | near misses pass % |", "|---|---|---|"]
    lines += [f"| {t} | {row['other_names_pass']} | {row['near_misses_pass']} |" for t, row in name["sweep"].items()]
    grounding = summary["grounding"]
    before, rare, both = grounding["before_check"], grounding["rare_sense"], grounding["with_rare_sense"]
    lines += ["", "## Grounding (\"Could you bring me the <word>?\", as the planner reads it)", "",
              f"Before any check (close embeddings, a name WordNet usually means): other names read as their label "
              f"{before['other_names_right']}%, as another {before['other_names_wrong']}%; near misses read as a "
              f"label {before['near_misses']}%. A label WordNet gives only in a rare sense: {rare['other_names_right']} "
              f"other names right, {rare['other_names_wrong']} wrong, {rare['near_misses']} near misses; the name check "
              f"accepts {rare['accepted_right']} right, {rare['accepted_wrong']} wrong, {rare['accepted_near_misses']} "
              f"near misses. With those: other names read as their label {both['other_names_right']}%, as another "
              f"{both['other_names_wrong']}%; near misses read as a label {both['near_misses']}%."]
    room = summary.get("room")
    if room and room["other_names"] + room["absent"]:
        at = room["at_threshold"]
        lines += ["", f"## Rooms (\"Could you go to the <word>?\": {room['other_names']} other names of rooms, "
                  f"{room['absent']} rooms the home lacks)", "",
                  f"Chosen among the home's rooms: the right room for {room['chosen_right']}% of other names; some "
                  f"room for {room['absent_chosen']}% of the rooms it lacks. With the name check at the configured "
                  f"{room['threshold']}: other names read as their room {at['right']}%, as another {at['wrong']}%; "
                  f"rooms the home lacks read as one {at['absent_read']}%.", "",
                  "| threshold | right room % | wrong room % | a lacking room read as one % |", "|---|---|---|---|"]
        lines += [f"| {t} | {r['right']} | {r['wrong']} | {r['absent_read']} |" for t, r in room["sweep"].items()]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = results["summary"]
    panels = [("need", "Need check", [("right_pass", "right things pass"),
                                      ("likeliest_wrong_pass", "likeliest wrong thing passes")]),
              ("name", "Name check", [("other_names_pass", "other names pass"),
                                      ("near_misses_pass", "near misses pass")])]
    room = summary.get("room")
    if room and room["other_names"] + room["absent"]:
        panels.append(("room", "Room reading", [("right", "right room read"), ("wrong", "wrong room read"),
                                                ("absent_read", "a lacking room read as one")]))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2))
    for axis, (check, title, series) in zip(axes, panels):
        sweep = summary[check]["sweep"]
        thresholds = [float(t) for t in sweep]
        for key, label in series:
            axis.plot(thresholds, [sweep[t][key] or 0 for t in sweep], marker="o", label=label)
        axis.axvline(summary[check]["threshold"], color="grey", linestyle="--", label="configured threshold")
        if check == "name":
            axis.axvline(summary[check]["rename_threshold"], color="grey", linestyle=":",
                         label="read in the map's words from")
        axis.set_ylim(0, 100)
        axis.set_xlabel("threshold on the probability of yes")
        axis.set_ylabel("%")
        axis.set_title(f"{title} (AUC {summary[check]['auc']})" if "auc" in summary[check] else title)
        axis.legend(fontsize=8)
    fig.suptitle(f"Goal-step checks: {results['llm']['backend']} {results['llm']['model']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
