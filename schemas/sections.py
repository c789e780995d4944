"""The settings sections with plain values: chunking, encoding, tree, search, pipeline.

One pydantic model per section of `sproutrag.schemas.settings.Settings` (which also
holds the storage section, whose credentials fall back to the environment, and says
how settings load); every field's default and description is here. A section refuses
fields it does not know.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator


class Section(BaseModel):
    """A settings section: unknown fields are refused, and so is true or false for a
    setting that takes no boolean (pydantic reads `sentences_per_chunk: true` as 1), and
    NaN or infinity for a number (NaN was "should be less than or equal to 1000000")."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN: "a finite number"

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and annotation is not bool and bool not in get_args(
                annotation):
            raise ValueError(f"got {str(value).lower()}: give a value of this setting's type")
        return value


class ChunkingSettings(Section):
    sentences_per_chunk: int = Field(2, ge=1, description="Sentences per evidence unit")
    max_chunk_chars: int = Field(1000, ge=16, description="Longer sentences are cut into pieces")
    within_paragraphs: bool = Field(
        False, description="A chunk never spans a blank line (a lone heading line joins the "
        "paragraph after it)",
    )
    respect_structure: bool = Field(
        True, description="A unit ends where a block ends (blank line, list item, "
        "heading-like line end) and a heading starts a unit, never ends one: no unit "
        "carries the next section's heading (docs/results.md, evidence units; false: a "
        "unit may run past a block end)",
    )
    join_max_chars: int | None = Field(
        600, ge=16, description="Sentences join into one unit only while it stays within "
        "this many characters (a longer sentence is a unit of its own, whole; cut only "
        "above max_chunk_chars): shorter units where sentences are long, for char "
        "precision (docs/results.md, unit shapes); null: sentences join up to "
        "max_chunk_chars",
    )
    lists: bool = Field(
        False, description="With respect_structure: bulleted lines (- * •) start list "
        "items, runs of heading-like lines obey join_max_chars and a list of 3 or more "
        "of them does not join the sentence after it, and lone CR line ends count as line "
        "ends. Off by default: on ContractNLI dev it cost 0.09 unit IE (1.4 SE) "
        "(docs/results.md, units of structured text); true changes the index fingerprint",
    )
    sentence_rules: Literal[1, 2] = Field(
        2, description="How sentences are split. 2: titles and references before a name or "
        "number stay whole (Gen., Tab., Approx.), and a period after a short word or "
        "initials before a lower-case word is no sentence end (5 mg b.i.d. p.o. for, $1.2 "
        "bn. in, Ph.D.) in text that capitalises its sentences, and an opening quote or "
        "bracket after a period starts the sentence it opens. 1: the splitter before "
        "0.11, to keep an index built before it without re-indexing (2 changes the index "
        "fingerprint of a database built before 0.11)",
    )


class EncodingSettings(Section):
    model: str | None = Field(None, description="Model path or name; None = packaged MiniLM-L6")
    device: str | None = Field(
        None, description="cpu, cuda, cuda:N, mps or auto; None / auto = cuda when present. A "
        "device this machine cannot use is refused before a run starts",
    )
    tokens_per_batch: int | None = Field(
        None, ge=512, description="Padded tokens per forward batch; None = 16384 on cuda, "
        "2048 on CPU (bigger CPU batches only stream bigger tensors through memory)",
    )
    threads: int | None = Field(
        None, ge=1, description="torch CPU threads while encoding; None = torch's default "
        "(every core). 1 on a machine shared with other jobs (docs/decisions.md)",
    )
    window_tokens: int = Field(512, ge=32, le=512)
    window_stride: int | None = Field(
        None, ge=16, description="Tokens between window starts; None = window_tokens - 2 "
        "(windows share one chunk; 256 = the half-overlapping windows of before: twice the "
        "window passes, the same shipped retrieval, docs/decisions.md)",
    )
    chunk_max_tokens: int = Field(256, ge=16, le=512)
    embedding_mode: Literal["alone", "context"] = "alone"
    mixed_precision: bool = Field(
        False, description="On cuda, encode under bf16 (or fp16) autocast instead of float32: "
        "no faster for MiniLM, and its trees differ from a CPU's where merges nearly tie "
        "(the index fingerprint then names the precision; docs/decisions.md)",
    )
    weights: str | None = Field(
        None, description="Aggregation weights file; None = the packaged default (or uniform)"
    )

    @field_validator("model", "weights")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        """An empty path named the current folder (a model folder there was used)."""
        if value is not None and not value.strip():
            raise ValueError("an empty path: give a path, or null for the packaged default")
        return value

    @field_validator("device")
    @classmethod
    def _device_named(cls, value: str | None) -> str | None:
        if value is None or re.fullmatch(r"auto|cpu|cuda|cuda:\d+|mps", value):
            return value
        raise ValueError("not a device: use cpu, cuda, cuda:N (N a number), mps or auto")


