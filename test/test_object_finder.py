"""Object finding: the map the model sees, the reply schema, and each workflow's control flow,
with scripted replies."""

import json
import re
from pathlib import Path

import pytest

from planner.adapters.llm import ScriptedPolicy
from planner.core.object_finder import KINDS_EXAMPLE_TURNS, FinderSettings, FitEvidence, ObjectFinder
from planner.core.scene_graph import SceneGraph
from planner.core.voxeland import parse_voxeland

BENCH = Path(__file__).resolve().parents[1] / "bench" / "objects"


def _instance(center, size, results):
    return {"bbox": {"center": center, "size": size}, "n_observations": 10, "results": results}


@pytest.fixture
def scene():
    semantic_map = parse_voxeland({"instances": {
        "table1": _instance([1.0, 1.0, 0.37], [1.2, 0.8, 0.74], {"table": 80.0, "desk": 20.0}),
        "chair1": _instance([1.0, 1.7, 0.45], [0.45, 0.45, 0.9], {"chair": 55.0, "stool": 45.0}),
        "sofa1": _instance([4.0, 3.0, 0.4], [2.0, 0.9, 0.8], {"sofa": 90.0, "bed": 10.0}),
        "cup1": _instance([1.2, 1.0, 0.79], [0.08, 0.08, 0.1], {"cup": 60.0, "mug": 40.0}),
    }})
    return SceneGraph.from_voxeland(semantic_map)


def answer(objects, inferred="a seat", why=None):
    return {"query": inferred, "ids": objects, **({"why": why} if why is not None else {})}


def feedback(verdict, evidence=(), problems="x"):
    return {"verdict": verdict, "problems": problems, "evidence": list(evidence)}


def finder(replies, **settings):
    """The finder that takes the model's answer as it is (no kinds) unless a test asks for them."""
    policy = ScriptedPolicy(replies)
    return ObjectFinder(policy, FinderSettings(**{"kinds": 0, **settings})), policy


@pytest.fixture(scope="module")
def embedder():
    from planner.adapters.embeddings import SentenceEmbedder

    return SentenceEmbedder()


def kinds(*named, need="x"):
    return {"need": need, "kinds": list(named)}


def matcher(replies, embedder, grounder=None, **settings):
    """A finder that matches the kinds it is given; no name checks (whose replies would come first)
    unless a test asks for them."""
    policy = ScriptedPolicy(replies)
    return ObjectFinder(policy, FinderSettings(**{"name_check": 1.0, **settings}), embedder, grounder), policy


def test_the_model_sees_uncertain_labels_positions_sizes_and_relations_and_may_only_name_map_ids(scene):
    find, policy = finder([answer(["chair1"])])
    schemas = []
    policy_complete = policy.complete
    policy.complete = lambda messages, schema: (schemas.append(schema), policy_complete(messages, schema))[1]
    found = find.find(scene, "where can I sit?")
    system = policy.prompts[0][0]["content"]
    assert "chair1: chair 0.55, stool 0.45" in system
    assert "size 0.45x0.45x0.90" in system and "at (" not in system  # relations say what is near what
    assert "cup1: cup 0.60, mug 0.40" in system and "on table1" in system
    assert "near table1" in system.split("chair1:")[1].split("\n")[0]  # furniture beside furniture
    assert set(schemas[0]["properties"]["ids"]["items"]["enum"]) == {"table1", "chair1", "sofa1", "cup1"}
    assert "why" not in schemas[0]["properties"]  # each token costs time; the map gives the reason
    assert policy.prompts[0][1]["content"] == "Query: where can I sit?"
    assert (found.relevant_objects, found.query_achievable, found.calls) == (["chair1"], True, 1)
    assert found.explanation == "chair1: chair 0.55, stool 0.45 | near table1"  # the map's evidence


