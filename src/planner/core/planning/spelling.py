"""Typos in a typed request, mended before it is read: "put it on the cpuboard" names nothing the
goal step or the sentence embeddings know, "put it on the cupboard" does. A word is mended only when
neither the word list, the map nor a dictionary of nouns knows it and a common word with its first
letter lies one typo away (a letter left out, added, changed or two swapped), so words the list
lacks ("countertop", "landline") stay as they are."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable

MIN_LETTERS = 5      # shorter words have too many neighbours one typo away ("tabel", "mgu" are left)
COMMON_COUNT = 100   # occurrences in the word list a correction needs ("countertype", 50, is no correction)
WORD = re.compile(r"[A-Za-z]+")


class Speller:
    """pyspellchecker's English word list, loaded on first use (it takes a second), and the nouns
    `is_noun` knows (a lexicon's; the list lacks many names of things)."""

    def __init__(self, is_noun: Callable[[str], bool] | None = None):
        self.is_noun = is_noun or (lambda word: False)
        self._checker = None
        self._lock = threading.Lock()

    @property
    def checker(self):
        with self._lock:
            if self._checker is None:
                from spellchecker import SpellChecker
                self._checker = SpellChecker(distance=1)
            return self._checker

    def mended(self, text: str, vocabulary: Iterable[str] = ()) -> tuple[str, dict[str, str]]:
        """The text with each typo mended, and the words mended (as typed -> as meant). Words of the
        `vocabulary` (the map's labels and rooms) are never typos."""
        known = {word for name in vocabulary for word in WORD.findall(name.lower())}
        fixes: dict[str, str] = {}
        for word in {w.lower() for w in WORD.findall(text) if len(w) >= MIN_LETTERS} - known:
            if word in self.checker or self.is_noun(word):
                continue
            # Typos rarely hit the first letter: "hoodie", which the list lacks, is no "goodie".
            count = self.checker.word_frequency
            meant = max((c for c in self.checker.candidates(word) or () if c[0] == word[0] and c != word),
                        key=lambda c: count[c], default=None)
            if meant is not None and count[meant] >= COMMON_COUNT:
                fixes[word] = meant
        if not fixes:
            return text, {}

        def mend(match: re.Match) -> str:
            typed = match.group()
            meant = fixes.get(typed.lower())
            if meant is None:
                return typed
            return meant.capitalize() if typed[0].isupper() else meant

        return WORD.sub(mend, text), fixes