class TreeSettings(Section):
    parent_embedding: Literal["mean_of_children", "size_weighted"] = Field(
        "size_weighted",
        description="Parent vectors: size_weighted = mean of the node's leaves (default, "
        "better on dev: docs/results.md); mean_of_children = the paper's (e_u + e_v) / 2",
    )


class SearchSettings(Section):
    n_docs: int = Field(8, ge=1, le=10_000, description="Documents a query without doc_ids "
                        "searches (more while they hold fewer than k evidence units)")
    first_stage: Literal["hybrid", "vector"] = Field(
        "hybrid", description="How a query without doc_ids picks its documents: hybrid = "
        "nearest nodes and LanceDB's full-text index over the leaves, fused by reciprocal "
        "rank; vector = nearest nodes only",
    )
    entity_ranking: bool = Field(
        True, description="With the hybrid first stage, also rank documents by the "
        "full-text index's best leaves for the question's entities alone (its runs of "
        "capitalised words: a company, a party, a case), fused with the other two rankings: "
        "a named document's few rare words are not drowned by the question's common ones",
    )
    ranking_leaders: int = Field(
        0, ge=0, le=10_000, description="With the hybrid first stage, the first documents "
        "of each of its rankings (nearest nodes, full-text index, entities) that are "
        "among the n_docs it chooses whatever the fused order says: a document only the "
        "full-text index ranks high is searched too (0: the fused order alone)",
    )
    anchor_leaves: int = Field(
        32, ge=0, le=2**31 - 1, description="A query without doc_ids takes BM25's "
        "collection and the standardisation of its scores from the first stage's leading "
        "documents until they hold this many leaves, so that look-alike documents further "
        "down do not change how the leading one ranks its own leaves (0: from every "
        "searched document)",
    )
    link_weight: float = Field(
        3.0, ge=0, le=1e6, description="In a query without doc_ids, the score points "
        "(z-units) every unit of a searched document gains when the question or the best "
        "unit's document names it by its title or heading-like first line: the second "
        "document of a question about two (0: off)",
    )
    leader_weight: float = Field(
        2.0, ge=0, le=1e6, description="In a query without doc_ids, the score points every "
        "unit of the best unit's document gains when it (or the question) names another "
        "searched document: a link is evidence that it is the question's first document "
        "(0: off)",
    )
    fetch_named: int = Field(
        1, ge=0, le=10_000, description="In a query without doc_ids, at most this many "
        "documents the first stage did not choose are searched too when the question or "
        "the best unit writes their name (a name no other document has; "
        "`documents.name`): the second document of a question about two, found by the "
        "name the first one gives it (0: off)",
    )

    mention_weight: float = Field(
        3.0, ge=0, le=1e6, description="In a query without doc_ids, the score points every "
        "unit of a searched document gains when it is the only searched document whose "
        "text writes an entity the question names (a run of capitalised words: a company, "
        "a party, a case): the document a question about one of many look-alikes asks "
        "about (0: off)",
    )

    fetch_mentioned: int = Field(
        2, ge=0, le=10_000, description="In a query without doc_ids, at most this many "
        "documents the first stage did not choose are searched too when each is the only "
        "document of the corpus whose text writes an entity the question names (looked up "
        "in the full-text index), or the single one of its writers whose first 300 "
        "characters write it: the named document a question about one of many look-alikes "
        "asks about, when the question's other words match look-alikes better (0: off)",
    )
    mention_statistics: bool = Field(
        True, description="In a query without doc_ids that names two or more searched "
        "documents (each the only one writing an entity of the question) holding "
        "anchor_leaves leaves together, BM25's collection and the standardisation of the "
        "scores come from those documents, as a search within them would take them",
    )

    long_mention_weight: float = Field(
        6.0, ge=0, le=1e6, description="The points instead of mention_weight when the "
        "documents the question names hold anchor_leaves leaves together (long documents: "
        "agreements, reports), where a named document is the one the question asks about "
        "and its weaker units should still come before its look-alikes' (mention_weight's "
        "value: one weight for all)",
    )

    mention_alone: bool = Field(
        True, description="In a query without doc_ids whose named documents (each the only "
        "searched one writing an entity of the question), one or more, hold anchor_leaves "
        "leaves together, only those documents are searched, as a query restricted to "
        "their doc_ids would search them: a question naming the agreement or report it asks "
        "about gets that document's answer, not its look-alikes'",
    )

    alone_opening_leaves: int = Field(
        16, ge=0, le=2**31 - 1, description="With mention_alone, named documents that hold "
        "fewer than anchor_leaves leaves together but at least this many are searched "
        "alone too when each writes an entity of the question in its first 300 characters "
        "(a shorter agreement or report that opens with its party or company). Also the "
        "least leaves of a name's own document: an entity that two or more searched "
        "documents write names the one that alone writes it in its first 300 characters, "
        "when it holds this many leaves and comes first of them in the first stage's order "
        "(a company's own report, not a competitor's that cites it). 0: both off",
    )

    dominant_ratio: float = Field(
        0.0, ge=0, le=1e6, description="In a query without doc_ids, an entity the question "
        "names that two or more searched documents write also names the one that writes it "
        "at least this many times as often per word of its text as every other (a report "
        "citing a competitor shares its name; 0: off, the default: on the training pools "
        "it lowered retrieval quality)",
    )

    name_free_leaves: int = Field(
        16, ge=0, le=2**31 - 1, description="A searched document of at least this many "
        "units whose first 300 characters write an entity the question names (a report or "
        "an agreement that opens with its company or party) is scored with the question's "
        "vector blended with the question less its names and less the other words those "
        "documents' openings write (three quarters to the latter, half in a document with "
        "a part titled by the question's name), so that its opening, which writes the name "
        "and what the question describes it by, does not outrank its answer; short "
        "documents, where the name is "
        "written in the evidence, keep the question's vector. Its BM25 scores the question "
        "less the names its opening writes (its caption or title line), unless a part of "
        "it is titled by one of them. In a query with doc_ids too (0: off)",
    )

    def retriever_options(self) -> dict[str, Any]:
        """The `Retriever` arguments these settings give (n_docs, first_stage,
        entity_ranking, ranking_leaders, anchor_leaves, link_weight, leader_weight, fetch_named,
        mention_weight, fetch_mentioned, mention_statistics, long_mention_weight,
        mention_alone, alone_opening_leaves, dominant_ratio, name_free_leaves)."""
        return {"n_docs": self.n_docs, "first_stage": self.first_stage,
                "entity_ranking": self.entity_ranking,
                "ranking_leaders": self.ranking_leaders,
                "anchor_leaves": self.anchor_leaves, "link_weight": self.link_weight,
                "leader_weight": self.leader_weight, "fetch_named": self.fetch_named,
                "mention_weight": self.mention_weight,
                "fetch_mentioned": self.fetch_mentioned,
                "mention_statistics": self.mention_statistics,
                "long_mention_weight": self.long_mention_weight,
                "mention_alone": self.mention_alone,
                "alone_opening_leaves": self.alone_opening_leaves,
                "dominant_ratio": self.dominant_ratio,
                "name_free_leaves": self.name_free_leaves}