def test_items_with_opaque_ids_are_shown_by_label_names_and_answers_come_back_as_map_ids():
    semantic_map = parse_voxeland({"instances": {
        "obj1": _instance([1.0, 1.0, 0.45], [1.0, 0.6, 0.9], {"counter": 70.0, "table": 30.0}),
        "obj2": _instance([1.1, 1.0, 0.91], [0.25, 0.03, 0.02], {"knife": 60.0, "spoon": 40.0}),
        "obj3": _instance([3.0, 1.0, 0.91], [0.2, 0.03, 0.02], {"knife": 90.0}),
        "knife_1": _instance([5.0, 1.0, 0.4], [0.2, 0.2, 0.8], {"stool": 90.0}),
    }})
    scene = SceneGraph.from_voxeland(semantic_map)
    find, policy = finder([answer(["knife_2"], inferred="a knife", why="knife_2 is on counter_1")], model_explains=True)
    found = find.find(scene, "something to cut bread with")
    system = policy.prompts[0][0]["content"]
    # A name taken by another item's id is skipped.
    assert "counter_1: counter 0.70, table 0.30" in system and "knife_2: knife 0.60, spoon 0.40" in system
    assert "knife_3: knife 1.00" in system and "stool_1: stool 1.00" in system and "on counter_1" in system
    assert not re.search(r"obj\d", system)
    assert found.relevant_objects == ["obj2"] and found.explanation == "obj2 is on obj1"


def test_the_items_like_a_kind_the_model_names_are_the_answer_and_nothing_fits_when_none_is(scene, embedder):
    find, policy = matcher([kinds("chair", "stool", "sofa", need="a seat")], embedder)
    found = find.find(scene, "somewhere to sit")
    # One call: the kinds, asked without the map (a prompt the same for every query), not chosen from it.
    system = policy.prompts[0][0]["content"]
    assert "name the kinds of household things" in system and "chair1" not in system
    # Worked readings come before the request, as earlier turns of the conversation.
    assert policy.prompts[0][1:-1] == list(KINDS_EXAMPLE_TURNS)
    assert policy.prompts[0][-1]["content"] == "Request: somewhere to sit"
    assert found.relevant_objects[:2] == ["chair1", "sofa1"] and "cup1" not in found.relevant_objects
    assert found.calls == 1 and found.inferred_query == "a seat" and found.query_achievable
    assert [r["role"] for r in found.rounds] == ["kinds", "fit"]
    assert found.rounds[-1]["reply"]["chair1"] == {"fit": 1.0, "label": "chair ~ chair"}

    find, _ = matcher([kinds("piano", "keyboard"), kinds("piano", "grand piano")], embedder)
    found = find.find(scene, "a piano")
    assert found.relevant_objects == [] and not found.query_achievable
    assert [r["role"] for r in found.rounds] == ["kinds", "kinds again", "fit"]  # read again before "nothing fits"
    assert found.explanation == "none of the 4 items shown meets the query"


def test_the_thing_a_query_names_is_found_even_when_the_model_reads_its_name_as_a_need(scene, embedder):
    from planner.core.planning.grounding import Grounder

    find, _ = matcher([kinds("sponge", "mop", need="a tool to clean the table"), kinds("cushion"),
                       kinds("sofa")], embedder, Grounder(embedder))
    found = find.find(scene, "Where is the table?")
    assert found.relevant_objects == ["table1"] and found.rounds[-1]["reply"]["table1"]["label"] == "table named"
    assert find.find(scene, "my couch, please").relevant_objects == ["sofa1"]  # another name, by meaning
    # What the query says the thing is not, or is next to, names no thing asked for: the chair, a
    # little likely a stool, is no answer here.
    assert find.find(scene, "something to sit on that is not a stool").relevant_objects == ["sofa1"]

    # Each word names one label, the longest name said first: paper towels are no towels.
    bathroom = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "towel1": _instance([1.0, 1.0, 0.5], [0.5, 0.1, 0.7], {"towel": 90.0}),
        "roll1": _instance([2.0, 1.0, 0.9], [0.12, 0.12, 0.25], {"paper_towels": 90.0}),
    }}))
    find, _ = matcher([kinds("tissue")], embedder, Grounder(embedder))
    assert find.find(bathroom, "Could you find the paper towels?").relevant_objects == ["roll1"]


