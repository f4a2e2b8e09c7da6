"""Fleet question answering: robots look around a home while people move things, questions and
their truth come from the home, and vote, debate and central answer models turn the robots'
answers into one."""

import json
import random

import pytest

from conftest import ROBOT
from planner.adapters.llm import ScriptedPolicy
from planner.bench.fleet import evidence_bound, make_fleet_home, make_questions
from planner.cli import main
from planner.core.answer_model import (
    AnswerModelSettings,
    CentralAnswerModel,
    Example,
    FleetDecision,
    Question,
    RobotAnswer,
    cross_validate,
    example_record,
    latest_look,
    load_examples,
    majority_vote,
)
from planner.core.errors import InputError
from planner.core.fleet import Debate, FleetAnswerer, ModelGuided, NearestUnlooked, RobotMemory, read_question, sightings, sightings_text
from planner.core.worldgen import generate_world
from planner.sim.exploration import Explorer, Home, Move


def small_home(moves=()):
    world = generate_world(rooms=3, objects=12, robot=ROBOT, seed=1)
    return world, Home(world, ROBOT, moves)


def room_of(world, obj):
    furniture = world.furniture_by_id(obj.placed_on)
    return world.room_at(furniture.center[0], furniture.center[1])


def a_visible_object(world):
    """An object on top of furniture (not shut inside it) whose label no other room has."""
    for obj in world.objects:
        rooms = {room_of(world, o) for o in world.objects if o.label == obj.label}
        if not obj.inside and len(rooms) == 1:
            return obj
    raise AssertionError("the test home has no such object")


def answer(robot, yes, p=None, looked=True, saw=False):
    return RobotAnswer(robot, yes, float(yes) if p is None else p, looked, 60.0 if looked else None, saw)


# ---- the home, exploration and questions --------------------------------------------------------

def test_a_robot_with_time_for_every_room_sees_what_is_not_shut_away():
    world, home = small_home()
    memory = home.explore(Explorer("r1", "hallway", budget_s=300, fov_deg=360, range_m=10), NearestUnlooked())
    assert set(memory.looked) == {room.name for room in world.rooms}
    for obj in world.objects:
        assert memory.saw(obj.label, room_of(world, obj)) or obj.inside


def test_a_short_budget_or_a_narrow_camera_sees_less():
    world, home = small_home()
    wide = home.explore(Explorer("r1", "kitchen", budget_s=300, fov_deg=360, range_m=10), NearestUnlooked())
    short = home.explore(Explorer("r2", "kitchen", budget_s=7, fov_deg=360, range_m=10), NearestUnlooked())
    narrow = home.explore(Explorer("r3", "kitchen", budget_s=300, fov_deg=30, range_m=10, looks_per_room=1),
                          NearestUnlooked())
    assert set(short.looked) == {"kitchen"}
    assert sum(map(len, narrow.seen.values())) < sum(map(len, wide.seen.values()))


def test_a_thing_moved_after_a_robot_looked_is_still_where_the_robot_saw_it_and_questions_say_so():
    world, _ = small_home()
    obj = a_visible_object(world)
    source = room_of(world, obj)
    target = next(f for f in world.furniture if world.room_at(f.center[0], f.center[1]) not in (source, "hallway"))
    target_room = world.room_at(target.center[0], target.center[1])
    home = Home(world, ROBOT, [Move(500.0, obj.id, target.id)])
    memory = home.explore(Explorer("r1", source, budget_s=300, fov_deg=360, range_m=10), NearestUnlooked())
    assert memory.saw(obj.label, source) and max(memory.looked.values()) < 500
    assert obj.label not in home.presence_at(600)[source] and obj.label in home.presence_at(600)[target_room]

    questions = make_questions(home, [memory.looked], 600.0, count=100, rng=random.Random(0))
    assert sum(q.truth for q in questions) == len(questions) / 2        # as many yes as no
    now = home.presence_at(600.0)
    assert all((q.label in now[q.room]) == q.truth for q in questions)
    assert Question(obj.label, target_room, True, moved=True) in questions
    assert Question(obj.label, source, False, moved=True) in questions   # its no question is the room it left