class PipelineSettings(Section):
    batch_chars: int = Field(
        200_000, ge=1, description="Characters per chunk/encode/store batch: a batch closes "
        "before the document that would overflow it (a longer document is a batch of its "
        "own), so small and large documents make batches of about the same work"
    )
    batch_docs: int = Field(
        1000, ge=1, description="Documents per batch at most (batch_chars usually closes a "
        "batch first)"
    )
    work_dir: str | None = Field(
        None, description="Base folder (or s3:// prefix) of the runs' Parquet intermediates; "
        "None = <db>/_work. A run creates and removes only its own sproutrag-run-<id> folder"
    )
    progress: bool = True
    max_inflight_batches: int = Field(
        2, ge=1, description="Batches chunked/encoded ahead of the store (bounds memory)"
    )
    lock_timeout: float = Field(
        0.0, ge=0, description="Seconds to wait for another run's lock (0: refuse at once)"
    )
    keep_versions_days: float = Field(
        7.0, ge=0, description="An index run keeps the LanceDB version of documents and "
        "nodes it started from and its final one, and removes every other version it "
        "wrote; the start versions of earlier runs are kept this many days (a reader may "
        "still use them; their files cost the rows rewritten since). 0: only the version "
        "before the run and the final one"
    )
    compact_fragments: int = Field(
        32, ge=2, description="While a run writes, compact documents or nodes (merge small "
        "fragments, fold new rows into the scalar indexes, remove the run's intermediate "
        "versions) whenever this many of their fragments are small"
    )
    optimize_fragments: int = Field(
        8, ge=1, description="At the end of a run, compact documents and nodes once they "
        "hold this many small fragments, and optimize runs and results once one holds "
        "this many fragments ..."
    )
    prune_versions: int = Field(
        1, ge=1, description="... or this many versions older than keep_versions_days "
        "(besides the latest, which is always kept)"
    )
    listing_fast_path: bool = Field(
        True, description="Decide that a file is unchanged, without reading it, when its "
        "size and modification time (an S3 object: size and ETag) equal those stored with "
        "its row, as rsync and make do; the content hash stays the document's identity. "
        "false: read and hash every document every run (--full also reads everything)"
    )
    max_delete_share: float = Field(
        0.5, ge=0, le=1, description="A run that would delete more than this share of the "
        "indexed documents (or any, from an empty corpus) refuses unless allow_mass_delete"
    )
    max_failed_share: float = Field(
        0.0, ge=0, le=1, description="An index run ends Failed when more than this share "
        "of the corpus's documents failed (0: any failure)"
    )
    max_failed_query_share: float = Field(
        0.0, ge=0, le=1, description="A query-corpus run ends Failed when more than this "
        "share of its queries failed (0: any failure)"
    )
    task_runner: Literal["threads", "dask"] = Field(
        "threads", description="Runner of the per-batch chunk/encode/build_trees tasks"
    )
    dask_address: str | None = Field(
        None, description="Scheduler of an existing Dask cluster (tcp://host:8786); "
        "None = a local cluster of dask_workers processes"
    )
    dask_workers: int = Field(2, ge=1, description="Workers of the local Dask cluster")
    allow_external_symlinks: bool = Field(
        False, description="Index a corpus folder's symlinks whose target lies outside the "
        "folder (off: they are skipped and reported)"
    )
    include_hidden: bool = Field(
        False, description="Index a corpus folder's hidden files and folders, whose names "
        "start with a dot (.git/, .ipynb_checkpoints/; off: left out, as file browsers do)"
    )
    max_doc_bytes: int = Field(
        100_000_000, ge=1, description="Largest corpus file (or JSONL line) read, in bytes; "
        "checked before reading: a larger one fails, named with its size"
    )
    max_doc_chars: int = Field(
        20_000_000, ge=1, description="Longest document text indexed, in characters "
        "(Unicode code points); a longer one fails"
    )