def test_before_nothing_fits_the_kinds_are_read_again_and_an_item_fits_by_its_mean_over_both(embedder):
    hall = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "basket1": _instance([1.0, 1.0, 0.2], [0.5, 0.4, 0.4], {"basket": 90.0}),
        "orange1": _instance([2.0, 1.0, 0.8], [0.08, 0.08, 0.08], {"orange": 90.0}),
    }}))
    find, policy = matcher([kinds("hand truck", need="a lifter"), kinds("basket", "bag")], embedder,
                           second_reading=True)
    found = find.find(hall, "help me bring the laundry downstairs")
    assert found.relevant_objects == ["basket1"] and found.calls == 2
    assert [r["role"] for r in found.rounds] == ["kinds", "kinds again", "fit"]
    assert found.rounds[-1]["reply"]["basket1"]["label"] == "basket ~ basket"
    assert "Which things in a home would it show the person?" in policy.prompts[1][0]["content"]
    # The second reading alone does not decide: an orange is fruit, not the apple asked for.
    find, _ = matcher([kinds("apple"), kinds("fruit")], embedder, second_reading=True)
    found = find.find(hall, "the apple, please")
    assert found.relevant_objects == [] and found.calls == 2
    # A first reading that finds something is the only one.
    find, _ = matcher([kinds("basket")], embedder, second_reading=True)
    found = find.find(hall, "a basket")
    assert found.relevant_objects == ["basket1"] and found.calls == 1


def test_a_calibrating_finder_reads_twice_and_its_evidence_gives_the_answer_at_any_threshold(embedder):
    """Calibration sweeps the threshold over evidence kept once: the answer it scores at a threshold
    is the one the finder gives at that threshold."""
    hall = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "basket1": _instance([1.0, 1.0, 0.2], [0.5, 0.4, 0.4], {"basket": 60.0, "box": 30.0}),
        "bag1": _instance([2.0, 1.0, 0.3], [0.4, 0.2, 0.4], {"bag": 90.0}),
        "orange1": _instance([3.0, 1.0, 0.8], [0.08, 0.08, 0.08], {"orange": 90.0}),
    }}))
    replies = [kinds("hand truck", "crate", need="a lifter"), kinds("basket", "bag")]
    find, _ = matcher(list(replies), embedder, second_reading=True)
    calibrating = ObjectFinder(ScriptedPolicy(list(replies) * 2), find.settings, embedder, calibrating=True)
    kept = calibrating.find(hall, "help me bring the laundry downstairs")
    assert kept.calls == 2 and len(kept.evidence.readings) == 2
    record = FitEvidence.from_record(json.loads(json.dumps(kept.evidence.as_record())))
    for threshold in (0.3, 0.45, 0.6, 0.75, 0.9):
        settings = find.settings.model_copy(update={"kind_threshold": threshold})
        live = ObjectFinder(ScriptedPolicy(list(replies)), settings, embedder).find(hall, "help me bring the laundry "
                                                                                          "downstairs")
        assert record.answer(threshold, settings) == live.relevant_objects, threshold
    assert find.find(hall, "help me bring the laundry downstairs").evidence is None   # kept only when calibrating


def test_no_item_fits_by_a_label_the_query_excludes(embedder):
    from planner.core.planning.grounding import Grounder

    kitchen = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "fridge1": _instance([1.0, 1.0, 0.9], [0.7, 0.7, 1.8], {"refrigerator": 60.0, "cabinet": 40.0}),
        "dresser1": _instance([3.0, 1.0, 0.5], [1.0, 0.5, 1.0], {"dresser": 90.0}),
    }}))
    # The model names the excluded kind anyway; the fridge, 40% a cabinet, fits as one without the exclusion.
    find, _ = matcher([kinds("cabinet", "dresser"), kinds("cabinet", "dresser")], embedder, Grounder(embedder))
    assert find.find(kitchen, "any storage unit").relevant_objects == ["dresser1", "fridge1"]
    assert find.find(kitchen, "any storage unit except a cabinet").relevant_objects == ["dresser1"]


