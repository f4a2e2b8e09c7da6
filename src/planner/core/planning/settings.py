"""The task planner's settings: how it plans, and how it reads a request (the thresholds of the
request reader's checks, each with what it means)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from planner.core.files import StrictModel
from planner.core.plan_check import PlanCheckSettings
from planner.core.planning.pddl import Engine

PlanningMode = Literal["react", "llm_p", "auto"]


class PlannerSettings(StrictModel):
    max_request_chars: int = Field(default=500, ge=20, le=10_000, description="a longer request is refused: it "
                                   "would go into every prompt of its task (a request is a sentence or a few)")
    mode: PlanningMode = Field(default="react", description="react: the LLM chooses every "
                                                   "step; llm_p: it reads the goals and a classical planner plans; "
                                                   "auto: llm_p, and ReAct when no plan is found")
    plan_engine: Engine = Field(default="optimal", description="optimal: the fewest skills, or the first plan "
                                "found when the fewest take longer than plan_timeout_s; satisficing: the first plan "
                                "found")
    plan_timeout_s: float = Field(default=10.0, gt=0, description="time each classical search may take")
    replan_limit: int = Field(default=3, ge=0, description="plans made again after a failure before llm_p gives up "
                              "(auto: hands over to ReAct)")
    step_budget: int = Field(default=30, ge=1)
    max_repairs: int = Field(default=2, ge=0, description="retries of a reply that fails validation")
    history_steps: int = Field(default=12, ge=1, description="most recent actions listed in the prompt")
    confirm_timeout_s: float = Field(default=3.0, ge=0, description="wait for perception to confirm goals")
    robot_state_wait_s: float = Field(default=5.0, ge=0, description="wait for a first robot state at task start")
    repeat_failure_limit: int = Field(default=2, ge=1, description="an action failing this often in a row is withdrawn")
    question_timeout_s: float = Field(default=30.0, ge=0, description="wait for the user to say which object they "
                                                                       "mean; then the nearest is taken")
    mend_typos: bool = Field(default=True, description="a typed word no word list nor map label has, one typo "
                             "from a common word with its first letter, is read as that word ('cpuboard': cupboard)")
    grounding_threshold: float = Field(default=0.8, ge=0, le=1, description="a phrase of the request names a map "
                                       "label of another wording (fridge: refrigerator) when the sentence embeddings "
                                       "are at least this similar; 1 turns grounding off")
    goal_check_threshold: float = Field(default=0.0, ge=0, le=1, description="the goals read are checked by a yes/no "
                                        "question to the model and, when its probability of yes is below this, read "
                                        "again with the doubt said, then put to the user, and declined without an "
                                        "answer; 0: no check")
    need_check_threshold: float = Field(default=0.45, ge=0, le=1, description="a thing the model chose to meet a "
                                        "need the request states ('I'm cold': a blanket) is checked by a yes/no "
                                        "question to the model, and handled as a doubted reading below this "
                                        "probability of yes; 0: no check")
    need_search: bool = Field(default=True, description="a thing the model chose to bring or take that the request "
                              "does not name must also be among the things a search of the map "
                              "(the object finder, where one runs) finds for the request; if not, the reading is "
                              "doubted and read again with what the search found")
    name_check_threshold: float = Field(default=0.45, ge=0, le=1, description="a thing the model took for one the "
                                        "request names by a word the map does not use ('the jumper': the sweater) "
                                        "is checked by a yes/no question to the model, and handled as a doubted "
                                        "reading below this probability of yes; 0: no check")
    name_check_margin: float = Field(default=0.1, ge=0, le=1, description="... and, for a thing, this much more "
                                     "likely than any other of the things most like the word (on development homes "
                                     "a thing the home lacks got at most 0.07 over the next, its other names 0.14 "
                                     "and more) ...")
    name_check_backing: float = Field(default=0.6, ge=0, le=1, description="... unless the sentence embeddings hold "
                                      "the word at least this similar to it ('computer': a laptop 0.71, where the "
                                      "1.5B held a notebook likelier; what the home lacked was at most 0.49 similar "
                                      "to the thing taken for it)")
    grounding_part_threshold: float = Field(default=0.6, ge=0, le=1, description="... or this similar when the "
                                            "phrase is part of the label's name (milk: milk_carton)")
    source_place_similarity: float = Field(default=0.6, ge=0, le=1, description="a place things are taken from "
                                           "that names no furniture ('the book from the bedside table') is the "
                                           "furniture it is this similar to and clearly most like (nightstand 0.68), "
                                           "to pick which thing is meant; 1: never")
    lexicon: Literal["wordnet", "none"] = Field(default="wordnet", description="... and, whatever its similarity, "
                                                "when WordNet holds it a name of exactly one label or room of the map "
                                                "and it is no part of a name the map has ('chest of drawers': dresser, "
                                                "'sitting room': living_room); in a sense WordNet has not seen used "
                                                "('jumper': sweater) only where the name check passes "
                                                "name_check_threshold")
    other_name_similarity: float = Field(default=0.4, ge=0, le=1, description="before a request is given up as "
                                         "asking for what the home lacks, or a reading doubted twice is put to the "
                                         "user, each phrase at least this similar to a map label is put to the model "
                                         "as a yes/no name check; 1: no check")
    other_name_threshold: float = Field(default=0.6, ge=0, le=1, description="... and names that label from this "
                                        "probability of yes, and the request is read again in the map's words (a "
                                        "word the map lacks, less alike to every label, is a choice of the model "
                                        "among the labels most like it, checked the same; so is a label a word "
                                        "names better than the one the model read, by the name check)")
    other_name_agreement: float = Field(default=0.35, ge=0, le=1, description="... or, for a thing (not "
                                        "furniture), from this probability of yes when the label the model chose "
                                        "is also the one the name check singles out among those offered (by "
                                        "name_check_margin; on development homes other names the home had got "
                                        "0.39-0.50 there, and no thing the home lacked stood out so), or when a "
                                        "search of the map for the request finds it (need_search); 1: never")
    room_name_threshold: float = Field(default=0.5, ge=0, le=1, description="a place named where only a room "
                                       "can be ('the counter in the scullery', 'go to the den') that is no "
                                       "room of the map is the room the model chooses for it among the map's, when "
                                       "the name check gives that room at least this probability of yes (on the 42 "
                                       "other names of rooms and 10 rooms a home lacked of `planner bench checks`: "
                                       "62% read as their room, 7% as another, no lacking room read); 1: never")
    plan_check: PlanCheckSettings = Field(default_factory=PlanCheckSettings, description="a plan (in "
                                          "ReAct, its first steps) is scored against the plans that worked for "
                                          "similar requests before it runs")

