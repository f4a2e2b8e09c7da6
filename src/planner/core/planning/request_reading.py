"""Reading a request into goals: its typos mended, its phrases grounded in the map's labels and
rooms, the model's reading of goals, and that reading checked (the whole, the things chosen for a
need, the things named by other words) and repaired, split, widened or put to the user. The task
planner asks for the goals at the start of a task and again when no plan reaches them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from planner.core.ambiguity import words_of
from planner.core.asking import LABELS_OFFERED, NONE, LLMUsage, choose_one, label_options, room_options, words
from planner.core.errors import PolicyError, RequestImpossible
from planner.core.goals import Goal, GoalReply, goal_met
from planner.core.planning.conversation import Conversation
from planner.core.planning.goal_reading import (
    GOAL_CHECK_PROMPT,
    GOAL_DOUBT,
    SEARCH_FOUND,
    SEARCH_FOUND_NOTHING,
    GoalReader,
    chosen_for_need,
    confirmed,
    final_goals,
    joined_halves,
    missing_words,
    name_question,
    named_otherwise,
    names_only_its_modifier,
    need_question,
    places_sent_to,
    reading_of,
    room_places,
    source_places,
)
from planner.core.planning.grounding import Grounder, Grounding, Match, plain_room_name
from planner.core.planning.model_calls import ModelCalls
from planner.core.planning.moved_things import moved_things
from planner.core.planning.settings import PlannerSettings
from planner.core.planning.spelling import Speller
from planner.core.ports import Parser, Policy, Tools, judged, yes_probability_of
from planner.core.scene_graph import SceneGraph


def thing_labels(scene: SceneGraph) -> list[str]:
    """The labels of the map's objects and furniture, each once."""
    return sorted({e.label for e in [*scene.objects(), *scene.furniture()]})


def rooms_furnished(scene: SceneGraph) -> dict[str, list[str]]:
    """Each room of the map and the labels of its furniture, each once, those fewest rooms hold first
    (a washing machine tells a room more than a chair)."""
    held = {room: list(dict.fromkeys(f.label for f in scene.furniture(room))) for room in scene.rooms()}
    rooms_holding = Counter(label for labels in held.values() for label in labels)
    return {room: sorted(labels, key=rooms_holding.__getitem__) for room, labels in held.items()}


