"""The task planner: goal reading, the action space, prompts, recovery mining and the ReAct loop."""
