"""Adapters to the outside world: LLM servers, sentence embeddings, speech, the model store, Nav2 and
MoveIt 2. They import the core only."""
