"""The task planner: an LLM as the policy of a ReAct loop, or (LLM+P) the LLM reads the goals and a
classical planner finds the plan.

Each step the model sees the request, the goals, the robot state and a compact history, and
answers `{"thought": ..., "action": ...}` where the action is one of the actions valid now:
perception calls and skills grounded in what the robot has perceived. Perception results,
skill outcomes, failure reasons and explainer suggestions come back as observations. The task
ends when the goals hold in the world state, when the model gives up, on cancel, or when the
step budget is spent.

With `mode: llm_p` the goals the model read become a PDDL goal, the scene graph the initial state,
and Fast Downward the plan (planner.core.planning.classical); its skills run one by one, and a
failure, or a plan that ran without meeting the goals, plans again from the world as it is now.
`auto` falls back to the ReAct loop when no plan is found (a goal the domain cannot reach from
what the map shows, such as a thing not seen yet) or the replans run out.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from planner.core.ambiguity import ambiguous_goals
from planner.core.asking import LLMUsage, words
from planner.core.calls import format_call, parse_call
from planner.core.errors import PolicyError, RequestImpossible, TaskCanceled
from planner.core.failures import FailureCode
from planner.core.goals import Goal, goal_lacks, goal_met, goal_objects
from planner.core.planning.action_space import ASK_USER, GIVE_UP, PERCEPTION_ACTIONS, SEARCH_MAP, action_schema, allowed_actions
from planner.core.planning.advice import Advice
from planner.core.planning.conversation import Conversation
from planner.core.planning.goal_reading import GOAL_NO_PLAN, reading_of
from planner.core.planning.grounding import Grounder
from planner.core.planning.loop_state import Ending, LoopState, final_ending, may_satisfy, mentioned_ids
from planner.core.planning.model_calls import ModelCalls
from planner.core.planning.pddl import make_domain
from planner.core.planning.plan_checking import PlanChecking
from planner.core.planning.prompts import EXAMPLE_TURNS, SYSTEM_PROMPT, StepReply, spoken_outcome, user_message
from planner.core.planning.recoveries import ActionRecord, find_recoveries
from planner.core.planning.request_reading import RequestReader
from planner.core.planning.settings import PlannerSettings
from planner.core.ports import Parser, Policy, Tools
from planner.core.skills import SkillPlanner
from planner.core.types import EpisodeOutcome, EpisodeResult, FailureInfo, TraceStep

SATISFIED = "the world state satisfies the request"
class TaskPlanner:
    def __init__(self, policy: Policy, tools: Tools, skills: SkillPlanner, settings: PlannerSettings | None = None,
                 on_step: Callable[[TraceStep], None] | None = None, grounder: Grounder | None = None,
                 goal_policy: Policy | None = None, parser: Parser | None = None):
        self.policy = policy
        self.tools = tools
        self.skills = skills
        self.system_prompt = SYSTEM_PROMPT.format(skills="\n".join(
            f"- {name}({', '.join(p.name for p in spec.params)}): {spec.description}"
            for name, spec in skills.library.skills.items()))
        self.settings = settings or PlannerSettings()
        self.domain = make_domain(skills.library) if self.settings.mode != "react" else None
        self.on_step = on_step or (lambda step: None)
        self.calls = ModelCalls(policy, self.settings.max_repairs, self._emit)
        self.cancel_event = self.calls.cancel_event
        self.conversation = Conversation(tools, self.settings.question_timeout_s, self._emit)
        self.plan_checks = PlanChecking(tools, skills, self.settings.plan_check, self._emit)
        self.advice = Advice(tools, skills, self.calls, self._emit)
        # Reading the request may be given to a larger model (goal_policy).
        self.reader = RequestReader(goal_policy or policy, tools, self.settings, grounder, self.calls, self.conversation,
                                    self._emit, parser)

    def _emit(self, kind: str, text: str, calls: tuple[str, ...] = ()) -> None:
        self.on_step(TraceStep(kind, text, calls))

    def cancel(self, reason: str = "canceled by the user") -> None:
        """Stop at the next step, from any thread; the task ends canceled with `reason`."""
        self.calls.cancel(reason)

    def run(self, request: str) -> EpisodeResult:
        started = time.monotonic()
        usage = LLMUsage()
        self.reader.new_task()
        self._emit("request", request)
        acted: list[ActionRecord] = []
        state: LoopState | Ending | None = None  # None: canceled before the goals were read
        try:
            state = self._begin(request, usage, acted)
            ending = state if isinstance(state, Ending) else self._plan_and_act(state, usage)
            if ending is None and isinstance(state, LoopState):
                ending = next((end for step in range(len(acted) + 1, self.settings.step_budget + 1)
                               if (end := self._step(state, step, usage))), None)
        except TaskCanceled as canceled:
            ending = Ending(EpisodeOutcome.CANCELED, str(canceled), len(acted))
        if ending is None:
            ending = Ending(EpisodeOutcome.BUDGET_EXHAUSTED, f"the step budget of {self.settings.step_budget} is spent",
                            self.settings.step_budget)
        success = ending.outcome == EpisodeOutcome.SUCCEEDED
        recoveries = find_recoveries(acted, success, self.tools.scene())
        if recoveries:
            self.tools.learn(request, recoveries)
        if success:
            self.plan_checks.record(request, acted)
        result = EpisodeResult(success, ending.outcome, ending.summary, ending.steps, usage.calls, usage.prompt_tokens,
                               usage.completion_tokens, time.monotonic() - started,
                               state.verdict if isinstance(state, LoopState) else None)
        self._emit("result", f"{ending.outcome}: {ending.summary} ({ending.steps} steps, {result.llm_calls} LLM calls, "
                             f"{result.prompt_tokens}+{result.completion_tokens} tokens, {result.seconds:.1f} s)")
        self.conversation.say(spoken_outcome(ending.outcome, ending.summary, ending.steps))
        return result

    def _begin(self, request: str, usage: LLMUsage, acted: list[ActionRecord]) -> LoopState | Ending:
        """The goals read from the request, ambiguities settled, and a first look around; or why
        the task ends before its first step."""
        if not self.tools.wait_until(lambda scene: scene.robot is not None, self.settings.robot_state_wait_s,
                                     self.cancel_event):
            self._emit("error", "the robot state is not known (nothing received on /robot/state)")
            return Ending(EpisodeOutcome.ERROR, "the robot state is unknown", 0)
        request = self.reader.mended(request)
        if (refusal := self.skills.request_refusal(request, self.tools.scene())) is not None:
            return Ending(EpisodeOutcome.REFUSED, refusal, 0)
        try:
            goals, grounding = self.reader.goals(request, usage)
        except RequestImpossible as why:
            return Ending(EpisodeOutcome.IMPOSSIBLE, str(why), 0)
        except PolicyError as error:
            self._emit("error", f"could not understand the request: {error}")
            return Ending(EpisodeOutcome.ERROR, str(error), 0)
        # Read in the map's words, as the goals were: "the desk lamp from the side table" is a table lamp
        # there, not one on the desk (a development home fetched the one on the desk and said Done.).
        scene = self.tools.scene()
        for question in ambiguous_goals(grounding.text if grounding else request, goals, scene,
                                        lambda thing: self.skills.can_take(thing, scene)):
            goals[question.goal] = goals[question.goal].model_copy(update={"object_id": self.conversation.which(question)})
        self._emit("goal", "; ".join(str(g) for g in goals))
        if (refusal := next(filter(None, (self.skills.goal_refusal(goal, scene) for goal in goals)), None)):
            return Ending(EpisodeOutcome.REFUSED, refusal, 0)
        # The robot looks around where it stands before the first step.
        room = self.tools.scene().known_robot.room
        state = LoopState(request, goals, frozenset(g.object for g in goals if g.object), acted, seen_room=room,
                          explored={room}, grounding=grounding)
        view = self.tools.perceive("get_objects_in_room", [room], state.focus)
        state.known |= set(view.entities)
        state.history.latest = [view.text]
        self._ask_fleet(state)
        return state

    def _ask_fleet(self, state: LoopState) -> None:
        """Where the other robots saw a goal's thing when this robot's map no longer knows where one
        is (each it knew of was found missing): asked once a thing, before the robot goes searching
        the house for it."""
        scene = self.tools.scene()
        for label in sorted({g.object for g in state.goals if g.object and goal_lacks(g, scene)} - state.asked_fleet):
            state.asked_fleet.add(label)
            told = self.tools.where_seen(label)
            if told is not None:
                self._emit("fleet", told)
                state.history.latest.append(f"The other robots, asked where a {words(label)} is: {told}")

    def _plan_and_act(self, state: LoopState, usage: LLMUsage) -> Ending | None:
        """LLM+P: plan with the classical planner and carry the plan out, planning again from the
        world as it is after a failure. None hands the task to the ReAct loop (mode auto)."""
        if self.domain is None:
            return None
        # Here, not at the top: unified-planning and its engines load in seconds, and the default
        # ReAct mode never needs them.
        from planner.core.planning.classical import plan_goals
        for attempt in range(self.settings.replan_limit + 1):
            if self.cancel_event.is_set():
                return Ending(EpisodeOutcome.CANCELED, self.calls.cancel_reason, len(state.acted))
            scene = self.tools.scene()
            if all(goal_met(goal, scene) for goal in state.goals):
                return self._done(state)
            if any(scene.entity(o).status == "missing" for goal in state.goals for o in goal_objects(goal, scene)):
                # A plan needs to know where things are: a goal object not seen where it was mapped
                # (moved while the robot was away) is looked for in the room first.
                self._act_observed(state, format_call("get_objects_in_room", [scene.known_robot.room]), usage)
                scene = self.tools.scene()
            # A call that failed as often as ReAct tolerates (a gripper that keeps slipping) is planned around,
            # and one for a thing higher or lower than the arms work at once, with every arm.
            avoid = tuple(dict.fromkeys([*(a for a, n in state.failures.items() if n >= self.settings.repeat_failure_limit),
                                         *self._beyond_the_arms(state)]))
            outcome = plan_goals(self.domain, self.skills, scene, state.goals, self.settings.plan_engine,
                                 self.settings.plan_timeout_s, avoid)
            self._emit("problem", outcome.problem)
            if not outcome.found:
                self._emit("plan", f"{outcome.status} ({outcome.engine}, {outcome.seconds:.2f} s): {outcome.reason}")
                if outcome.status == "no_plan" and not state.reread:
                    try:
                        if self._read_goals_again(state, outcome.reason, usage):
                            continue
                    except RequestImpossible as why:
                        return Ending(EpisodeOutcome.IMPOSSIBLE, str(why), len(state.acted))
                    except PolicyError as error:
                        self._emit("error", f"could not read the request again: {error}")
                # What was planned around says why better than no plan does ("vase_1 is 1.35 m above the floor").
                failed = [r.failure.reason for r in state.acted if r.failure is not None and r.action in avoid]
                reason = f"{failed[-1]}, and no other way reaches the goal" if failed else outcome.reason
                return self._without_plan(state, reason, outcome.status)
            whole = " over the whole map" if outcome.full_state else ""
            whole += f", avoiding {', '.join(avoid)}" if avoid else ""
            whole += f" (the shortest plan took over {self.settings.plan_timeout_s:g} s to prove: the first found)" \
                if outcome.shortest_timed_out else ""
            self._emit("plan", f"{'replanned' if attempt else 'planned'}{whole} in {outcome.seconds:.2f} s "
                               f"({outcome.engine}): {'; '.join(outcome.calls) or 'nothing to do'}", tuple(outcome.calls))
            ending = self.plan_checks.check(state, outcome.calls, scene) or self._carry_out(state, outcome.calls, usage)
            if ending is not None:
                return ending
            if self._confirm(state.goals):
                return self._done(state)
        return self._without_plan(state, f"the goals are still not met after {self.settings.replan_limit} replans",
                                  "replans")

    def _beyond_the_arms(self, state: LoopState) -> list[str]:
        """The calls that failed for a height the arms do not work at, with each arm: no arm and no
        second try changes where a thing stands (a plan the domain thought possible, since it knows
        the height of the top a thing is on, not of the thing: before, four tries and out of replans)."""
        arms = self.skills.robot.arm_names
        calls: list[str] = []
        for record in state.acted:
            if record.failure is not None and record.failure.code == FailureCode.OUT_OF_WORKSPACE:
                name, args = parse_call(record.action)
                calls += [format_call(name, [*args[:-1], arm]) for arm in arms] if args and args[-1] in arms \
                    else [record.action]
        return calls

    def _carry_out(self, state: LoopState, calls: list[str], usage: LLMUsage) -> Ending | None:
        """A plan's calls one by one up to the first failure; how the task ends if it must end now."""
        for call in calls:
            if self.cancel_event.is_set():
                return Ending(EpisodeOutcome.CANCELED, self.calls.cancel_reason, len(state.acted))
            failure = self._act_observed(state, call, usage)
            if failure is not None:
                return final_ending(failure, len(state.acted))
        return None

    def _read_goals_again(self, state: LoopState, why: str, usage: LLMUsage) -> bool:
        """Once per task, when no plan reaches the goals: the model reads the request again, told
        why and, after a failure, what past cases advise, since the reading itself may be what is
        wrong. Whether it gave other goals that pass the checks (they replace the old ones)."""
        state.reread = True
        failed = [(record, record.failure) for record in state.acted if record.failure is not None]
        told = ""
        if failed:
            record, failure = failed[-1]
            told = f" The robot's last failure: {record.action} failed: {failure.reason}."
            told += f' Past cases advise: "{record.suggestion}".' if record.suggestion else ""
        reader, goals = self.reader.read_again(state.request, state.grounding, state.goals,
                                               GOAL_NO_PLAN.format(why=why, failure=told), usage)
        if goals == state.goals or not self.reader.goals_fit(reader, goals, usage)[0]:
            return False
        state.goals = goals
        state.focus = frozenset(g.object for g in goals if g.object)
        self._emit("goal", f"read again: {reading_of(goals)}")
        return True

    def _act_observed(self, state: LoopState, action: str, usage: LLMUsage) -> FailureInfo | None:
        """An action of a plan, noted in the loop state as ReAct notes its own (what it reads if it
        takes over); its failure, if it failed."""
        situation = state.arrive(self.tools.scene(), self.skills.robot.reach_m)
        observation, failed = self._act(action, state.focus, state.request, usage, state.acted)
        self._observe(state, situation, action, observation, failed)
        return state.acted[-1].failure

    def _done(self, state: LoopState) -> Ending:
        if not state.acted:
            return Ending(EpisodeOutcome.SUCCEEDED, f"as I read the request, {reading_of(state.goals)} is so already", 0)
        return Ending(EpisodeOutcome.SUCCEEDED, SATISFIED, len(state.acted))

    def _without_plan(self, state: LoopState, reason: str, status: str) -> Ending | None:
        if self.settings.mode == "auto":
            self._emit("plan", "handing the task to the ReAct loop")
            state.history.latest.append(f"The planner found no plan: {reason}.")
            return None
        outcome = {"no_plan": EpisodeOutcome.IMPOSSIBLE, "replans": EpisodeOutcome.BUDGET_EXHAUSTED}.get(
            status, EpisodeOutcome.ERROR)
        return Ending(outcome, reason, len(state.acted))

    def _step(self, state: LoopState, step: int, usage: LLMUsage) -> Ending | None:
        """One thought and action; how the task ended, or None while it goes on."""
        if self.cancel_event.is_set():
            return Ending(EpisodeOutcome.CANCELED, self.calls.cancel_reason, step - 1)
        scene = self.tools.scene()
        goals = state.goals
        if all(goal_met(goal, scene) for goal in goals):
            if step == 1:
                # Nothing was done: say what was understood, so a misreading ("throw the cup" as the cup
                # on the counter, where it is) is not told as a job done.
                return Ending(EpisodeOutcome.SUCCEEDED, f"as I read the request, {reading_of(goals)} is so already", 0)
            return Ending(EpisodeOutcome.SUCCEEDED, SATISFIED, step - 1)
        situation = state.arrive(scene, self.skills.robot.reach_m)
        withdrawn = state.withdrawn(situation, any(goal_lacks(goal, scene) for goal in goals),
                                    self.settings.repeat_failure_limit)
        actions = allowed_actions(scene, state.known, withdrawn, self.skills, goals, state.explored)
        if not actions:  # an empty choice is no schema a server accepts (llama.cpp crashed on one)
            return Ending(EpisodeOutcome.IMPOSSIBLE, "every action possible here has been tried without reaching "
                                                     "the goals", step - 1)
        history = state.history
        prompt = user_message(state.request, situation[0], list(situation[1]),
                              history.done_text(self.settings.history_steps), history.latest, actions)
        try:
            reply = self._decide(prompt, actions, usage)
        except PolicyError as error:
            self._emit("error", f"the planner's model failed: {error}")
            return Ending(EpisodeOutcome.ERROR, str(error), step)
        if reply is None:
            history.latest = ["The last reply was not valid; answer with one of the valid actions."]
            return None
        self._emit("thought", reply.thought)
        if reply.action == GIVE_UP:
            return Ending(EpisodeOutcome.IMPOSSIBLE, reply.thought, step)
        if reply.action == ASK_USER:
            answer = self.conversation.ask(reply.question)
            history.latest = [f"The user answered: {answer}" if answer else "The user did not answer."]
            history.done.append(f"{ASK_USER}: asked")
            state.asked = True
            return None
        # The query travels in the call, so the trace and the history show what was searched for.
        action = format_call("search_map", [reply.query.strip() or state.request]) if reply.action == SEARCH_MAP \
            else reply.action
        declined = self.plan_checks.check_first_steps(state, action)
        if declined is not None:
            return declined
        observation, failed = self._act(action, state.focus, state.request, usage, state.acted)
        final = final_ending(state.acted[-1].failure, step)
        if final is not None:
            return final
        self._observe(state, situation, reply.action, observation, failed)
        if not failed and may_satisfy(reply.action, goals, self.tools.scene()) and self._confirm(goals):
            return Ending(EpisodeOutcome.SUCCEEDED, SATISFIED, step)
        return None

    def _observe(self, state: LoopState, situation: tuple, action: str, observation: str, failed: bool) -> None:
        """What an action's outcome changes in what the loop knows and tells the model next; arriving
        in a room, the robot sees what is there."""
        state.note(situation, action, observation, failed, self.settings.repeat_failure_limit)
        scene = self.tools.scene()
        room = scene.known_robot.room
        if not failed and room != state.seen_room:
            view = self.tools.perceive("get_objects_in_room", [room], state.focus)
            self._emit("observation", view.text)
            state.history.latest.append(view.text)
            state.known |= set(view.entities)
            state.seen_room = room
            state.explored.add(room)
        state.known |= mentioned_ids(observation, scene)
        self._ask_fleet(state)

    def read_goals(self, request: str, usage: LLMUsage | None = None) -> list[Goal]:
        """The goals the request is read into, checked as at the start of a task (the calls counted
        in `usage`); RequestImpossible says why there are none, PolicyError why the model gave none."""
        self.reader.new_task()
        return self.reader.goals(self.reader.mended(request), usage or LLMUsage())[0]

    def _decide(self, prompt: str, actions: list[str], usage: LLMUsage) -> StepReply | None:
        messages = [{"role": "system", "content": self.system_prompt}, *EXAMPLE_TURNS,
                    {"role": "user", "content": prompt}]

        def parse(text: str) -> StepReply:
            reply = StepReply.model_validate_json(text)
            if reply.action not in actions:
                raise ValueError(f"action {reply.action!r} is not one of the valid actions now")
            if reply.action == ASK_USER and not reply.question.strip().endswith("?"):
                # A statement put to the user only costs the wait for an answer that cannot come.
                raise ValueError(f"{ASK_USER} needs a \"question\" to the user that ends with '?'")
            return reply

        return self.calls.validated(messages, action_schema(actions), usage, parse)

    # ---- acting -----------------------------------------------------------------------------
    def _act(self, action: str, focus: frozenset[str], request: str, usage: LLMUsage, acted: list[ActionRecord]
             ) -> tuple[str, bool]:
        name, args = parse_call(action)
        acted.append(ActionRecord(action))
        if name in PERCEPTION_ACTIONS:
            self._emit("perception", action)
            seen = self.tools.perceive(name, args, focus)
            usage.add_observed(seen)
            self._emit("observation", seen.text)
            return seen.text, False
        self._emit("skill", action)
        result = self.tools.execute_skill(action)
        if result.success:
            self._emit("observation", result.message)
            return result.message, False
        failure = result.failure or FailureInfo(action, "", FailureCode.FAILED, result.message)
        acted[-1].failure = failure
        self._emit("failure", f"{failure.skill} failed at {failure.command or 'start'} [{failure.code}]: {failure.reason}")
        observation = f"{action} FAILED [{failure.code}]: {failure.reason}"
        suggestion = self.advice.for_failure(failure, request, usage)
        if suggestion is not None:
            acted[-1].case_ids = list(suggestion.case_ids)
            acted[-1].suggestion = suggestion.text
            self._emit("suggestion", f"{suggestion.text} (cases {', '.join(suggestion.case_ids)})")
            # Quoted: advice from past cases, data for the model, not an instruction of the user's.
            observation += f' Suggestion: "{suggestion.text}"'

        return observation, True

    def _confirm(self, goals: list[Goal]) -> bool:
        """Goals are met once perception shows them; give it a moment to see the result of a skill."""
        return self.tools.wait_until(lambda scene: all(goal_met(goal, scene) for goal in goals),
                                     self.settings.confirm_timeout_s, self.cancel_event)