class RequestReader:
    """Reads requests in the map the `tools` show, asking `policy` through the task's `calls` (and
    the user through its `conversation`) and saying what it found through `emit(kind, text)`."""

    def __init__(self, policy: Policy, tools: Tools, settings: PlannerSettings, grounder: Grounder | None,
                 calls: ModelCalls, conversation: Conversation, emit: Callable[[str, str], None],
                 parser: Parser | None = None):
        self.policy = policy
        self.tools = tools
        self.settings = settings
        self.grounder = grounder
        self.speller = Speller(grounder.is_noun if grounder else None)
        self.parser = parser  # reads the things a request moves; without one, the checks of them are off
        self.calls = calls
        self.conversation = conversation
        self._emit = emit
        # A task's yes/no checks by prompt: a reading read again, or widened, asks some of them again,
        # and the model's answer to the same words is the same.
        self._judgements: dict[str, float] = {}
        self._rooms_chosen: dict[str, str | None] = {}  # a place said -> the map's room the model chose for it
        self.unknown_places: list[str] = []  # places said that no room of the map was found to be, nor the user said
        self._searched: dict[str, list[str] | None] = {}  # a request -> the labels a search of the map finds for it

    def new_task(self) -> None:
        """Forget the answers of the task before."""
        self._judgements.clear()
        self._rooms_chosen.clear()
        self.unknown_places = []
        self._searched.clear()

    def goals(self, request: str, usage: LLMUsage) -> tuple[list[Goal], Grounding | None]:
        """The goals a (mended) request is read into, checked, and the grounding they were read with;
        RequestImpossible says why there are none, PolicyError why the model gave none. A room the
        request sends things to that is no room of the map, nor one the user names when asked, is
        a place the robot cannot find: goals that put nothing anywhere would leave it out and end
        in "Done."."""
        goals, grounding = self._extract_goals(request, self._ground(request, usage), usage)
        if self.unknown_places and not any(goal.room or goal.target or goal.kind == "bring_to_user" for goal in goals):
            rooms = ", ".join(words(room) for room in self.tools.scene().rooms())
            raise RequestImpossible(f"the request sends it to the {self.unknown_places[0]}, and no room here is known "
                                    f"by that name (the rooms are: {rooms})")
        return goals, grounding

    def _ground(self, request: str, usage: LLMUsage, loose: bool = False) -> Grounding | None:
        """The request's phrases that name map labels in other words, and its places where only a
        room can be that name a room of the map in other words; None without a grounder. `loose`:
        also the phrases less alike to a label that the model says name it. Each model call is
        counted in `usage`."""
        if self.grounder is None:
            return None
        scene = self.tools.scene()
        # Things by their similarity: room names share "room" and little else ("utility room" came out as
        # the living room). Rooms are few, and read where only a room can be (_rooms_read).
        labels = thing_labels(scene)
        places = room_places(request, [f.label for f in scene.furniture()], scene.rooms())
        settings = self.settings
        said = words_of(request)

        def accept(match: Match) -> bool:
            # A name the lexicon gives the label in a rare sense ("jumper": sweater, "settee": sofa) has two
            # readings that agree at the name check's own threshold, from the first reading on (the 1.5B took
            # the settee for a chair, 0.76 likely one), except where a room may be said ("clear the piano in
            # the lounge": no sofa, 0.66 to the 1.5B); a phrase only alike to a label, asked only before a
            # request is given up, needs the surer one. A place where only a room can be names no thing
            # ("I'm in the office": no desk, 0.65 to the 1.5B).
            if not loose and re.search(rf" in (?:the|my|your|our) {re.escape(match.phrase)} ", said):
                return False
            if any(f" {match.phrase} " in f" {place} " for place in places):
                return False
            # Only a search already made for a doubted reading counts ("the notebook computer": the laptop).
            p_yes = self._name_p(match.phrase, match.label, usage)  # no answer grounds nothing
            return p_yes is not None and (
                p_yes >= (settings.name_check_threshold if match.rare_sense else settings.other_name_threshold)
                or loose and self._search_agrees(p_yes, match.label, lambda: self._searched.get(request)))

        grounding = self.grounder.ground(request, labels, scene.rooms(), settings.other_name_similarity if loose else None,
                                         accept)
        grounding = self._rooms_read(self._sources_grounded(grounding, scene), places, rooms_furnished(scene), usage)
        if grounding.matches:
            self._emit("perception", f"the request in the map's words: {grounding.note()}")
        return grounding

    def _rooms_read(self, grounding: Grounding, places: list[str], rooms: dict[str, list[str]],
                    usage: LLMUsage) -> Grounding:
        """`grounding` and each of the `places` the request names where only a room can be that is no
        room of the map (`room_places`), read as the room the model chooses for it among the `rooms`
        (each shown with the furniture it holds) when the name check gives that room
        `room_name_threshold` ("the counter in the scullery": in the kitchen). Chosen among a home's
        few rooms, the room was right for 86% of the other names of rooms in `planner bench checks`
        (79% without their furniture, at 63bf1a1); the check kept 69% right, 5% wrong, and none of
        the rooms the home lacked."""
        assert self.grounder is not None
        if self.settings.room_name_threshold >= 1 or len(rooms) < 2:
            return grounding
        grounded = {word for match in grounding.matches for word in match.phrase.split()}
        for place in places:
            said = grounding.written(place)  # "children's room", as the model is asked about it
            if grounded & set(said.split()):
                continue
            if said not in self._rooms_chosen:
                room = self._chosen_room(grounding.request, said, rooms, usage)
                if room is None and any(said in place for place in places_sent_to(grounding.request)):
                    options = room_options(rooms)
                    options.pop(NONE, None)
                    room = self.conversation.which_room(said, options)  # where a thing goes: the user knows
                    if room is None:
                        self.unknown_places.append(said)
                self._rooms_chosen[said] = room
            if (room := self._rooms_chosen[said]) is not None:
                grounding = grounding.with_match(self.grounder.nearest(said, [room], 1)[0])
        return grounding

    def _chosen_room(self, request: str, place: str, rooms: dict[str, list[str]], usage: LLMUsage) -> str | None:
        """The room of the map the model chooses for a place said ("none of these" allowed), when the
        yes/no name check agrees it is another name for it."""
        if (picked := self._choice(request, place, room_options(rooms), "room", usage)) is None:
            return None
        p_yes = self._name_p(place, plain_room_name(picked), usage)  # a lounge, not "lounge 2"
        return picked if p_yes is not None and p_yes >= self.settings.room_name_threshold else None

    def _choice(self, request: str, words_said: str, options: dict[str, str], what: str, usage: LLMUsage) -> str | None:
        """The option (a key of `options`, `NONE` among them) the model says `words_said` means in the
        request, None when it says none of them or gives no valid answer (the words then stay as the
        model read them)."""
        try:
            picked = choose_one(lambda messages, schema: self.calls.call(messages, schema, usage, self.policy),
                                request, words_said, options, self.settings.max_repairs)
        except PolicyError as error:
            self._emit("error", f"could not ask which {what} {words_said!r} is: {error}")
            return None
        picked = picked if picked in options and picked != NONE else None
        self._emit("check", f'which of {", ".join(o for o in options if o != NONE)} is "{words_said}": '
                            f'{picked or "none"}, the model chose')
        return picked

    def _sources_grounded(self, grounding: Grounding, scene: SceneGraph) -> Grounding:
        """`grounding` and each place things are taken from that names no furniture of the map, read
        as the furniture it is most like when that is close (`source_place_similarity`) and clearly
        closest: a wrong one only picks which of several things is taken, where otherwise the nearest
        is ("the book from the bedside table": the one on the nightstand, 0.68)."""
        assert self.grounder is not None
        furniture = sorted({f.label for f in scene.furniture()})
        if len(furniture) < 2:
            return grounding
        room_words = {word for room in scene.rooms() for word in words(room).split()}
        for place in source_places(grounding.text):
            # "The kitchen table" names a table, and "the table" each table there is (the side table is
            # only the nearest in meaning); "the bedside table" names none.
            if any(place == words(label) or place.endswith(f" {words(label)}")
                   and set(place[:-len(words(label))].split()) <= room_words or words(label).endswith(f" {place}")
                   for label in [*furniture, *scene.rooms()]):
                continue
            best, second = self.grounder.nearest(place, furniture, 2)
            if (best.similarity >= self.settings.source_place_similarity
                    and best.similarity - second.similarity >= self.grounder.margin):
                grounding = grounding.with_match(best)
        return grounding

    def mended(self, request: str) -> str:
        """The request with its typos mended, when that is configured."""
        if not self.settings.mend_typos:
            return request
        scene = self.tools.scene()
        mended, fixes = self.speller.mended(request, [*thing_labels(scene), *scene.rooms()])
        if fixes:
            self._emit("perception", "typed words read as " + ", ".join(f'"{meant}" ("{typed}")'
                                                                     for typed, meant in fixes.items()))
        return mended

    def _extract_goals(self, request: str, grounding: Grounding | None, usage: LLMUsage, widen: bool = True,
                       part: bool = False) -> tuple[list[Goal], Grounding | None]:
        """The goals checked, and the grounding they were read with: when the model holds that the
        home lacks what the request asks for, or its reading is doubted twice, phrases that may
        name map labels in other words are checked first (`widen`), and the request is read again
        with those found."""
        reader = GoalReader(request, self.tools.scene(), grounding, part, self.parser)
        halves = joined_halves(request)
        try:
            goals = reader.settle(self.calls.validated(reader.messages(), reader.schema(), usage, reader.parse, self.policy))
        except RequestImpossible as why:
            if halves is not None:
                return self._read_halves(halves, grounding, usage)
            if (read := self._read_wider(request, grounding, usage, widen, part, str(why))) is None:
                raise
            return read
        if halves is not None and len({goal.object for goal in goals if goal.object}) < 2:
            return self._read_halves(halves, grounding, usage)
        fits, renamed = self.goals_fit(reader, goals, usage)
        if fits:
            return goals, grounding
        if widen and renamed:
            # A thing taken for a word the map does not use, where another label fits the word better
            # ("the paper" read as the book, beside a newspaper): read again with the better one.
            wider = grounding or Grounding(request, request, ())
            for match in renamed:
                wider = wider.with_match(match)
            self._emit("perception", f"the request in the map's words: {wider.note()}")
            return self._extract_goals(request, wider, usage, widen=False, part=part)
        # Doubted: read again with the doubt said; a reading that is still doubted is put to the user.
        doubt = GOAL_DOUBT.format(reading=reading_of(goals)) + self._search_note(reader, goals, usage)
        try:
            again, goals = self.read_again(request, grounding, goals, doubt, usage, part)
        except RequestImpossible as why:  # the doubted reading given up: the map's other names first
            if (read := self._read_wider(request, grounding, usage, widen, part, str(why))) is None:
                raise
            return read
        if self.goals_fit(again, goals, usage)[0]:
            return goals, grounding
        if (read := self._read_wider(request, grounding, usage, widen, part)) is not None:
            return read
        return self._asked(goals), grounding

    def _read_wider(self, request: str, grounding: Grounding | None, usage: LLMUsage, widen: bool, part: bool,
                    why: str = "") -> tuple[list[Goal], Grounding | None] | None:
        """The request read again with its grounding widened (`_wider`, told the reason `why` it was
        given up, if it was); None when widening finds nothing more."""
        wider = self._wider(request, grounding, usage, widen, why)
        return None if wider is None else self._extract_goals(request, wider, usage, widen=False, part=part)

    def _read_halves(self, halves: tuple[str, str], grounding: Grounding | None, usage: LLMUsage
                     ) -> tuple[list[Goal], Grounding | None]:
        """A request for two things read as two requests for one thing each, when read whole it gave
        goals for one thing or none: the 1.5B kept one of "the notebook and the novel" through every
        repair, and the robot said Done. with the novel where it was; asked for one thing at a time it
        reads each."""
        self._emit("check", f'the request asks for two things: read as "{halves[0]}" and "{halves[1]}"')
        goals: list[Goal] = []
        for half in halves:
            goals += [goal for goal in self._extract_goals(half, self._ground(half, usage), usage, part=True)[0]
                      if goal not in goals]
        return final_goals(goals), grounding

    def _wider(self, request: str, grounding: Grounding | None, usage: LLMUsage, widen: bool, why: str = ""
               ) -> Grounding | None:
        """Before the request is given up or put to the user: the request grounded again with the
        phrases the model says are other names for map labels ("the paper": the newspaper), when
        that finds more than the first grounding did; else with the words the map lacks (those the
        reason `why` says the home has not, and things to move no label has a word of) each the
        label the model chooses among those most like it, when the name check agrees ("the throw":
        the blanket, less alike than any grounding would take)."""
        if not widen or self.settings.other_name_similarity >= 1 or self.grounder is None:
            return None
        wider = self._ground(request, usage, loose=True)
        before = len(grounding.matches if grounding else ())
        if wider is not None and len(wider.matches) > before:
            return wider
        chosen = wider or grounding or Grounding(request, request, ())
        scene = self.tools.scene()
        for word in missing_words(request, moved_things(self.parser, request), why, scene):
            if any(word in match.phrase.split() for match in chosen.matches):
                continue
            if (match := self._chosen_label(request, word, scene, usage)) is not None:
                chosen = chosen.with_match(match)
        if len(chosen.matches) > before:
            self._emit("perception", f"the request in the map's words: {chosen.note()}")
            return chosen
        return None

    def _chosen_label(self, request: str, word: str, scene: SceneGraph, usage: LLMUsage) -> Match | None:
        """The map label the model chooses for `word` among those most like it ("none of these"
        allowed), when the yes/no name check agrees that it is another name for it."""
        assert self.grounder is not None
        nearest = {m.label: m for m in self.grounder.nearest(word, thing_labels(scene), LABELS_OFFERED)}
        if (picked := self._choice(request, word, label_options(nearest), "label", usage)) is None:
            return None
        # The request is read in the map's words from here on: as sure as grounding ("the throw" was
        # taken for a sink at 0.47 in a home whose blanket the model gave 0.24), or, for a thing (the
        # 1.5B's yes ranks furniture badly: that sink led the next label by 0.20), two readings agree:
        # the choice is the label the name check singles out among those offered ("the pot plant": a
        # houseplant 0.50, the next 0.22).
        if (p_yes := self._name_p(word, picked, usage)) is None:
            return None
        if p_yes >= self.settings.other_name_threshold:
            return nearest[picked]
        if p_yes < self.settings.other_name_agreement or picked not in {o.label for o in scene.objects()}:
            return None
        agreed = self._best_named(word, list(nearest), usage, margin=self.settings.name_check_margin,
                                  threshold=self.settings.other_name_agreement)
        return nearest[picked] if agreed is not None and agreed[0].label == picked else None

    def _asked(self, goals: list[Goal]) -> list[Goal]:
        """A reading doubted twice, put to the user: the goals when they confirm it."""
        # Doubted twice: only the user can say. Without an answer the robot does not act on a reading it
        # doubts (on development homes every reading doubted twice was wrong: a laptop for "something to eat").
        answer = self.conversation.ask(f"Do you want this: {reading_of(goals)}?")
        if not answer:
            raise RequestImpossible(f"I am not sure what you want: I read it as {reading_of(goals)}, which may not "
                                    "be it, and no answer came; please say it another way")
        if not confirmed(answer):
            raise RequestImpossible(f"you said that is not what you asked ({answer!r}); please say it another way")
        return goals

    def read_again(self, request: str, grounding: Grounding | None, goals: list[Goal], why: str, usage: LLMUsage,
                    part: bool = False) -> tuple[GoalReader, list[Goal]]:
        """The request read again in the map as it is now, the model told why its reading `goals`
        will not do."""
        reader = GoalReader(request, self.tools.scene(), grounding, part, self.parser)
        messages = [*reader.messages(), {"role": "assistant", "content": GoalReply(goals=goals).model_dump_json()},
                    {"role": "user", "content": why}]
        return reader, reader.settle(self.calls.validated(messages, reader.schema(), usage, reader.parse, self.policy))

    def goals_fit(self, reader: GoalReader, goals: list[Goal], usage: LLMUsage) -> tuple[bool, list[Match]]:
        """Whether the goals read ask for a change, have a thing for each the request moves, and pass
        the checks configured: the reading as a whole, each thing chosen to meet a need, and each thing taken for one the request calls by
        another name, each a narrow yes/no to the model against its threshold. A thing the request
        names by another word must also be the object or room that word names best; when it is not,
        the better ones come beside the verdict."""
        settings, reading = self.settings, reading_of(goals)
        if all(goal_met(goal, reader.scene) for goal in goals) and not reader.part:
            # Only goals the model kept to through every repair can hold already (they are sent back):
            # on development homes each such reading was a misreading told as done ("make your way to the
            # home office" as nothing left on an empty desk), so the user is asked first. A part of a
            # request read a thing at a time is not the whole request: other parts are still to be met.
            self._emit("check", f"{reading}: so already, as the model kept reading it")
            return False, []
        if left_out := reader.left_out(goals):
            # Acted on, such a reading does half the request and reports it done.
            self._emit("check", f"{reading}: leaves out the {' and the '.join(left_out)} the request asks to move")
            return False, []
        chosen = chosen_for_need(reader.moved, reader.request, goals)
        # A second reading of the need, by other means: the object finder names kinds of things that meet
        # it and finds them in the map by their labels. The model's choice must be among them; the one
        # the search finds best is a second reading agreeing, which the need check's yes need not back.
        found = self._found(reader, usage) if chosen else None
        if found is not None and not set(chosen) <= set(found):
            return False, []
        checks = [(GOAL_CHECK_PROMPT.format(request=reader.said, reading=reading), reading, "what was asked",
                   settings.goal_check_threshold)] if settings.goal_check_threshold > 0 else []
        if settings.need_check_threshold > 0:
            checks += [(need_question(reader.said, label), f"a {label}", "to meet the request", settings.need_check_threshold)
                       for label in chosen if not found or label != found[0]]
        if not all(self._judged_yes(prompt, what, purpose, threshold, usage) for prompt, what, purpose, threshold in checks):
            return False, []
        if settings.name_check_threshold <= 0:
            return True, []
        for label, said in named_otherwise(reader.request, goals, reader.scene, reader.moved).items():
            # Furniture keeps an absolute check, unless the embeddings back the model's choice: "the
            # worktop" names the counter, yet the model and the embeddings both rank a desk above it.
            alike = next((labels for labels in (reader.object_labels, reader.rooms) if label in labels), None)
            if alike is None or self.grounder is None:
                # "The table" read as a desk (0.62 a table to the model) or a chair where a dining table
                # stands: furniture whose name has the word is what it names, the one it names best;
                # when none has, the one it names best of all ("the bedside table": a nightstand).
                having = {word: [f for f in reader.furniture_labels if f" {word} " in f" {words(f)} "] for word in said}
                if not any(not having[word] and not names_only_its_modifier(word, label)
                           and (self._backed(word, label, reader.furniture_labels)
                                or self._named(word, label, settings.name_check_threshold, usage)) for word in said):
                    return False, self._renames(label, [self._best_named(word, having[word] or [
                        f for f in reader.furniture_labels if f != label], usage) for word in said], reader, usage)
                if better := [match for word in said if not having[word]
                              and (match := self._better_furniture(word, label, reader.furniture_labels, usage))]:
                    return False, better
                continue
            # Things are told apart from the model's yes to most things for a word no label fits ("the
            # apple" in a home without one: a juice carton 0.48, a basket 0.41), rooms are not (0.73 the
            # living room for "the lounge", 0.65 the dining room).
            margin = settings.name_check_margin if alike is reader.object_labels else 0.0
            best = [self._best_named(word, alike, usage, label, margin) for word in said]
            if any(named is not None and named[0].label == label for named in best):
                continue
            # Not singled out by the name check ("the medicine": a pill bottle 0.50, a tablet 0.45), yet
            # a thing the search of the map also finds for the request: two readings agree.
            if alike is reader.object_labels and any(
                    (p_yes := self._name_p(word, label, usage)) is not None
                    and self._search_agrees(p_yes, label, lambda: self._found(reader, usage)) for word in said):
                continue
            return False, self._renames(label, best, reader, usage)
        return True, []

    def _found(self, reader: GoalReader, usage: LLMUsage) -> list[str] | None:
        """The labels of the things that can be taken which a search of the map finds for the request,
        best first; None when searching is not configured or no search answers. The search's model
        calls are counted in `usage`."""
        if not self.settings.need_search:
            return None
        if reader.said not in self._searched:
            seen = self.tools.perceive("search_map", [reader.said])
            usage.add_observed(seen)
            scene = reader.scene
            self._searched[reader.said] = list(dict.fromkeys(
                scene.entity(i).label for i in seen.entities if scene.has(i) and scene.entity(i).kind == "object")) \
                if seen.answered else None
            self._emit("check", seen.text)
        return self._searched[reader.said]

    def _search_note(self, reader: GoalReader, goals: list[Goal], usage: LLMUsage) -> str:
        """What a search of the map found for the request, told with a doubted reading whose things the
        request does not name, or calls by words no label has."""
        things = [*chosen_for_need(reader.moved, reader.request, goals),
                  *(label for label in named_otherwise(reader.request, goals, reader.scene, reader.moved) if label in reader.object_labels)]
        if not things or (found := self._found(reader, usage)) is None:
            return ""
        return SEARCH_FOUND.format(found=", ".join(found)) if found else SEARCH_FOUND_NOTHING

    def _backed(self, word: str, label: str, labels: list[str]) -> bool:
        """Whether the embeddings also hold `word` a name of the `label` the model took it for, of all
        the `labels`: the one most like it, alike enough to back it (`name_check_backing`) and clearly
        more than the next (the grounder's margin): two readings agree ("the writing desk": the
        computer desk, which the model's yes alone leaves in doubt)."""
        if self.grounder is None:
            return False
        best, *rest = self.grounder.nearest(word, labels, 2)
        return best.label == label and best.similarity >= self.settings.name_check_backing \
            and (not rest or best.similarity - rest[0].similarity >= self.grounder.margin)

    def _better_furniture(self, word: str, label: str, furniture_labels: list[str], usage: LLMUsage) -> Match | None:
        """Other furniture that `word` names rather than the `label` the model took it for: the
        embeddings hold it closer, and alike enough to back it, and the model's yes to it is no lower
        ("the bedside table": a cabinet, 0.50 to the 1.5B, where a nightstand is 0.68 alike)."""
        others = [f for f in furniture_labels if f != label]
        if self.grounder is None or not others:
            return None
        nearest, own = self.grounder.nearest(word, others, 1)[0], self.grounder.nearest(word, [label], 1)[0]
        if nearest.similarity < self.settings.name_check_backing or nearest.similarity <= own.similarity:
            return None
        p_other, p_own = self._name_p(word, nearest.label, usage), self._name_p(word, label, usage)
        return nearest if p_other is not None and p_own is not None and p_other >= p_own else None

    def _renames(self, label: str, best: list[tuple[Match, float] | None], reader: GoalReader, usage: LLMUsage
                 ) -> list[Match]:
        """The labels other than `label` that words name best, as sure as grounding must be to read
        the request in the map's words: at the name check's threshold a word no label fits is as
        likely taken for the nearest one ("the apple" for a juice carton, 0.49, in a home without
        apples) as for what it names; or from `other_name_agreement` when a search of the map for the
        request finds it too (two readings agree)."""
        return [match for named in best if named is not None and (match := named[0]).label != label
                and (named[1] >= self.settings.other_name_threshold
                     or self._search_agrees(named[1], match.label, lambda: self._found(reader, usage)))]

    def _search_agrees(self, p_yes: float, label: str, found: Callable[[], list[str] | None]) -> bool:
        """Whether the name check's yes to `label` reaches `other_name_agreement` and a search of the map
        for the request (`found`, asked only then) finds the label too: two readings agree."""
        return p_yes >= self.settings.other_name_agreement and label in (found() or [])

    def _best_named(self, word: str, labels: list[str], usage: LLMUsage, also: str = "", margin: float = 0.0,
                    threshold: float | None = None) -> tuple[Match, float] | None:
        """The label among the `labels` most like `word` (and `also`) that `word` names best, and the
        model's probability that it is another name for it: that probability plus the embeddings'
        similarity ranks them, and it must pass `threshold` (the name check's unless given) and be
        `margin` above the probability of any other label asked, unless the embeddings back it; none
        when a label asked gets no answer, as that one may be the best. On nine other names
        (five from development homes), each against two or three near labels, the sum put the right
        label first for 8, the model's yes alone for 7 and the embeddings alone for 5 ("cushion" is
        nearer a sofa than a pillow)."""
        if self.grounder is None or not labels:
            return None
        nearest = self.grounder.nearest(word, labels, LABELS_OFFERED)
        if also and all(match.label != also for match in nearest):
            nearest += self.grounder.nearest(word, [also], 1)
        # A broader kind is no rival of a thing of that kind: the model's yes to "an object" says nothing.
        narrowest = self.grounder.narrowest([match.label for match in nearest])
        nearest = [match for match in nearest if match.label in narrowest]
        asked = [(self._name_p(word, match.label, usage), match) for match in nearest]
        scored = [(p_yes + match.similarity, p_yes, match) for p_yes, match in asked if p_yes is not None]
        if len(scored) < len(asked):
            return None
        _, p_yes, best = max(scored, key=lambda score: score[0])
        runner_up = max((p for _, p, match in scored if match is not best), default=0.0)
        # The yes must single the thing out, or the embeddings must: the model says yes 0.4 or so to
        # most things for a word no label fits.
        stands_out = p_yes - runner_up >= margin or best.similarity >= self.settings.name_check_backing
        needed = self.settings.name_check_threshold if threshold is None else threshold
        return (best, p_yes) if p_yes >= needed and stands_out else None

    def _named(self, word: str, label: str, threshold: float, usage: LLMUsage, unjudged: bool = True) -> bool:
        """The yes/no name check: whether the model holds `word` another name for a `label`."""
        p_yes = self._name_p(word, label, usage)
        return unjudged if p_yes is None else p_yes >= threshold

    def _name_p(self, word: str, label: str, usage: LLMUsage) -> float | None:
        """The name check's probability that `word` is another name for a `label`, None unanswered."""
        return self._p_yes(name_question(word, label), f"a {label}", f'called "{word}"', usage)

    def _judged_yes(self, prompt: str, what: str, purpose: str, threshold: float, usage: LLMUsage) -> bool:
        """The model's probability of yes to `prompt` against `threshold`; yes when the model gives no
        answer (a reading of goals stands as it did: no check is no doubt)."""
        p_yes = self._p_yes(prompt, what, purpose, usage)
        return p_yes is None or p_yes >= threshold

    def _p_yes(self, prompt: str, what: str, purpose: str, usage: LLMUsage) -> float | None:
        """The model's probability of yes to `prompt`, None when it gives no answer; the trace says
        how likely `what` is `purpose`. (Labels come from perception, so no text of theirs is a
        format string.)"""
        if (p_yes := self._judgements.get(prompt)) is None:
            try:
                reply = judged(self.policy, [{"role": "user", "content": prompt}])
                usage.add(reply)
                p_yes = self._judgements[prompt] = yes_probability_of(reply)
            except (PolicyError, ValueError) as error:
                self._emit("error", f"could not check the goals: {error}")
                return None
            self._emit("check", f"{what}: {p_yes:.2f} likely {purpose}")
        return p_yes
