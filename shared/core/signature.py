"""A score's signature as an object: its fields in written order, split into the run's part and
the row's own part.

The text form (``judge:<model>|n:10|...|version:<v>``, :func:`shared.core.signature`) is what
results
files and cache keys hold, byte for byte; :meth:`Signature.parse` reads it back. The fields are
``key:value`` pairs separated by ``|`` (a free-form value has its ``|`` escaped,
:func:`shared.dimensions.embedding.signature_field`), so parsing is a split, not a pattern.

The row's own part is what a row adds to the run's signature: its detected language
(``lang``: a property of the row's text, which ``input_hash`` covers) and the language block's
hash (``lang-prompts``) when it is this version's. A resumed run compares :attr:`Signature.run`
of a finished row with the run's signature; a row judged with another version of the language
prompts keeps its ``lang-prompts`` field in ``run`` and so differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..prompts.hashes import language_prompts_hash

ROW_LANGUAGE = "lang"
"""The row's detected language (``|lang:fr``, ``|lang:de>en``); English rows write none."""
LANGUAGE_PROMPTS = "lang-prompts"
"""The hash of the language block the row's prompts carried."""


@dataclass(frozen=True)
class Signature:
    """``fields``: the (key, value) pairs in written order."""

    fields: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, text: str) -> Signature:
        pairs = []
        for part in text.split("|"):
            key, _, value = part.partition(":")
            pairs.append((key, value))
        return cls(tuple(pairs))

    def __str__(self) -> str:
        return "|".join(f"{key}:{value}" for key, value in self.fields)

    def _is_row_field(self, key: str, value: str) -> bool:
        if key == ROW_LANGUAGE:
            return True
        return key == LANGUAGE_PROMPTS and value == language_prompts_hash()

    def without(self, key: str) -> Signature:
        """These fields less every ``key`` field."""
        return Signature(tuple(f for f in self.fields if f[0] != key))

    @property
    def run(self) -> Signature:
        """The run's part: the fields less the row's own (see the module's doc)."""
        return Signature(tuple(f for f in self.fields if not self._is_row_field(*f)))

    @property
    def row(self) -> Signature:
        """The row's own part."""
        return Signature(tuple(f for f in self.fields if self._is_row_field(*f)))


__all__ = ["LANGUAGE_PROMPTS", "ROW_LANGUAGE", "Signature"]