def test_questions_are_capped_balanced_and_changed_answers_come_first():
    fleet = make_fleet_home(1000, 6, robots=3, budget_share=0.5, profile=ROBOT)
    memories = [fleet.home.explore(e, NearestUnlooked()) for e in fleet.explorers]
    questions = make_questions(fleet.home, [m.looked for m in memories], fleet.question_s, 20, random.Random(0))
    assert len(questions) == 20 and sum(q.truth for q in questions) == 10
    everything = make_questions(fleet.home, [m.looked for m in memories], fleet.question_s, 1000, random.Random(0))
    changed = [q for q in everything if q.moved]
    assert changed, "people's moves change some answers"
    assert sum(q.moved for q in questions) >= min(len(changed) // 2, 10)
    assert len({e.start_room for e in fleet.explorers}) == 3 and len({e.fov_deg for e in fleet.explorers}) == 3


# ---- answers and aggregators --------------------------------------------------------------------

def test_majority_vote_and_its_ties():
    assert majority_vote([answer("a", True), answer("b", True), answer("c", False)])
    assert not majority_vote([answer("a", False), answer("b", True), answer("c", False)])
    assert majority_vote([answer("a", True, 0.9), answer("b", False, 0.3)])        # a tie: mean p(yes) 0.6
    assert not majority_vote([answer("a", True, 0.6), answer("b", False, 0.1)])    # mean 0.35
    liar = answer("a", True, 0.8).inverted()
    assert not liar.yes and liar.p_yes == pytest.approx(0.2)


def test_the_latest_look_trusts_the_robot_that_looked_last_and_votes_when_none_did():
    def looked(robot, yes, since_s, p=None):
        return RobotAnswer(robot, yes, float(yes) if p is None else p, True, since_s, saw=yes)

    # Two robots that never looked into the room say no; the one that did saw a mug there.
    alone = [looked("a", True, 60.0), answer("b", False, looked=False), answer("c", False, looked=False)]
    assert latest_look(alone) and not majority_vote(alone)
    # The newer look wins over the older, whatever the count.
    assert not latest_look([looked("a", True, 600.0), looked("b", True, 900.0), looked("c", False, 30.0)])
    # Nobody looked: the vote. Robots that looked at the same moment: their vote, a tie to the surer.
    assert latest_look([answer("a", True, looked=False), answer("b", True, looked=False), answer("c", False, looked=False)])
    assert not latest_look([looked("a", True, 60.0, p=0.6), looked("b", False, 60.0, p=0.1), looked("c", True, 90.0)])
    decision = FleetDecision(None, confidence=False, rule="latest_look")
    assert decision.decide(Question("mug", "kitchen"), alone) == (True, "latest look")
    assert FleetDecision(None, confidence=False, rule="vote").decide(Question("mug", "kitchen"), alone) == \
        (False, "majority vote")


def test_the_evidence_bound_answers_each_kind_of_evidence_by_its_commoner_truth():
    saw = (RobotAnswer("a", True, 1.0, True, 60.0, saw=True), answer("b", False, looked=False))
    missed = (answer("a", False), answer("b", False, looked=False))
    nobody = (answer("a", False, looked=False), answer("b", False, looked=False))
    # Seen there: yes twice, moved away once. Looked and missed: a thing shut in a cupboard, and one not there.
    asked = [(saw, True), (saw, True), (saw, False), (missed, True), (missed, False), (nobody, True)]
    examples = [Example(Question("mug", f"room_{i}", truth), answers) for i, (answers, truth) in enumerate(asked)]
    # No rule over what the robots saw tells the moved mug or the cupboard apart: 4 of 6 at best.
    assert evidence_bound(examples) == pytest.approx(66.67)
    assert evidence_bound([]) == 0.0


def test_a_robot_answers_from_its_own_memory():
    memory = RobotMemory("robot_2")
    memory.look("kitchen", ["mug", "coffee_table"], 0.0)
    policy = ScriptedPolicy([{"fits": True, "p": 0.8}, {"fits": False, "p": 0.1}])
    answerer = FleetAnswerer(policy, ["kitchen", "bathroom"], confidence=True)
    got = answerer.answer(memory, Question("mug", "kitchen"), now_s=300.0)
    assert got == RobotAnswer("robot_2", True, 0.8, True, 300.0, True, saw_elsewhere=False)
    elsewhere = answerer.answer(memory, Question("mug", "bathroom"), now_s=300.0)
    assert elsewhere == RobotAnswer("robot_2", False, 0.1, False, None, False, saw_elsewhere=True)
    system, user = policy.prompts[0]
    assert "kitchen (last looked 5 min ago): coffee table, mug" in system["content"]
    assert "bathroom: not looked into" in system["content"]
    # the room asked about is put beside the question, so a small model need not find it in the list
    assert user["content"].startswith("When you last looked into the kitchen (5 min ago), you saw: coffee table, mug.\n"
                                      "Is there a mug in the kitchen?")
    assert policy.prompts[1][1]["content"].startswith("You have not looked into the bathroom.\n")
    assert answerer.usage.calls == 2
    plain = FleetAnswerer(ScriptedPolicy([{"fits": True, "p": 0.8}]), ["kitchen"])   # without: yes is 1
    assert plain.answer(memory, Question("mug", "kitchen"), now_s=300.0).p_yes == 1.0


def test_questions_in_words_and_where_a_thing_was_seen_newest_first():
    rooms = ["kitchen", "living_room"]
    assert read_question("Is there a coffee mug in the Living Room?", rooms) == Question("coffee_mug", "living_room")
    assert read_question("where are my keys", rooms) == Question("keys", "")
    with pytest.raises(ValueError, match="no room 'garage'"):
        read_question("Is there a mug in the garage?", rooms)
    one, two = RobotMemory("robot_1"), RobotMemory("robot_2")
    one.look("kitchen", ["mug"], 0.0)
    two.look("living_room", ["mug", "lamp"], 240.0)
    found = sightings([one, two], "mug", 300.0)
    assert [(s.robot, s.room) for s in found] == [("robot_2", "living_room"), ("robot_1", "kitchen")]
    assert sightings_text("mug", found) == ("robot_2 saw a mug in the living room 1 min ago; "
                                           "robot_1 saw a mug in the kitchen 5 min ago.")
    assert sightings_text("vase", sightings([one, two], "vase", 300.0)) == "No robot has seen a vase."


def test_a_debate_goes_round_the_robots_and_ends_in_their_final_majority():
    memories = [RobotMemory(f"robot_{i}") for i in (1, 2, 3)]
    memories[0].look("kitchen", ["mug"], 0.0)
    memories[1].look("kitchen", [], 0.0)
    memories[1].look("bathroom", ["mug"], 60.0)
    first = [answer("robot_1", True), answer("robot_2", False), answer("robot_3", False)]
    turns = [{"say": f"turn {i}"} for i in range(6)]
    finals = [{"fits": True, "p": 0.9}, {"fits": True, "p": 0.7}, "not json"]
    policy = ScriptedPolicy([*turns, *finals])
    result = Debate(policy, ["kitchen", "bathroom"], rounds=2).decide(Question("mug", "kitchen"), memories, first, 180.0)
    assert [robot for robot, _ in result.transcript] == ["robot_1", "robot_2", "robot_3"] * 2
    assert result.answer                                   # two of three now say yes
    assert result.finals[2] == first[2]                     # an unreadable final answer keeps the first
    last_turn = policy.prompts[5][1]["content"]
    assert "robot_1: turn 0" in last_turn and "robot_2: turn 4" in last_turn
    assert "Your first answer was no" in policy.prompts[1][0]["content"]
    # each robot talks from what it knows of the room asked about, and where else it saw the thing
    systems = [policy.prompts[i][0]["content"] for i in range(3)]
    assert "When you last looked into the kitchen (3 min ago), you saw: mug." in systems[0]
    assert "you saw: nothing. You saw a mug in the bathroom (2 min ago)." in systems[1]
    assert "You have not looked into the kitchen." in systems[2]


def test_the_model_picks_the_next_room_and_a_reply_naming_no_room_falls_back_to_coverage():
    memory = RobotMemory("robot_1")
    memory.look("hallway", [], 0.0)
    options = {"kitchen": 12.0, "living_room": 8.0}
    picked = ModelGuided(ScriptedPolicy([{"room": "kitchen"}]), ["hallway", "kitchen", "living_room"])
    assert picked.next_room(memory, "hallway", options, 6.0) == "kitchen"
    confused = ModelGuided(ScriptedPolicy([{"room": "garage"}, {"room": "attic"}]), ["hallway"])
    assert confused.next_room(memory, "hallway", options, 6.0) == "living_room"   # nearest not looked into
    assert NearestUnlooked().next_room(memory, "hallway", {}, 6.0) is None


def synthetic_examples(count=60, seed=0):
    """robot_1 lies, robot_2 is right, robot_3 guesses: a vote is poor, a model can learn whom to trust."""
    rng = random.Random(seed)
    examples = []
    for index in range(count):
        truth = index % 2 == 0
        answers = (answer("robot_1", not truth), answer("robot_2", truth, saw=truth),
                   answer("robot_3", rng.random() < 0.5))
        examples.append(Example(Question(f"thing_{index % 7}", f"room_{index % 3}", truth), answers))
    return examples


@pytest.mark.parametrize("learner", ["xgboost", "random_forest", "decision_tree", "logistic_regression", "mlp"])
def test_a_central_answer_model_learns_whom_to_trust_where_a_vote_cannot(learner):
    examples = synthetic_examples()
    vote = sum(majority_vote(e.answers) == e.question.truth for e in examples) / len(examples)
    learned = cross_validate(examples, learner, "answers", seed=1)
    accuracy = sum(p == e.question.truth for p, e in zip(learned.predictions, examples)) / len(examples)
    assert accuracy >= 0.9 > vote
    assert max(learned.importance, key=learned.importance.get) in ("robot_1 says yes", "robot_2 says yes")


def test_the_robot_state_features_are_the_papers_and_five_more_a_robot():
    examples = synthetic_examples()
    model = CentralAnswerModel("decision_tree", "robot_state").fit(examples)
    assert model.matrix(examples[:1]).shape == (1, 2 + 3 + 3 * 5)
    unseen = Example(Question("never_asked", "room_0"), examples[0].answers)
    assert model.matrix([unseen])[0][0] == -1


def test_a_central_answer_model_refuses_too_little_data_and_says_how_much_it_has():
    with pytest.raises(InputError, match="at least 5 questions whose answer is yes.*there are 4 and 4"):
        CentralAnswerModel("random_forest").fit(synthetic_examples(count=8))
    with pytest.raises(InputError, match="learner 'svm'"):
        CentralAnswerModel("svm")


def freshest_knows(count=80, robots=3, seed=0, same_fleet=False):
    """Questions where only the robot that looked into the room last is right (it saw what is
    there now): the others looked earlier and answer the opposite. Unless `same_fleet`, the
    robots' names and order vary."""
    rng = random.Random(seed)
    examples = []
    for index in range(count):
        truth = index % 2 == 0
        names = [f"robot_{i}" for i in range(1, robots + 1)] if same_fleet else \
            rng.sample([f"robot_{i}" for i in range(1, 9)], robots)
        fresh = rng.randrange(robots)
        answers = tuple(RobotAnswer(name, truth if i == fresh else not truth, 0.5, True,
                                    30.0 if i == fresh else 600.0 + 60 * i, truth if i == fresh else not truth)
                        for i, name in enumerate(names))
        examples.append(Example(Question(f"thing_{index % 5}", f"room_{index % 4}", truth), answers))
    return examples


def test_pooled_features_learn_to_trust_the_last_robot_to_look_in_any_fleet():
    model = CentralAnswerModel("decision_tree", "pooled").fit(freshest_knows(robots=3))
    # Another home's questions, asked of four robots with other names: the vote is wrong on every one.
    other_fleet = freshest_knows(count=20, robots=4, seed=7)
    assert not any(majority_vote(e.answers) == e.question.truth for e in other_fleet)
    assert model.predict(other_fleet) == [e.question.truth for e in other_fleet]
    shuffled = [Example(e.question, tuple(reversed(e.answers))) for e in other_fleet]
    assert (model.matrix(shuffled) == model.matrix(other_fleet)).all()


def test_a_robot_by_robot_model_given_another_fleet_size_says_so_and_the_fleet_votes(tmp_path):
    examples = freshest_knows(robots=3, same_fleet=True)
    with pytest.raises(InputError, match="learnt from 3 robots' answers and is given 2"):
        CentralAnswerModel("decision_tree", "robot_state").fit(examples).predict([Example(
            examples[0].question, examples[0].answers[:2])])
    results = tmp_path / "dev.json"
    results.write_text(json.dumps({"homes": [{"seed": 4, "examples": [example_record(e) for e in examples]}]}))
    decision = FleetDecision(AnswerModelSettings(examples=[str(results)], learner="decision_tree",
                                                 features="robot_state"), confidence=False, rule="vote")
    two = (answer("a", True), answer("b", True))
    assert decision.decide(Question("mug", "kitchen"), two) == (
        True, "majority vote (the answer model learnt from 3 robots' answers and is given 2; the pooled features "
              "take any number)")


def test_an_answer_model_learns_from_bench_results_and_a_broken_file_is_named_with_the_question(tmp_path):
    examples = freshest_knows()
    good = tmp_path / "dev.json"
    # Two homes of one seed, of 4 and 8 rooms.
    good.write_text(json.dumps({"homes": [{"seed": 3, "rooms": 4, "examples": [example_record(e) for e in examples[:40]]},
                                          {"seed": 3, "rooms": 8, "examples": [example_record(e) for e in examples[40:]]}]}))
    training = load_examples([good])
    assert training.seeds == {3} and len(training.homes) == 2 and training.examples == examples
    decision = FleetDecision(AnswerModelSettings(examples=[good.name], learner="decision_tree"), False,
                             lambda path: tmp_path / path, rule="vote")
    assert not decision.problem and "decision_tree, pooled features, 80 questions from 2 homes" in decision.name
    broken = json.loads(good.read_text())
    broken["homes"][1]["examples"][2]["answers"][0]["p_yes"] = 1.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken))
    decision = FleetDecision(AnswerModelSettings(examples=[str(bad)]), confidence=False, rule="latest_look")
    assert decision.model is None and "bad.json: home 2, question 3: ('answers', 0, 'p_yes')" in decision.problem
    assert decision.decide(Question("mug", "kitchen"), (answer("a", True), answer("b", False, p=0.2))) == \
        (True, "latest look")
    (tmp_path / "old.json").write_text(json.dumps({"homes": [{"seed": 1}]}))
    with pytest.raises(InputError, match="old.json: no questions with their answers in it"):
        load_examples([tmp_path / "old.json"])
    with pytest.raises(ValueError, match="'svm': there are xgboost"):
        AnswerModelSettings(examples=["x.json"], learner="svm")