def test_a_name_the_embeddings_are_unsure_of_is_the_labels_when_the_model_says_so(embedder):
    from planner.core.planning.grounding import Grounder

    kitchen = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "cabinet1": _instance([1.0, 1.0, 0.45], [0.8, 0.5, 0.9], {"cabinet": 90.0}),
        "sponge1": _instance([1.0, 1.0, 0.3], [0.1, 0.07, 0.04], {"sponge": 90.0}),
        "table1": _instance([3.0, 1.0, 0.37], [1.2, 0.8, 0.74], {"table": 90.0}),
        "sponge2": _instance([3.0, 1.0, 0.76], [0.1, 0.07, 0.04], {"sponge": 90.0}),
        "stove1": _instance([5.0, 1.0, 0.45], [0.6, 0.6, 0.9], {"stove": 90.0}),
        "cup1": _instance([3.2, 1.0, 0.79], [0.08, 0.08, 0.1], {"cup": 90.0}),
    }}))
    # "cupboard" is 0.74 like "cabinet" to the embeddings: under the grounder's 0.8, so the model is asked.
    said_yes, said_no = {"fits": True, "p": 0.72}, {"fits": False, "p": 0.3}
    find, policy = matcher([said_yes, kinds("drawer opener", need="a tool to open the cupboard")], embedder,
                           Grounder(embedder), name_check=0.6)
    found = find.find(kitchen, "The cupboard, please")
    assert found.relevant_objects == ["cabinet1"] and found.calls == 2
    assert {"role": "name checks", "reply": {"cupboard = cabinet": 0.72}} in found.rounds
    assert policy.prompts[0][-1]["content"].startswith('Is "cupboard" another name for a cabinet?')
    find, _ = matcher([said_no, kinds("drawer opener"), kinds("drawer opener")], embedder, Grounder(embedder),
                      name_check=0.6)
    assert find.find(kitchen, "The cupboard, please").relevant_objects == []
    # A holder too: of the two sponges, the one in the cabinet.
    find, _ = matcher([said_yes, kinds("sponge")], embedder, Grounder(embedder), name_check=0.6)
    assert find.find(kitchen, "the sponge in the cupboard").relevant_objects == ["sponge1"]
    # No question on a verb ("cook" is 0.68 like a stove), nor on a kind excluded, often a sibling of
    # what is asked ("mug" is 0.71 like a cup): only the kinds are asked.
    find, policy = matcher([kinds("stove"), kinds("cup")], embedder, Grounder(embedder), name_check=0.6)
    assert find.find(kitchen, "I want to cook").relevant_objects == ["stove1"]
    assert find.find(kitchen, "any cup except a mug").relevant_objects == ["cup1"]
    assert len(policy.prompts) == 2
    # What the query excludes it does not ask for, though its words name it: a cabinet that may be a
    # wardrobe is no place to keep clothes that is not a wardrobe.
    bedroom = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "cabinet1": _instance([1.0, 1.0, 0.9], [1.0, 0.6, 1.8], {"cabinet": 60.0, "wardrobe": 40.0})}}))
    find, policy = matcher([said_yes, kinds("closet"), said_yes, kinds("closet"), kinds("closet")], embedder,
                           Grounder(embedder), name_check=0.6)
    assert find.find(bedroom, "somewhere to keep clothes").relevant_objects == ["cabinet1"]
    assert find.find(bedroom, "somewhere to keep clothes that is not a wardrobe").relevant_objects == []
    assert policy.prompts[0][-1]["content"].startswith('Is "clothes" another name for a wardrobe?')
    # No check asked for: the words alone (name_check 1).
    find, _ = matcher([kinds("drawer opener"), kinds("drawer opener")], embedder, Grounder(embedder))
    assert find.find(kitchen, "The cupboard, please").relevant_objects == []


