"""What a `Retriever` searches with, read from the parts that hold it: the search
parameters as the tables are now (`DatabaseParams`), the first stage's settings
(`FirstStage`) and the corpus-wide search's (`CorpusWideSettings`, also set here, each
value checked). `RetrieverSettings` is the Retriever's base class: attributes only, no
search.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sproutrag.params import SearchParams
from sproutrag.search.database_params import DatabaseParams
from sproutrag.search.first_stage import FirstStage
from sproutrag.search.searched import SearchedDocuments


def _searching_setting(name: str) -> property:
    """A Retriever attribute that reads NAME of its `CorpusWideSettings` and sets it (the
    settings replaced, the new value checked)."""

    def put(self, value: Any) -> None:
        self.searching.settings = replace(self.searching.settings, **{name: value})

    return property(lambda self: getattr(self.searching.settings, name), put)


class RetrieverSettings:
    """The settings of a Retriever, read from its DATABASE_PARAMS, FIRST stage and
    SEARCHING (the corpus-wide search), which the Retriever sets up."""

    database_params: DatabaseParams
    first: FirstStage
    searching: SearchedDocuments

    @property
    def encoder(self) -> Any:
        """The query encoder (the database's own unless one was given)."""
        return self.database_params.encoder

    @property
    def weights(self) -> Any:
        """The trained weights file given, or None (the database's own weights)."""
        return self.database_params.weights

    def _resolve(self) -> tuple[SearchParams, Any]:
        """(search parameters, their defaults) for the tables as they are now
        (`DatabaseParams.resolve`)."""
        return self.database_params.resolve()

    @property
    def params(self) -> SearchParams:
        """The tree search's parameters now (see `_resolve`)."""
        return self._resolve()[0]

    @property
    def defaults(self) -> Any:
        """Where the defaults came from (`sproutrag.storage.index_info.SearchDefaults`)."""
        return self._resolve()[1]

    @property
    def beam_width(self) -> int:
        return self.params.beam_width

    @property
    def threshold(self) -> float:
        return self.params.threshold

    @property
    def margin(self) -> float | None:
        return self.params.margin

    @property
    def lexical_weight(self) -> float:
        return self.params.lexical_weight

    @property
    def fills_k(self) -> bool:
        """Whether tree and leaves modes return k units whenever the searched documents
        hold k (`DatabaseParams.fills_k`)."""
        return self.database_params.fills_k

    @property
    def flat_threshold(self) -> float | None:
        """Flat mode cuts only at an explicit threshold."""
        return self.database_params.flat_threshold

    # The corpus-wide search's settings (`SearchedDocuments`), read and set there.
    anchor_leaves = _searching_setting("anchor_leaves")
    link_weight = _searching_setting("link_weight")
    leader_weight = _searching_setting("leader_weight")
    fetch_named = _searching_setting("fetch_named")
    mention_weight = _searching_setting("mention_weight")
    fetch_mentioned = _searching_setting("fetch_mentioned")
    mention_statistics = _searching_setting("mention_statistics")
    long_mention_weight = _searching_setting("long_mention_weight")
    mention_alone = _searching_setting("mention_alone")
    alone_opening_leaves = _searching_setting("alone_opening_leaves")
    dominant_ratio = _searching_setting("dominant_ratio")
    name_free_leaves = _searching_setting("name_free_leaves")

    @property
    def n_docs(self) -> int:
        """Documents a query without doc_ids searches (at least; see `choose_documents`)."""
        return self.first.n_docs

    @property
    def first_stage(self) -> str:
        return self.first.kind

    @property
    def entity_ranking(self) -> bool:
        """Whether the hybrid first stage also ranks by the question's entities."""
        return self.first.entities

    @property
    def ranking_leaders(self) -> int:
        """The first documents of each ranking the hybrid first stage keeps (rule 54)."""
        return self.first.leaders

    @property
    def memory_rows(self) -> int:
        return self.first.memory_rows


__all__ = ["RetrieverSettings"]