def test_an_answer_model_that_learnt_yes_or_no_is_not_given_the_models_probabilities(tmp_path):
    # A bench run without --confidence: each robot's p(yes) is 1 or 0.
    results = tmp_path / "dev.json"
    results.write_text(json.dumps({"setup": {"confidence": False},
                                   "homes": [{"seed": 3, "examples": [example_record(e) for e in freshest_knows(same_fleet=True)]}]}))
    pooled = FleetDecision(AnswerModelSettings(examples=[str(results)]), confidence=True, rule="vote")
    assert pooled.model is None and pooled.name == "majority vote"
    assert ("robots answered yes or no only and this fleet's answer with the model's probability of yes; the pooled "
            "features use that probability") in pooled.problem
    # The paper's features use the yes/no alone; and a fleet that answers yes/no takes the pooled model.
    assert FleetDecision(AnswerModelSettings(examples=[str(results)], features="answers"), confidence=True,
                         rule="vote").model
    assert FleetDecision(AnswerModelSettings(examples=[str(results)]), confidence=False, rule="vote").model


# ---- the benchmark ------------------------------------------------------------------------------

def test_the_fleet_bench_runs_with_scripted_answers_and_writes_results(tmp_path):
    replies = tmp_path / "replies.yaml"
    # Every answer a yes with p 0.6: the vote is right half the time; the models must match or beat it.
    replies.write_text(json.dumps([{"fits": True, "p": 0.6}] * (3 * 12)))
    assert main(["bench", "fleet", "--sizes", "4", "--seeds", "3", "--questions", "12", "--debate-questions", "0",
                 "--learners", "decision_tree", "--llm", "scripted", "--replies", str(replies),
                 "--out", str(tmp_path), "--name", "fleet"]) == 0
    results = json.loads((tmp_path / "fleet.json").read_text())
    home = results["homes"][0]
    assert home["questions"] == 12 and home["answer_llm_calls"] == 36
    honest, malicious = home["conditions"]["honest"], home["conditions"]["malicious"]
    assert honest["aggregators"]["vote"] == honest["aggregators"]["latest_look"] == 50.0
    assert malicious["robots"]["robot_1"] == 50.0
    assert {"cam_decision_tree", "cam_decision_tree_robot_state"} <= set(honest["aggregators"])
    assert (tmp_path / "fleet.png").exists() and "| 4 | 1 | 50.0 ± 0.0 | 50.0 ± 0.0 | - |" in (tmp_path / "fleet.md").read_text()
    assert results["complete"] and results["setup"]["questions"] == 12
    # Each question counted once by what the fleet knew of it, so a model's gain can be told apart.
    by_evidence = honest["by_evidence"]["cam_decision_tree_pooled"]
    assert list(by_evidence) == ["seen there", "looked, not seen", "nobody looked"]
    assert sum(asked for _, asked in by_evidence.values()) == 12
    assert sum(right for right, _ in honest["by_evidence"]["vote"].values()) == 6
    report = (tmp_path / "fleet.md").read_text()
    assert "## By what the fleet knew" in report and "## How far what the robots saw goes" in report
    assert "| 4 | 12 | 50.0 | 50.0 |" in report    # one home size: its row, and no row of all sizes
    assert "| all |" not in report
    by_change = honest["by_change"]["vote"]     # every robot says yes: the vote is right on the yes questions
    assert by_change["changed"][1] == home["moved_questions"] and by_change["unchanged"][1] == 12 - home["moved_questions"]
    assert by_change["changed"][0] + by_change["unchanged"][0] == 6
    change_rows = [line for line in report.split("## Questions whose answer changed")[1].splitlines() if line.startswith("| 4 |")]
    assert change_rows and change_rows[0].startswith(f"| 4 | {12 - home['moved_questions']} | ")
    # Every scripted answer is a yes, whatever each robot knew, and the table of the robots' answers says so.
    robot_rows = [line.split(" | ") for line in report.split("## Each robot's answers")[1].splitlines()
                  if line.startswith(("| saw it", "| looked", "| never"))]
    assert robot_rows and all(row[2] == "100.0" for row in robot_rows)
    assert sum(int(row[1]) for row in robot_rows) == 3 * 12
    # Its questions train the answer models a second run scores on another home; never on the same one.
    scripted = ["--sizes", "4", "--questions", "12", "--debate-questions", "0", "--learners", "decision_tree",
                "--llm", "scripted", "--replies", str(replies), "--out", str(tmp_path), "--train-on",
                str(tmp_path / "fleet.json")]
    assert main(["bench", "fleet", "--seeds", "3", *scripted, "--name", "same"]) == 2
    assert not (tmp_path / "same.json").exists()
    assert main(["bench", "fleet", "--seeds", "4", *scripted, "--confidence", "--name", "sure"]) == 2
    assert main(["bench", "fleet", "--seeds", "4", *scripted, "--name", "shipped"]) == 0
    shipped = json.loads((tmp_path / "shipped.json").read_text())
    assert shipped["setup"]["trained_on"] == [3]
    assert {"shipped_decision_tree", "shipped_decision_tree_robot_state", "shipped_decision_tree_pooled"} <= \
        set(shipped["homes"][0]["conditions"]["malicious"]["aggregators"])
    assert "best CAM, pooled, other homes" in (tmp_path / "shipped.md").read_text()
    # A finished run scored again from the answers it kept, with models learnt in another home; no model asked.
    rescore = ["bench", "fleet", "--rescore", str(tmp_path / "fleet.json"), "--learners", "decision_tree",
               "--out", str(tmp_path)]
    assert main([*rescore, "--train-on", str(tmp_path / "shipped.json"), "--name", "again"]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    scored = again["homes"][0]["conditions"]["honest"]["aggregators"]
    assert scored["vote"] == 50.0 and scored["cam_decision_tree"] == honest["aggregators"]["cam_decision_tree"]
    assert "shipped_decision_tree_pooled" in scored and again["setup"]["trained_on"] == [4]
    assert "scored again, no model asked" in (tmp_path / "again.md").read_text()
    assert main([*rescore, "--train-on", str(tmp_path / "fleet.json"), "--name", "self"]) == 2
    (tmp_path / "old.json").write_text(json.dumps({"homes": [{"seed": 9, "rooms": 4, "conditions": {}}]}))
    assert main(["bench", "fleet", "--rescore", str(tmp_path / "old.json"), "--out", str(tmp_path)]) == 2
    assert not (tmp_path / "self.json").exists() and not (tmp_path / "old-rescored.json").exists()


@pytest.mark.embedded
@pytest.mark.timeout(600)
def test_the_embedded_model_answers_from_what_the_robot_saw():
    from planner.adapters.llm import LLMSettings, open_policy

    memory = RobotMemory("robot_1")
    memory.look("kitchen", ["mug", "toaster", "plate"], 0.0)
    memory.look("bathroom", ["towel", "toothbrush"], 0.0)
    policy, server = open_policy(LLMSettings(provider="embedded").resolved())
    try:
        answerer = FleetAnswerer(policy, ["kitchen", "bathroom"], confidence=True)
        seen = answerer.answer(memory, Question("mug", "kitchen"), 120.0)
        not_there = answerer.answer(memory, Question("toaster", "bathroom"), 120.0)
        assert seen.yes and seen.saw
        assert seen.p_yes > not_there.p_yes and not not_there.yes
    finally:
        server.stop()