def test_a_reflected_answers_first_id_counts_more_and_a_superlative_takes_the_biggest_that_fits(scene, embedder):
    def first(query, replies, **settings):
        find, _ = matcher(replies, embedder, **settings)
        return find.find(scene, query).relevant_objects[:2]

    seats = kinds("chair", "sofa")
    assert first("a seat", [seats]) == ["chair1", "sofa1"]  # the kind named first fits best
    reflected = [answer(["sofa1"]), feedback("correct"), seats]  # a workflow that answers from the map
    assert first("a seat", reflected, workflow="self_reflection") == ["sofa1", "chair1"]
    assert first("a seat", reflected, workflow="self_reflection", choice_weight=0.0) == ["chair1", "sofa1"]
    assert first("the biggest seat", [seats]) == ["sofa1", "chair1"]  # both fit about as well: by size
    # Without kinds the model chooses from the map, and its answer is taken as it is.
    assert first("a seat", [answer(["cup1"])], kinds=0) == ["cup1"]


def test_an_unknown_id_is_sent_back_naming_it_and_the_repaired_answer_is_used(scene):
    find, policy = finder([answer(["piano9"]), answer(["sofa1", "chair1", "sofa1"])])
    found = find.find(scene, "where can I sit?")
    assert "'piano9' is not in the map" in policy.prompts[1][-1]["content"]
    assert found.relevant_objects == ["sofa1", "chair1"]  # duplicates dropped, order kept
    assert found.calls == 2 and not found.error


def test_a_reply_that_stays_invalid_ends_with_an_error_and_no_objects(scene):
    find, _ = finder(["not json", answer(["piano9"]), answer(["sofa1"])], max_repairs=1)
    found = find.find(scene, "where can I sit?")
    assert found.relevant_objects == [] and not found.query_achievable
    assert "no valid reply after 1 repairs" in found.error and "'piano9' is not in the map" in found.error


def test_unknown_workflow_and_empty_query_are_refused(scene):
    find, _ = finder([])
    with pytest.raises(ValueError, match="unknown workflow 'magic'"):
        find.find(scene, "a cup", "magic")
    with pytest.raises(ValueError, match="empty"):
        find.find(scene, "  ")


def test_self_reflection_refines_with_every_earlier_round_in_view_and_stops_when_the_answer_holds(scene):
    find, policy = finder([answer(["sofa1"]), feedback("revise", ["sofa1"], "a couch was excluded"),
                           answer(["chair1"]), feedback("correct")], iterations=3)
    found = find.find(scene, "something to sit on that is not a couch", "self_reflection")
    assert found.relevant_objects == ["chair1"]
    assert [r["role"] for r in found.rounds] == ["answer", "feedback", "refinement", "feedback"]
    last = policy.prompts[-1]
    # One conversation: the last feedback call sees the first answer, its feedback and the refinement.
    assert '"sofa1"' in last[2]["content"] and "a couch was excluded" in last[4]["content"]
    assert '"chair1"' in last[6]["content"]


def test_self_reflection_stops_after_its_iterations(scene):
    find, policy = finder([answer(["sofa1"]), feedback("revise", ["chair1"]), answer(["chair1"]),
                           feedback("revise", ["sofa1"]), answer(["sofa1"])], iterations=2)
    found = find.find(scene, "a seat", "self_reflection")
    assert found.calls == 5 and found.relevant_objects == ["sofa1"]


def test_a_refinement_that_keeps_the_answer_ends_the_loop_in_both_reflection_workflows(scene):
    find, _ = finder([answer(["sofa1"]), feedback("revise", ["chair1"]), answer(["sofa1"])], iterations=3)
    found = find.find(scene, "a seat", "self_reflection")
    assert found.calls == 3 and found.relevant_objects == ["sofa1"]
    find, _ = finder([answer(["sofa1"]), feedback("revise", ["chair1"]), answer(["sofa1"])], iterations=3)
    found = find.find(scene, "a seat", "multi_agent")
    assert [r["role"] for r in found.rounds] == ["planner", "critic", "refiner"]


def test_an_empty_answer_stays_empty_when_the_feedback_names_no_evidence(scene):
    find, policy = finder([answer([]), feedback("revise", [], "surely there is a piano somewhere")])
    found = find.find(scene, "the piano", "self_reflection")
    assert found.relevant_objects == [] and not found.query_achievable
    assert found.explanation == "none of the 4 items shown meets the query"
    assert found.calls == 2  # no refinement was asked for


def test_an_empty_answer_gains_only_the_items_the_feedback_gave_as_evidence(scene):
    find, _ = finder([answer([]), feedback("revise", ["chair1"]), answer(["chair1", "sofa1"]), feedback("correct")])
    found = find.find(scene, "a seat that is not a couch", "self_reflection")
    assert found.relevant_objects == ["chair1"] and found.query_achievable


def test_multi_agent_gives_each_agent_its_role_and_the_critic_the_earlier_rounds(scene):
    find, policy = finder([answer(["sofa1"]), feedback("revise", ["chair1"], "not a couch"), answer(["chair1"]),
                           feedback("revise", ["table1"], "too far"), answer(["chair1"])], iterations=2)
    found = find.find(scene, "something to sit on that is not a couch", "multi_agent")
    roles = [r["role"] for r in found.rounds]
    assert roles == ["planner", "critic", "refiner", "critic", "refiner"]
    users = [p[1]["content"] for p in policy.prompts]
    assert users[0].startswith("You are the planner agent")
    assert users[1].startswith("You are the critic agent") and "Earlier rounds" not in users[1]
    assert users[2].startswith("You are the refinement agent") and "not a couch" in users[2]
    assert "Earlier rounds" in users[3] and "not a couch" in users[3]
    # Each agent starts afresh: two messages, the map and its task.
    assert all(len(p) == 2 for p in policy.prompts)
    assert found.relevant_objects == ["chair1"]


def test_the_ensemble_members_read_one_map_another_way_each_and_the_chooser_is_skipped_when_all_agree(scene):
    find, policy = finder([answer(["chair1"])] * 3, ensemble_size=3)
    found = find.find(scene, "a chair", "ensemble")
    assert len({p[0]["content"] for p in policy.prompts}) == 1  # one map text: the server reads it once
    assert len({p[1]["content"] for p in policy.prompts}) == 3
    assert found.calls == 3 and found.relevant_objects == ["chair1"]


def test_the_chooser_sees_the_distinct_answers_unlabelled_and_its_choice_is_the_answer(scene):
    find, policy = finder([answer(["chair1"]), answer(["sofa1"]), answer(["chair1"]),
                           {"choice": 2, "reason": "fits"}], ensemble_size=3)
    found = find.find(scene, "a seat", "ensemble")
    chooser = policy.prompts[-1][1]["content"]
    assert sum(line.startswith("Answer ") for line in chooser.splitlines()) == 2
    assert "member" not in chooser.lower()
    listed = [line for line in chooser.splitlines() if line.startswith("Answer 2:")][0]
    assert found.relevant_objects == json.loads(listed.split(": ", 1)[1])["ids"]


def test_a_large_map_is_narrowed_to_the_items_related_to_the_query_when_the_model_is_shown_it(tmp_path, embedder):
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.bench.objects import load_bench_map

    scene = load_bench_map(BENCH / "maps" / "large_house.json")
    find, policy = finder([answer([])])
    find.similarity = ObjectFinder(policy, embedder=SentenceEmbedder()).similarity
    found = find.find(scene, "I am tired, where can I sit?")
    shown = policy.prompts[0][0]["content"]
    assert found.candidates == 12 and found.map_items == 228
    assert "the 12 items most related to the query, of 228" in shown
    seats = sum(line.split(": ", 1)[1].split(" ")[0] in {"chair", "sofa", "armchair", "stool", "bench"}
                for line in shown.splitlines() if " | " in line)
    assert seats >= 10
    # A map within `narrow_above` is shown whole, the same prompt for every query (cached by the server).
    office = load_bench_map(BENCH / "maps" / "office.json")
    find, policy = finder([answer([]), answer([])], max_candidates=5)
    find.similarity = ObjectFinder(policy, embedder=SentenceEmbedder()).similarity
    first, second = find.find(office, "a seat"), find.find(office, "something to write with")
    assert first.candidates == second.candidates == first.map_items <= 40
    assert policy.prompts[0][0] == policy.prompts[1][0]
    # The kinds are matched without showing the map: every item is looked through.
    find, _ = matcher([kinds("sofa", "armchair")], embedder)
    found = find.find(scene, "I am tired, where can I sit?")
    assert found.candidates == found.map_items == 228 and len(found.relevant_objects) == 5


@pytest.mark.embedded
@pytest.mark.timeout(900)
def test_the_embedded_model_finds_seats_reads_a_negation_and_says_when_nothing_fits():
    from planner.adapters.embeddings import SentenceEmbedder
    from planner.adapters.llm import LLMSettings, open_policy
    from planner.bench.objects import hit, load_bench_map, load_queries, load_truth

    scene = load_bench_map(BENCH / "maps" / "studio.json")
    queries = {q.id: q for q in load_queries(BENCH / "queries.yaml")}
    truth = load_truth(BENCH / "truth" / "studio.yaml", list(queries.values()), scene)
    policy, server = open_policy(LLMSettings(provider="embedded").resolved())
    try:
        find = ObjectFinder(policy, embedder=SentenceEmbedder())
        for query, calls in (("sit", 1), ("sit_not_couch", 1), ("piano", 2)):  # the studio has no piano
            found = find.find(scene, queries[query].text)
            assert not found.error and found.calls == calls  # the kinds (read again before "nothing fits")
            assert hit(found.relevant_objects, truth[query], 1), (query, found)
            assert found.prompt_tokens > 0
    finally:
        server.stop()


def test_a_query_that_names_its_thing_is_not_answered_by_the_substitutes_the_model_adds(embedder):
    from planner.core.object_finder import kinds_asked

    # The model's first kind is what the query's words for the thing say: only kinds said there count.
    assert kinds_asked(["desk", "chair", "office chair"], "a bare desk") == ["desk"]
    assert kinds_asked(["cushion", "pillow"], "the cushions on the sofa") == ["cushion"]
    # A need names no thing, and a kind said only where the query excludes it is no thing asked for.
    assert kinds_asked(["blanket", "sweater"], "I'm cold") == ["blanket", "sweater"]
    assert kinds_asked(["cabinet", "dresser"], "any storage unit") == ["cabinet", "dresser"]
    office = SceneGraph.from_voxeland(parse_voxeland({"instances": {
        "stool1": _instance([1.0, 1.0, 0.35], [0.4, 0.4, 0.7], {"stool": 90.0}),
        "shelf1": _instance([3.0, 1.0, 0.6], [0.8, 0.4, 1.2], {"shelf": 90.0}),
    }}))
    find, _ = matcher([kinds("desk", "stool"), kinds("desk", "table")], embedder)
    found = find.find(office, "a bare desk")
    assert found.relevant_objects == [] and found.calls == 2   # no desk here: the stool is no answer
    find, _ = matcher([kinds("chair", "stool")], embedder)
    assert find.find(office, "somewhere I can sit").relevant_objects == ["stool1"]
